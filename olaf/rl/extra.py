"""The ``train`` extra (torch, Gymnasium with Box2D, Stable-Baselines3) and the ``rllib`` extra
(``ray[rllib]`` at :data:`RAY_VERSION`).

The PPO learner (:mod:`olaf.rl`) needs packages a base install of Olaf does not
have. :func:`require_train_extra` imports them and turns a missing one into
:class:`TrainExtraMissing`, whose message says which package is missing and the
command that installs the extra. Callers (the worker's ``--task ppo``) call it
before anything else of :mod:`olaf.rl`, so a user sees that message instead of
an ``ImportError`` traceback.
"""

from __future__ import annotations

import importlib

from olaf.hosts.learning import TaskUnavailable

INSTALL_HINT = "pip install -e '.[train]' (or `make train` in the repository)"
"""How a user installs the ``train`` extra; pip then takes the CPU-only torch wheel pinned there."""

RAY_VERSION = "2.60.0"
"""The Ray release the ``ray`` backend and the RLlib learner are tested with (the ``ray`` and
``rllib`` extras pin it; RLlib's new API stack moves between releases)."""

RLLIB_INSTALL_HINT = f"pip install -e '.[train,rllib]' (ray[rllib]=={RAY_VERSION})"
"""How a user installs the RLlib learner's packages."""

_MODULES = {"torch": "torch", "gymnasium": "gymnasium", "stable_baselines3": "stable-baselines3"}


class TrainExtraMissing(TaskUnavailable):
    """A package of the ``train`` extra is not installed; the message names it and the fix."""


def require_train_extra() -> None:
    """Import torch, gymnasium and stable_baselines3.

    Raises:
        TrainExtraMissing: one of them is missing (message: the package and
            :data:`INSTALL_HINT`).
    """
    for module, package in _MODULES.items():
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise TrainExtraMissing(
                f"the PPO task needs the package {package!r} of Olaf's `train` extra ({e}); "
                f"install it with: {INSTALL_HINT}") from None



class RLlibExtraMissing(TaskUnavailable):
    """RLlib is not installed, or another Ray release is; the message names it and the fix."""


def require_rllib() -> None:
    """Import ``ray.rllib`` (and the ``train`` extra) at :data:`RAY_VERSION`.

    Raises:
        TrainExtraMissing: a package of the ``train`` extra is missing.
        RLlibExtraMissing: RLlib is missing or Ray is another release (message: :data:`RLLIB_INSTALL_HINT`).
    """
    require_train_extra()
    try:
        import ray  # noqa: PLC0415
        importlib.import_module("ray.rllib")
    except ImportError as e:
        raise RLlibExtraMissing(f"the RLlib learner needs RLlib ({e}); install it with: {RLLIB_INSTALL_HINT}") from None
    if ray.__version__ != RAY_VERSION:
        raise RLlibExtraMissing(f"ray {ray.__version__} is installed; the RLlib learner is tested with {RAY_VERSION}: "
                                f"{RLLIB_INSTALL_HINT}")

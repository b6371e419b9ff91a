"""The ``train`` extra: torch, Gymnasium (with Box2D) and Stable-Baselines3.

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


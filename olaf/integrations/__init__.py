"""Olaf in the training loops RL users already have, each a few lines for the user
(``docs/client.md``):

* :mod:`olaf.integrations.sb3` — Stable-Baselines3: ``model.learn(callback=OlafCallback(ps=...))``;
* :mod:`olaf.integrations.torch` — PyTorch and CleanRL: ``DistributedOptimizer(optimizer, model)``,
  Horovod's shape.

* :mod:`olaf.integrations.rllib` — RLlib: ``with_olaf(ppo_config, ps=..., endpoints=...)`` turns Olaf
  on in an existing ``PPOConfig`` (:class:`olaf.rl.rllib.OlafPPOConfig`, ``docs/rllib.md``).

Each module imports its framework; this package imports none, so ``import olaf.integrations``
works on the client install alone. Importing a module whose framework is not installed raises an
:class:`ImportError` that names the extra to install (:func:`missing_framework`).
"""

from __future__ import annotations

EXTRAS = {"olaf.integrations.sb3": "train", "olaf.integrations.torch": "train", "olaf.integrations._worker": "train",
          "olaf.integrations.rllib": "rllib"}
"""The ``pyproject.toml`` extra that brings each integration's framework."""


def missing_framework(module: str, error: ImportError) -> ImportError:
    """The error to raise when ``module``'s framework is not installed: names what is missing and the
    install (``pip install 'olaf-drl[EXTRA]'``, :data:`EXTRAS`)."""
    return ImportError(f"{module} needs {error.name or 'its framework'}, which is not installed: "
                       f"pip install 'olaf-drl[{EXTRAS.get(module, 'train')}]' (or the framework itself)",
                       name=error.name)


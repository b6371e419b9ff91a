"""The ``ppo`` entry of the worker task registry (:mod:`olaf.hosts.learning`; ``pyproject.toml``'s
``olaf.tasks`` entry points): imports without the ``train`` extra and checks for it first."""

from __future__ import annotations

from typing import Any

import numpy as np

from olaf.hosts.learning import Task
from olaf.rl.extra import require_rllib, require_train_extra


def ppo_task(cfg: Any, init_rng: np.random.Generator, task_rng: np.random.Generator) -> Task:  # noqa: ARG001
    """A :class:`~olaf.rl.task.PPOTask` of ``cfg.ppo`` seeded with ``cfg.seed`` (the generators are
    the bandit's; PPO seeds torch and the environments itself), or with ``cfg.ppo.learner`` rllib an
    :class:`~olaf.rl.rllib.RLlibPPOTask`.

    Raises:
        TrainExtraMissing: the ``train`` extra is not installed (message: the install command).
        RLlibExtraMissing: learner rllib without RLlib at the pinned release (message: the install command).
    """
    if cfg.ppo.learner == "rllib":
        require_rllib()
        from olaf.rl.rllib import RLlibPPOTask  # noqa: PLC0415

        return RLlibPPOTask(cfg.ppo, cfg.seed)
    require_train_extra()
    from olaf.rl.task import PPOTask  # noqa: PLC0415

    return PPOTask(cfg.ppo, cfg.seed)

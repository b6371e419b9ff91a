"""The PPO learner as a worker's learning task (``olaf worker --task ppo``).

:class:`PPOTask` implements :class:`olaf.hosts.learning.Task` with a
:class:`~olaf.rl.learner.PPOLearner`. A generation:

1. adopts the global weights of the latest ACK if new ones arrived since the
   previous generation (the worker hands them over only between iterations:
   no preemption, paper §8.2);
2. runs one PPO iteration from those weights (rollout, GAE, update direction ``d``);
3. returns the returns of the episodes that ended, ``d`` and the rollout's steps.

**Local application** (``apply_locally``, default on): between ACKs the worker
keeps training on its own result, i.e. the next iteration starts from
``θ₀ + d`` (for ``update="grad"``: ``θ₀ + lr·d``) unless new global weights
arrived. Off, every iteration starts from the last adopted weights again, so a
worker whose ACKs are late or lost repeats rollouts of the same policy.
``docs/training.md`` gives the measurements behind the default.

Torch runs with one intra-op thread per worker process (:func:`torch.set_num_threads`):
27 workers share two cores.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
import torch

from olaf.experience import Generation
from olaf.plan.workload import PPOTaskSpec
from olaf.rl.drift import adapt_scale
from olaf.rl.learner import PPOLearner
from olaf.rl.network import check_fits


class PPOTask:
    """PPO on a Gymnasium environment behind the worker's task interface (``kind`` = ``"ppo"``).

    Args:
        spec: environment, hyperparameters, update kind, local application, MTU.
        seed: the worker's seed (initial weights, environments, sampling).

    Raises:
        EnvError: unknown environment id or not a discrete action space.
        ModelTooLarge: the network needs more chunks than the wire allows at ``spec.mtu``.
        TrainExtraMissing: a package of the ``train`` extra is missing.
    """

    kind = "ppo"

    def __init__(self, spec: PPOTaskSpec, seed: int) -> None:
        torch.set_num_threads(1)
        self.spec = spec
        self.learner = PPOLearner(spec.env_id, spec.ppo, seed, spec.update, spec.apply_locally)
        self.chunking = check_fits(self.learner.num_params, spec.mtu)
        self.num_weights = self.learner.num_params
        self._initial = self.learner.get_weights()
        self.steps = 0
        self.episodes = 0
        self.iterations = 0
        self.scale = 1.0
        """The drift control's scale on the update sent (:mod:`olaf.rl.drift`; 1 when it is off)."""

    def initial_weights(self) -> np.ndarray:
        return self._initial.copy()

    def current_weights(self) -> np.ndarray:
        """The learner's weights (with local application: the last iteration's result), ``(P,)``."""
        return self.learner.get_weights()

    def generate(self, adopt: Optional[np.ndarray]) -> Generation:
        kl = None
        if adopt is not None:
            self.learner.set_weights(adopt)
            kl = self.learner.collector.kl_from_rollout_policy(self.learner.net)
        target = self.spec.ppo.target_drift
        if target is not None and kl is not None and math.isfinite(kl):
            self.scale = adapt_scale(self.scale, max(kl, 0.0), target)
        it = self.learner.iterate()
        direction = it.direction
        if self.scale != 1.0:
            direction = it.direction * self.scale
            if self.spec.apply_locally and self.spec.update == "delta":  # its own weights take the step it sends
                self.learner.set_weights(self.learner.get_weights() - it.direction + direction)
        self.steps += it.rollout.steps
        self.episodes += int(it.rollout.episode_returns.shape[0])
        self.iterations += 1
        info: dict[str, Any] = {"steps": it.rollout.steps, "episodes": int(it.rollout.episode_returns.shape[0]),
                                "env_steps": self.steps, **{k: round(v, 6) for k, v in it.stats.items()},
                                **({"kl_adopted": round(kl, 6)} if kl is not None else {}),
                                **({"drift_scale": round(self.scale, 6)} if target is not None else {})}
        return Generation(it.rollout.episode_returns, direction, it.rollout.steps, info)

    def summary(self) -> dict[str, Any]:
        return {"env_steps": self.steps, "episodes": self.episodes, "iterations": self.iterations,
                "num_params": self.num_weights}

    def close(self) -> None:
        self.learner.close()

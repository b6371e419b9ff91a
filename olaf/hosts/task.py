"""The workers' learning task: a Gaussian-policy contextual bandit in numpy.

Small enough that 27 workers and a BMv2 switch share two cores, but a real
policy-gradient signal: the gradient a worker sends depends on the global
weights it last received, and the reward it reports is the mean episode
reward of the current policy, so the PS's reward gating (paper §2.1) and a
time-to-reward are meaningful.

Environment (identical for all workers; fixed by ``task_seed``):

* an episode draws a context ``s`` (``G`` = number of weights = gradient
  elements on the wire) with ``E[s sᵀ] = I_G``: episodes come in blocks of
  ``G``, a block's contexts being the rows of ``√G·Q·D`` — ``Q`` a random
  orthogonal matrix drawn once per worker, ``D`` a fresh diagonal of random
  signs per block (stratified sampling: within a block the contexts are
  orthogonal, so a block's mean of ``(s·v)²`` is exactly ``‖v‖²`` for any
  ``v``; this removes the context noise from the mean reward — with i.i.d.
  Gaussian contexts a batch's mean reward varies by ``√(2/B)``, which for
  ``B = 1024`` exceeds the improvement of an accepted update, and the PS's
  strict reward gating latches onto lucky batches);
* the policy with weights ``w`` acts ``a ~ N(w·s, σ²)``;
* the episode reward is ``r = −K·(a − w*·s)²`` with a hidden target
  ``w* ~ N(0, 0.3²·I_G)`` and reward scale ``K``.

Expected reward: ``J(w) = −K·(‖w − w*‖² + σ²)``, at most ``−K·σ²``.

Update (one per generation; ``B`` episodes, rounded up to whole blocks of
``G``): the pathwise (reparameterised)
policy gradient ``g = mean_b(∂r_b/∂w) = mean_b(−2K·(a_b − w*·s_b)·s_b)``, an
unbiased estimate of ``∇J(w)`` — the ascent direction the PS applies as
``w ← w + γ·g_a`` — and the reward ``mean_b(r_b)`` (the "mean reward of that
episode" of paper §2.1). Defaults (``K = 10``, ``B = 1024``, ``σ = 0.1``) are
chosen so that with the paper's ``γ = 0.001`` an accepted update moves the
weights 2 % of the way to ``w*`` and exceeds the reward noise of a batch, and
the initial gradient elements (≈ ±10) leave headroom in Q7.24 (±128) for the
switch to sum several of them.

A worker that skips sending (transmission control, paper §5) keeps training:
:class:`olaf.experience.Experience` accumulates episodes until an update is
sent, so the sent update subsumes the skipped ones (gradient and reward
averaged over all their episodes). :class:`BanditWorkerTask` is the bandit
behind the worker's task interface (:class:`olaf.hosts.learning.Task`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from olaf.constants import MAX_G_JUMBO
from olaf.experience import Generation

MAX_NUM_WEIGHTS = MAX_G_JUMBO
"""2235: the most weights ``G`` the bandit takes. Its basis is a dense ``G × G`` matrix (8·G²
bytes: 40 MB per worker at 2,235, 768 MB at Stable-Baselines3's 9,797) and a block of episodes
costs ``G²`` multiply-adds, so 27 workers on two cores stop at about one jumbo frame's worth.
A larger model is a PPO job's (``olaf train --net``), not the bandit's."""


def weights_problem(g: int) -> Optional[str]:
    """Why the bandit cannot have ``g`` weights (above :data:`MAX_NUM_WEIGHTS`), or None."""
    if g <= MAX_NUM_WEIGHTS:
        return None
    return (f"{g}: the workers' bandit task takes at most {MAX_NUM_WEIGHTS} weights (its G x G basis); "
            "a larger model is a PPO training job's (olaf train --net)")


TARGET_STD = 0.3
"""Standard deviation of the target weights ``w*``."""

INIT_STD = 0.05
"""Standard deviation of a worker's initial weights."""


@dataclass(frozen=True)
class TaskParams:
    """Environment and batch size.

    Attributes:
        num_weights: ``G`` (≥ 1; the bandit takes at most :data:`MAX_NUM_WEIGHTS`).
        batch: episodes per update ``B`` (≥ 1; rounded up to a multiple of ``G``).
        reward_scale: ``K`` (> 0).
        sigma: exploration standard deviation ``σ`` (> 0).
        task_seed: seed of the target ``w*``; workers of one training job share it.
    """

    num_weights: int = 32
    batch: int = 1024
    reward_scale: float = 10.0
    sigma: float = 0.1
    task_seed: int = 0

    def __post_init__(self) -> None:
        for name in ("num_weights", "batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("reward_scale", "sigma"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")


class BanditTask:
    """The environment; :meth:`rollout` runs ``B`` episodes of a policy.

    ``rng`` is the worker's own sampling stream (contexts and actions).
    """

    def __init__(self, params: TaskParams, rng: np.random.Generator) -> None:
        """Raises ValueError: ``params.num_weights`` above :data:`MAX_NUM_WEIGHTS`."""
        problem = weights_problem(params.num_weights)
        if problem:
            raise ValueError(f"num_weights {problem}")
        self.params = params
        g = params.num_weights
        self.target = np.random.default_rng(params.task_seed).normal(0.0, TARGET_STD, g)
        self._rng = rng
        q, r = np.linalg.qr(rng.standard_normal((g, g)))
        self._basis = np.sqrt(g) * q * np.sign(np.diag(r))  # Haar-random orthogonal, scaled
        self.blocks = -(-params.batch // g)

    def initial_weights(self, rng: np.random.Generator) -> np.ndarray:
        """A worker's initial weights, ``N(0, 0.05²)`` per element, shape ``(G,)``."""
        return rng.normal(0.0, INIT_STD, self.params.num_weights)

    def expected_reward(self, w: np.ndarray) -> float:
        """``J(w) = −K·(‖w − w*‖² + σ²)``, the mean episode reward in expectation."""
        p = self.params
        return float(-p.reward_scale * (np.sum((w - self.target) ** 2) + p.sigma**2))

    def rollout(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``B`` episodes with policy ``w`` (shape ``(G,)``).

        Returns ``(rewards, grads)``: shapes ``(n,)`` and ``(n, G)`` (``n`` = ``B``
        rounded up to a multiple of ``G``), the episode
        rewards and each episode's ``∂r/∂w`` (see module docstring).
        """
        p = self.params
        signs = self._rng.choice(np.array([-1.0, 1.0]), size=(self.blocks, 1, p.num_weights))
        s = (self._basis[None, :, :] * signs).reshape(-1, p.num_weights)
        err = s @ (w - self.target) + p.sigma * self._rng.standard_normal(s.shape[0])
        rewards = -p.reward_scale * err**2
        grads = (-2.0 * p.reward_scale * err)[:, None] * s
        return rewards, grads


class BanditWorkerTask:
    """The bandit as a worker's :class:`~olaf.hosts.learning.Task` (``kind`` = ``"bandit"``).

    Its weights are the worker's initial weights until it adopts global weights
    from an ACK; it never applies its own gradients. A generation is one
    :meth:`BanditTask.rollout`: the episode rewards, the mean gradient as the
    direction, ``B`` samples, and ``exp_reward`` = ``J(w)`` of the weights used.
    """

    kind = "bandit"

    def __init__(self, params: TaskParams, init_rng: np.random.Generator, rng: np.random.Generator) -> None:
        self.task = BanditTask(params, rng)
        self.num_weights = params.num_weights
        self.weights = self.task.initial_weights(init_rng)
        self._initial = self.weights.copy()

    def initial_weights(self) -> np.ndarray:
        return self._initial.copy()

    def current_weights(self) -> np.ndarray:
        return self.weights.copy()

    def generate(self, adopt: Optional[np.ndarray]) -> Generation:
        if adopt is not None:
            self.weights = adopt
        rewards, grads = self.task.rollout(self.weights)
        return Generation(rewards, grads.mean(axis=0), rewards.shape[0],
                          {"exp_reward": self.task.expected_reward(self.weights)})

    def summary(self) -> dict[str, Any]:
        return {"final_exp_reward": self.task.expected_reward(self.weights)}

    def close(self) -> None:
        pass


def bandit_task(cfg: Any, init_rng: np.random.Generator, task_rng: np.random.Generator) -> BanditWorkerTask:
    """The ``bandit`` entry of the task registry (:mod:`olaf.hosts.learning`): ``cfg.task``'s bandit."""
    return BanditWorkerTask(cfg.task, init_rng, task_rng)

"""One PPO iteration of a worker: rollout, PPO loss, and the update direction it sends.

A :class:`PPOLearner` owns a network (:mod:`olaf.rl.network`), its
environments (:mod:`olaf.rl.rollout`) and a local Adam optimizer. One
:meth:`PPOLearner.iterate` from weights ``θ₀``:

1. collects a rollout of ``n_steps·n_envs`` steps with ``π_θ₀`` and computes GAE;
2. computes the update **direction** ``d`` (a vector of ``P`` floats, the
   ascent direction of the PPO objective, i.e. ``w ← w + γ·d`` improves it):

   * ``update="delta"`` (default): ``n_epochs`` passes of minibatch PPO over
     the rollout with the local Adam (learning rate ``lr``, each gradient
     clipped to ``max_grad_norm``), as Stable-Baselines3's ``PPO.train``; ``d =
     θ_E − θ₀``, the sum of the iteration's optimizer steps. With ``target_kl``
     the passes stop before the step of the first minibatch whose approximate KL
     exceeds ``1.5·target_kl``, as Stable-Baselines3 does;
   * ``update="grad"``: one gradient of the PPO loss over the whole rollout at
     ``θ₀`` (ratio 1, so the clipped surrogate is the plain policy gradient),
     clipped to ``max_grad_norm``; ``d = −∇_θ L``;

3. leaves the network at ``θ₀ + d`` if ``apply_locally`` (for ``grad``: ``θ₀ +
   lr·d``), else at ``θ₀``.

The worker decides what ``θ₀`` is (the global weights of the latest ACK, or its
own weights) and what happens to ``d`` (:mod:`olaf.rl.task`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from olaf.plan.workload import UPDATE_KINDS, PPOConfig
from olaf.rl.envs import env_shape
from olaf.rl.flat import get_flat_grad, get_flat_params, set_flat_params
from olaf.rl.network import ActorCritic
from olaf.rl.ppo import NonFiniteLoss, ppo_loss
from olaf.rl.rollout import RolloutCollector, RolloutInfo


@dataclass
class Iteration:
    """Result of one :meth:`PPOLearner.iterate`.

    Attributes:
        direction: ``d``, shape ``(P,)`` float64 (see module docstring).
        rollout: steps and the returns of the episodes that ended.
        stats: mean policy loss, value loss, entropy, clip fraction, approx. KL
            over the iteration's minibatches, and ``grad_norm`` (before clipping,
            mean over minibatches); with ``target_kl``, ``kl_stopped`` (1.0 when the
            early stop ended the epochs, else 0.0).
    """

    direction: np.ndarray
    rollout: RolloutInfo
    stats: dict[str, float] = field(default_factory=dict)


class PPOLearner:
    """Network, environments and local optimizer of one worker.

    Args:
        env_id: Gymnasium id (discrete actions).
        cfg: hyperparameters.
        seed: seeds the initial weights, the environments, action sampling and minibatch order.
        update: ``"delta"`` or ``"grad"`` (module docstring).
        apply_locally: keep the iteration's own step on the local weights.

    Raises:
        EnvError, TrainExtraMissing: see :mod:`olaf.rl.envs`; ValueError for an unknown ``update``.
    """

    def __init__(self, env_id: str, cfg: PPOConfig, seed: int, update: str = "delta",
                 apply_locally: bool = True) -> None:
        if update not in UPDATE_KINDS:
            raise ValueError(f"update must be one of {', '.join(UPDATE_KINDS)}, got {update!r}")
        shape = env_shape(env_id)
        torch.manual_seed(seed)
        self.net = ActorCritic(shape.obs_dim, shape.n_actions, cfg.hidden, cfg.arch)
        self.cfg, self.update, self.apply_locally = cfg, update, apply_locally
        self.collector = RolloutCollector(env_id, cfg, seed)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=cfg.lr, eps=1e-5)
        self._perm_rng = np.random.default_rng(seed)

    @property
    def num_params(self) -> int:
        return self.net.num_params

    def get_weights(self) -> np.ndarray:
        """Current weights, shape ``(P,)`` float64 (:mod:`olaf.rl.flat` order)."""
        return get_flat_params(self.net)

    def set_weights(self, w: np.ndarray) -> None:
        """Load weights of shape ``(P,)``."""
        set_flat_params(self.net, w)

    def iterate(self) -> Iteration:
        """One rollout and update direction from the current weights (module docstring).

        Raises:
            NonFiniteLoss: a loss or gradient was NaN/inf (the weights are left as they were).
        """
        cfg = self.cfg
        theta0 = self.get_weights()
        rollout = self.collector.collect(self.net)
        # SB3's RolloutBuffer shuffles with numpy's global RNG: seed it from this learner's stream
        np.random.seed(int(self._perm_rng.integers(2**32)))
        sums: dict[str, float] = {}
        n = 0
        stopped = False
        try:
            if self.update == "grad":
                batches = self.collector.batches(cfg.n_steps * cfg.n_envs)
                parts = self._backward(next(iter(batches)), sums)
                n = 1
                direction = -get_flat_grad(self.net)
                if self.apply_locally:
                    self.set_weights(theta0 + cfg.lr * direction)
            else:
                stop_kl = None if cfg.target_kl is None else 1.5 * cfg.target_kl
                for _ in range(cfg.n_epochs):
                    for b in self.collector.batches(cfg.batch_size):
                        parts = self._backward(b, sums)
                        n += 1
                        if stop_kl is not None and parts.approx_kl > stop_kl:
                            stopped = True
                            break
                        self.optimizer.step()
                    if stopped:
                        break
                direction = self.get_weights() - theta0
                if not self.apply_locally:
                    self.set_weights(theta0)
            del parts
        except NonFiniteLoss:
            self.set_weights(theta0)
            raise
        if not np.all(np.isfinite(direction)):
            self.set_weights(theta0)
            raise NonFiniteLoss("the PPO update direction holds NaN/inf")
        stats = {k: v / n for k, v in sums.items()}
        if cfg.target_kl is not None:
            stats["kl_stopped"] = float(stopped)  # the target_kl early stop ended the epochs
        return Iteration(direction, rollout, stats)

    def _backward(self, b: Any, sums: dict[str, float]) -> Any:
        cfg = self.cfg
        self.optimizer.zero_grad(set_to_none=False)
        parts = ppo_loss(self.net, b, cfg.clip_range, cfg.ent_coef, cfg.vf_coef, cfg.normalize_advantage)
        parts.loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.net.parameters(), cfg.max_grad_norm)
        if not torch.isfinite(norm):
            raise NonFiniteLoss(f"the PPO gradient norm is {norm.item()}")
        for k, v in (("policy_loss", parts.policy_loss), ("value_loss", parts.value_loss),
                     ("entropy", parts.entropy), ("clip_fraction", parts.clip_fraction),
                     ("approx_kl", parts.approx_kl), ("grad_norm", float(norm))):
            sums[k] = sums.get(k, 0.0) + v
        return parts

    def close(self) -> None:
        self.collector.close()

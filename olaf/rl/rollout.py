"""Rollout collection with the current policy, and GAE (Schulman et al. 2016).

:class:`RolloutCollector` steps ``n_envs`` environments (:mod:`olaf.rl.envs`)
for ``n_steps`` steps each with the network's categorical policy and stores
every transition in Stable-Baselines3's ``RolloutBuffer``, which computes GAE:

* ``δ_t = r_t + γ·V(s_{t+1})·(1 − d_{t+1}) − V(s_t)``,
* ``Â_t = δ_t + γλ·(1 − d_{t+1})·Â_{t+1}``, returns ``R̂_t = Â_t + V(s_t)``,

where ``d_{t+1}`` = 1 if the episode ended at step ``t`` (the buffer's
``episode_starts`` of the next step; after the last step, the done flag of the
last step and ``V`` of the observation after it bootstrap the tail). As in
Stable-Baselines3's ``PPO``, an episode cut by a time limit (truncated, not
terminated) has ``γ·V(final observation)`` added to its last reward, so the
cut is not mistaken for a terminal state.

The episode returns of the rollout are the undiscounted returns of the
episodes that **ended** during it (from ``Monitor``, so an episode that began
in an earlier rollout counts whole); the "mean episode reward" an update
carries (paper §2.1) is their mean (:class:`olaf.rl.task.PPOTask`).

Raises :class:`~olaf.rl.ppo.NonFiniteLoss` as soon as the policy's logits are
NaN/inf (a NaN observation or NaN weights): the loss of such a rollout would be NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import torch
import torch.nn.functional as F
from stable_baselines3.common.buffers import RolloutBuffer

from olaf.plan.workload import PPOConfig
from olaf.rl.envs import make_vec_env
from olaf.rl.network import ActorCritic
from olaf.rl.ppo import Batch, NonFiniteLoss


@dataclass(frozen=True)
class RolloutInfo:
    """What a collected rollout was.

    Attributes:
        steps: environment steps (``n_steps·n_envs``).
        episode_returns: undiscounted returns of the episodes that ended during it, shape ``(E,)``.
        episode_lengths: their lengths in steps, shape ``(E,)``.
    """

    steps: int
    episode_returns: np.ndarray
    episode_lengths: np.ndarray


class RolloutCollector:
    """Environments, their current observations and the rollout buffer of one learner.

    Args:
        env_id: Gymnasium id (discrete actions, flat Box observations).
        cfg: PPO hyperparameters (``n_steps``, ``n_envs``, ``gamma``, ``gae_lambda``).
        seed: seeds the environments (``seed, seed+1, …``) and the action sampling.

    Raises:
        EnvError, TrainExtraMissing: see :func:`olaf.rl.envs.make_vec_env`.
    """

    def __init__(self, env_id: str, cfg: PPOConfig, seed: int) -> None:
        self.cfg = cfg
        self.venv = make_vec_env(env_id, cfg.n_envs, seed)
        self.buffer = RolloutBuffer(cfg.n_steps, self.venv.observation_space, self.venv.action_space,
                                    device="cpu", gae_lambda=cfg.gae_lambda, gamma=cfg.gamma, n_envs=cfg.n_envs)
        self._obs = np.asarray(self.venv.reset())  # a Discrete/Box env: one array (envs.py)
        self._episode_starts = np.ones(cfg.n_envs, dtype=np.float32)
        self._gen = torch.Generator().manual_seed(seed)
        self.log_probs: Optional[np.ndarray] = None
        """The rollout policy's log-probabilities of every action at every state of the last rollout,
        shape ``(n_steps · n_envs, n_actions)``, in the order of :attr:`states`."""
        self.states: Optional[np.ndarray] = None
        """The last rollout's observations, shape ``(n_steps · n_envs, obs_dim)`` float32 (a copy: the
        buffer reorders its own when it hands out minibatches)."""

    def _value(self, net: ActorCritic, obs: np.ndarray) -> torch.Tensor:
        return net(torch.as_tensor(obs, dtype=torch.float32))[1]

    @torch.no_grad()
    def collect(self, net: ActorCritic) -> RolloutInfo:
        """Fill the buffer with ``n_steps`` steps of every env under ``net``'s policy and compute GAE."""
        cfg, buf = self.cfg, self.buffer
        buf.reset()
        returns: list[float] = []
        lengths: list[int] = []
        dones = np.zeros(cfg.n_envs, dtype=bool)
        log_probs, states = [], []
        for _ in range(cfg.n_steps):
            obs_t = torch.as_tensor(self._obs, dtype=torch.float32)
            logits, values = net(obs_t)
            if not torch.isfinite(logits).all():
                raise NonFiniteLoss(f"the policy's logits are NaN/inf (observation {self._obs.tolist()[:1]}): "
                                    "the environment or the weights hold NaN/inf, so the PPO loss would be NaN")
            log_p_all = F.log_softmax(logits, dim=-1)
            log_probs.append(log_p_all.numpy())
            states.append(obs_t.numpy())
            actions = torch.multinomial(log_p_all.exp(), 1, generator=self._gen).squeeze(1)
            log_p = log_p_all.gather(1, actions.view(-1, 1)).squeeze(1)
            step_obs, rewards, dones, infos = self.venv.step(actions.numpy())
            new_obs = np.asarray(step_obs)
            rewards = rewards.astype(np.float32) * cfg.reward_scale
            for i, info in enumerate(infos):
                ep = info.get("episode")
                if ep is not None:
                    returns.append(float(ep["r"]))
                    lengths.append(int(ep["l"]))
                if dones[i] and info.get("TimeLimit.truncated", False) and info.get("terminal_observation") is not None:
                    rewards[i] += cfg.gamma * float(self._value(net, info["terminal_observation"][None])[0])
            buf.add(self._obs, actions.numpy().reshape(-1, 1), rewards, self._episode_starts, values, log_p)
            self._obs = new_obs
            self._episode_starts = dones.astype(np.float32)
        buf.compute_returns_and_advantage(last_values=self._value(net, self._obs), dones=dones)
        self.log_probs = np.concatenate(log_probs)
        self.states = np.concatenate(states)
        return RolloutInfo(cfg.n_steps * cfg.n_envs, np.asarray(returns), np.asarray(lengths, dtype=np.int64))

    @torch.no_grad()
    def kl_from_rollout_policy(self, net: ActorCritic) -> Optional[float]:
        """Mean over the last rollout's states of KL(π_rollout ‖ π_net) = Σ_a π_rollout(a|s)·(log
        π_rollout(a|s) − log π_net(a|s)), nats; None before any rollout. How far ``net``'s policy
        (e.g. the global weights adopted after the rollout's update) is from the policy that
        collected the rollout (Stellaris Fig. 3(c))."""
        if self.log_probs is None or self.states is None:
            return None
        old = torch.as_tensor(self.log_probs)
        new = F.log_softmax(net(torch.as_tensor(self.states))[0], dim=-1)
        return float((old.exp() * (old - new)).sum(-1).mean())

    def batches(self, batch_size: int) -> Iterator[Batch]:
        """Shuffled minibatches of the collected rollout (the last one may be smaller); one pass."""
        for s in self.buffer.get(batch_size):
            yield Batch(s.observations.float(), s.actions.long().flatten(), s.old_log_prob.float(),
                        s.advantages.float(), s.returns.float())

    def close(self) -> None:
        self.venv.close()

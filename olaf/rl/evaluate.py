"""Deterministic evaluation of a policy: the global model's score, as the environment defines "solved".

Gymnasium registers a ``reward_threshold`` per environment (LunarLander-v3: 200; CartPole-v1:
475): an agent *solves* it when its mean return over 100 consecutive episodes reaches it. The
workers' own rewards (:mod:`olaf.training.progress`) are returns of *stochastic* rollouts of
their *local* weights; this module scores a weight vector itself — the PS's global model
(:mod:`olaf.training.evaluator`) or a Stable-Baselines3 model (``bench/sb3_baseline.py``) — with
the same code: Stable-Baselines3's ``evaluate_policy`` (episodes split evenly over ``n_envs``
environments to avoid a bias toward short episodes, returns as the ``Monitor`` wrapper counts
them) with greedy actions (``argmax`` of the policy's logits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.evaluation import evaluate_policy

from olaf.plan.workload import SOLVED_EPISODES, PPOTaskSpec
from olaf.rl.envs import env_shape, make_vec_env
from olaf.rl.flat import set_flat_params
from olaf.rl.network import ActorCritic

EVAL_ENVS = 10
"""Environments an evaluation steps side by side (one network forward per step for all)."""


@dataclass(frozen=True)
class EvalResult:
    """Returns of ``episodes`` deterministic episodes.

    Attributes:
        mean, std, min, max: over the episodes' returns.
        episodes: how many.
        mean_length: mean episode length, steps.
        steps: environment steps the evaluation took.
    """

    mean: float
    std: float
    min: float
    max: float
    episodes: int
    mean_length: float
    steps: int


class GreedyPolicy:
    """An :class:`~olaf.rl.network.ActorCritic` behind Stable-Baselines3's ``PolicyPredictor``
    interface: ``predict(obs (B, obs_dim)) -> (actions (B,), None)``, the argmax of the logits."""

    def __init__(self, spec: PPOTaskSpec, weights: np.ndarray) -> None:
        shape = env_shape(spec.env_id)
        self.net = ActorCritic(shape.obs_dim, shape.n_actions, spec.ppo.hidden, spec.ppo.arch)
        set_flat_params(self.net, np.asarray(weights, dtype=np.float64))

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None,  # noqa: ARG002
                deterministic: bool = True) -> tuple[np.ndarray, None]:  # noqa: ARG002
        with torch.no_grad():
            logits, _ = self.net(torch.as_tensor(np.asarray(observation), dtype=torch.float32))
        return logits.argmax(dim=-1).numpy(), None


def evaluate(model: Any, env_id: str, episodes: int = SOLVED_EPISODES, seed: int = 0,
             n_envs: int = EVAL_ENVS) -> EvalResult:
    """Run ``model`` (anything with SB3's ``predict``) deterministically for ``episodes`` episodes
    of ``env_id`` (``n_envs`` environments seeded ``seed, seed+1, …``).

    Raises:
        ValueError: ``episodes < 1``.
        EnvError, TrainExtraMissing: as :func:`olaf.rl.envs.make_vec_env`.
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    venv = make_vec_env(env_id, min(n_envs, episodes), seed)
    try:
        returns, lengths = evaluate_policy(model, venv, n_eval_episodes=episodes, deterministic=True,
                                           return_episode_rewards=True)
    finally:
        venv.close()
    r = np.asarray(returns, dtype=np.float64)
    return EvalResult(float(r.mean()), float(r.std()), float(r.min()), float(r.max()), int(r.size),
                      float(np.mean(lengths)), int(np.sum(lengths)))


def evaluate_weights(spec: PPOTaskSpec, weights: np.ndarray, episodes: int = SOLVED_EPISODES,
                     seed: int = 0) -> EvalResult:
    """:func:`evaluate` of the network of ``spec`` with ``weights`` (shape ``(P,)``, :mod:`olaf.rl.flat` order).

    Raises:
        ValueError: ``weights`` has the wrong length for the network, or ``episodes < 1``.
    """
    torch.set_num_threads(1)
    return evaluate(GreedyPolicy(spec, weights), spec.env_id, episodes, seed)

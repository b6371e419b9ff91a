"""Gymnasium environments for the PPO learner: any registered id with a discrete action space.

:func:`make_vec_env` builds ``n_envs`` copies of ``gymnasium.make(env_id)``,
each wrapped in Stable-Baselines3's ``Monitor`` (episode return and length in
``info["episode"]``), in an SB3 ``DummyVecEnv`` (sequential, auto-reset, the
final observation of a truncated episode in ``info["terminal_observation"]``).
The learner needs a flat ``Box`` observation (``obs_dim`` floats) and a
``Discrete`` action space; anything else is an :class:`EnvError` naming the
environment and what it has.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from olaf.plan.workload import DEFAULT_ENV  # noqa: F401  (re-exported: the default environment)
from olaf.rl.extra import INSTALL_HINT, TrainExtraMissing


class EnvError(ValueError):
    """An environment the PPO learner cannot use (unknown id, continuous actions, non-flat observations)."""


@dataclass(frozen=True)
class EnvShape:
    """What the network needs to know of an environment: ``obs_dim`` floats in, ``n_actions`` logits out."""

    env_id: str
    obs_dim: int
    n_actions: int


def _make(env_id: str) -> gym.Env:
    try:
        return gym.make(env_id)
    except gym.error.DependencyNotInstalled as e:
        raise TrainExtraMissing(f"environment {env_id!r} needs a package that is missing ({e}); "
                                f"install Olaf's `train` extra: {INSTALL_HINT}") from None
    except gym.error.Error as e:
        raise EnvError(f"unknown Gymnasium environment {env_id!r}: {e} (e.g. LunarLander-v3, CartPole-v1)") from None


def _shape(env_id: str, env: gym.Env) -> EnvShape:
    act, obs = env.action_space, env.observation_space
    if not isinstance(act, gym.spaces.Discrete):
        raise EnvError(f"environment {env_id!r} has action space {act}; the PPO learner needs a discrete "
                       "(Discrete) action space, e.g. LunarLander-v3 rather than LunarLanderContinuous-v3")
    if not isinstance(obs, gym.spaces.Box) or len(obs.shape) != 1:
        raise EnvError(f"environment {env_id!r} has observation space {obs}; the PPO learner needs a flat Box")
    return EnvShape(env_id, int(obs.shape[0]), int(act.n))


def env_shape(env_id: str) -> EnvShape:
    """Check ``env_id`` and return its :class:`EnvShape`.

    Raises:
        EnvError: not registered, not a discrete action space, or not a flat Box observation.
        TrainExtraMissing: the environment needs a package that is not installed (e.g. Box2D).
    """
    env = _make(env_id)
    try:
        return _shape(env_id, env)
    finally:
        env.close()


def make_vec_env(env_id: str, n_envs: int, seed: int) -> DummyVecEnv:
    """``n_envs`` monitored copies of ``env_id`` in a ``DummyVecEnv``, seeded ``seed, seed+1, …``.

    Raises:
        EnvError, TrainExtraMissing: as :func:`env_shape`; ValueError for ``n_envs < 1``.
    """
    if n_envs < 1:
        raise ValueError(f"n_envs must be >= 1, got {n_envs}")
    env_shape(env_id)
    venv = DummyVecEnv([lambda: Monitor(_make(env_id)) for _ in range(n_envs)])
    venv.seed(int(np.uint32(seed)))
    return venv

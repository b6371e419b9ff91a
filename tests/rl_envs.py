"""Small deterministic Gymnasium environments for the PPO tests (registered on import).

* ``OlafCount-v0``: observation ``[t]``, reward ``t + 1`` at step ``t`` of an episode,
  terminated after 3 steps; two actions that change nothing.
* ``OlafCountTrunc-v0``: the same without termination, cut by a ``TimeLimit`` of 3 steps
  (truncated), so the learner must bootstrap the cut.
* ``OlafNan-v0``: observations turn NaN after 5 steps (a broken simulator), so training fails.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class CountEnv(gym.Env):
    observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, terminate_after: int | None = 3, nan_after: int | None = None) -> None:
        self.terminate_after, self.nan_after, self.t, self.total = terminate_after, nan_after, 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        reward = float(self.t + 1)
        self.t += 1
        self.total += 1
        obs = np.array([np.nan if self.nan_after is not None and self.total > self.nan_after else self.t], np.float32)
        done = self.terminate_after is not None and self.t >= self.terminate_after
        return obs, reward, done, False, {}


for env_id, kwargs, limit in (("OlafCount-v0", {}, None), ("OlafCountTrunc-v0", {"terminate_after": None}, 3),
                              ("OlafNan-v0", {"terminate_after": 4, "nan_after": 5}, None)):
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=CountEnv, kwargs=kwargs, max_episode_steps=limit)

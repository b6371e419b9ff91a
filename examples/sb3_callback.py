"""Stable-Baselines3's PPO quick-start on CartPole-v1, trained by Olaf workers: two lines added to
SB3's own example, and a seed per worker (docs/client.md, "Stable-Baselines3"). A PS and three workers:
    olaf launch -n 3 --ps-args '--step sgd --lr 1 --no-reward-gate' -- python examples/sb3_callback.py
"""

import os

from stable_baselines3 import PPO

from olaf.integrations.sb3 import OlafCallback

model = PPO("MlpPolicy", "CartPole-v1", verbose=1, seed=int(os.environ.get("OLAF_RANK", 0)))
model.learn(total_timesteps=20_480, callback=OlafCallback())

"""Stable-Baselines3's PPO quick-start on CartPole-v1, trained as an Olaf worker: three lines
added to SB3's own example (docs/client.md, "Stable-Baselines3").

A PS for SB3's CartPole policy (9,155 parameters: 26 chunks at MTU 1500), then any number of these:
    olaf ps --bind 127.0.0.1 --num-params 9155 --mtu 1500 --step sgd --lr 1 --no-reward-gate
    python examples/sb3_callback.py 127.0.0.1 127.0.0.2 [TOTAL_TIMESTEPS [SEED]]
"""

import sys

from stable_baselines3 import PPO

from olaf.integrations.sb3 import OlafCallback

ps, bind = sys.argv[1], sys.argv[2]
model = PPO("MlpPolicy", "CartPole-v1", verbose=1, seed=int(sys.argv[4]) if len(sys.argv) > 4 else None)
model.learn(total_timesteps=int(sys.argv[3]) if len(sys.argv) > 3 else 20_000, callback=OlafCallback(ps=ps, bind=bind))

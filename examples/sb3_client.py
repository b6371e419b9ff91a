"""Stable-Baselines3 PPO on CartPole-v1 as an Olaf worker, through olaf.client (docs/client.md).

A PS for SB3's CartPole policy (9,155 parameters: 26 chunks at MTU 1500), then any number of these:
    olaf ps --bind 127.0.0.1 --num-params 9155 --mtu 1500 --step paper --lr 0.3 --no-reward-gate
    python examples/sb3_client.py --ps 127.0.0.1 --bind 127.0.0.2 --iterations 20
One JSON line per iteration; the last line holds the client's stats.
"""

import argparse
import json
from dataclasses import asdict

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.logger import Logger
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from olaf.client import OlafClient

ap = argparse.ArgumentParser(description="Stable-Baselines3 PPO on CartPole-v1 as an Olaf worker")
ap.add_argument("--ps", required=True, help="the parameter server, IP[:PORT]")
ap.add_argument("--bind", default="0.0.0.0", help="this worker's IP (ACKs arrive on its UDP port 50101)")
ap.add_argument("--iterations", type=int, default=20)
ap.add_argument("--n-steps", type=int, default=256, help="environment steps per iteration")
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()

model = PPO("MlpPolicy", "CartPole-v1", n_steps=args.n_steps, batch_size=64, seed=args.seed)
model.set_logger(Logger(folder=None, output_formats=[]))  # else each learn() makes a directory in /tmp
params = list(model.policy.parameters())
monitor = model.get_env().envs[0]  # SB3 wraps the environment in a Monitor: it keeps the episode returns
with OlafClient(args.ps, bind=args.bind, num_params=parameters_to_vector(params).numel()) as client:
    # the first INIT to reach the PS becomes the global model; no model back in 60 s raises
    # olaf.client.ModelTimeout, naming the PS, the model's size and what to check
    client.init(params, wait_s=60.0)
    first_global, seen = client.latest_weights(), 0
    for it in range(args.iterations):
        # between iterations only: take the global model's slices that arrived since the last one
        adopted = client.adopt(parameters_to_vector(params).detach().numpy())
        if adopted.weights is not None:
            vector_to_parameters(torch.as_tensor(adopted.weights), params)
        start = parameters_to_vector(params).detach().clone()
        model.learn(total_timesteps=args.n_steps, reset_num_timesteps=False)
        direction = parameters_to_vector(params).detach() - start  # what this iteration learned
        returns = monitor.get_episode_rewards()[seen:]
        seen += len(returns)
        mean = float(np.mean(returns)) if returns else None
        r = client.push(direction.numpy(), mean, episodes=len(returns), samples=args.n_steps)
        if r.sent:  # on a fast network the next iteration then starts from the model with this update
            client.wait_for_answer(0.5)
        print(json.dumps({"iteration": it, "adopted_slices": adopted.slices, "sent": r.sent, "reason": r.reason,
                          "seq": r.seq, "reward": mean}), flush=True)
    latest = client.latest_weights()
    moved = None if first_global is None or latest is None else float(np.abs(latest - first_global).max())
    print(json.dumps({"stats": asdict(client.stats()), "global_moved": moved}), flush=True)

"""CleanRL's single-file PPO (ppo.py, CartPole-v1, its default hyperparameters) trained by Olaf
workers: the lines marked `# olaf` are all that is added (docs/client.md, "PyTorch and CleanRL").
A PS and three workers:
    olaf launch -n 3 --ps-args '--step sgd --lr 1 --no-reward-gate' -- python examples/cleanrl_ppo.py [ITERATIONS]
One JSON line per iteration: the mean return of the episodes that ended in it.
"""

import json
import os
import sys

import gymnasium as gym
import numpy as np
import torch
from torch import nn, optim
from torch.distributions.categorical import Categorical

from olaf.integrations.torch import DistributedOptimizer  # olaf

NUM_ENVS, NUM_STEPS, MINIBATCHES, EPOCHS = 4, 128, 4, 4
GAMMA, LAM, CLIP, ENT, VF, MAX_GRAD = 0.99, 0.95, 0.2, 0.01, 0.5, 0.5
iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 100
seed = int(os.environ.get("OLAF_RANK", 0))
torch.manual_seed(seed)


def layer(i, o, std=np.sqrt(2)):
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    def __init__(self, obs, act):
        super().__init__()
        self.critic = nn.Sequential(layer(obs, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, 1.0))
        self.actor = nn.Sequential(layer(obs, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, act, 0.01))

    def value(self, x):
        return self.critic(x)

    def action_and_value(self, x, action=None):
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


envs = gym.wrappers.vector.RecordEpisodeStatistics(gym.make_vec("CartPole-v1", NUM_ENVS, vectorization_mode="sync"))
agent = Agent(envs.single_observation_space.shape[0], envs.single_action_space.n)
optimizer = DistributedOptimizer(optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5), agent)  # olaf
obs_buf = torch.zeros((NUM_STEPS, NUM_ENVS) + envs.single_observation_space.shape)
act_buf, logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((NUM_STEPS, NUM_ENVS)) for _ in range(5))
next_obs, _ = envs.reset(seed=seed)
next_obs, next_done = torch.tensor(next_obs, dtype=torch.float32), torch.zeros(NUM_ENVS)
batch = NUM_ENVS * NUM_STEPS
for iteration in range(iterations):
    optimizer.sync()  # olaf: push the last iteration's update, adopt the global model
    returns = []
    for step in range(NUM_STEPS):
        obs_buf[step], done_buf[step] = next_obs, next_done
        with torch.no_grad():
            action, logp, _, value = agent.action_and_value(next_obs)
        val_buf[step], act_buf[step], logp_buf[step] = value.flatten(), action, logp
        next_obs, reward, term, trunc, info = envs.step(action.numpy())
        rew_buf[step] = torch.tensor(reward, dtype=torch.float32)
        next_obs, next_done = torch.tensor(next_obs, dtype=torch.float32), torch.tensor(term | trunc, dtype=torch.float32)
        for r in info.get("episode", {}).get("r", np.zeros(0))[info.get("_episode", np.zeros(0, bool))]:
            returns.append(float(r))
            optimizer.episode(float(r))  # olaf
    with torch.no_grad():
        next_value, adv, last = agent.value(next_obs).reshape(1, -1), torch.zeros_like(rew_buf), 0
        for t in reversed(range(NUM_STEPS)):
            nonterminal = 1.0 - (next_done if t == NUM_STEPS - 1 else done_buf[t + 1])
            nv = next_value if t == NUM_STEPS - 1 else val_buf[t + 1]
            delta = rew_buf[t] + GAMMA * nv * nonterminal - val_buf[t]
            adv[t] = last = delta + GAMMA * LAM * nonterminal * last
        ret = adv + val_buf
    b_obs, b_act = obs_buf.reshape((-1,) + envs.single_observation_space.shape), act_buf.reshape(-1)
    b_logp, b_adv, b_ret = logp_buf.reshape(-1), adv.reshape(-1), ret.reshape(-1)
    for _epoch in range(EPOCHS):
        for mb in np.array_split(np.random.permutation(batch), MINIBATCHES):
            _, logp, entropy, value = agent.action_and_value(b_obs[mb], b_act.long()[mb])
            ratio = (logp - b_logp[mb]).exp()
            a = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
            pg = torch.max(-a * ratio, -a * ratio.clamp(1 - CLIP, 1 + CLIP)).mean()
            loss = pg - ENT * entropy.mean() + VF * 0.5 * ((value.flatten() - b_ret[mb]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), MAX_GRAD)
            optimizer.step()
    print(json.dumps({"iteration": iteration, "episodes": len(returns),
                      "mean_return": float(np.mean(returns)) if returns else None}), flush=True)
optimizer.close()  # olaf: push the last update
envs.close()

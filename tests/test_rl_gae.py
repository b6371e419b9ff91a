"""Rollout collection and GAE on deterministic environments, against hand-computed advantages.

The value head is zeroed except its bias ``b``, so ``V ≡ b`` and every advantage can be
written down: ``δ_t = r_t + γ·b·(1 − d_{t+1}) − b``, ``Â_t = δ_t + γλ(1 − d_{t+1})Â_{t+1}``.
"""

import numpy as np
import pytest
from tiers import require

require("train")
pytestmark = pytest.mark.train

import rl_envs  # noqa: E402, F401  (registers the test environments)
import torch  # noqa: E402

from olaf.plan.workload import PPOConfig  # noqa: E402
from olaf.rl.network import ActorCritic  # noqa: E402
from olaf.rl.rollout import RolloutCollector  # noqa: E402

G, L, B = 0.9, 0.8, 0.5  # gamma, lambda, the constant value


def constant_value_net(b: float) -> ActorCritic:
    net = ActorCritic(1, 2, (4,))
    with torch.no_grad():
        net.v.weight.zero_()
        net.v.bias.fill_(b)
    return net


def collect(env_id: str, n_steps: int):
    cfg = PPOConfig(n_steps=n_steps, n_envs=1, gamma=G, gae_lambda=L, reward_scale=1.0)
    c = RolloutCollector(env_id, cfg, seed=0)
    info = c.collect(constant_value_net(B))
    return c.buffer, info


def test_gae_over_a_terminated_episode_and_a_bootstrapped_tail():
    # steps 0-2: episode 1 (rewards 1, 2, 3; terminated after step 2); steps 3-4: episode 2 (1, 2), cut by
    # the end of the rollout: bootstrapped with V(s_5) = b
    buf, info = collect("OlafCount-v0", 5)
    r = [1, 2, 3, 1, 2]
    ends_after = [0, 0, 1, 0, 0]  # the episode ended at this step (d_{t+1})
    adv = [0.0] * 5
    nxt = 0.0
    for t in reversed(range(5)):
        nonterm = 1 - ends_after[t]
        delta = r[t] + G * B * nonterm - B
        nxt = delta + G * L * nonterm * nxt
        adv[t] = nxt
    # by hand, the two episodes: t=2: 3 - 0.5 = 2.5; t=1: 2 + 0.45 - 0.5 + 0.72*2.5 = 3.75; t=0: 1 + 0.45 - 0.5 + 0.72*3.75
    assert adv[2] == pytest.approx(2.5) and adv[1] == pytest.approx(3.75) and adv[0] == pytest.approx(3.65)
    # t=4: 2 + 0.45 - 0.5 = 1.95; t=3: 1 + 0.45 - 0.5 + 0.72*1.95 = 2.354
    assert adv[4] == pytest.approx(1.95) and adv[3] == pytest.approx(2.354)
    np.testing.assert_allclose(buf.advantages[:, 0], adv, rtol=1e-6)
    np.testing.assert_allclose(buf.returns[:, 0], np.array(adv) + B, rtol=1e-6)
    assert info.steps == 5 and info.episode_returns.tolist() == [6.0] and info.episode_lengths.tolist() == [3]


def test_a_truncated_episode_is_bootstrapped_not_terminal():
    # a time limit cuts every episode after 3 steps: the last reward of each gets + gamma * V(final obs)
    buf, info = collect("OlafCountTrunc-v0", 3)
    r = [1, 2, 3 + G * B]
    a2 = r[2] - B  # the episode has ended (truncated) after step 2: no bootstrap beyond the added term
    a1 = r[1] + G * B - B + G * L * a2
    a0 = r[0] + G * B - B + G * L * a1
    np.testing.assert_allclose(buf.advantages[:, 0], [a0, a1, a2], rtol=1e-6)
    assert info.episode_returns.tolist() == [6.0]  # reported returns are the environment's, unscaled

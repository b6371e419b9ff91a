"""The PPO loss and its gradient against an independent numpy implementation on a fixed batch.

The reference recomputes the network's forward pass, the clipped surrogate, value loss and
entropy in float64 numpy from the flat parameters, and its gradient by central finite
differences — nothing of torch's autograd — so a wrong sign, a missing clip side or a
mis-normalised advantage in :func:`olaf.rl.ppo.ppo_loss` shows up as a mismatch.
"""

import numpy as np
import pytest
from tiers import require

require("train")
pytestmark = pytest.mark.train

import torch  # noqa: E402

from olaf.rl.flat import get_flat_grad, get_flat_params  # noqa: E402
from olaf.rl.network import ActorCritic  # noqa: E402
from olaf.rl.ppo import Batch, NonFiniteLoss, ppo_loss  # noqa: E402

OBS, ACT, HID = 3, 3, (4, 5)
CLIP, ENT, VF = 0.2, 0.01, 0.5


def reference_loss(flat, obs, actions, old_logp, adv, returns):
    """PPO loss in numpy from the flat parameter vector (module order of olaf.rl.flat)."""
    i, x = 0, obs
    shapes = []
    prev = OBS
    for h in HID:
        shapes.append((h, prev))
        prev = h
    for out, inp in shapes:
        w = flat[i:i + out * inp].reshape(out, inp)
        i += out * inp
        b = flat[i:i + out]
        i += out
        x = np.tanh(x @ w.T + b)
    wp = flat[i:i + ACT * prev].reshape(ACT, prev)
    i += ACT * prev
    bp = flat[i:i + ACT]
    i += ACT
    wv = flat[i:i + prev].reshape(1, prev)
    bv = flat[i + prev]
    logits = x @ wp.T + bp
    values = (x @ wv.T)[:, 0] + bv
    z = logits - logits.max(axis=1, keepdims=True)
    logp_all = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    logp = logp_all[np.arange(len(actions)), actions]
    a = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    ratio = np.exp(logp - old_logp)
    pg = -np.mean(np.minimum(ratio * a, np.clip(ratio, 1 - CLIP, 1 + CLIP) * a))
    vl = np.mean((returns - values) ** 2)
    ent = np.mean(-(np.exp(logp_all) * logp_all).sum(axis=1))
    return pg + VF * vl - ENT * ent, ratio


def fixed_batch(net):
    rng = np.random.default_rng(7)
    obs = rng.normal(size=(16, OBS))
    actions = rng.integers(0, ACT, 16)
    with torch.no_grad():
        logits, _ = net(torch.as_tensor(obs))
        logp = torch.log_softmax(logits, -1)[torch.arange(16), torch.as_tensor(actions)].numpy()
    # behaviour log-probs shifted by up to ±0.6, so ratios fall outside [0.8, 1.2] on both sides
    old_logp = logp + rng.uniform(-0.6, 0.6, 16)
    adv = rng.normal(size=16)
    returns = rng.normal(size=16)
    return obs, actions, old_logp, adv, returns


def test_loss_and_gradient_match_the_numpy_reference():
    torch.manual_seed(3)
    net = ActorCritic(OBS, ACT, HID).double()
    with torch.no_grad():  # larger policy weights than the 0.01-gain init, so the policy terms matter
        net.pi.weight.mul_(100)
    obs, actions, old_logp, adv, returns = fixed_batch(net)
    b = Batch(torch.as_tensor(obs), torch.as_tensor(actions), torch.as_tensor(old_logp), torch.as_tensor(adv),
              torch.as_tensor(returns))
    parts = ppo_loss(net, b, CLIP, ENT, VF)
    parts.loss.backward()
    flat = get_flat_params(net)
    ref, ratio = reference_loss(flat, obs, actions, old_logp, adv, returns)
    assert ((ratio > 1 + CLIP).any() and (ratio < 1 - CLIP).any()), "the batch must exercise both clip sides"
    assert parts.loss.item() == pytest.approx(ref, rel=1e-10)
    assert parts.clip_fraction == pytest.approx(np.mean(np.abs(ratio - 1) > CLIP))
    eps = 1e-6
    fd = np.array([(reference_loss(flat + eps * e, obs, actions, old_logp, adv, returns)[0]
                    - reference_loss(flat - eps * e, obs, actions, old_logp, adv, returns)[0]) / (2 * eps)
                   for e in np.eye(flat.size)])
    np.testing.assert_allclose(get_flat_grad(net), fd, rtol=1e-5, atol=1e-8)


def test_nan_in_the_batch_raises_non_finite_loss():
    net = ActorCritic(OBS, ACT, HID)
    obs = torch.full((4, OBS), float("nan"))
    b = Batch(obs, torch.zeros(4, dtype=torch.long), torch.zeros(4), torch.ones(4), torch.zeros(4))
    with pytest.raises(NonFiniteLoss, match="PPO loss is nan"):
        ppo_loss(net, b, CLIP, ENT, VF)


def test_the_rollout_policys_kl_to_a_policy_is_zero_for_itself_and_matches_a_direct_computation():
    """KL(π_rollout ‖ π) over the last rollout's states (kl_adopted): 0 for the rollout's own
    weights, and for other weights the mean over the rollout's states of Σ_a p·(log p − log q)
    computed here from the network directly, state by state in the order they were collected."""
    import torch

    from olaf.plan.workload import PPOConfig
    from olaf.rl.learner import PPOLearner

    cfg = PPOConfig(n_steps=16, n_envs=2, batch_size=8, n_epochs=2)
    learner = PPOLearner("CartPole-v1", cfg, seed=3)
    assert learner.collector.kl_from_rollout_policy(learner.net) is None  # no rollout yet
    w0 = learner.get_weights()
    learner.iterate()                        # collects with w0, then trains (the buffer reorders its states)
    learner.set_weights(w0)
    assert learner.collector.kl_from_rollout_policy(learner.net) == pytest.approx(0.0, abs=1e-7)
    w1 = w0 + np.random.default_rng(0).normal(0, 0.05, w0.shape)
    learner.set_weights(w1)
    states = torch.as_tensor(learner.collector.states)
    assert states.shape == (32, 4)
    with torch.no_grad():
        learner.set_weights(w0)
        p = torch.softmax(learner.net(states)[0], -1)
        learner.set_weights(w1)
        q = torch.softmax(learner.net(states)[0], -1)
    want = float((p * (p.log() - q.log())).sum(-1).mean())
    assert want > 1e-4 and learner.collector.kl_from_rollout_policy(learner.net) == pytest.approx(want, rel=1e-3)
    learner.close()


@pytest.mark.parametrize(("scale", "drift", "want"), [(1.0, 0.5, 1 / 1.5), (0.5, 0.005, 0.75), (1.0, 0.001, 1.0),
                                                      (0.2, 0.03, 0.2), (0.2, 0.04, 0.2), (0.2, 0.041, 0.2 / 1.5),
                                                      (0.001, 9.0, 0.001)])
def test_the_drift_control_adapts_its_scale_outside_the_band_by_hand(scale, drift, want):
    """Target 0.02 nats: above 0.04 the scale falls by 1.5, below 0.01 it rises by 1.5, never above 1
    nor below 0.001; inside the band it stays."""
    from olaf.rl.drift import adapt_scale

    assert adapt_scale(scale, drift, 0.02) == pytest.approx(want)


def test_the_drift_control_refuses_a_bad_target_or_drift():
    from olaf.rl.drift import adapt_scale

    for kw in ({"drift": 0.1, "target": 0.0}, {"drift": -1.0, "target": 0.02}, {"drift": float("nan"), "target": 0.02}):
        with pytest.raises(ValueError):
            adapt_scale(1.0, **kw)


def test_the_target_kl_early_stop_ends_the_epochs_at_the_first_minibatch_over_it():
    """A target_kl far below any real step stops every iteration after its first minibatches (the
    epoch loop breaks before the step of the first minibatch over 1.5 × target_kl), and the
    iteration says so; without it every epoch runs."""
    from olaf.plan.workload import PPOConfig
    from olaf.rl.learner import PPOLearner

    tiny = PPOLearner("CartPole-v1", PPOConfig(n_steps=32, n_envs=2, batch_size=8, n_epochs=4, target_kl=1e-9), seed=5)
    full = PPOLearner("CartPole-v1", PPOConfig(n_steps=32, n_envs=2, batch_size=8, n_epochs=4), seed=5)
    a, b = tiny.iterate(), full.iterate()
    assert a.stats["kl_stopped"] == 1.0 and "kl_stopped" not in b.stats
    assert np.linalg.norm(a.direction) < np.linalg.norm(b.direction)
    tiny.close()
    full.close()

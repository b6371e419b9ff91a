"""The PS update rule of paper §2.1 on hand-computed fixed-point cases."""

import pytest

from olaf.fixedpoint import INT32_MAX, INT32_MIN
from olaf.hosts.global_model import GlobalModel, Outcome
from olaf.update import Update

ONE = 1 << 24  # 1.0 in Q7.24
R1 = 1 << 16  # 1.0 in Q15.16


def upd(reward_sum, grads, count=1, seq=1):
    return Update(cluster_id=0, worker_id=0, seq=seq, count=count, reward_sum=reward_sum, gen_ts=seq, grads=tuple(grads))


def test_init_first_wins_and_updates_before_init_change_nothing():
    m = GlobalModel(lr=0.001)
    assert m.apply(upd(0, [ONE, ONE])) is Outcome.BEFORE_INIT
    assert m.ack_weights() == () and m.global_reward_fixed() == INT32_MIN
    assert m.init([ONE, -2 * ONE]) is Outcome.INITIALISED
    assert m.init([5, 5]) is Outcome.INIT_IGNORED
    assert m.ack_weights() == (ONE, -2 * ONE)
    assert m.global_reward() is None


def test_reward_gated_averaged_gradient_by_hand():
    m = GlobalModel(lr=0.001)
    m.init([ONE, 0])
    # 1) first update, reward 2.0 > -inf: g = (2, -1), g_a = g, w = (1.002, -0.001)
    assert m.apply(upd(2 * R1, [2 * ONE, -ONE])) is Outcome.ACCEPTED
    assert m.ack_weights() == (round(1.002 * ONE), round(-0.001 * ONE))
    assert m.global_reward_fixed() == 2 * R1
    # 2) aggregate of 4 worker updates, reward_sum 9.0 -> mean 2.25 > 2.0;
    #    grads sum (4, 8) -> g = (1, 2); g_a = ((2+1)/2, (-1+2)/2) = (1.5, 0.5); w = (1.0035, -0.0005)
    assert m.apply(upd(9 * R1, [4 * ONE, 8 * ONE], count=4)) is Outcome.ACCEPTED
    assert m.ack_weights() == (round(1.0035 * ONE), round(-0.0005 * ONE))
    assert m.global_reward_fixed() == 9 * R1 // 4
    # 3) mean 2.25 again (not strictly greater): rejected, nothing changes
    before = m.ack_weights()
    assert m.apply(upd(9 * R1, [100 * ONE, 100 * ONE], count=4)) is Outcome.REJECTED
    assert m.apply(upd(2 * R1, [ONE, ONE])) is Outcome.REJECTED
    assert m.ack_weights() == before and m.global_reward() == 2.25
    # 4) mean 4.5/2 = 2.25 + 2^-17: exactly compared, accepted; g = (0, 0): g_a halves to (0.75, 0.25)
    assert m.apply(upd(round(4.5 * R1) + 1, [0, 0], count=2)) is Outcome.ACCEPTED
    assert m.ack_weights() == (round((1.0035 + 0.00075) * ONE), round((-0.0005 + 0.00025) * ONE))
    # the global reward is the update's mean, rounded half to even into Q15.16: (4.5*2^16 + 1)/2 -> 147456
    assert m.global_reward_fixed() == 147456
    assert m.accepted == 3


def test_wrong_size_and_saturation():
    m = GlobalModel(lr=1.0)
    m.init([INT32_MAX - 10, INT32_MIN + 10])
    assert m.apply(upd(0, [1, 2, 3])) is Outcome.WRONG_SIZE
    assert m.apply(upd(0, [ONE, -ONE])) is Outcome.ACCEPTED
    assert m.ack_weights() == (INT32_MAX, INT32_MIN)


def test_negative_rewards_and_bad_lr():
    m = GlobalModel()
    m.init([0])
    assert m.apply(upd(-30 * R1, [ONE])) is Outcome.ACCEPTED
    # mean -29.5 over 2 beats -30
    assert m.apply(upd(-59 * R1, [ONE], count=2)) is Outcome.ACCEPTED
    assert m.global_reward() == -29.5
    with pytest.raises(ValueError):
        GlobalModel(lr=0)


def test_the_step_size_falls_linearly_over_the_worker_updates_applied_then_stays():
    """γ_k = lr + (lr_final − lr)·min(1, k/decay_updates), k = worker updates applied (an aggregate of
    3 counts 3); a rejected update does not move the schedule."""
    m = GlobalModel(lr=1.0, step="sgd", gate=True, lr_final=0.5, decay_updates=4)
    m.init([0])
    one = 1 << 24
    assert m.step_size() == 1.0
    m.apply(Update(0, 1, 1, 1, 1 << 16, 0, (one,)))                  # k 0 -> 1, step 1.0
    assert m.weights.tolist() == [1.0] and m.step_size() == 0.875
    m.apply(Update(0, 1, 2, 3, 6 << 16, 0, (3 * one,)))              # aggregate of 3, mean reward 2: k 1 -> 4
    assert m.weights.tolist() == [1.875] and m.step_size() == 0.5
    assert m.apply(Update(0, 1, 3, 1, 0, 0, (one,))).value == "rejected" and m.applied == 4
    m.apply(Update(0, 1, 4, 1, 5 << 16, 0, (one,)))
    assert m.weights.tolist() == [2.375] and m.step_size() == 0.5    # stays at lr_final


def test_a_schedule_needs_both_ends():
    with pytest.raises(ValueError, match="lr_final > 0"):
        GlobalModel(lr=1.0, lr_final=0.1)
    with pytest.raises(ValueError, match="decay_updates >= 1"):
        GlobalModel(lr=1.0, lr_final=0.1, decay_updates=0)

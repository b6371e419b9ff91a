"""Reference model: each decision branch against hand-computed expectations."""

import pytest

from olaf.fixedpoint import INT32_MAX, reward_to_fixed
from olaf.queue_model import Decision, FifoQueue, OlafQueue, QueueConfig, aggregate, make_queue
from olaf.update import Update


def u(c, w, seq=0, grads=(0, 0), reward=0.0, count=1, gen_ts=0):
    return Update(cluster_id=c, worker_id=w, seq=seq, count=count,
                  reward_sum=reward_to_fixed(reward), gen_ts=gen_ts, grads=tuple(grads))


def q(**kw):
    cfg = dict(segments=3, num_clusters=4, num_grads=2)
    cfg.update(kw)
    return OlafQueue(QueueConfig(**cfg))


def test_append_then_fifo_departure():
    oq = q()
    assert oq.enqueue(u(0, 1), 0).decision is Decision.APPEND
    assert oq.enqueue(u(1, 2), 1).segment == 1
    assert [d.update.cluster_id for d in (oq.dequeue(), oq.dequeue())] == [0, 1]
    assert oq.dequeue() is None


def test_aggregate_sums_and_keeps_the_waiting_packet_identity():
    oq = q()
    oq.enqueue(u(2, 1, seq=7, grads=(5, -5), reward=1.0, gen_ts=100), 0)
    r = oq.enqueue(u(2, 2, seq=3, grads=(1, 2), reward=0.5, gen_ts=90), 1)
    assert (r.decision, r.segment) == (Decision.AGGREGATE, 0)
    out = oq.dequeue().update
    assert out == Update(cluster_id=2, worker_id=1, seq=7, count=2,
                         reward_sum=reward_to_fixed(1.5), gen_ts=100, grads=(6, -3))


def test_same_worker_replace_only_for_two_unaggregated_updates():
    oq = q()
    oq.enqueue(u(0, 1, seq=1, grads=(1, 1)), 0)
    assert oq.enqueue(u(0, 1, seq=2, grads=(2, 2)), 1).decision is Decision.REPLACE_WORKER
    assert oq.enqueue(u(0, 2, grads=(3, 3)), 2).decision is Decision.AGGREGATE
    # aggregation cleared replaceability
    assert oq.enqueue(u(0, 1, seq=3, grads=(4, 4)), 3).decision is Decision.AGGREGATE
    assert oq.dequeue().update.grads == (9, 9)
    # an upstream aggregate (count > 1) never replaces
    oq.enqueue(u(0, 1, grads=(1, 1)), 4)
    assert oq.enqueue(u(0, 1, grads=(1, 1), count=2), 5).decision is Decision.AGGREGATE


def test_reward_threshold_branches_compare_means_by_cross_multiplication():
    oq = q(reward_threshold=reward_to_fixed(1.0))
    oq.enqueue(u(0, 1, reward=4.0), 0)
    oq.enqueue(u(0, 2, reward=6.0), 1)  # mean 4 vs 6: +2 > T -> replace
    assert oq.counters.decisions[Decision.REPLACE_REWARD] == 1
    oq.enqueue(u(0, 3, reward=6.0), 2)  # equal -> aggregate: count 2, sum 12 (mean 6)
    # count-2 update with sum 9.8 (mean 4.9): 1.1 below -> drop
    assert oq.enqueue(u(0, 4, reward=9.8, count=2), 3).decision is Decision.DROP_REWARD
    # count-2 update with sum 10.0 (mean 5.0): exactly T below -> aggregate
    assert oq.enqueue(u(0, 4, reward=10.0, count=2), 4).decision is Decision.AGGREGATE
    out = oq.dequeue().update
    assert (out.count, out.reward_sum) == (4, reward_to_fixed(22.0))


def test_reward_filter_precedes_same_worker_replacement():
    oq = q(reward_threshold=0)
    oq.enqueue(u(1, 5, reward=2.0), 0)
    assert oq.enqueue(u(1, 5, reward=1.0), 1).decision is Decision.DROP_REWARD
    assert oq.enqueue(u(1, 5, reward=3.0), 2).decision is Decision.REPLACE_REWARD
    assert oq.enqueue(u(1, 5, reward=3.0), 3).decision is Decision.REPLACE_WORKER


def test_queue_full_drops_only_new_clusters():
    oq = q(segments=2)
    oq.enqueue(u(0, 1), 0)
    oq.enqueue(u(1, 1), 1)
    assert oq.enqueue(u(2, 1), 2).decision is Decision.DROP_FULL
    assert oq.enqueue(u(1, 2), 3).decision is Decision.AGGREGATE


def test_position_inheritance():
    oq = q()
    for c in range(3):
        oq.enqueue(u(c, c, grads=(c, c)), c)
    oq.enqueue(u(0, 9, grads=(1, 1)), 10)
    oq.enqueue(u(2, 2, seq=1, grads=(7, 7)), 11)
    outs = [oq.dequeue().update for _ in range(3)]
    assert [o.cluster_id for o in outs] == [0, 1, 2]
    assert outs[0].grads == (1, 1) and outs[2].grads == (7, 7)


def test_locked_head_gets_a_second_segment():
    oq = q()
    oq.enqueue(u(0, 1, grads=(1, 1)), 0)
    assert oq.lock_head() == 0
    r = oq.enqueue(u(0, 1, seq=1, grads=(2, 2)), 1)
    assert (r.decision, r.segment) == (Decision.APPEND, 1)
    assert oq.enqueue(u(0, 2, grads=(3, 3)), 2).segment == 1
    assert oq.dequeue().update.grads == (1, 1)
    assert oq.dequeue().update.grads == (5, 5)
    oq.check_invariants()


def test_segments_recycle_through_the_free_fifo():
    oq = q(segments=2)
    oq.enqueue(u(0, 0), 0)
    oq.enqueue(u(1, 0), 1)
    assert oq.dequeue().segment == 0
    assert oq.enqueue(u(2, 0), 2).segment == 0
    assert oq.dequeue().segment == 1
    assert oq.enqueue(u(3, 0), 3).segment == 1


def test_runtime_shrink_keeps_waiting_updates():
    oq = q()
    for c in range(3):
        oq.enqueue(u(c, 0), c)
    oq.configure(queue_size=1)
    assert oq.occupancy == 3
    assert oq.enqueue(u(3, 0), 5).decision is Decision.DROP_FULL
    oq.dequeue(), oq.dequeue()
    assert oq.enqueue(u(3, 0), 6).decision is Decision.DROP_FULL
    oq.dequeue()
    assert oq.enqueue(u(3, 0), 7).decision is Decision.APPEND
    with pytest.raises(ValueError, match="queue_size=4"):
        oq.configure(queue_size=4)


def test_status_and_activity_window():
    oq = q(activity_window_ns=100)
    oq.enqueue(u(0, 0), 1000)
    oq.enqueue(u(1, 0), 1050)
    s = oq.status(1100)
    assert (s.queue_util, s.active_clusters, s.queue_size) == (2, 2, 3)
    assert oq.status(1101).active_clusters == 1
    assert oq.status(1151).active_clusters == 0


def test_bad_input_raises_and_changes_nothing():
    oq = q()
    with pytest.raises(ValueError, match="cluster_id=4"):
        oq.enqueue(u(4, 0), 0)
    with pytest.raises(ValueError, match="3 grads"):
        oq.enqueue(u(0, 0, grads=(1, 2, 3)), 0)
    oq.enqueue(u(0, 0), 10)
    with pytest.raises(ValueError, match="backwards"):
        oq.enqueue(u(1, 0), 9)
    assert oq.occupancy == 1 and sum(oq.counters.decisions) == 1


@pytest.mark.parametrize("kw, field", [
    (dict(segments=0), "segments"),
    (dict(num_clusters=0), "num_clusters"),
    (dict(queue_size=9), "queue_size"),
    (dict(reward_threshold=-1), "reward_threshold"),
    (dict(activity_window_ns=-5), "activity_window_ns"),
])
def test_config_errors_name_the_field(kw, field):
    base = dict(segments=3, num_clusters=4, num_grads=2)
    base.update(kw)
    with pytest.raises(ValueError, match=field):
        QueueConfig(**base)


def test_fifo_baseline_never_folds():
    f = make_queue(QueueConfig(segments=2, num_clusters=2, num_grads=2), "fifo")
    assert isinstance(f, FifoQueue)
    assert f.enqueue(u(0, 1), 0).decision is Decision.APPEND
    assert f.enqueue(u(0, 1), 1).decision is Decision.APPEND
    assert f.enqueue(u(0, 2), 2).decision is Decision.DROP_FULL
    with pytest.raises(ValueError, match="discipline"):
        make_queue(QueueConfig(segments=1, num_clusters=1, num_grads=0), "red")


def test_aggregate_saturates():
    a = Update(cluster_id=0, worker_id=0, count=65535, reward_sum=INT32_MAX, grads=(INT32_MAX,))
    b = Update(cluster_id=0, worker_id=1, count=2, reward_sum=5, grads=(1,))
    r = aggregate(a, b)
    assert (r.count, r.reward_sum, r.grads) == (65535, INT32_MAX, (INT32_MAX,))

"""Property tests of the reference model's invariants (hypothesis state machine).

Invariants (docs/vectors.md, paper Alg. 1): at most one unlocked waiting update per key
(cluster, chunk; K = 1..3 chunks per update, docs/protocol.md "Chunks");
departures in the order segments were appended, whatever was folded into them
(position inheritance); conservation of worker updates (delivered + folded +
dropped + replaced + waiting = enqueued); occupancy bounded by the segments
and an APPEND only below queue_size.
"""

from collections import deque

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from olaf.fixedpoint import reward_to_fixed
from olaf.queue_model import Decision, QueueConfig, make_queue
from olaf.update import Update


class QueueMachine(RuleBasedStateMachine):
    @initialize(
        segments=st.integers(1, 6),
        num_clusters=st.integers(1, 6),
        threshold=st.sampled_from([None, 0, reward_to_fixed(1.0)]),
        discipline=st.sampled_from(["olaf", "olaf", "fifo"]),
        num_chunks=st.sampled_from([1, 1, 2, 3]),
    )
    def setup(self, segments, num_clusters, threshold, discipline, num_chunks):
        num_chunks = min(num_chunks, segments)
        self.q = make_queue(QueueConfig(segments=segments, num_clusters=num_clusters, num_grads=2,
                                        reward_threshold=threshold, num_chunks=num_chunks), discipline)
        self.appended_order: deque[int] = deque()
        self.t = 0

    @rule(data=st.data(), worker=st.integers(0, 3), count=st.integers(1, 3),
          reward=st.sampled_from([-2.0, 0.0, 0.5, 1.0, 3.0]), dt=st.integers(0, 50))
    def enqueue(self, data, worker, count, reward, dt):
        c = data.draw(st.integers(0, self.q.config.num_clusters - 1))
        k = self.q.config.num_chunks
        chunk = data.draw(st.integers(0, k - 1))
        self.t += dt
        before = self.q.occupancy
        u = Update(cluster_id=c, worker_id=worker, count=count, reward_sum=reward_to_fixed(reward) * count,
                   gen_ts=self.t, grads=(worker, -worker), chunk=chunk, num_chunks=k)
        key = self.q.key(u)
        assert key == c * k + chunk
        waiting_unlocked = self.q.cluster_status[key] is not None
        r = self.q.enqueue(u, self.t)
        if r.decision is Decision.APPEND:
            assert before < self.q.config.queue_size
            assert not waiting_unlocked
            self.appended_order.append(r.segment)
        elif r.decision is Decision.DROP_FULL:
            assert not waiting_unlocked and before >= self.q.config.queue_size
        elif r.decision is Decision.DROP_REWARD:
            assert waiting_unlocked and r.segment is None
        else:
            assert waiting_unlocked and r.segment == self.q.cluster_status[key]
            assert self.q.segments[r.segment].chunk == chunk  # folds only into its own slice
        assert self.q.occupancy == before + (r.decision is Decision.APPEND)
        st_ = self.q.status(self.t)
        assert st_.queue_util == -(-self.q.occupancy // k) and st_.queue_size == self.q.config.queue_size // k >= 1

    @rule()
    def dequeue(self):
        d = self.q.dequeue()
        if d is None:
            assert not self.appended_order
        else:
            assert d.segment == self.appended_order.popleft()

    @rule()
    def lock(self):
        seg = self.q.lock_head()
        assert seg == (self.appended_order[0] if self.appended_order else None)

    @rule(size=st.integers(1, 6))
    def resize(self, size):
        if self.q.config.num_chunks <= size <= self.q.config.segments:
            self.q.configure(queue_size=size)
        elif size < self.q.config.num_chunks:
            with pytest.raises(ValueError, match="no whole update"):
                self.q.configure(queue_size=size)

    @invariant()
    def structure(self):
        if hasattr(self, "q"):
            self.q.check_invariants()
            assert self.q.occupancy <= self.q.config.segments

    @invariant()
    def conservation(self):
        if hasattr(self, "q"):
            k = self.q.counters
            waiting = sum(u.count for u in self.q.waiting())
            assert k.enqueued_count == k.delivered_count + k.dropped_count + k.replaced_count + waiting


TestQueueMachine = QueueMachine.TestCase
TestQueueMachine.settings = settings(max_examples=200, stateful_step_count=60, deadline=None)

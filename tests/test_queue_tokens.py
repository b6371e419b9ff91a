"""The token ledger of the reference model (docs/dataplane.md "The token ledger").

Hypothesis state machine: updates go through a simulated traffic-manager queue that
loses, duplicates and reorders tokens, with expiry switched on and off and token ids
starting near the 2**32 wrap. After every step the segments are conserved (Σ append =
Σ departures + Σ lost + Σ expired + occupancy) and the model's invariants hold; every
``dequeue_token`` releases exactly its own segment (with the content that segment
accumulated) after reclaiming only older segments, or, stale, nothing at all.
Plus unit tests of the rules one by one.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from olaf.fixedpoint import reward_to_fixed
from olaf.queue_model import (
    TOKEN_MODULUS,
    Decision,
    OlafQueue,
    QueueConfig,
    Reclaim,
    TokenFate,
    aggregate,
    make_queue,
)
from olaf.update import Update


class TokenMachine(RuleBasedStateMachine):
    @initialize(segments=st.integers(1, 6), num_clusters=st.integers(1, 5),
                discipline=st.sampled_from(["olaf", "olaf", "fifo"]),
                max_sojourn_ns=st.sampled_from([0, 0, 5000, 50_000]),
                first_token=st.sampled_from([0, TOKEN_MODULUS - 3, 7]))
    def setup(self, segments, num_clusters, discipline, max_sojourn_ns, first_token):
        self.q = make_queue(QueueConfig(segments=segments, num_clusters=num_clusters, num_grads=2,
                                        max_sojourn_ns=max_sojourn_ns, first_token=first_token), discipline)
        self.t = 0
        self.tm: list[int] = []                 # tokens in the traffic manager's queue, oldest first
        self.shadow: dict[int, Update] = {}     # token -> the content its segment must depart with

    def live(self) -> list[int]:
        return [self.q.segment_token[s] for s in self.q.out_mem_addrs]  # type: ignore[misc]

    @rule(data=st.data(), worker=st.integers(0, 2), count=st.integers(1, 3),
          reward=st.sampled_from([-1.0, 0.0, 2.0]), dt=st.sampled_from([0, 10, 1000, 6000]), lose=st.booleans())
    def enqueue(self, data, worker, count, reward, dt, lose):
        c = data.draw(st.integers(0, self.q.config.num_clusters - 1))
        self.t += dt
        u = Update(cluster_id=c, worker_id=worker, count=count, reward_sum=reward_to_fixed(reward) * count,
                   gen_ts=self.t, grads=(worker, self.t % 1000))
        r = self.q.enqueue(u, self.t)
        if r.decision is Decision.APPEND:
            assert r.token is not None and r.token == self.live()[-1]
            self.shadow[r.token] = u
            if not lose:
                self.tm.append(r.token)
        else:
            assert r.token is None
            if r.segment is not None:
                tok = self.q.segment_token[r.segment]
                assert tok is not None
                self.shadow[tok] = aggregate(self.shadow[tok], u) if r.decision is Decision.AGGREGATE else u

    def deliver(self, token: int, dt: int) -> None:
        before = self.live()
        self.t += dt
        r = self.q.dequeue_token(token, self.t)
        after = self.live()
        gone = r.expired + r.lost
        assert after == before[len(before) - len(after):]     # segments leave at the head only
        if r.fate is TokenFate.STALE:
            assert r.departure is None and r.lost == 0
            assert token not in before[r.expired:] and after == before[r.expired:]
        else:
            # exactly its own segment, after reclaiming only older ones
            assert before[gone] == token and after == before[gone + 1:]
            assert r.departure is not None and r.departure.token == token
            assert r.departure.update == self.shadow[token]
            assert (r.fate is TokenFate.DEPARTED) == (r.lost == 0)
        assert token not in after

    @precondition(lambda self: bool(self.tm))
    @rule(duplicate=st.booleans(), dt=st.sampled_from([0, 10, 1000, 6000]))
    def deliver_oldest(self, duplicate, dt):
        self.deliver(self.tm[0] if duplicate else self.tm.pop(0), dt)

    @precondition(lambda self: bool(self.tm))
    @rule()
    def tm_drops_oldest(self):
        self.tm.pop(0)

    @precondition(lambda self: len(self.tm) > 1)
    @rule(data=st.data())
    def tm_reorders(self, data):
        i = data.draw(st.integers(1, len(self.tm) - 1))
        self.tm[0], self.tm[i] = self.tm[i], self.tm[0]

    @rule(token=st.integers(0, TOKEN_MODULUS - 1), dt=st.sampled_from([0, 1000]))
    def wild_token(self, token, dt):
        self.deliver(token, dt)

    @rule(dt=st.sampled_from([0, 1000, 60_000]))
    def status(self, dt):
        self.t += dt
        before = self.live()
        s = self.q.status(self.t)
        assert s.queue_util == len(self.live()) and self.live() == before[len(before) - len(self.live()):]

    @rule(max_sojourn_ns=st.sampled_from([0, 5000, 50_000]))
    def configure(self, max_sojourn_ns):
        self.q.configure(max_sojourn_ns=max_sojourn_ns)

    @rule()
    def lock(self):
        seg = self.q.lock_head()
        assert seg == (self.q.out_mem_addrs[0] if self.q.out_mem_addrs else None)

    @invariant()
    def ledger(self):
        if hasattr(self, "q"):
            self.q.check_invariants()     # includes Σ append = Σ departures + Σ lost + Σ expired + occupancy
            k = self.q.counters
            waiting = sum(u.count for u in self.q.waiting())
            assert k.enqueued_count == (k.delivered_count + k.dropped_count + k.replaced_count
                                        + k.reclaimed_count + waiting)


TestTokenMachine = TokenMachine.TestCase
TestTokenMachine.settings = settings(max_examples=250, stateful_step_count=60, deadline=None)


def u(c: int, w: int = 1, g: int = 0) -> Update:
    return Update(cluster_id=c, worker_id=w, count=1, reward_sum=0, gen_ts=0, grads=(g, g))


def q(**kw) -> OlafQueue:
    return OlafQueue(QueueConfig(**{"segments": 4, "num_clusters": 4, "num_grads": 2, **kw}))


def test_tokens_are_consecutive_serial_numbers_that_wrap():
    oq = q(first_token=TOKEN_MODULUS - 1)
    assert [oq.enqueue(u(c), 0).token for c in range(3)] == [TOKEN_MODULUS - 1, 0, 1]
    assert oq.enqueue(u(0, 2), 0).token is None            # aggregate: no new token
    assert [oq.token_position(t) for t in (TOKEN_MODULUS - 1, 0, 1, 2, TOKEN_MODULUS - 2)] == [0, 1, 2, None, None]


def test_lost_heads_are_reclaimed_per_cluster_and_the_token_departs_with_its_own_segment():
    oq = q()
    toks = [oq.enqueue(u(c, g=c), 10).token for c in (0, 1, 2)]
    r = oq.dequeue_token(toks[2], 20)
    assert (r.fate, r.lost, r.expired) == (TokenFate.DEPARTED_AFTER_LOSS, 2, 0)
    assert r.departure is not None and r.departure.update.grads == (2, 2)
    assert oq.counters.lost == [1, 1, 0, 0] and oq.occupancy == 0
    assert oq.enqueue(u(0), 30).decision is Decision.APPEND     # cluster 0 no longer waits
    assert oq.dequeue_token(toks[0], 40).fate is TokenFate.STALE


def test_expiry_is_strictly_older_than_max_sojourn():
    oq = q(max_sojourn_ns=100)
    oq.enqueue(u(0), 1000)
    assert oq.status(1100).queue_util == 1
    assert oq.status(1101).queue_util == 0
    assert oq.counters.expired == [1, 0, 0, 0]
    assert oq.counters.as_dict()["per_cluster"][0]["expired"] == 1


def test_reclaim_kinds_and_bad_arguments():
    assert [r.label for r in Reclaim] == ["lost", "expired"]
    with pytest.raises(ValueError, match="token="):
        q().dequeue_token(TOKEN_MODULUS, 0)
    with pytest.raises(ValueError, match="max_sojourn_ns"):
        QueueConfig(segments=1, num_clusters=1, num_grads=0, max_sojourn_ns=-1)
    with pytest.raises(ValueError, match="first_token"):
        QueueConfig(segments=1, num_clusters=1, num_grads=0, first_token=TOKEN_MODULUS)
    oq = q()
    oq.enqueue(u(0), 10)
    with pytest.raises(ValueError, match="backwards"):
        oq.dequeue_token(0, 5)
    assert oq.occupancy == 1

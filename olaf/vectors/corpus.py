"""The committed vector corpus (``tests/vectors/``): curated traces, each stating the
decision or event it exercises, seeded random traces over every event kind, and the
findings of the queue-core fuzzer (``fuzz_*.json``, re-derived from their own events).
``olaf vectors generate`` writes them; ``docs/vectors.md`` lists them."""

from __future__ import annotations

import random
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from olaf.fixedpoint import INT32_MAX, INT32_MIN, UINT16_MAX, reward_to_fixed
from olaf.queue_model import TOKEN_MODULUS, QueueConfig
from olaf.update import Update
from olaf.vectors.builder import TraceBuilder
from olaf.vectors.format import dumps, load


def make_update(c: int, w: int, seq: int = 0, *, grads: Iterable[int], reward: float = 0.0,
       count: int = 1, gen_ts: Optional[int] = None, reward_raw: Optional[int] = None,
       chunk: int = 0, num_chunks: int = 1) -> Update:
    """Shorthand update for curated traces (reward in reward units, converted to Q15.16)."""
    return Update(
        cluster_id=c, worker_id=w, seq=seq, count=count,
        reward_sum=reward_to_fixed(reward) if reward_raw is None else reward_raw,
        gen_ts=gen_ts if gen_ts is not None else 1_000_000 + 1000 * seq + w,
        grads=tuple(grads), chunk=chunk, num_chunks=num_chunks,
    )


# -- curated traces ---------------------------------------------------------------

CURATED: dict[str, Callable[[], TraceBuilder]] = {}


def curated(fn: Callable[[], TraceBuilder]) -> Callable[[], TraceBuilder]:
    CURATED[fn.__name__] = fn
    return fn


def small_config(**kw: Any) -> QueueConfig:
    base = dict(segments=4, num_clusters=4, num_grads=4, activity_window_ns=1_000_000)
    base.update(kw)
    return QueueConfig(**base)


@curated
def append_fifo_order() -> TraceBuilder:
    b = TraceBuilder("append_fifo_order", "Distinct clusters append in order and depart FIFO.", small_config())
    for c in range(3):
        b.enqueue(make_update(c, 10 + c, grads=[c, c + 1, c + 2, c + 3]), expect="append")
    for c in range(3):
        b.dequeue(expect_update=make_update(c, 10 + c, grads=[c, c + 1, c + 2, c + 3]))
    b.dequeue(expect_empty=True)
    return b


@curated
def aggregate_basic() -> TraceBuilder:
    b = TraceBuilder("aggregate_basic",
                     "Two workers of one cluster: the second folds into the first "
                     "(summed grads, count, reward sum; gen_ts = max; q keeps worker_id/seq).", small_config())
    b.enqueue(make_update(1, 1, 5, grads=[1, -2, 3, 100], reward=1.5, gen_ts=2000), expect="append")
    b.enqueue(make_update(1, 2, 9, grads=[10, 20, -30, -100], reward=2.25, gen_ts=1500), expect="aggregate")
    b.enqueue(make_update(1, 3, 1, grads=[0, 0, 0, 1], reward=-0.75, gen_ts=3000), expect="aggregate")
    b.dequeue(expect_update=Update(cluster_id=1, worker_id=1, seq=5, count=3,
                                   reward_sum=reward_to_fixed(3.0), gen_ts=3000,
                                   grads=(11, 18, -27, 1)))
    return b


@curated
def replace_same_worker() -> TraceBuilder:
    b = TraceBuilder("replace_same_worker",
                     "A worker's newer unaggregated update replaces its older one; an "
                     "aggregation clears replaceability (paper §3).", small_config())
    b.enqueue(make_update(0, 1, 1, grads=[1, 1, 1, 1]), expect="append")
    b.enqueue(make_update(0, 1, 2, grads=[2, 2, 2, 2]), expect="replace_worker")
    b.enqueue(make_update(0, 1, 3, grads=[3, 3, 3, 3]), expect="replace_worker")
    b.enqueue(make_update(0, 2, 1, grads=[4, 4, 4, 4]), expect="aggregate")
    b.enqueue(make_update(0, 1, 4, grads=[5, 5, 5, 5]), expect="aggregate")
    b.dequeue(expect_update=make_update(0, 1, 3, grads=[12, 12, 12, 12], count=3,
                               gen_ts=make_update(0, 1, 4, grads=[]).gen_ts))
    return b


@curated
def replace_needs_unaggregated_pair() -> TraceBuilder:
    b = TraceBuilder("replace_needs_unaggregated_pair",
                     "Same worker but count > 1 (an upstream aggregate) aggregates instead of "
                     "replacing; an appended aggregate is not replaceable.", small_config())
    b.enqueue(make_update(2, 7, 1, grads=[1, 2, 3, 4]), expect="append")
    b.enqueue(make_update(2, 7, 2, grads=[1, 1, 1, 1], count=3), expect="aggregate")
    b.dequeue()
    b.enqueue(make_update(2, 7, 3, grads=[1, 1, 1, 1], count=2), expect="append")
    b.enqueue(make_update(2, 7, 4, grads=[1, 1, 1, 1]), expect="aggregate")
    b.dequeue()
    return b


@curated
def reward_threshold_replace() -> TraceBuilder:
    b = TraceBuilder("reward_threshold_replace",
                     "Reward filtering: a mean reward higher by more than T replaces the waiting "
                     "update, which becomes replaceable by the new worker.",
                     small_config(reward_threshold=reward_to_fixed(1.0)))
    b.enqueue(make_update(0, 1, grads=[1, 1, 1, 1], reward=10.0), expect="append")
    b.enqueue(make_update(0, 2, grads=[2, 2, 2, 2], reward=11.5), expect="replace_reward")
    b.enqueue(make_update(0, 2, 1, grads=[3, 3, 3, 3], reward=11.0), expect="replace_worker")
    b.enqueue(make_update(0, 3, grads=[4, 4, 4, 4], reward=11.5), expect="aggregate")
    b.dequeue()
    return b


@curated
def reward_threshold_drop() -> TraceBuilder:
    b = TraceBuilder("reward_threshold_drop",
                     "Reward filtering: a mean reward lower by more than T is dropped, even from "
                     "the worker that could replace.",
                     small_config(reward_threshold=reward_to_fixed(0.5)))
    b.enqueue(make_update(3, 1, grads=[1, 1, 1, 1], reward=5.0), expect="append")
    b.enqueue(make_update(3, 2, grads=[9, 9, 9, 9], reward=4.0), expect="drop_reward")
    b.enqueue(make_update(3, 1, 1, grads=[9, 9, 9, 9], reward=4.25), expect="drop_reward")
    b.enqueue(make_update(3, 1, 2, grads=[2, 2, 2, 2], reward=4.75), expect="replace_worker")
    b.dequeue(expect_update=make_update(3, 1, 2, grads=[2, 2, 2, 2], reward=4.75))
    return b


@curated
def reward_threshold_boundary() -> TraceBuilder:
    b = TraceBuilder("reward_threshold_boundary",
                     "A difference of exactly T neither replaces nor drops; means of aggregates "
                     "are compared by cross-multiplying counts.",
                     small_config(reward_threshold=reward_to_fixed(1.0)))
    b.enqueue(make_update(0, 1, grads=[0, 0, 0, 0], reward=2.0), expect="append")
    b.enqueue(make_update(0, 2, grads=[0, 0, 0, 0], reward=3.0), expect="aggregate")    # +T exactly
    # waiting: count 2, mean 2.5; n: count 2, mean 3.5 -> +T exactly (cross-multiplied)
    b.enqueue(make_update(0, 3, grads=[0, 0, 0, 0], count=2, reward=7.0), expect="aggregate")
    # waiting: count 4, mean 3.0; n: mean 2.0 -> -T exactly
    b.enqueue(make_update(0, 4, grads=[0, 0, 0, 0], reward=2.0), expect="aggregate")
    # waiting: count 5, mean 2.8; n: mean 3.8 + 1/65536 -> just above +T
    b.enqueue(make_update(0, 5, grads=[0, 0, 0, 0], reward_raw=reward_to_fixed(3.8) + 1), expect="replace_reward")
    b.enqueue(make_update(0, 6, grads=[0, 0, 0, 0], reward=100.0), expect="replace_reward")
    b.enqueue(make_update(0, 7, grads=[0, 0, 0, 0], reward=-100.0), expect="drop_reward")
    b.dequeue()
    return b


@curated
def queue_full_drop() -> TraceBuilder:
    b = TraceBuilder("queue_full_drop",
                     "A full queue drops a new cluster's update but still aggregates and replaces "
                     "for clusters already waiting.", small_config(segments=2, num_clusters=3))
    b.enqueue(make_update(0, 1, grads=[1] * 4), expect="append")
    b.enqueue(make_update(1, 2, grads=[2] * 4), expect="append")
    b.enqueue(make_update(2, 3, grads=[3] * 4), expect="drop_full")
    b.enqueue(make_update(1, 4, grads=[4] * 4), expect="aggregate")
    b.enqueue(make_update(0, 1, 1, grads=[5] * 4), expect="replace_worker")
    b.status(expect=(2, 3))
    b.dequeue()
    b.enqueue(make_update(2, 3, 1, grads=[6] * 4), expect="append")
    b.drain()
    return b


@curated
def position_inheritance() -> TraceBuilder:
    b = TraceBuilder("position_inheritance",
                     "Aggregated and replaced updates keep the waiting update's place in the "
                     "departure order.", small_config())
    for c in range(4):
        b.enqueue(make_update(c, c, grads=[c] * 4), expect="append")
    b.enqueue(make_update(1, 9, grads=[1] * 4), expect="aggregate")
    b.enqueue(make_update(3, 3, 1, grads=[7] * 4), expect="replace_worker")
    b.enqueue(make_update(0, 8, grads=[1] * 4), expect="aggregate")
    deps = b.drain()
    assert [d.update.cluster_id for d in deps] == [0, 1, 2, 3]
    return b


@curated
def locked_head_second_segment() -> TraceBuilder:
    b = TraceBuilder("locked_head_second_segment",
                     "Once the head is locked for departure a new update of its cluster is "
                     "appended as a second segment and later ones fold into that (paper §12.1).",
                     small_config())
    b.enqueue(make_update(0, 1, grads=[1] * 4), expect="append")
    b.enqueue(make_update(1, 2, grads=[2] * 4), expect="append")
    b.lock(expect_segment=0)
    b.enqueue(make_update(0, 3, grads=[3] * 4), expect="append")
    b.enqueue(make_update(0, 1, 1, grads=[4] * 4), expect="aggregate")
    b.lock(expect_segment=0)
    b.dequeue(expect_update=make_update(0, 1, grads=[1] * 4))
    b.enqueue(make_update(1, 5, grads=[5] * 4), expect="aggregate")
    deps = b.drain()
    assert [d.update.cluster_id for d in deps] == [1, 0]
    return b


@curated
def locked_head_full() -> TraceBuilder:
    b = TraceBuilder("locked_head_full",
                     "With the head locked and the queue full, an update of the head's cluster "
                     "is dropped, and a replaceable head is no longer replaceable.",
                     small_config(segments=2))
    b.enqueue(make_update(0, 1, grads=[1] * 4), expect="append")
    b.enqueue(make_update(1, 2, grads=[2] * 4), expect="append")
    b.lock(expect_segment=0)
    b.enqueue(make_update(0, 1, 1, grads=[3] * 4), expect="drop_full")
    b.dequeue()
    b.enqueue(make_update(0, 1, 2, grads=[4] * 4), expect="append")
    b.drain()
    return b


@curated
def saturation() -> TraceBuilder:
    b = TraceBuilder("saturation",
                     "Gradient and reward sums saturate at the int32 limits, count at 65535.",
                     small_config())
    b.enqueue(make_update(0, 1, grads=[INT32_MAX - 5, INT32_MIN + 5, INT32_MAX, -1],
                 reward_raw=INT32_MAX - 1, count=UINT16_MAX - 1), expect="append")
    b.enqueue(make_update(0, 2, grads=[10, -10, INT32_MAX, INT32_MIN],
                 reward_raw=100, count=3), expect="aggregate")
    b.enqueue(make_update(0, 3, grads=[INT32_MIN, INT32_MAX, INT32_MIN, INT32_MIN],
                 reward_raw=INT32_MIN), expect="aggregate")
    b.dequeue()
    b.enqueue(make_update(1, 1, grads=[0] * 4, reward_raw=INT32_MIN + 1), expect="append")
    b.enqueue(make_update(1, 2, grads=[0] * 4, reward_raw=-7), expect="aggregate")
    b.dequeue()
    return b


@curated
def gen_ts_max() -> TraceBuilder:
    b = TraceBuilder("gen_ts_max",
                     "An aggregate carries the freshest generation time even when an older "
                     "update arrives later.", small_config())
    b.enqueue(make_update(0, 1, grads=[0] * 4, gen_ts=5_000), expect="append")
    b.enqueue(make_update(0, 2, grads=[0] * 4, gen_ts=9_000), expect="aggregate")
    b.enqueue(make_update(0, 3, grads=[0] * 4, gen_ts=7_000), expect="aggregate")
    b.enqueue(make_update(0, 4, grads=[0] * 4, gen_ts=(1 << 64) - 1), expect="aggregate")
    b.dequeue()
    return b


@curated
def segment_recycling() -> TraceBuilder:
    b = TraceBuilder("segment_recycling",
                     "Freed segments return to the tail of available_mem_addrs; addresses "
                     "rotate through the cyclic pointers.", small_config(segments=3, num_clusters=5))
    for i in range(12):
        b.enqueue(make_update(i % 5, i % 2, i, grads=[i] * 4))
        if i % 2:
            b.dequeue()
    b.drain()
    b.dequeue(expect_empty=True)
    b.lock(expect_segment=None)
    return b


@curated
def runtime_config() -> TraceBuilder:
    b = TraceBuilder("runtime_config",
                     "queue_size shrinks below occupancy without losing waiting updates; appends "
                     "resume below the new limit; reward filtering is switched on and off.",
                     small_config(segments=4, num_clusters=6))
    for c in range(4):
        b.enqueue(make_update(c, 1, grads=[c] * 4, reward=float(c)), expect="append")
    b.configure(queue_size=2)
    b.status(expect=(4, 4))
    b.enqueue(make_update(4, 1, grads=[4] * 4), expect="drop_full")
    b.enqueue(make_update(0, 2, grads=[1] * 4), expect="aggregate")
    b.dequeue()
    b.dequeue()
    b.enqueue(make_update(4, 1, grads=[4] * 4), expect="drop_full")
    b.dequeue()
    b.enqueue(make_update(4, 1, grads=[4] * 4), expect="append")
    b.configure(reward_threshold=reward_to_fixed(0.25))
    b.enqueue(make_update(3, 5, grads=[4] * 4, reward=1.0), expect="drop_reward")
    b.configure(reward_threshold=None, queue_size=4)
    b.enqueue(make_update(3, 5, grads=[4] * 4, reward=1.0), expect="aggregate")
    b.enqueue(make_update(5, 5, grads=[4] * 4, reward=1.0), expect="append")
    b.drain()
    return b


@curated
def activity_window() -> TraceBuilder:
    b = TraceBuilder("activity_window",
                     "Active clusters count arrivals (any decision) within the activity window.",
                     small_config(segments=1, num_clusters=4, activity_window_ns=10_000))
    b.status(expect=(0, 0))
    b.enqueue(make_update(0, 1, grads=[0] * 4), expect="append", dt_ns=1000)
    b.enqueue(make_update(1, 1, grads=[0] * 4), expect="drop_full", dt_ns=4000)
    b.status(dt_ns=0, expect=(1, 2))
    b.status(dt_ns=6000, expect=(1, 2))
    b.status(dt_ns=1, expect=(1, 1))
    b.configure(activity_window_ns=100_000)
    b.status(dt_ns=0, expect=(1, 2))
    b.dequeue()
    b.status(dt_ns=200_000, expect=(0, 0))
    return b


@curated
def activity_window_resighting() -> TraceBuilder:
    b = TraceBuilder("activity_window_resighting",
                     "A cluster seen twice in one nanosecond counts once and leaves the window once; "
                     "a cluster seen again after it left counts again; a shorter window takes effect at once.",
                     small_config(segments=4, num_clusters=4, activity_window_ns=10_000))
    b.enqueue(make_update(0, 1, grads=[0] * 4), dt_ns=1000)
    b.enqueue(make_update(0, 2, grads=[0] * 4), dt_ns=0)   # same cluster, same time
    b.enqueue(make_update(1, 1, grads=[0] * 4), dt_ns=2000)
    b.status(dt_ns=0, expect=(2, 2))
    b.status(dt_ns=8000, expect=(2, 2))    # t = 11000: cluster 0 seen 10000 ns ago, still inside
    b.status(dt_ns=1, expect=(2, 1))       # cluster 0 leaves (once), cluster 1 stays
    b.enqueue(make_update(0, 3, grads=[0] * 4), dt_ns=0)   # cluster 0 again
    b.status(dt_ns=0, expect=(2, 2))
    b.configure(activity_window_ns=5_000)
    b.status(dt_ns=0, expect=(2, 1))       # cluster 1 seen 8001 ns ago: outside the shorter window
    b.status(dt_ns=5001, expect=(2, 0))
    b.enqueue(make_update(2, 1, grads=[0] * 4), dt_ns=0)
    b.status(dt_ns=0, expect=(3, 1))
    b.drain()
    return b


@curated
def fifo_baseline() -> TraceBuilder:
    b = TraceBuilder("fifo_baseline",
                     "The FIFO baseline appends every update while there is room and tail-drops "
                     "otherwise; nothing is aggregated.", small_config(segments=3), discipline="fifo")
    b.enqueue(make_update(0, 1, grads=[1] * 4), expect="append")
    b.enqueue(make_update(0, 1, 1, grads=[2] * 4), expect="append")
    b.enqueue(make_update(0, 2, grads=[3] * 4), expect="append")
    b.enqueue(make_update(1, 1, grads=[4] * 4), expect="drop_full")
    b.status(expect=(3, 2))
    b.drain()
    return b


@curated
def no_grads() -> TraceBuilder:
    b = TraceBuilder("no_grads", "A deployment with zero gradient elements (reward only).",
                     small_config(num_grads=0))
    b.enqueue(make_update(0, 1, grads=[], reward=1.0), expect="append")
    b.enqueue(make_update(0, 2, grads=[], reward=2.0), expect="aggregate")
    b.dequeue()
    return b


# -- the token ledger (docs/dataplane.md "The token ledger") -------------------------------


@curated
def token_lost_reclaim() -> TraceBuilder:
    b = TraceBuilder("token_lost_reclaim",
                     "A token newer than the head's: the older heads whose tokens the traffic manager "
                     "dropped are reclaimed (lost, per cluster; a reclaimed cluster's next update appends) "
                     "and the token departs with its own segment; late tokens of reclaimed segments and "
                     "a duplicate are stale.", small_config())
    t0 = b.append(make_update(0, 1, grads=[1] * 4))
    t1 = b.append(make_update(1, 2, grads=[2] * 4))
    t2 = b.append(make_update(2, 3, grads=[3] * 4))
    b.enqueue(make_update(0, 4, grads=[4] * 4), expect="aggregate")
    b.dequeue_token(t2, expect="departed_after_loss", expect_lost=2, expect_update=make_update(2, 3, grads=[3] * 4))
    t3 = b.append(make_update(0, 5, grads=[5] * 4))
    b.dequeue_token(t0, expect="stale", expect_lost=0)
    b.dequeue_token(t1, expect="stale")
    b.dequeue_token(t3, expect="departed", expect_update=make_update(0, 5, grads=[5] * 4))
    b.dequeue_token(t3, expect="stale")
    b.status(expect=(0, 3))
    return b


@curated
def token_stale() -> TraceBuilder:
    b = TraceBuilder("token_stale",
                     "Stale tokens release nothing and disturb nothing: a token on an empty queue, one "
                     "never issued (beyond the tail), one half the serial space away, a duplicate.",
                     small_config())
    b.dequeue_token(0, expect="stale")
    t0 = b.append(make_update(0, 1, grads=[1] * 4))
    t1 = b.append(make_update(1, 1, grads=[2] * 4))
    b.dequeue_token((t1 + 1) % TOKEN_MODULUS, expect="stale")
    b.dequeue_token((t0 + (1 << 31)) % TOKEN_MODULUS, expect="stale")
    b.dequeue_token(TOKEN_MODULUS - 1, expect="stale")
    b.dequeue_token(t0, expect="departed", expect_update=make_update(0, 1, grads=[1] * 4))
    b.dequeue_token(t0, expect="stale")
    b.enqueue(make_update(1, 2, grads=[3] * 4), expect="aggregate")
    b.dequeue_token(t1, expect="departed", expect_lost=0)
    b.dequeue(expect_empty=True)
    return b


@curated
def token_expiry_unsticks_full_queue() -> TraceBuilder:
    b = TraceBuilder("token_expiry_unsticks_full_queue",
                     "Every token lost with the queue full: nothing newer can append, so only expiry "
                     "frees the segments. A head exactly max_sojourn_ns old stays; one a nanosecond "
                     "older is reclaimed by the next enqueue, status or token; a token arriving after "
                     "its own segment expired is stale.",
                     small_config(segments=2, num_clusters=3, max_sojourn_ns=10_000))
    t0 = b.append(make_update(0, 1, grads=[1] * 4), dt_ns=1000)      # t = 1000
    t1 = b.append(make_update(1, 2, grads=[2] * 4), dt_ns=1000)      # t = 2000
    b.enqueue(make_update(2, 3, grads=[3] * 4), expect="drop_full", dt_ns=1000)   # t = 3000
    b.status(dt_ns=8000, expect=(2, 3))                                           # t = 11000: 10000 old, kept
    t2 = b.append(make_update(2, 3, 1, grads=[4] * 4), dt_ns=1)      # t = 11001: cluster 0 expired
    b.status(dt_ns=1000, expect=(1, 3))                                           # t = 12001: cluster 1 expired
    b.dequeue_token(t0, expect="stale", dt_ns=0)
    b.dequeue_token(t1, expect="stale", dt_ns=0)
    b.dequeue_token(t2, expect="departed", expect_update=make_update(2, 3, 1, grads=[4] * 4), dt_ns=0)
    t3 = b.append(make_update(1, 2, 1, grads=[5] * 4))
    t4 = b.append(make_update(0, 1, 1, grads=[6] * 4))
    b.configure(max_sojourn_ns=500)
    b.dequeue_token(t4, expect="stale", expect_expired=2, dt_ns=1000)
    b.dequeue_token(t3, expect="stale", expect_expired=0, dt_ns=0)
    b.configure(max_sojourn_ns=0)
    b.dequeue_token(b.append(make_update(0, 1, 2, grads=[7] * 4)), expect="departed", expect_expired=0,
                    dt_ns=10**9)
    return b


@curated
def token_serial_wrap() -> TraceBuilder:
    b = TraceBuilder("token_serial_wrap",
                     "Token ids wrap from 2**32-1 to 0 (RFC 1982 serial arithmetic): a token after the "
                     "wrap reclaims the two lost before it; the late one before the wrap is stale.",
                     small_config(first_token=TOKEN_MODULUS - 2))
    toks = []
    for c in range(4):
        toks.append(b.append(make_update(c, 1, grads=[c] * 4)))
    assert toks == [TOKEN_MODULUS - 2, TOKEN_MODULUS - 1, 0, 1]
    b.dequeue_token(0, expect="departed_after_loss", expect_lost=2, expect_update=make_update(2, 1, grads=[2] * 4))
    b.dequeue_token(TOKEN_MODULUS - 1, expect="stale")
    b.dequeue_token(1, expect="departed", expect_update=make_update(3, 1, grads=[3] * 4))
    b.dequeue_token(2, expect="stale")
    assert b.append(make_update(0, 1, 1, grads=[9] * 4)) == 2
    b.dequeue_token(2, expect="departed")
    return b


@curated
def token_locked_head_lost() -> TraceBuilder:
    b = TraceBuilder("token_locked_head_lost",
                     "A locked head whose token is lost is reclaimed by the next token like any head; "
                     "the second segment of its cluster (paper §12.1) departs with its own token.",
                     small_config())
    b.enqueue(make_update(0, 1, grads=[1] * 4), expect="append")
    t1 = b.append(make_update(1, 2, grads=[2] * 4))
    b.lock(expect_segment=0)
    t2 = b.append(make_update(0, 3, grads=[3] * 4))
    b.dequeue_token(t1, expect="departed_after_loss", expect_lost=1, expect_update=make_update(1, 2, grads=[2] * 4))
    b.enqueue(make_update(0, 4, grads=[4] * 4), expect="aggregate")
    b.lock(expect_segment=2)
    b.dequeue_token(t2, expect="departed", expect_update=make_update(0, 3, grads=[7] * 4, count=2,
                                                                     gen_ts=make_update(0, 4, grads=[]).gen_ts))
    b.lock(expect_segment=None)
    return b


@curated
def token_fifo_loss() -> TraceBuilder:
    b = TraceBuilder("token_fifo_loss",
                     "The FIFO baseline uses the same ledger: a lost token of one cluster's second "
                     "update is reclaimed and the later updates depart with their own contents.",
                     small_config(segments=3), discipline="fifo")
    toks = []
    for s in range(3):
        toks.append(b.append(make_update(0, 1, s, grads=[s] * 4)))
    b.enqueue(make_update(1, 1, grads=[9] * 4), expect="drop_full")
    b.dequeue_token(toks[0], expect="departed", expect_update=make_update(0, 1, 0, grads=[0] * 4))
    b.dequeue_token(toks[2], expect="departed_after_loss", expect_lost=1,
                    expect_update=make_update(0, 1, 2, grads=[2] * 4))
    b.dequeue_token(toks[1], expect="stale")
    return b


@curated
def paper_testbed() -> TraceBuilder:
    """The paper's microbenchmark shape (§8.1): 8 segments, 9 clusters x 3 workers."""
    return random_trace("paper_testbed", seed=8, n_events=400,
                        config=QueueConfig(segments=8, num_clusters=9, num_grads=16,
                                           activity_window_ns=50_000),
                        workers_per_cluster=3, p_dequeue=0.25)


# -- chunked updates (key = (cluster, chunk); docs/protocol.md "Chunks") ---------------


def chunk_config(**kw: Any) -> QueueConfig:
    base = dict(segments=9, num_clusters=3, num_grads=2, num_chunks=3, activity_window_ns=1_000_000)
    base.update(kw)
    return QueueConfig(**base)


def _chunk(c: int, w: int, seq: int, k: int, *, base: int = 1, reward: float = 0.0, count: int = 1,
           num_chunks: int = 3) -> Update:
    """Chunk ``k`` of worker ``w``'s update ``seq`` (grads ``[base·(k+1), −base]``)."""
    return make_update(c, w, seq, grads=[base * (k + 1), -base], reward=reward, count=count,
                       chunk=k, num_chunks=num_chunks)


@curated
def chunks_interleaved() -> TraceBuilder:
    b = TraceBuilder("chunks_interleaved",
                     "K = 3: chunks of two workers of one cluster and one of another arrive interleaved; "
                     "each chunk folds only into the same chunk of its cluster (key = (cluster, chunk)); "
                     "the status counts updates: Q_n = ceil(segments / K), Q_max = floor(queue_size / K).",
                     chunk_config())
    b.enqueue(_chunk(0, 1, 0, 0), expect="append")
    b.enqueue(_chunk(0, 2, 0, 0, base=10), expect="aggregate")
    b.enqueue(_chunk(1, 5, 0, 0, base=100), expect="append")
    b.enqueue(_chunk(0, 2, 0, 1, base=10), expect="append")
    b.status(expect=(1, 2))
    b.enqueue(_chunk(0, 1, 0, 1), expect="aggregate")
    b.enqueue(_chunk(0, 1, 0, 2), expect="append")
    b.enqueue(_chunk(1, 5, 0, 2, base=100), expect="append")
    b.enqueue(_chunk(1, 5, 0, 1, base=100), expect="append")
    b.enqueue(_chunk(0, 2, 0, 2, base=10), expect="aggregate")
    b.status(expect=(2, 2))
    b.dequeue(expect_update=make_update(0, 1, 0, grads=[11, -11], count=2, chunk=0, num_chunks=3,
                                        gen_ts=_chunk(0, 2, 0, 0).gen_ts))
    b.drain()
    b.status(expect=(0, 2))
    return b


@curated
def chunk_lost() -> TraceBuilder:
    b = TraceBuilder("chunk_lost",
                     "K = 3: one worker's chunk 1 never arrives; chunks 0 and 2 aggregate with the other "
                     "worker's and chunk 1 departs with count 1: slices are delivered independently.",
                     chunk_config())
    for k in (0, 1, 2):
        b.enqueue(_chunk(2, 7, 4, k), expect="append")
    for k in (0, 2):
        b.enqueue(_chunk(2, 8, 9, k, base=3), expect="aggregate")
    deps = b.drain()
    assert [d.update.count for d in deps] == [2, 1, 2]
    return b


@curated
def chunk_replaced() -> TraceBuilder:
    b = TraceBuilder("chunk_replaced",
                     "K = 3: a worker's next update meets its own waiting one chunk by chunk: chunk 0 of "
                     "generation 2 replaces chunk 0 of generation 1 (same-worker rule per key) while "
                     "chunk 1, already aggregated with another worker, folds; a full queue drops the "
                     "chunk whose key has no segment.",
                     chunk_config(segments=4, queue_size=3))
    b.enqueue(_chunk(0, 1, 1, 0), expect="append")
    b.enqueue(_chunk(0, 1, 1, 1), expect="append")
    b.enqueue(_chunk(0, 3, 6, 1, base=5), expect="aggregate")
    b.enqueue(_chunk(0, 1, 1, 2), expect="append")
    b.enqueue(_chunk(0, 1, 2, 0, base=2), expect="replace_worker")
    b.enqueue(_chunk(0, 1, 2, 1, base=2), expect="aggregate")
    b.enqueue(_chunk(1, 4, 0, 0), expect="drop_full")
    b.status(expect=(1, 2))
    b.drain()
    return b


@curated
def chunks_two_generations() -> TraceBuilder:
    b = TraceBuilder("chunks_two_generations",
                     "K = 3 with a locked head: generation 1's chunk 0 is locked for departure, so "
                     "generation 2's chunk 0 appends a second segment for that key while its chunks 1 "
                     "and 2 replace generation 1's (paper §12.1 per key).",
                     chunk_config())
    for k in (0, 1, 2):
        b.enqueue(_chunk(1, 2, 1, k), expect="append")
    b.lock(expect_segment=0)
    for k in (0, 1, 2):
        b.enqueue(_chunk(1, 2, 2, k, base=4), expect="append" if k == 0 else "replace_worker")
    b.dequeue()
    b.enqueue(_chunk(1, 3, 0, 0, base=7), expect="aggregate")
    b.drain()
    return b


@curated
def chunk_reward_filter() -> TraceBuilder:
    b = TraceBuilder("chunk_reward_filter",
                     "K = 3, reward filtering per key: every chunk of an update carries its reward, so a "
                     "better update replaces the waiting chunks it meets and a worse one is dropped chunk by chunk.",
                     chunk_config(reward_threshold=reward_to_fixed(1.0)))
    for k in (0, 1):
        b.enqueue(_chunk(0, 1, 0, k, reward=5.0), expect="append")
    b.enqueue(_chunk(0, 2, 0, 0, reward=8.0), expect="replace_reward")
    b.enqueue(_chunk(0, 3, 0, 1, reward=2.0), expect="drop_reward")
    b.enqueue(_chunk(0, 3, 0, 2, reward=2.0), expect="append")
    b.drain()
    return b


# -- random traces --------------------------------------------------------------------


def random_trace(name: str, *, seed: int, n_events: int, config: QueueConfig,
                 discipline: str = "olaf", workers_per_cluster: int = 3,
                 p_dequeue: float = 0.3, p_lock: float = 0.05, p_status: float = 0.05,
                 p_configure: float = 0.02, extreme_values: bool = True) -> TraceBuilder:
    """A seeded random trace over every event kind.

    Rewards are drawn from a few levels around the threshold so that every
    reward branch fires; a share of gradients sits at the int32 extremes so
    saturation fires; some updates carry count > 1 (upstream aggregates).
    """
    rng = random.Random(seed)
    b = TraceBuilder(name, f"Seeded random trace (seed={seed}, {n_events} events, "
                           f"{discipline}).", config, discipline)
    seqs: dict[tuple[int, int], int] = {}
    levels = [-3.0, -1.0, 0.0, 0.5, 1.0, 1.25, 2.0, 4.0]
    for _ in range(n_events):
        r = rng.random()
        if r < p_dequeue:
            b.dequeue()
        elif r < p_dequeue + p_lock:
            b.lock()
        elif r < p_dequeue + p_lock + p_status:
            b.status(dt_ns=rng.choice([0, 500, 5000, 50_000]))
        elif r < p_dequeue + p_lock + p_status + p_configure:
            b.configure(**_random_config_change(rng, b.queue.config))
        else:
            c = rng.randrange(config.num_clusters)
            w = c * workers_per_cluster + rng.randrange(workers_per_cluster)
            seq = seqs.get((c, w), 0)
            seqs[(c, w)] = seq + 1
            count = 1 if rng.random() < 0.85 else rng.randint(2, 5)
            grads = [
                rng.choice([INT32_MAX, INT32_MIN, INT32_MAX - 1]) if extreme_values and rng.random() < 0.05
                else rng.randint(-(1 << 20), 1 << 20)
                for _ in range(config.num_grads)
            ]
            reward = reward_to_fixed(rng.choice(levels)) * count
            gen_ts = b.t_ns + rng.randint(-5000, 1000) + 10_000
            k = config.num_chunks
            b.enqueue(Update(cluster_id=c, worker_id=w, seq=seq, count=count, reward_sum=reward,
                             gen_ts=max(gen_ts, 0), grads=tuple(grads), chunk=rng.randrange(k) if k > 1 else 0, num_chunks=k),
                      dt_ns=rng.choice([0, 100, 1000, 3000]))
    b.drain()
    return b


def random_token_trace(name: str, *, seed: int, n_events: int, config: QueueConfig,
                       discipline: str = "olaf", p_loss: float = 0.05, p_dup: float = 0.03,
                       p_reorder: float = 0.05, p_wild: float = 0.02, p_lock: float = 0.02) -> TraceBuilder:
    """A seeded random trace through a lossy traffic manager: APPENDed tokens enter a FIFO
    that drops (``p_loss``), duplicates (``p_dup``) and reorders (``p_reorder``, swapping
    the two oldest) them; delivered tokens are ``dequeue_token`` events; ``p_wild`` sends a
    token that was never in the FIFO. Time jumps make heads expire when the config sets
    ``max_sojourn_ns``. Tokens still in the FIFO at the end are delivered."""
    rng = random.Random(seed)
    b = TraceBuilder(name, f"Seeded random trace through a lossy, reordering traffic manager (seed={seed}, "
                           f"{n_events} events, {discipline}).", config, discipline)
    tm: deque[int] = deque()
    seqs: dict[tuple[int, int], int] = {}
    levels = [-1.0, 0.0, 1.0, 2.5]
    dts = [0, 100, 1000, 3000, 3000, 30_000]
    for _ in range(n_events):
        r = rng.random()
        if r < 0.45:
            c = rng.randrange(config.num_clusters)
            w = c * 2 + rng.randrange(2)
            seq = seqs.get((c, w), 0)
            seqs[(c, w)] = seq + 1
            count = 1 if rng.random() < 0.85 else rng.randint(2, 4)
            b.last_token = None
            b.enqueue(Update(cluster_id=c, worker_id=w, seq=seq, count=count,
                             reward_sum=reward_to_fixed(rng.choice(levels)) * count, gen_ts=b.t_ns + 10_000,
                             grads=tuple(rng.randint(-1000, 1000) for _ in range(config.num_grads)),
                             chunk=rng.randrange(config.num_chunks) if config.num_chunks > 1 else 0,
                             num_chunks=config.num_chunks),
                      dt_ns=rng.choice(dts))
            if b.last_token is not None and rng.random() >= p_loss:
                tm.append(b.last_token)
        elif r < 0.80:
            if not tm:
                continue
            if len(tm) > 1 and rng.random() < p_reorder / 0.35:
                tm[0], tm[1] = tm[1], tm[0]
            tok = tm[0] if rng.random() < p_dup / 0.35 else tm.popleft()
            b.dequeue_token(tok, dt_ns=rng.choice(dts))
        elif r < 0.80 + p_wild:
            b.dequeue_token(rng.randrange(TOKEN_MODULUS), dt_ns=rng.choice(dts))
        elif r < 0.80 + p_wild + p_lock:
            b.lock()
        elif r < 0.97:
            b.status(dt_ns=rng.choice(dts))
        else:
            b.configure(**_random_config_change(rng, b.queue.config, with_sojourn=True))
    while tm:
        b.dequeue_token(tm.popleft(), dt_ns=rng.choice(dts))
    return b


def _random_config_change(rng: random.Random, cfg: QueueConfig, *, with_sojourn: bool = False) -> dict[str, Any]:
    change: dict[str, Any] = {}
    k = rng.randrange(4 if with_sojourn else 3)
    if k == 3:
        change["max_sojourn_ns"] = rng.choice([0, 5000, 20_000, 100_000])
    elif k == 0:
        change["queue_size"] = rng.randint(cfg.num_chunks, cfg.segments)  # Q_max = ⌊queue_size / K⌋ ≥ 1
    elif k == 1:
        change["reward_threshold"] = rng.choice([None, 0, reward_to_fixed(0.5), reward_to_fixed(1.0)])
    else:
        change["activity_window_ns"] = rng.choice([0, 2000, 20_000, 1_000_000])
    return change


RANDOM_SET: list[tuple[Any, ...]] = [
    # (name, seed, events, config kwargs, discipline[, p_lock])
    ("random_small_olaf", 1, 300, dict(segments=2, num_clusters=3, num_grads=4), "olaf"),
    ("random_threshold_olaf", 2, 400, dict(segments=4, num_clusters=5, num_grads=8,
                                           reward_threshold=reward_to_fixed(1.0)), "olaf"),
    ("random_wide_olaf", 3, 400, dict(segments=8, num_clusters=16, num_grads=32), "olaf"),
    ("random_one_segment_olaf", 4, 200, dict(segments=1, num_clusters=2, num_grads=2), "olaf"),
    ("random_fifo", 5, 300, dict(segments=4, num_clusters=5, num_grads=4), "fifo"),
    # Without lock events: a switch that locks and dequeues in one step (BMv2) replays these too.
    ("random_nolock_olaf", 6, 150, dict(segments=3, num_clusters=4, num_grads=4,
                                        reward_threshold=reward_to_fixed(1.0)), "olaf", 0.0),
    ("random_nolock_fifo", 7, 100, dict(segments=3, num_clusters=4, num_grads=4), "fifo", 0.0),
    # Chunked updates: key = (cluster, chunk).
    ("random_chunks_olaf", 8, 500, dict(segments=12, num_clusters=4, num_grads=3, num_chunks=4,
                                        reward_threshold=reward_to_fixed(1.0)), "olaf"),
    ("random_chunks_nolock_olaf", 9, 300, dict(segments=6, num_clusters=3, num_grads=2, num_chunks=5), "olaf", 0.0),
    ("random_chunks_fifo", 10, 200, dict(segments=6, num_clusters=3, num_grads=2, num_chunks=3), "fifo"),
]


TOKEN_RANDOM_SET: list[tuple[str, int, int, dict[str, Any], str]] = [
    # (name, seed, events, config kwargs, discipline): traces through a lossy traffic manager
    ("random_tokens_small_olaf", 21, 400, dict(segments=2, num_clusters=3, num_grads=2, max_sojourn_ns=20_000),
     "olaf"),
    ("random_tokens_wide_olaf", 22, 600, dict(segments=8, num_clusters=12, num_grads=4, max_sojourn_ns=50_000,
                                              reward_threshold=reward_to_fixed(1.0)), "olaf"),
    ("random_tokens_wrap_olaf", 23, 400, dict(segments=4, num_clusters=5, num_grads=2,
                                              first_token=TOKEN_MODULUS - 40), "olaf"),
    ("random_tokens_fifo", 24, 300, dict(segments=3, num_clusters=4, num_grads=2, max_sojourn_ns=30_000), "fifo"),
    ("random_tokens_chunks_olaf", 25, 500, dict(segments=10, num_clusters=4, num_grads=2, num_chunks=3,
                                                max_sojourn_ns=50_000), "olaf"),
]


def found_traces(found_dir: Path) -> list[TraceBuilder]:
    """The fuzzer's findings in ``found_dir`` (``fuzz_*.json``), rebuilt from their events'
    inputs through the model (olaf.vectors.differential)."""
    from olaf.vectors.differential import FOUND_PREFIX, build_found  # noqa: PLC0415 (imports this module)

    out = []
    for p in sorted(Path(found_dir).glob(f"{FOUND_PREFIX}*.json")):
        v = load(p)
        out.append(build_found(v["name"], v["description"], v))
    return out


def all_traces(extra_random: int = 0, seed: int = 1000, found_dir: Optional[Path] = None) -> list[TraceBuilder]:
    """The curated set, the fixed random sets, ``extra_random`` more random traces, and the
    fuzzer's findings kept in ``found_dir``."""
    traces = [fn() for fn in CURATED.values()]
    for name, s, n, kw, disc, *p_lock in RANDOM_SET:
        traces.append(random_trace(name, seed=s, n_events=n,
                                   config=QueueConfig(activity_window_ns=20_000, **kw),
                                   discipline=disc, p_lock=p_lock[0] if p_lock else 0.05))
    for name, s, n, kw, disc in TOKEN_RANDOM_SET:
        traces.append(random_token_trace(name, seed=s, n_events=n,
                                         config=QueueConfig(activity_window_ns=20_000, **kw), discipline=disc))
    rng = random.Random(seed)
    for i in range(extra_random):
        segs = rng.randint(1, 8)
        cfg = QueueConfig(segments=segs, num_clusters=rng.randint(1, 12), num_grads=rng.randint(0, 20),
                          reward_threshold=rng.choice([None, reward_to_fixed(0.5)]),
                          activity_window_ns=rng.choice([1000, 20_000]))
        traces.append(random_trace(f"random_extra_{seed}_{i}", seed=seed + i, n_events=300,
                                   config=cfg, discipline=rng.choice(["olaf", "olaf", "fifo"])))
    if found_dir is not None:
        traces += found_traces(found_dir)
    return traces


def write_traces(traces: Iterable[TraceBuilder], out_dir: Path) -> list[Path]:
    """Write each trace as ``<out_dir>/<name>.json`` (stable formatting: one event a line)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for t in traces:
        p = out_dir / f"{t.name}.json"
        p.write_text(dumps(t.to_json()))
        paths.append(p)
    return paths

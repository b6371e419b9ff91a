"""OlafQueue test vectors: traces of queue events with the expected outcome of each.

Format (``docs/vectors.md`` is the normative description): one JSON object per
file::

    {"format": "olaf-queue-vectors", "format_version": 1,
     "name": str, "description": str,
     "config": {"discipline": "olaf"|"fifo", "segments": int, "num_clusters": int,
                "num_grads": int, "queue_size": int,
                "reward_threshold": int|null, "activity_window_ns": int},
     "events": [event, ...],
     "final_counters": {"decisions": {...}, "per_cluster": [...]}}

Events (``op``):

* ``enqueue``: ``t_ns``, ``update`` (Update fields), ``expect`` = ``{"decision": label,
  "segment": int|null}``;
* ``lock``: ``expect`` = ``{"segment": int|null}``;
* ``dequeue``: ``expect`` = ``{"segment": int, "update": {...}}`` or null when empty;
* ``status``: ``t_ns``, ``expect`` = ``{"queue_util", "active_clusters", "queue_size"}``;
* ``configure``: any of ``queue_size``, ``reward_threshold`` (null disables),
  ``activity_window_ns``; no expectation.

The model (:mod:`olaf.queue_model`) computes every expectation; curated traces
additionally state the decision they are meant to exercise, so a trace that
stops exercising its branch fails to build.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from olaf.fixedpoint import INT32_MAX, INT32_MIN, UINT16_MAX, reward_to_fixed
from olaf.queue_model import Decision, OlafQueue, QueueConfig, make_queue
from olaf.update import Update

FORMAT = "olaf-queue-vectors"
FORMAT_VERSION = 1


# -- building traces ------------------------------------------------------------


class TraceBuilder:
    """Drives a reference queue and records each event with its expected result."""

    def __init__(self, name: str, description: str, config: QueueConfig, discipline: str = "olaf"):
        self.name = name
        self.description = description
        self.initial_config = config
        self.discipline = discipline
        self.queue: OlafQueue = make_queue(config, discipline)
        self.events: list[dict[str, Any]] = []
        self.t_ns = 0

    def tick(self, dt_ns: int = 1000) -> int:
        """Advance the trace clock by ``dt_ns`` and return the new time."""
        self.t_ns += dt_ns
        return self.t_ns

    def enqueue(self, update: Update, *, expect: Optional[str] = None, dt_ns: int = 1000) -> Optional[int]:
        """Record an enqueue; ``expect`` (a decision label) is asserted against the model."""
        t = self.tick(dt_ns)
        r = self.queue.enqueue(update, t)
        if expect is not None and r.decision.label != expect:
            raise AssertionError(
                f"{self.name}: event {len(self.events)} expected {expect}, model says {r.decision.label}"
            )
        self.events.append({
            "op": "enqueue",
            "t_ns": t,
            "update": update.to_json(),
            "expect": {"decision": r.decision.label, "segment": r.segment},
        })
        return r.segment

    def lock(self, *, expect_segment: object = ...) -> Optional[int]:
        seg = self.queue.lock_head()
        if expect_segment is not ... and seg != expect_segment:
            raise AssertionError(f"{self.name}: lock expected {expect_segment}, got {seg}")
        self.events.append({"op": "lock", "expect": {"segment": seg}})
        return seg

    def dequeue(self, *, expect_update: Optional[Update] = None, expect_empty: bool = False):
        dep = self.queue.dequeue()
        if expect_empty and dep is not None:
            raise AssertionError(f"{self.name}: expected an empty queue")
        if expect_update is not None and (dep is None or dep.update != expect_update):
            raise AssertionError(f"{self.name}: dequeue expected {expect_update}, got {dep}")
        self.events.append({
            "op": "dequeue",
            "expect": None if dep is None else {"segment": dep.segment, "update": dep.update.to_json()},
        })
        return dep

    def drain(self) -> list:
        out = []
        while self.queue.occupancy:
            out.append(self.dequeue())
        return out

    def status(self, *, dt_ns: int = 0, expect: Optional[tuple[int, int]] = None):
        t = self.tick(dt_ns)
        s = self.queue.status(t)
        if expect is not None and (s.queue_util, s.active_clusters) != expect:
            raise AssertionError(f"{self.name}: status expected {expect}, got {s}")
        self.events.append({
            "op": "status",
            "t_ns": t,
            "expect": {"queue_util": s.queue_util, "active_clusters": s.active_clusters,
                       "queue_size": s.queue_size},
        })
        return s

    def configure(self, **changes: Any) -> None:
        self.queue.configure(**changes)
        self.events.append({"op": "configure", **changes})

    def to_json(self) -> dict[str, Any]:
        c = self.initial_config
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "name": self.name,
            "description": self.description,
            "config": {
                "discipline": self.discipline,
                "segments": c.segments,
                "num_clusters": c.num_clusters,
                "num_grads": c.num_grads,
                "queue_size": c.queue_size,
                "reward_threshold": c.reward_threshold,
                "activity_window_ns": c.activity_window_ns,
            },
            "events": self.events,
            "final_counters": self.queue.counters.as_dict(),
        }


def _u(c: int, w: int, seq: int = 0, *, grads: Iterable[int], reward: float = 0.0,
       count: int = 1, gen_ts: Optional[int] = None, reward_raw: Optional[int] = None) -> Update:
    """Shorthand update for curated traces (reward in reward units, converted to Q15.16)."""
    return Update(
        cluster_id=c, worker_id=w, seq=seq, count=count,
        reward_sum=reward_to_fixed(reward) if reward_raw is None else reward_raw,
        gen_ts=gen_ts if gen_ts is not None else 1_000_000 + 1000 * seq + w,
        grads=tuple(grads),
    )


# -- curated traces ---------------------------------------------------------------

CURATED: dict[str, Callable[[], TraceBuilder]] = {}


def curated(fn: Callable[[], TraceBuilder]) -> Callable[[], TraceBuilder]:
    CURATED[fn.__name__] = fn
    return fn


def _cfg(**kw: Any) -> QueueConfig:
    base = dict(segments=4, num_clusters=4, num_grads=4, activity_window_ns=1_000_000)
    base.update(kw)
    return QueueConfig(**base)


@curated
def append_fifo_order() -> TraceBuilder:
    b = TraceBuilder("append_fifo_order", "Distinct clusters append in order and depart FIFO.", _cfg())
    for c in range(3):
        b.enqueue(_u(c, 10 + c, grads=[c, c + 1, c + 2, c + 3]), expect="append")
    for c in range(3):
        b.dequeue(expect_update=_u(c, 10 + c, grads=[c, c + 1, c + 2, c + 3]))
    b.dequeue(expect_empty=True)
    return b


@curated
def aggregate_basic() -> TraceBuilder:
    b = TraceBuilder("aggregate_basic",
                     "Two workers of one cluster: the second folds into the first "
                     "(summed grads, count, reward sum; gen_ts = max; q keeps worker_id/seq).", _cfg())
    b.enqueue(_u(1, 1, 5, grads=[1, -2, 3, 100], reward=1.5, gen_ts=2000), expect="append")
    b.enqueue(_u(1, 2, 9, grads=[10, 20, -30, -100], reward=2.25, gen_ts=1500), expect="aggregate")
    b.enqueue(_u(1, 3, 1, grads=[0, 0, 0, 1], reward=-0.75, gen_ts=3000), expect="aggregate")
    b.dequeue(expect_update=Update(cluster_id=1, worker_id=1, seq=5, count=3,
                                   reward_sum=reward_to_fixed(3.0), gen_ts=3000,
                                   grads=(11, 18, -27, 1)))
    return b


@curated
def replace_same_worker() -> TraceBuilder:
    b = TraceBuilder("replace_same_worker",
                     "A worker's newer unaggregated update replaces its older one; an "
                     "aggregation clears replaceability (paper §3).", _cfg())
    b.enqueue(_u(0, 1, 1, grads=[1, 1, 1, 1]), expect="append")
    b.enqueue(_u(0, 1, 2, grads=[2, 2, 2, 2]), expect="replace_worker")
    b.enqueue(_u(0, 1, 3, grads=[3, 3, 3, 3]), expect="replace_worker")
    b.enqueue(_u(0, 2, 1, grads=[4, 4, 4, 4]), expect="aggregate")
    b.enqueue(_u(0, 1, 4, grads=[5, 5, 5, 5]), expect="aggregate")
    b.dequeue(expect_update=_u(0, 1, 3, grads=[12, 12, 12, 12], count=3,
                               gen_ts=_u(0, 1, 4, grads=[]).gen_ts))
    return b


@curated
def replace_needs_unaggregated_pair() -> TraceBuilder:
    b = TraceBuilder("replace_needs_unaggregated_pair",
                     "Same worker but count > 1 (an upstream aggregate) aggregates instead of "
                     "replacing; an appended aggregate is not replaceable.", _cfg())
    b.enqueue(_u(2, 7, 1, grads=[1, 2, 3, 4]), expect="append")
    b.enqueue(_u(2, 7, 2, grads=[1, 1, 1, 1], count=3), expect="aggregate")
    b.dequeue()
    b.enqueue(_u(2, 7, 3, grads=[1, 1, 1, 1], count=2), expect="append")
    b.enqueue(_u(2, 7, 4, grads=[1, 1, 1, 1]), expect="aggregate")
    b.dequeue()
    return b


@curated
def reward_threshold_replace() -> TraceBuilder:
    b = TraceBuilder("reward_threshold_replace",
                     "Reward filtering: a mean reward higher by more than T replaces the waiting "
                     "update, which becomes replaceable by the new worker.",
                     _cfg(reward_threshold=reward_to_fixed(1.0)))
    b.enqueue(_u(0, 1, grads=[1, 1, 1, 1], reward=10.0), expect="append")
    b.enqueue(_u(0, 2, grads=[2, 2, 2, 2], reward=11.5), expect="replace_reward")
    b.enqueue(_u(0, 2, 1, grads=[3, 3, 3, 3], reward=11.0), expect="replace_worker")
    b.enqueue(_u(0, 3, grads=[4, 4, 4, 4], reward=11.5), expect="aggregate")
    b.dequeue()
    return b


@curated
def reward_threshold_drop() -> TraceBuilder:
    b = TraceBuilder("reward_threshold_drop",
                     "Reward filtering: a mean reward lower by more than T is dropped, even from "
                     "the worker that could replace.",
                     _cfg(reward_threshold=reward_to_fixed(0.5)))
    b.enqueue(_u(3, 1, grads=[1, 1, 1, 1], reward=5.0), expect="append")
    b.enqueue(_u(3, 2, grads=[9, 9, 9, 9], reward=4.0), expect="drop_reward")
    b.enqueue(_u(3, 1, 1, grads=[9, 9, 9, 9], reward=4.25), expect="drop_reward")
    b.enqueue(_u(3, 1, 2, grads=[2, 2, 2, 2], reward=4.75), expect="replace_worker")
    b.dequeue(expect_update=_u(3, 1, 2, grads=[2, 2, 2, 2], reward=4.75))
    return b


@curated
def reward_threshold_boundary() -> TraceBuilder:
    b = TraceBuilder("reward_threshold_boundary",
                     "A difference of exactly T neither replaces nor drops; means of aggregates "
                     "are compared by cross-multiplying counts.",
                     _cfg(reward_threshold=reward_to_fixed(1.0)))
    b.enqueue(_u(0, 1, grads=[0, 0, 0, 0], reward=2.0), expect="append")
    b.enqueue(_u(0, 2, grads=[0, 0, 0, 0], reward=3.0), expect="aggregate")    # +T exactly
    # waiting: count 2, mean 2.5; n: count 2, mean 3.5 -> +T exactly (cross-multiplied)
    b.enqueue(_u(0, 3, grads=[0, 0, 0, 0], count=2, reward=7.0), expect="aggregate")
    # waiting: count 4, mean 3.0; n: mean 2.0 -> -T exactly
    b.enqueue(_u(0, 4, grads=[0, 0, 0, 0], reward=2.0), expect="aggregate")
    # waiting: count 5, mean 2.8; n: mean 3.8 + 1/65536 -> just above +T
    b.enqueue(_u(0, 5, grads=[0, 0, 0, 0], reward_raw=reward_to_fixed(3.8) + 1), expect="replace_reward")
    b.enqueue(_u(0, 6, grads=[0, 0, 0, 0], reward=100.0), expect="replace_reward")
    b.enqueue(_u(0, 7, grads=[0, 0, 0, 0], reward=-100.0), expect="drop_reward")
    b.dequeue()
    return b


@curated
def queue_full_drop() -> TraceBuilder:
    b = TraceBuilder("queue_full_drop",
                     "A full queue drops a new cluster's update but still aggregates and replaces "
                     "for clusters already waiting.", _cfg(segments=2, num_clusters=3))
    b.enqueue(_u(0, 1, grads=[1] * 4), expect="append")
    b.enqueue(_u(1, 2, grads=[2] * 4), expect="append")
    b.enqueue(_u(2, 3, grads=[3] * 4), expect="drop_full")
    b.enqueue(_u(1, 4, grads=[4] * 4), expect="aggregate")
    b.enqueue(_u(0, 1, 1, grads=[5] * 4), expect="replace_worker")
    b.status(expect=(2, 3))
    b.dequeue()
    b.enqueue(_u(2, 3, 1, grads=[6] * 4), expect="append")
    b.drain()
    return b


@curated
def position_inheritance() -> TraceBuilder:
    b = TraceBuilder("position_inheritance",
                     "Aggregated and replaced updates keep the waiting update's place in the "
                     "departure order.", _cfg())
    for c in range(4):
        b.enqueue(_u(c, c, grads=[c] * 4), expect="append")
    b.enqueue(_u(1, 9, grads=[1] * 4), expect="aggregate")
    b.enqueue(_u(3, 3, 1, grads=[7] * 4), expect="replace_worker")
    b.enqueue(_u(0, 8, grads=[1] * 4), expect="aggregate")
    deps = b.drain()
    assert [d.update.cluster_id for d in deps] == [0, 1, 2, 3]
    return b


@curated
def locked_head_second_segment() -> TraceBuilder:
    b = TraceBuilder("locked_head_second_segment",
                     "Once the head is locked for departure a new update of its cluster is "
                     "appended as a second segment and later ones fold into that (paper §12.1).",
                     _cfg())
    b.enqueue(_u(0, 1, grads=[1] * 4), expect="append")
    b.enqueue(_u(1, 2, grads=[2] * 4), expect="append")
    b.lock(expect_segment=0)
    b.enqueue(_u(0, 3, grads=[3] * 4), expect="append")
    b.enqueue(_u(0, 1, 1, grads=[4] * 4), expect="aggregate")
    b.lock(expect_segment=0)
    b.dequeue(expect_update=_u(0, 1, grads=[1] * 4))
    b.enqueue(_u(1, 5, grads=[5] * 4), expect="aggregate")
    deps = b.drain()
    assert [d.update.cluster_id for d in deps] == [1, 0]
    return b


@curated
def locked_head_full() -> TraceBuilder:
    b = TraceBuilder("locked_head_full",
                     "With the head locked and the queue full, an update of the head's cluster "
                     "is dropped, and a replaceable head is no longer replaceable.",
                     _cfg(segments=2))
    b.enqueue(_u(0, 1, grads=[1] * 4), expect="append")
    b.enqueue(_u(1, 2, grads=[2] * 4), expect="append")
    b.lock(expect_segment=0)
    b.enqueue(_u(0, 1, 1, grads=[3] * 4), expect="drop_full")
    b.dequeue()
    b.enqueue(_u(0, 1, 2, grads=[4] * 4), expect="append")
    b.drain()
    return b


@curated
def saturation() -> TraceBuilder:
    b = TraceBuilder("saturation",
                     "Gradient and reward sums saturate at the int32 limits, count at 65535.",
                     _cfg())
    b.enqueue(_u(0, 1, grads=[INT32_MAX - 5, INT32_MIN + 5, INT32_MAX, -1],
                 reward_raw=INT32_MAX - 1, count=UINT16_MAX - 1), expect="append")
    b.enqueue(_u(0, 2, grads=[10, -10, INT32_MAX, INT32_MIN],
                 reward_raw=100, count=3), expect="aggregate")
    b.enqueue(_u(0, 3, grads=[INT32_MIN, INT32_MAX, INT32_MIN, INT32_MIN],
                 reward_raw=INT32_MIN), expect="aggregate")
    b.dequeue()
    b.enqueue(_u(1, 1, grads=[0] * 4, reward_raw=INT32_MIN + 1), expect="append")
    b.enqueue(_u(1, 2, grads=[0] * 4, reward_raw=-7), expect="aggregate")
    b.dequeue()
    return b


@curated
def gen_ts_max() -> TraceBuilder:
    b = TraceBuilder("gen_ts_max",
                     "An aggregate carries the freshest generation time even when an older "
                     "update arrives later.", _cfg())
    b.enqueue(_u(0, 1, grads=[0] * 4, gen_ts=5_000), expect="append")
    b.enqueue(_u(0, 2, grads=[0] * 4, gen_ts=9_000), expect="aggregate")
    b.enqueue(_u(0, 3, grads=[0] * 4, gen_ts=7_000), expect="aggregate")
    b.enqueue(_u(0, 4, grads=[0] * 4, gen_ts=(1 << 64) - 1), expect="aggregate")
    b.dequeue()
    return b


@curated
def segment_recycling() -> TraceBuilder:
    b = TraceBuilder("segment_recycling",
                     "Freed segments return to the tail of available_mem_addrs; addresses "
                     "rotate through the cyclic pointers.", _cfg(segments=3, num_clusters=5))
    for i in range(12):
        b.enqueue(_u(i % 5, i % 2, i, grads=[i] * 4))
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
                     _cfg(segments=4, num_clusters=6))
    for c in range(4):
        b.enqueue(_u(c, 1, grads=[c] * 4, reward=float(c)), expect="append")
    b.configure(queue_size=2)
    b.status(expect=(4, 4))
    b.enqueue(_u(4, 1, grads=[4] * 4), expect="drop_full")
    b.enqueue(_u(0, 2, grads=[1] * 4), expect="aggregate")
    b.dequeue()
    b.dequeue()
    b.enqueue(_u(4, 1, grads=[4] * 4), expect="drop_full")
    b.dequeue()
    b.enqueue(_u(4, 1, grads=[4] * 4), expect="append")
    b.configure(reward_threshold=reward_to_fixed(0.25))
    b.enqueue(_u(3, 5, grads=[4] * 4, reward=1.0), expect="drop_reward")
    b.configure(reward_threshold=None, queue_size=4)
    b.enqueue(_u(3, 5, grads=[4] * 4, reward=1.0), expect="aggregate")
    b.enqueue(_u(5, 5, grads=[4] * 4, reward=1.0), expect="append")
    b.drain()
    return b


@curated
def activity_window() -> TraceBuilder:
    b = TraceBuilder("activity_window",
                     "Active clusters count arrivals (any decision) within the activity window.",
                     _cfg(segments=1, num_clusters=4, activity_window_ns=10_000))
    b.status(expect=(0, 0))
    b.enqueue(_u(0, 1, grads=[0] * 4), expect="append", dt_ns=1000)
    b.enqueue(_u(1, 1, grads=[0] * 4), expect="drop_full", dt_ns=4000)
    b.status(dt_ns=0, expect=(1, 2))
    b.status(dt_ns=6000, expect=(1, 2))
    b.status(dt_ns=1, expect=(1, 1))
    b.configure(activity_window_ns=100_000)
    b.status(dt_ns=0, expect=(1, 2))
    b.dequeue()
    b.status(dt_ns=200_000, expect=(0, 0))
    return b


@curated
def fifo_baseline() -> TraceBuilder:
    b = TraceBuilder("fifo_baseline",
                     "The FIFO baseline appends every update while there is room and tail-drops "
                     "otherwise; nothing is aggregated.", _cfg(segments=3), discipline="fifo")
    b.enqueue(_u(0, 1, grads=[1] * 4), expect="append")
    b.enqueue(_u(0, 1, 1, grads=[2] * 4), expect="append")
    b.enqueue(_u(0, 2, grads=[3] * 4), expect="append")
    b.enqueue(_u(1, 1, grads=[4] * 4), expect="drop_full")
    b.status(expect=(3, 2))
    b.drain()
    return b


@curated
def no_grads() -> TraceBuilder:
    b = TraceBuilder("no_grads", "A deployment with zero gradient elements (reward only).",
                     _cfg(num_grads=0))
    b.enqueue(_u(0, 1, grads=[], reward=1.0), expect="append")
    b.enqueue(_u(0, 2, grads=[], reward=2.0), expect="aggregate")
    b.dequeue()
    return b


@curated
def paper_testbed() -> TraceBuilder:
    """The paper's microbenchmark shape (§8.1): 8 segments, 9 clusters x 3 workers."""
    return random_trace("paper_testbed", seed=8, n_events=400,
                        config=QueueConfig(segments=8, num_clusters=9, num_grads=16,
                                           activity_window_ns=50_000),
                        workers_per_cluster=3, p_dequeue=0.25)


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
            b.enqueue(Update(cluster_id=c, worker_id=w, seq=seq, count=count, reward_sum=reward,
                             gen_ts=max(gen_ts, 0), grads=tuple(grads)),
                      dt_ns=rng.choice([0, 100, 1000, 3000]))
    b.drain()
    return b


def _random_config_change(rng: random.Random, cfg: QueueConfig) -> dict[str, Any]:
    change: dict[str, Any] = {}
    k = rng.randrange(3)
    if k == 0:
        change["queue_size"] = rng.randint(1, cfg.segments)
    elif k == 1:
        change["reward_threshold"] = rng.choice([None, 0, reward_to_fixed(0.5), reward_to_fixed(1.0)])
    else:
        change["activity_window_ns"] = rng.choice([0, 2000, 20_000, 1_000_000])
    return change


RANDOM_SET = [
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
]


def all_traces(extra_random: int = 0, seed: int = 1000) -> list[TraceBuilder]:
    """The curated set, the fixed random set, and ``extra_random`` more random traces."""
    traces = [fn() for fn in CURATED.values()]
    for name, s, n, kw, disc, *p_lock in RANDOM_SET:
        traces.append(random_trace(name, seed=s, n_events=n,
                                   config=QueueConfig(activity_window_ns=20_000, **kw),
                                   discipline=disc, p_lock=p_lock[0] if p_lock else 0.05))
    rng = random.Random(seed)
    for i in range(extra_random):
        segs = rng.randint(1, 8)
        cfg = QueueConfig(segments=segs, num_clusters=rng.randint(1, 12), num_grads=rng.randint(0, 20),
                          reward_threshold=rng.choice([None, reward_to_fixed(0.5)]),
                          activity_window_ns=rng.choice([1000, 20_000]))
        traces.append(random_trace(f"random_extra_{seed}_{i}", seed=seed + i, n_events=300,
                                   config=cfg, discipline=rng.choice(["olaf", "olaf", "fifo"])))
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


def dumps(vector: dict[str, Any]) -> str:
    """Serialise a vector with one event per line (diff-friendly, still plain JSON)."""
    head = {k: v for k, v in vector.items() if k not in ("events", "final_counters")}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"  {json.dumps(k)}: {json.dumps(v)},")
    lines.append('  "events": [')
    ev = vector["events"]
    for i, e in enumerate(ev):
        lines.append("    " + json.dumps(e) + ("," if i < len(ev) - 1 else ""))
    lines.append("  ],")
    lines.append(f'  "final_counters": {json.dumps(vector["final_counters"])}')
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- loading and replaying ----------------------------------------------------------


class VectorFormatError(ValueError):
    """A vector file that does not follow the format; the message names the place."""


@dataclass
class Mismatch:
    event_index: int
    op: str
    expected: Any
    actual: Any

    def __str__(self) -> str:
        return f"event {self.event_index} ({self.op}): expected {self.expected}, got {self.actual}"


def load(path: Path) -> dict[str, Any]:
    """Load and check the envelope of a vector file; raises VectorFormatError."""
    try:
        v = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise VectorFormatError(f"{path}: not JSON: {e}") from None
    if v.get("format") != FORMAT:
        raise VectorFormatError(f"{path}: 'format' must be {FORMAT!r}")
    if v.get("format_version") != FORMAT_VERSION:
        raise VectorFormatError(
            f"{path}: format_version {v.get('format_version')!r} is not {FORMAT_VERSION}")
    for key in ("name", "config", "events"):
        if key not in v:
            raise VectorFormatError(f"{path}: missing {key!r}")
    return v


def config_of(vector: dict[str, Any]) -> tuple[QueueConfig, str]:
    c = dict(vector["config"])
    disc = c.pop("discipline", "olaf")
    return QueueConfig(**c), disc


def replay(vector: dict[str, Any]) -> list[Mismatch]:
    """Run the reference model over a vector; return every mismatch (empty = match)."""
    cfg, disc = config_of(vector)
    q = make_queue(cfg, disc)
    bad: list[Mismatch] = []
    for i, e in enumerate(vector["events"]):
        op = e["op"]
        if op == "enqueue":
            r = q.enqueue(Update.from_json(e["update"]), e["t_ns"])
            got = {"decision": r.decision.label, "segment": r.segment}
        elif op == "lock":
            got = {"segment": q.lock_head()}
        elif op == "dequeue":
            d = q.dequeue()
            got = None if d is None else {"segment": d.segment, "update": d.update.to_json()}
        elif op == "status":
            s = q.status(e["t_ns"])
            got = {"queue_util": s.queue_util, "active_clusters": s.active_clusters,
                   "queue_size": s.queue_size}
        elif op == "configure":
            q.configure(**{k: v for k, v in e.items() if k != "op"})
            continue
        else:
            raise VectorFormatError(f"event {i}: unknown op {op!r}")
        if got != e["expect"]:
            bad.append(Mismatch(i, op, e["expect"], got))
    if "final_counters" in vector and q.counters.as_dict() != vector["final_counters"]:
        bad.append(Mismatch(len(vector["events"]), "final_counters",
                            vector["final_counters"], q.counters.as_dict()))
    return bad


def decisions_covered(vector: dict[str, Any]) -> set[Decision]:
    return {Decision.from_label(e["expect"]["decision"])
            for e in vector["events"] if e["op"] == "enqueue"}

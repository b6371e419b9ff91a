"""OlafQueue reference model: the executable specification of the queue.

Pure Python, no I/O. The BMv2 extern (``p4src/extern``) and the Verilog RTL
(``verilog_queue/``) must make the same decisions and produce the same outputs
on every event; the test vectors in ``tests/vectors/`` are generated from this
module (:mod:`olaf.vectors`).

Memory organisation follows paper §4 "Memory Organization" and §12.1:
``segments`` physical segments, each holding one update; ``available_mem_addrs``
(FIFO of free segment addresses, initially 0, 1, …, segments-1; a freed
segment goes to its tail), ``out_mem_addrs`` (FIFO of occupied segments in
departure order), ``cluster_status`` (per cluster: the segment of its waiting,
unlocked update) and ``replace_status`` (per cluster: replace flag and
Worker_ID).

Enqueue decision for update ``n`` of cluster ``u`` from worker ``k``
(paper Alg. 1, §3 "reward filtering"; docs/vectors.md):

1. No unlocked update of ``u`` waiting: APPEND at the tail if occupancy <
   ``queue_size`` (and so a segment is free), marking it replaceable by ``k``
   iff ``n.count == 1``; else DROP_FULL.
2. Update ``q`` of ``u`` waiting and reward filtering enabled with threshold
   ``T``: mean reward of ``n`` lower than ``q``'s by more than ``T`` →
   DROP_REWARD; higher by more than ``T`` → REPLACE_REWARD. Means are compared
   without division: ``d = n.reward_sum*q.count - q.reward_sum*n.count`` against
   ``T*n.count*q.count``.
3. Otherwise, ``q`` replaceable by ``k`` and ``n.count == 1`` (two unaggregated
   updates of the same worker meet, paper §3) → REPLACE_WORKER.
4. Otherwise AGGREGATE in place: saturating int32 add of grads and
   reward_sum, saturating uint16 add of count, ``gen_ts = max``; ``q`` keeps its
   worker_id and seq (the packet stays ``q``'s packet); clear replaceable.

REPLACE and AGGREGATE keep ``q``'s segment and so its position in the departure
order (position inheritance). After a REPLACE the segment is replaceable by
the new update's worker iff its count is 1.

Dequeue is FIFO over ``out_mem_addrs``. :meth:`OlafQueue.lock_head` models the
head being scheduled for departure (the RTL streams it out beat by beat): a
locked update can no longer be modified, so a new update of its cluster is
appended as a second segment (paper §12.1 "Handling concurrency").

Runtime configuration (:meth:`OlafQueue.configure`): ``queue_size`` (occupancy
limit, at most ``segments``), ``reward_threshold`` (Q15.16, None disables) and
``activity_window_ns``. Shrinking ``queue_size`` never discards waiting
updates; appends resume when occupancy falls below the new limit.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from olaf.constants import Decision  # noqa: F401  (re-exported)
from olaf.fixedpoint import sat_add32, sat_add_u16
from olaf.update import Update
from olaf.wire import QueueStatus

_KEEP = object()


@dataclass(frozen=True)
class QueueConfig:
    """Static and runtime parameters of a queue.

    Attributes:
        segments: physical segments (≥ 1), fixed at construction.
        num_clusters: size of ``cluster_status`` (≥ 1); cluster ids are 0..num_clusters-1.
        num_grads: gradient elements per update, fixed per deployment (≥ 0).
        queue_size: occupancy limit in segments, 1..segments (default: segments).
        reward_threshold: ``T`` in Q15.16 reward units (≥ 0), None disables reward filtering.
        activity_window_ns: a cluster counts as active while ``now - last_arrival <= window``.

    Raises:
        ValueError: a parameter is out of range (the message names it).
    """

    segments: int
    num_clusters: int
    num_grads: int
    queue_size: Optional[int] = None
    reward_threshold: Optional[int] = None
    activity_window_ns: int = 1_000_000_000

    def __post_init__(self) -> None:
        if self.segments < 1:
            raise ValueError(f"segments={self.segments} must be >= 1")
        if self.num_clusters < 1 or self.num_clusters > 0xFFFF:
            raise ValueError(f"num_clusters={self.num_clusters} must be in 1..65535")
        if self.num_grads < 0:
            raise ValueError(f"num_grads={self.num_grads} must be >= 0")
        if self.queue_size is None:
            object.__setattr__(self, "queue_size", self.segments)
        if not 1 <= self.queue_size <= self.segments:  # type: ignore[operator]
            raise ValueError(
                f"queue_size={self.queue_size} must be in 1..segments ({self.segments})"
            )
        if self.reward_threshold is not None and not 0 <= self.reward_threshold < (1 << 31):
            raise ValueError(
                f"reward_threshold={self.reward_threshold} must be in 0..2**31-1 (Q15.16) or None"
            )
        if self.activity_window_ns < 0:
            raise ValueError(f"activity_window_ns={self.activity_window_ns} must be >= 0")


@dataclass(frozen=True)
class EnqueueResult:
    """Outcome of one enqueue: the decision and the segment it touched (None for drops)."""

    decision: Decision
    segment: Optional[int]


@dataclass(frozen=True)
class Departure:
    """A dequeued update and the segment it left from."""

    segment: int
    update: Update


@dataclass
class Counters:
    """Per-decision and per-cluster counters, plus worker-update accounting.

    ``decisions[d]`` counts enqueue events by decision; ``per_cluster[c][d]``
    the same per cluster; ``departures[c]`` dequeued updates per cluster.
    ``*_count`` fields add up the ``count`` field of the updates involved, for
    the conservation law checked in tests: enqueued_count == delivered_count +
    dropped_count + replaced_count + (counts still waiting).
    """

    num_clusters: int
    decisions: list[int] = field(default_factory=lambda: [0] * len(Decision))
    per_cluster: list[list[int]] = field(default_factory=list)
    departures: list[int] = field(default_factory=list)
    enqueued_count: int = 0
    delivered_count: int = 0
    dropped_count: int = 0
    replaced_count: int = 0

    def __post_init__(self) -> None:
        if not self.per_cluster:
            self.per_cluster = [[0] * len(Decision) for _ in range(self.num_clusters)]
        if not self.departures:
            self.departures = [0] * self.num_clusters

    def as_dict(self) -> dict:
        return {
            "decisions": {d.label: self.decisions[d] for d in Decision},
            "per_cluster": [
                {d.label: row[d] for d in Decision} | {"departures": self.departures[c]}
                for c, row in enumerate(self.per_cluster)
            ],
        }


@dataclass
class _ReplaceStatus:
    flag: bool = False
    worker_id: int = 0


class OlafQueue:
    """The OlafQueue (paper §4, Alg. 1) — see the module docstring for the rules."""

    discipline = "olaf"

    def __init__(self, config: QueueConfig) -> None:
        self.config = config
        n = config.segments
        self.segments: list[Optional[Update]] = [None] * n
        self.available_mem_addrs: deque[int] = deque(range(n))
        self.out_mem_addrs: deque[int] = deque()
        self.cluster_status: list[Optional[int]] = [None] * config.num_clusters
        self.replace_status = [_ReplaceStatus() for _ in range(config.num_clusters)]
        self.segment_cluster: list[Optional[int]] = [None] * n
        self.locked: Optional[int] = None
        self.last_seen_ns: list[Optional[int]] = [None] * config.num_clusters
        self.now_ns = 0
        self.counters = Counters(config.num_clusters)

    # -- runtime configuration -------------------------------------------------

    def configure(
        self,
        *,
        queue_size: Optional[int] = None,
        reward_threshold: object = _KEEP,
        activity_window_ns: Optional[int] = None,
    ) -> None:
        """Change runtime parameters (controller writes). Waiting updates are kept.

        ``reward_threshold=None`` disables reward filtering; leaving it out keeps
        it unchanged. Raises ValueError like :class:`QueueConfig`.
        """
        c = self.config
        self.config = QueueConfig(
            segments=c.segments,
            num_clusters=c.num_clusters,
            num_grads=c.num_grads,
            queue_size=c.queue_size if queue_size is None else queue_size,
            reward_threshold=c.reward_threshold if reward_threshold is _KEEP else reward_threshold,  # type: ignore[arg-type]
            activity_window_ns=c.activity_window_ns if activity_window_ns is None else activity_window_ns,
        )

    # -- enqueue ---------------------------------------------------------------

    def enqueue(self, update: Update, now_ns: int) -> EnqueueResult:
        """Offer ``update`` arriving at ``now_ns`` (ns, non-decreasing).

        Raises:
            ValueError: cluster_id ≥ num_clusters, wrong number of grads, or
                time going backwards. Nothing changes in that case.
        """
        self._check_update(update)
        self._advance(now_ns)
        c = update.cluster_id
        self.last_seen_ns[c] = now_ns
        result = self._decide(update)
        self._count(update, result.decision)
        return result

    def _check_update(self, u: Update) -> None:
        if u.cluster_id >= self.config.num_clusters:
            raise ValueError(
                f"cluster_id={u.cluster_id} is outside 0..{self.config.num_clusters - 1}"
            )
        if len(u.grads) != self.config.num_grads:
            raise ValueError(
                f"update has {len(u.grads)} grads, the queue is configured for {self.config.num_grads}"
            )

    def _advance(self, now_ns: int) -> None:
        if now_ns < self.now_ns:
            raise ValueError(f"time went backwards: {now_ns} ns < {self.now_ns} ns")
        self.now_ns = now_ns

    def _decide(self, n: Update) -> EnqueueResult:
        c = n.cluster_id
        seg = self.cluster_status[c]
        if seg is None:
            return self._append(n)
        q = self.segments[seg]
        assert q is not None
        rs = self.replace_status[c]
        threshold = self.config.reward_threshold
        if threshold is not None:
            d = n.reward_sum * q.count - q.reward_sum * n.count
            limit = threshold * n.count * q.count
            if d < -limit:
                return EnqueueResult(Decision.DROP_REWARD, None)
            if d > limit:
                self._overwrite(seg, n, q)
                return EnqueueResult(Decision.REPLACE_REWARD, seg)
        if rs.flag and rs.worker_id == n.worker_id and n.count == 1:
            self._overwrite(seg, n, q)
            return EnqueueResult(Decision.REPLACE_WORKER, seg)
        self.segments[seg] = aggregate(q, n)
        rs.flag = False
        rs.worker_id = 0
        return EnqueueResult(Decision.AGGREGATE, seg)

    def _append(self, n: Update, *, track: bool = True) -> EnqueueResult:
        """Take the next free segment (tail of the departure order) or DROP_FULL.

        ``track`` records the segment in cluster_status / replace_status (the
        FIFO baseline does not track clusters).
        """
        if len(self.out_mem_addrs) >= self.limit or not self.available_mem_addrs:
            return EnqueueResult(Decision.DROP_FULL, None)
        seg = self.available_mem_addrs.popleft()
        self.segments[seg] = n
        self.segment_cluster[seg] = n.cluster_id
        self.out_mem_addrs.append(seg)
        if track:
            self.cluster_status[n.cluster_id] = seg
            self._mark_replaceable(n)
        return EnqueueResult(Decision.APPEND, seg)

    def _overwrite(self, seg: int, n: Update, old: Update) -> None:
        self.segments[seg] = n
        self.counters.replaced_count += old.count
        self._mark_replaceable(n)

    def _mark_replaceable(self, n: Update) -> None:
        rs = self.replace_status[n.cluster_id]
        rs.flag = n.count == 1
        rs.worker_id = n.worker_id if rs.flag else 0

    def _count(self, n: Update, d: Decision) -> None:
        k = self.counters
        k.decisions[d] += 1
        k.per_cluster[n.cluster_id][d] += 1
        k.enqueued_count += n.count
        if d.is_drop:
            k.dropped_count += n.count

    # -- dequeue ---------------------------------------------------------------

    def lock_head(self) -> Optional[int]:
        """Lock the head segment for departure; return its address (None if empty).

        Idempotent. After this, updates of the head's cluster no longer fold into it.
        """
        if not self.out_mem_addrs:
            return None
        head = self.out_mem_addrs[0]
        if self.locked != head:
            self.locked = head
            c = self.segment_cluster[head]
            assert c is not None
            if self.cluster_status[c] == head:
                self.cluster_status[c] = None
                self.replace_status[c] = _ReplaceStatus()
        return head

    def dequeue(self) -> Optional[Departure]:
        """Remove and return the head update (locking it first); None if empty."""
        head = self.lock_head()
        if head is None:
            return None
        self.out_mem_addrs.popleft()
        update = self.segments[head]
        assert update is not None
        c = self.segment_cluster[head]
        assert c is not None
        self.segments[head] = None
        self.segment_cluster[head] = None
        self.available_mem_addrs.append(head)
        self.locked = None
        self.counters.departures[c] += 1
        self.counters.delivered_count += update.count
        return Departure(head, update)

    # -- status ----------------------------------------------------------------

    @property
    def limit(self) -> int:
        """The occupancy limit Q_max in segments (``config.queue_size``, resolved)."""
        return self.config.queue_size or self.config.segments

    @property
    def occupancy(self) -> int:
        """Occupied segments, including a locked head."""
        return len(self.out_mem_addrs)

    def active_clusters(self, now_ns: int) -> int:
        """Clusters whose last arrival is within the activity window of ``now_ns``."""
        w = self.config.activity_window_ns
        return sum(1 for s in self.last_seen_ns if s is not None and now_ns - s <= w)

    def status(self, now_ns: int) -> QueueStatus:
        """Queue status for an ACK at ``now_ns`` (ns, non-decreasing).

        Raises ValueError if time goes backwards.
        """
        self._advance(now_ns)
        return QueueStatus(
            queue_util=self.occupancy,
            active_clusters=self.active_clusters(now_ns),
            queue_size=self.config.queue_size,  # type: ignore[arg-type]
        )

    def waiting(self) -> list[Update]:
        """Updates in departure order (head first)."""
        return [self.segments[s] for s in self.out_mem_addrs]  # type: ignore[misc]

    # -- invariants ------------------------------------------------------------

    def check_invariants(self) -> None:
        """Raise AssertionError if an internal invariant is broken (used by tests)."""
        n = self.config.segments
        out, free = list(self.out_mem_addrs), list(self.available_mem_addrs)
        assert sorted(out + free) == list(range(n)), "segments leaked or duplicated"
        assert len(out) <= n
        for s in range(n):
            assert (self.segments[s] is None) == (s not in out), f"segment {s} state"
        assert self.locked is None or (bool(out) and self.locked == out[0]), "lock not at head"
        seen: set[int] = set()
        for c, cs in enumerate(self.cluster_status):
            if cs is None:
                assert not self.replace_status[c].flag
                continue
            assert cs in out and cs != self.locked, f"cluster {c} points to a bad segment"
            assert self.segment_cluster[cs] == c
            assert cs not in seen
            seen.add(cs)
        waiting_unlocked = [self.segment_cluster[s] for s in out if s != self.locked]
        if self.discipline == "olaf":
            assert len(waiting_unlocked) == len(set(waiting_unlocked)), (
                "two unlocked updates of one cluster"
            )


class FifoQueue(OlafQueue):
    """Plain tail-drop FIFO of the same size and interface (the paper's baseline, §8.1).

    Every update is APPENDed while occupancy < queue_size, else DROP_FULL;
    nothing is aggregated or replaced.
    """

    discipline = "fifo"

    def _decide(self, n: Update) -> EnqueueResult:
        return self._append(n, track=False)


def aggregate(q: Update, n: Update) -> Update:
    """Fold ``n`` into the waiting ``q`` (paper Alg. 1, docs/vectors.md "aggregate").

    Saturating int32 add of grads and reward_sum, saturating uint16 add of
    count, ``gen_ts = max``; worker_id and seq stay ``q``'s.

    Raises ValueError if the gradient lengths differ.
    """
    if len(q.grads) != len(n.grads):
        raise ValueError(f"cannot aggregate {len(n.grads)} grads into {len(q.grads)}")
    return Update(
        cluster_id=q.cluster_id,
        worker_id=q.worker_id,
        seq=q.seq,
        count=sat_add_u16(q.count, n.count),
        reward_sum=sat_add32(q.reward_sum, n.reward_sum),
        gen_ts=max(q.gen_ts, n.gen_ts),
        grads=tuple(sat_add32(a, b) for a, b in zip(q.grads, n.grads)),
    )


def make_queue(config: QueueConfig, discipline: str = "olaf") -> OlafQueue:
    """An :class:`OlafQueue` or :class:`FifoQueue` by name ("olaf" | "fifo")."""
    if discipline == "olaf":
        return OlafQueue(config)
    if discipline == "fifo":
        return FifoQueue(config)
    raise ValueError(f"discipline={discipline!r}: expected 'olaf' or 'fifo'")

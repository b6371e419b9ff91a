"""OlafQueue reference model: the executable specification of the queue.

Pure Python, no I/O. The BMv2 extern (``p4src/extern``) and the Verilog RTL
(``verilog_queue/``) must make the same decisions and produce the same outputs
on every event; the test vectors in ``tests/vectors/`` are generated from this
module (:mod:`olaf.vectors`).

Memory organisation follows paper §4 "Memory Organization" and §12.1:
``segments`` physical segments, each holding one update; ``available_mem_addrs``
(FIFO of free segment addresses, initially 0, 1, …, segments-1; a freed
segment goes to its tail), ``out_mem_addrs`` (FIFO of occupied segments in
departure order), ``cluster_status`` (per key: the segment of its waiting,
unlocked update) and ``replace_status`` (per key: replace flag and
Worker_ID).

**Keys and chunks.** A deployment whose model travels in K chunks (:mod:`olaf.chunks`,
``num_chunks``) keys the queue by (cluster, chunk): key ``cluster · K + chunk``. Every
rule below applies per key, as if each chunk index were a cluster of its own; chunks of
one update are never joined (no reassembly). K = 1 is the paper's queue exactly. The
activity count stays per cluster, and the status keeps paper §5's meaning in *updates*:
``Q_n = ⌈occupancy / K⌉`` and ``Q_max = ⌊queue_size / K⌋`` (so ``queue_size`` must be
at least K).

Enqueue decision for update ``n`` of key ``u`` (its cluster and chunk) from worker ``k``
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

The token ledger (docs/dataplane.md "The token ledger"). Where the departure order
is carried by packets that can be lost or reordered (BMv2: an APPENDed packet is a
*token* in the traffic manager's queue toward the PS), every APPEND returns a token
id, a 32-bit serial number (RFC 1982, wrapping) issued in order. Segments leave the
departure order only at its head, so the live tokens are always consecutive: the
head holds the oldest. :meth:`OlafQueue.dequeue_token` takes the token that reached
egress; its position ``p = (token − head token) mod 2**32`` (RFC 1982 serial
arithmetic) decides:

* ``p = 0``: the head departs (:attr:`TokenFate.DEPARTED`);
* ``0 < p < occupancy``: the ``p`` older heads lost their tokens in the traffic
  manager; they are reclaimed (counted ``lost`` per cluster) and the token's own
  segment departs (:attr:`TokenFate.DEPARTED_AFTER_LOSS`);
* otherwise the token is older than the head (its segment was reclaimed) or was
  never issued: nothing departs (:attr:`TokenFate.STALE`).

So a token releases exactly its own segment, or nothing. A segment whose token
was lost with no newer token behind it (every token lost) is reclaimed by
*expiry*: at every timed event (enqueue, status, dequeue_token at ``now``), heads
appended more than ``max_sojourn_ns`` before ``now`` are reclaimed (counted
``expired``; 0 disables). At all times Σ APPEND = Σ departures + Σ lost +
Σ expired + occupancy. :meth:`OlafQueue.dequeue` departs the head without a token,
for shells whose token FIFO cannot lose tokens (the RTL, the ns-3 QueueDisc).

Runtime configuration (:meth:`OlafQueue.configure`): ``queue_size`` (occupancy
limit, at most ``segments``), ``reward_threshold`` (Q15.16, None disables),
``activity_window_ns`` and ``max_sojourn_ns``. Shrinking ``queue_size`` never
discards waiting updates; appends resume when occupancy falls below the new limit.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from olaf.constants import DEFAULT_ACTIVITY_WINDOW_NS, Decision, Reclaim, TokenFate  # noqa: F401  (re-exported)
from olaf.fixedpoint import sat_add32, sat_add_u16
from olaf.update import Update
from olaf.wire import QueueStatus

_KEEP = object()

TOKEN_MODULUS = 1 << 32
"""Token ids are RFC 1982 serial numbers with SERIAL_BITS = 32: arithmetic modulo 2**32."""


@dataclass(frozen=True)
class QueueConfig:
    """Static and runtime parameters of a queue.

    Attributes:
        segments: physical segments (≥ 1), fixed at construction.
        num_clusters: size of ``cluster_status`` (≥ 1); cluster ids are 0..num_clusters-1.
        num_grads: gradient elements per update (per chunk), fixed per deployment (≥ 0).
        queue_size: occupancy limit in segments, K..segments (default: segments).
        reward_threshold: ``T`` in Q15.16 reward units (≥ 0), None disables reward filtering.
        activity_window_ns: a cluster counts as active while ``now - last_arrival <= window``.
        max_sojourn_ns: a head appended more than this before ``now`` is reclaimed as
            expired (ns, ≥ 0; 0: never).
        first_token: token id of the first APPEND (0..2**32-1); later ones follow modulo 2**32.
        num_chunks: K, chunks per update (1..65535); the queue keeps state per (cluster, chunk).

    Raises:
        ValueError: a parameter is out of range (the message names it).
    """

    segments: int
    num_clusters: int
    num_grads: int
    queue_size: Optional[int] = None
    reward_threshold: Optional[int] = None
    activity_window_ns: int = DEFAULT_ACTIVITY_WINDOW_NS
    max_sojourn_ns: int = 0
    first_token: int = 0
    num_chunks: int = 1

    def __post_init__(self) -> None:
        if self.segments < 1:
            raise ValueError(f"segments={self.segments} must be >= 1")
        if self.num_clusters < 1 or self.num_clusters > 0xFFFF:
            raise ValueError(f"num_clusters={self.num_clusters} must be in 1..65535")
        if self.num_grads < 0:
            raise ValueError(f"num_grads={self.num_grads} must be >= 0")
        if self.queue_size is None:
            object.__setattr__(self, "queue_size", self.segments)
        if not 1 <= self.num_chunks <= 0xFFFF:
            raise ValueError(f"num_chunks={self.num_chunks} must be in 1..65535")
        if not 1 <= self.queue_size <= self.segments:  # type: ignore[operator]
            raise ValueError(
                f"queue_size={self.queue_size} must be in 1..segments ({self.segments})"
            )
        if self.queue_size < self.num_chunks:  # type: ignore[operator]
            raise ValueError(
                f"queue_size={self.queue_size} segments holds no whole update of {self.num_chunks} chunks "
                f"(Q_max = ⌊queue_size / num_chunks⌋ = 0): give at least {self.num_chunks} segments"
            )
        if self.reward_threshold is not None and not 0 <= self.reward_threshold < (1 << 31):
            raise ValueError(
                f"reward_threshold={self.reward_threshold} must be in 0..2**31-1 (Q15.16) or None"
            )
        if self.activity_window_ns < 0:
            raise ValueError(f"activity_window_ns={self.activity_window_ns} must be >= 0")
        if not 0 <= self.max_sojourn_ns < (1 << 64):
            raise ValueError(f"max_sojourn_ns={self.max_sojourn_ns} must be in 0..2**64-1 (0: never)")
        if not 0 <= self.first_token < TOKEN_MODULUS:
            raise ValueError(f"first_token={self.first_token} must be in 0..2**32-1")


@dataclass(frozen=True)
class EnqueueResult:
    """Outcome of one enqueue: the decision, the segment it touched (None for drops) and,
    for an APPEND, the new segment's token id (else None)."""

    decision: Decision
    segment: Optional[int]
    token: Optional[int] = None


@dataclass(frozen=True)
class Departure:
    """A dequeued update, the segment it left from and that segment's token id (None only
    when built from a vector, which does not record it)."""

    segment: int
    update: Update
    token: Optional[int] = None


@dataclass(frozen=True)
class DequeueResult:
    """Outcome of :meth:`OlafQueue.dequeue_token`.

    Attributes:
        fate: what the token did.
        departure: the token's own segment and update (None when STALE).
        lost: older heads reclaimed because this newer token came first (segments).
        expired: heads reclaimed by expiry at this call's time, before the token was looked up.
    """

    fate: TokenFate
    departure: Optional[Departure]
    lost: int
    expired: int


@dataclass
class Counters:
    """Per-decision and per-cluster counters, the token ledger, and worker-update accounting.

    ``decisions[d]`` counts enqueue events by decision; ``per_cluster[c][d]``
    the same per cluster; ``departures[c]`` dequeued updates per cluster;
    ``lost[c]`` / ``expired[c]`` segments reclaimed per cluster (:class:`Reclaim`);
    ``token_fates[f]`` dequeue_token calls by :class:`TokenFate`. Conservation of
    segments: Σ decisions[APPEND] == Σ departures + Σ lost + Σ expired + occupancy.
    ``*_count`` fields add up the ``count`` field of the updates involved, for
    the conservation law checked in tests: enqueued_count == delivered_count +
    dropped_count + replaced_count + reclaimed_count + (counts still waiting).
    """

    num_clusters: int
    decisions: list[int] = field(default_factory=lambda: [0] * len(Decision))
    per_cluster: list[list[int]] = field(default_factory=list)
    departures: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    expired: list[int] = field(default_factory=list)
    token_fates: list[int] = field(default_factory=lambda: [0] * len(TokenFate))
    enqueued_count: int = 0
    delivered_count: int = 0
    dropped_count: int = 0
    replaced_count: int = 0
    reclaimed_count: int = 0

    def __post_init__(self) -> None:
        if not self.per_cluster:
            self.per_cluster = [[0] * len(Decision) for _ in range(self.num_clusters)]
        for name in ("departures", "lost", "expired"):
            if not getattr(self, name):
                setattr(self, name, [0] * self.num_clusters)

    def as_dict(self) -> dict:
        return {
            "decisions": {d.label: self.decisions[d] for d in Decision},
            "per_cluster": [
                {d.label: row[d] for d in Decision}
                | {"departures": self.departures[c], "lost": self.lost[c], "expired": self.expired[c]}
                for c, row in enumerate(self.per_cluster)
            ],
            "token_fates": {f.label: self.token_fates[f] for f in TokenFate},
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
        keys = config.num_clusters * config.num_chunks
        self.cluster_status: list[Optional[int]] = [None] * keys
        self.replace_status = [_ReplaceStatus() for _ in range(keys)]
        self.segment_key: list[Optional[int]] = [None] * n
        self.segment_token: list[Optional[int]] = [None] * n
        self.segment_appended_ns: list[Optional[int]] = [None] * n
        self.next_token = config.first_token
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
        max_sojourn_ns: Optional[int] = None,
    ) -> None:
        """Change runtime parameters (controller writes). Waiting updates are kept (a
        smaller ``max_sojourn_ns`` takes effect at the next timed event).

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
            max_sojourn_ns=c.max_sojourn_ns if max_sojourn_ns is None else max_sojourn_ns,
            first_token=c.first_token,
            num_chunks=c.num_chunks,
        )

    # -- enqueue ---------------------------------------------------------------

    def enqueue(self, update: Update, now_ns: int) -> EnqueueResult:
        """Offer ``update`` arriving at ``now_ns`` (ns, non-decreasing); heads older than
        ``max_sojourn_ns`` are reclaimed first.

        Raises:
            ValueError: cluster_id ≥ num_clusters, num_chunks other than the queue's K,
                wrong number of grads, or time going backwards. Nothing changes in that case.
        """
        self._check_update(update)
        self._advance(now_ns)
        self._expire(now_ns)
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
        if u.num_chunks != self.config.num_chunks:
            raise ValueError(
                f"update has num_chunks={u.num_chunks}, the queue is configured for {self.config.num_chunks}"
            )
        if len(u.grads) != self.config.num_grads:
            raise ValueError(
                f"update has {len(u.grads)} grads, the queue is configured for {self.config.num_grads}"
            )

    def _advance(self, now_ns: int) -> None:
        if now_ns < self.now_ns:
            raise ValueError(f"time went backwards: {now_ns} ns < {self.now_ns} ns")
        self.now_ns = now_ns

    def key(self, u: Update) -> int:
        """The queue key of ``u``: ``cluster_id · K + chunk`` (module docstring)."""
        return u.cluster_id * self.config.num_chunks + u.chunk

    def _decide(self, n: Update) -> EnqueueResult:
        c = self.key(n)
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
        self.segment_key[seg] = self.key(n)
        token = self.next_token
        self.next_token = (token + 1) % TOKEN_MODULUS
        self.segment_token[seg] = token
        self.segment_appended_ns[seg] = self.now_ns
        self.out_mem_addrs.append(seg)
        if track:
            self.cluster_status[self.key(n)] = seg
            self._mark_replaceable(n)
        return EnqueueResult(Decision.APPEND, seg, token)

    def _overwrite(self, seg: int, n: Update, old: Update) -> None:
        self.segments[seg] = n
        self.counters.replaced_count += old.count
        self._mark_replaceable(n)

    def _mark_replaceable(self, n: Update) -> None:
        rs = self.replace_status[self.key(n)]
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

        Idempotent. After this, updates of the head's key no longer fold into it.
        """
        if not self.out_mem_addrs:
            return None
        head = self.out_mem_addrs[0]
        if self.locked != head:
            self.locked = head
            c = self.segment_key[head]
            assert c is not None
            if self.cluster_status[c] == head:
                self.cluster_status[c] = None
                self.replace_status[c] = _ReplaceStatus()
        return head

    def dequeue(self) -> Optional[Departure]:
        """Remove and return the head update (locking it first); None if empty.

        For shells whose tokens cannot be lost or reordered (the head's token is the one
        that departs); otherwise use :meth:`dequeue_token`. No expiry is applied.
        """
        head = self.lock_head()
        if head is None:
            return None
        token = self.segment_token[head]
        update, c = self._free_head()
        self.counters.departures[update.cluster_id] += 1
        self.counters.delivered_count += update.count
        return Departure(head, update, token)

    def dequeue_token(self, token: int, now_ns: int) -> DequeueResult:
        """The packet carrying ``token`` reached egress at ``now_ns`` (ns, non-decreasing):
        reclaim expired heads, then depart the token's own segment after reclaiming the
        older heads whose tokens were lost, or nothing if the token is stale (module
        docstring; docs/dataplane.md "The token ledger").

        Raises:
            ValueError: ``token`` outside 0..2**32-1 or time going backwards (nothing changes).
        """
        if not 0 <= token < TOKEN_MODULUS:
            raise ValueError(f"token={token} must be in 0..2**32-1")
        self._advance(now_ns)
        expired = self._expire(now_ns)
        pos = self.token_position(token)
        k = self.counters
        if pos is None:
            k.token_fates[TokenFate.STALE] += 1
            return DequeueResult(TokenFate.STALE, None, 0, expired)
        for _ in range(pos):
            self._reclaim_head(Reclaim.LOST)
        dep = self.dequeue()
        assert dep is not None and dep.token == token
        fate = TokenFate.DEPARTED if pos == 0 else TokenFate.DEPARTED_AFTER_LOSS
        k.token_fates[fate] += 1
        return DequeueResult(fate, dep, pos, expired)

    def token_position(self, token: int) -> Optional[int]:
        """Place of ``token`` in the departure order (0 = head), None if it is not live:
        ``(token − head token) mod 2**32`` (RFC 1982) must be below the occupancy."""
        if not self.out_mem_addrs:
            return None
        head = self.segment_token[self.out_mem_addrs[0]]
        assert head is not None
        pos = (token - head) % TOKEN_MODULUS
        return pos if pos < len(self.out_mem_addrs) else None

    def _free_head(self) -> tuple[Update, int]:
        """Pop the head segment out of the departure order and free it; (its update, key)."""
        seg = self.out_mem_addrs.popleft()
        update, c = self.segments[seg], self.segment_key[seg]
        assert update is not None and c is not None
        if self.cluster_status[c] == seg:
            self.cluster_status[c] = None
            self.replace_status[c] = _ReplaceStatus()
        if self.locked == seg:
            self.locked = None
        self.segments[seg] = None
        self.segment_key[seg] = None
        self.segment_token[seg] = None
        self.segment_appended_ns[seg] = None
        self.available_mem_addrs.append(seg)
        return update, c

    def _reclaim_head(self, why: Reclaim) -> None:
        update, _ = self._free_head()
        (self.counters.lost if why is Reclaim.LOST else self.counters.expired)[update.cluster_id] += 1
        self.counters.reclaimed_count += update.count

    def _expire(self, now_ns: int) -> int:
        """Reclaim heads appended more than ``max_sojourn_ns`` before ``now_ns``; how many."""
        limit = self.config.max_sojourn_ns
        n = 0
        while limit and self.out_mem_addrs:
            appended = self.segment_appended_ns[self.out_mem_addrs[0]]
            assert appended is not None
            if now_ns - appended <= limit:
                break
            self._reclaim_head(Reclaim.EXPIRED)
            n += 1
        return n

    # -- status ----------------------------------------------------------------

    @property
    def limit(self) -> int:
        """The occupancy limit Q_max in segments (``config.queue_size``, resolved)."""
        return self.config.queue_size or self.config.segments

    @property
    def occupancy(self) -> int:
        """Occupied segments, including a locked head."""
        return len(self.out_mem_addrs)

    @property
    def status_queue_size(self) -> int:
        """Q_max of the status, in updates: ``⌊queue_size / K⌋`` (≥ 1, module docstring)."""
        return self.limit // self.config.num_chunks

    @property
    def status_queue_util(self) -> int:
        """Q_n of the status, in updates: ``⌈occupancy / K⌉`` (module docstring)."""
        return -(-self.occupancy // self.config.num_chunks)

    def active_clusters(self, now_ns: int) -> int:
        """Clusters whose last arrival is within the activity window of ``now_ns``."""
        w = self.config.activity_window_ns
        return sum(1 for s in self.last_seen_ns if s is not None and now_ns - s <= w)

    def status(self, now_ns: int) -> QueueStatus:
        """Queue status for an ACK at ``now_ns`` (ns, non-decreasing), after reclaiming
        heads older than ``max_sojourn_ns``.

        Raises ValueError if time goes backwards.
        """
        self._advance(now_ns)
        self._expire(now_ns)
        return QueueStatus(
            queue_util=self.status_queue_util,
            active_clusters=self.active_clusters(now_ns),
            queue_size=self.status_queue_size,
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
        for s in free:
            assert self.segment_token[s] is None and self.segment_appended_ns[s] is None, f"free segment {s}"
        if out:
            head = self.segment_token[out[0]]
            assert head is not None
            for i, s in enumerate(out):
                assert self.segment_token[s] == (head + i) % TOKEN_MODULUS, "live tokens not consecutive"
            assert (head + len(out)) % TOKEN_MODULUS == self.next_token, "tail token is not the last issued"
            times = [self.segment_appended_ns[s] for s in out]
            assert times == sorted(times), "append times out of order"  # type: ignore[type-var]
        k = self.counters
        assert k.decisions[Decision.APPEND] == (sum(k.departures) + sum(k.lost) + sum(k.expired)
                                                + len(out)), "segments not conserved"
        seen: set[int] = set()
        for c, cs in enumerate(self.cluster_status):
            if cs is None:
                assert not self.replace_status[c].flag
                continue
            assert cs in out and cs != self.locked, f"key {c} points to a bad segment"
            assert self.segment_key[cs] == c
            assert cs not in seen
            seen.add(cs)
        waiting_unlocked = [self.segment_key[s] for s in out if s != self.locked]
        if self.discipline == "olaf":
            assert len(waiting_unlocked) == len(set(waiting_unlocked)), (
                "two unlocked updates of one key"
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
    count, ``gen_ts = max``; worker_id, seq and the chunk fields stay ``q``'s.

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
        chunk=q.chunk,
        num_chunks=q.num_chunks,
    )


def make_queue(config: QueueConfig, discipline: str = "olaf") -> OlafQueue:
    """An :class:`OlafQueue` or :class:`FifoQueue` by name ("olaf" | "fifo")."""
    if discipline == "olaf":
        return OlafQueue(config)
    if discipline == "fifo":
        return FifoQueue(config)
    raise ValueError(f"discipline={discipline!r}: expected 'olaf' or 'fifo'")

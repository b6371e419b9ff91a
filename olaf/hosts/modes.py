"""Training modes of the PS (paper §2.1, Fig. 2): when updates are applied and who gets the ACK.

* ``async`` (default; Olaf's immediate-response protocol): every update is
  applied on arrival and ACKed at once to its sender (an Olaf switch multicasts
  the ACK to the sender's cluster).
* ``async_with_aggr`` (periodic aggregation as in iSwitch): updates are summed
  into a window; the window is **flushed** when it holds ``K`` worker updates
  (the sum of the updates' ``count``) or ``T`` ms after its first update,
  whichever comes first. Workers keep training meanwhile.
* ``sync`` (synchronous rounds as in SwitchML): the window is a round; it is
  flushed when it holds one update of every worker (``count`` summing to the
  number of workers ``W``), or when the round's cutoff timer (``round_timeout_ms``
  after its first update) expires so that a lost update does not stall training
  (the paper's "cutoff timers to close the computation round"). Workers wait
  for the round's ACK before iterating again (``olaf worker --await-ack``).

A flush applies the window as **one** aggregate update to the global model
(:meth:`olaf.hosts.global_model.GlobalModel.apply_sums`: mean reward and mean
direction over the window's worker updates, then the configured step) and
**broadcasts**: one ACK per cluster the PS knows (from any INIT or update),
sent to the address of that cluster's latest message; an Olaf switch
multicasts it to the cluster (paper §7 "Downlink"). Without a switch only that
address gets it, so switch-less runs of these modes use one worker per
cluster.

:class:`Aggregator` is the bookkeeping; the PS (:mod:`olaf.hosts.ps`) feeds it,
asks it when the next time-based flush is due and sends the ACKs.

**Chunks** (``docs/protocol.md`` "Chunks"): a model sent as K chunks has one window **per
chunk**, each with its own count, timer and flush, as the switch keys its queue by (cluster,
chunk): a flush of chunk ``i`` applies that window to slice ``i`` and broadcasts slice ``i``'s
ACK. With K = 1 there is one window, as before.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from olaf.update import Update


class Mode(str, enum.Enum):
    """Training mode of the PS (module docstring)."""

    ASYNC = "async"
    ASYNC_WITH_AGGR = "async_with_aggr"
    SYNC = "sync"


@dataclass(frozen=True)
class ModeParams:
    """Mode and its parameters.

    Attributes:
        mode: :class:`Mode` (or its value).
        aggr_k: ``K``, worker updates per aggregate (async_with_aggr; ≥ 1).
        aggr_t_ms: ``T``, ms from a window's first update to its flush at the latest (async_with_aggr; > 0).
        sync_workers: ``W``, worker updates per round (sync; required there, ≥ 1).
        round_timeout_ms: cutoff timer of a sync round, ms (> 0).

    Raises:
        ValueError: a bad value or a missing ``sync_workers`` in sync mode (message names the field).
    """

    mode: Mode = Mode.ASYNC
    aggr_k: int = 8
    aggr_t_ms: float = 100.0
    sync_workers: Optional[int] = None
    round_timeout_ms: float = 5000.0

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mode", Mode(self.mode))
        except ValueError:
            raise ValueError(f"mode={self.mode!r} must be one of {', '.join(m.value for m in Mode)}") from None
        if self.aggr_k < 1:
            raise ValueError(f"aggr_k={self.aggr_k} must be >= 1")
        if not self.aggr_t_ms > 0:
            raise ValueError(f"aggr_t_ms={self.aggr_t_ms} must be > 0")
        if not self.round_timeout_ms > 0:
            raise ValueError(f"round_timeout_ms={self.round_timeout_ms} must be > 0")
        if self.mode is Mode.SYNC and self.sync_workers is None:
            raise ValueError("sync mode needs sync_workers, the number of workers in a round (--sync-workers)")
        if self.sync_workers is not None and self.sync_workers < 1:
            raise ValueError(f"sync_workers={self.sync_workers} must be >= 1")


@dataclass
class ClusterLast:
    """The latest message of a cluster: where its broadcast ACK goes and what it echoes."""

    src: str
    worker_id: int
    seq: int
    gen_ts: int
    count: int


@dataclass
class Window:
    """Updates summed since the last flush.

    ``reward_sum`` (Q15.16 units) and ``count`` are exact integer sums;
    ``grad_sum`` (Q7.24 units, int64 — no int32 saturation at the PS) has shape ``(L,)``, the
    chunk length; ``chunk`` is the slice it updates.
    """

    first_ns: int
    chunk: int = 0
    reward_sum: int = 0
    count: int = 0
    updates: int = 0
    grad_sum: Optional[np.ndarray] = None
    clusters: dict[int, ClusterLast] = field(default_factory=dict)


class Aggregator:
    """Windows of the ``async_with_aggr`` and ``sync`` modes (one per chunk), and the clusters to broadcast to."""

    def __init__(self, params: ModeParams) -> None:
        if params.mode is Mode.ASYNC:
            raise ValueError("the async mode applies every update at once; it needs no Aggregator")
        self.params = params
        self.windows: dict[int, Window] = {}
        """Open windows by chunk."""
        self.known: dict[int, ClusterLast] = {}
        """Every cluster seen (INIT or update) → its latest message."""

    @property
    def window(self) -> Optional[Window]:
        """The open window that is due first (None: none open)."""
        return min(self.windows.values(), key=lambda w: (w.first_ns, w.chunk), default=None)

    def see(self, u: Update, src: str) -> None:
        """Remember ``u``'s cluster as a broadcast destination (call for INITs and updates)."""
        self.known[u.cluster_id] = ClusterLast(src, u.worker_id, u.seq, u.gen_ts, u.count)

    def add(self, u: Update, src: str, t_ns: int) -> bool:
        """Add a (non-INIT, right-sized) update chunk at ``t_ns`` to its chunk's window; True if that
        window is now full (flush it: ``take(u.chunk)``)."""
        self.see(u, src)
        w = self.windows.get(u.chunk)
        if w is None:
            w = self.windows[u.chunk] = Window(first_ns=t_ns, chunk=u.chunk)
        g = np.asarray(u.grads, dtype=np.int64)
        w.grad_sum = g if w.grad_sum is None else w.grad_sum + g
        w.reward_sum += u.reward_sum
        w.count += u.count
        w.updates += 1
        w.clusters[u.cluster_id] = self.known[u.cluster_id]
        return w.count >= self._target()

    def _target(self) -> int:
        p = self.params
        if p.mode is Mode.SYNC:
            assert p.sync_workers is not None
            return p.sync_workers
        return p.aggr_k

    def deadline_ns(self) -> Optional[int]:
        """When the first open window must be flushed by time (None: no open window)."""
        w = self.window
        if w is None:
            return None
        p = self.params
        ms = p.round_timeout_ms if p.mode is Mode.SYNC else p.aggr_t_ms
        return w.first_ns + int(ms * 1e6)

    def due(self, t_ns: int) -> bool:
        """The first open window's time is up at ``t_ns``."""
        d = self.deadline_ns()
        return d is not None and t_ns >= d

    def take(self, chunk: Optional[int] = None) -> Window:
        """Close and return chunk ``chunk``'s open window (None: the one due first).

        Raises:
            ValueError: no such open window.
        """
        w = self.window if chunk is None else self.windows.get(chunk)
        if w is None:
            raise ValueError("no open window to flush" if chunk is None else f"no open window of chunk {chunk}")
        del self.windows[w.chunk]
        return w

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
* ``stellaris`` (Stellaris' staleness-aware aggregation, §V-C, Eq. 3): updates are summed
  into a window, and every update added re-evaluates the window's mean staleness δ̄ (the
  updates' staleness δ̂ weighted by ``count``, :mod:`olaf.hosts.staleness`);
  the window is flushed as soon as ``δ̄ ≤ β_k`` or ``round_timeout_ms`` after its first update.
  A *round* is ``round_updates`` worker updates flushed (the job's number of workers: each
  worker once); ``k`` counts them per slice. Round 0 is pure asynchrony (every update flushed
  at once) and records ``δ_max``, the largest staleness seen; from round 1 on
  ``β_k = max(β_min, δ_max · d^k)`` (``d`` = ``stellaris_decay``, 0.96 in Stellaris'
  evaluation). The floor ``β_min`` (1 by default) keeps the PS from turning synchronous: with
  ``d^k`` alone β falls below 1 within a few dozen rounds, and a window of fresh updates then
  waits for every worker. Workers keep training meanwhile.

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
ACK. With K = 1 there is one window, as before. Stellaris' ``δ_max`` and round count are per
slice too.

**Staleness scaling** (Stellaris Eq. 4, any mode: :func:`staleness_scale`): with a root factor
``v`` the PS scales each update's direction by ``1 / δ^(1/v)`` (δ > 0) before it is summed into a
window or applied. The switch sums updates before the PS sees them, so an aggregate of ``c``
folded updates is scaled by its head's δ̂ alone: ``α₀ / δ̄^(1/v)`` of the mean stands for the
mean of the per-update ``α₀ / δ_i^(1/v)``.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from olaf.plan.workload import STELLARIS_DECAY
from olaf.update import Update


class Mode(str, enum.Enum):
    """Training mode of the PS (module docstring)."""

    ASYNC = "async"
    ASYNC_WITH_AGGR = "async_with_aggr"
    SYNC = "sync"
    STELLARIS = "stellaris"



def staleness_scale(staleness: Optional[int], root: Optional[int]) -> float:
    """Stellaris Eq. 4's factor of an update's step: ``1 / δ^(1/v)`` for ``δ`` > 0, else 1 (also
    when ``root`` v is None: no scaling, or ``staleness`` is unknown, e.g. an INIT).

    Raises:
        ValueError: ``root`` < 1 or a negative ``staleness``.
    """
    if root is None or staleness is None:
        return 1.0
    if root < 1:
        raise ValueError(f"root={root}: Stellaris' v must be an integer >= 1")
    if staleness < 0:
        raise ValueError(f"staleness={staleness} must be >= 0")
    return 1.0 if staleness == 0 else staleness ** (-1.0 / root)


@dataclass(frozen=True)
class ModeParams:
    """Mode and its parameters.

    Attributes:
        mode: :class:`Mode` (or its value).
        aggr_k: ``K``, worker updates per aggregate (async_with_aggr; ≥ 1).
        aggr_t_ms: ``T``, ms from a window's first update to its flush at the latest (async_with_aggr; > 0).
        sync_workers: ``W``, worker updates per round (sync; required there, ≥ 1).
        round_timeout_ms: cutoff timer of a sync round or a stellaris window, ms (> 0).
        round_updates: stellaris: worker updates per round (required there, ≥ 1; the job's workers).
        stellaris_decay: stellaris: ``d`` of Eq. 3, in (0, 1] (1: pure asynchrony after round 0).
        beta_min: stellaris: the floor of ``β_k``, ≥ 0 (module docstring).

    Raises:
        ValueError: a bad value or a missing ``sync_workers`` in sync mode (message names the field).
    """

    mode: Mode = Mode.ASYNC
    aggr_k: int = 8
    aggr_t_ms: float = 100.0
    sync_workers: Optional[int] = None
    round_timeout_ms: float = 5000.0
    round_updates: Optional[int] = None
    stellaris_decay: float = STELLARIS_DECAY
    beta_min: float = 1.0

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
        if self.mode is Mode.STELLARIS and self.round_updates is None:
            raise ValueError("stellaris mode needs round_updates, worker updates per round (--round-updates: the "
                             "number of workers)")
        if self.round_updates is not None and self.round_updates < 1:
            raise ValueError(f"round_updates={self.round_updates} must be >= 1")
        if not 0 < self.stellaris_decay <= 1:
            raise ValueError(f"stellaris_decay={self.stellaris_decay} must be in (0, 1]")
        if not (self.beta_min >= 0 and math.isfinite(self.beta_min)):
            raise ValueError(f"beta_min={self.beta_min} must be a finite number >= 0")


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
    ``grad_sum`` (Q7.24 units, int64 — no int32 saturation at the PS; float64 once an update
    scaled by :func:`staleness_scale` is in it) has shape ``(L,)``, the chunk length; ``chunk`` is
    the slice it updates; ``staleness_sum`` is Σ ``count · δ̂`` of its updates (stellaris).
    """

    first_ns: int
    chunk: int = 0
    reward_sum: int = 0
    count: int = 0
    updates: int = 0
    grad_sum: Optional[np.ndarray] = None
    staleness_sum: float = 0.0
    clusters: dict[int, ClusterLast] = field(default_factory=dict)

    @property
    def mean_staleness(self) -> Optional[float]:
        """δ̄, the count-weighted mean staleness of the window's updates (None when empty)."""
        return self.staleness_sum / self.count if self.count else None


class Aggregator:
    """Windows of the ``async_with_aggr``, ``sync`` and ``stellaris`` modes (one per chunk), the
    clusters to broadcast to, and Stellaris' per-slice ``δ_max`` and flushed worker updates."""

    def __init__(self, params: ModeParams) -> None:
        if params.mode is Mode.ASYNC:
            raise ValueError("the async mode applies every update at once; it needs no Aggregator")
        self.params = params
        self.windows: dict[int, Window] = {}
        """Open windows by chunk."""
        self.known: dict[int, ClusterLast] = {}
        """Every cluster seen (INIT or update) → its latest message."""
        self.workers: dict[tuple[int, str], ClusterLast] = {}
        """Every (cluster, source address) seen → its latest message (a PS without a switch answers each)."""
        self.delta_max: dict[int, float] = {}
        """stellaris: per chunk, the largest staleness seen in round 0."""
        self.flushed: dict[int, int] = {}
        """Per chunk, worker updates flushed so far (Σ ``count``; stellaris' rounds)."""

    @property
    def window(self) -> Optional[Window]:
        """The open window that is due first (None: none open)."""
        return min(self.windows.values(), key=lambda w: (w.first_ns, w.chunk), default=None)

    def see(self, u: Update, src: str) -> None:
        """Remember ``u``'s cluster as a broadcast destination (call for INITs and updates)."""
        self.known[u.cluster_id] = self.workers[(u.cluster_id, src)] = ClusterLast(src, u.worker_id, u.seq,
                                                                                    u.gen_ts, u.count)

    def add(self, u: Update, src: str, t_ns: int, staleness: Optional[int] = None, scale: float = 1.0,
            elements: Optional[np.ndarray] = None) -> bool:
        """Add a (non-INIT, right-sized) update chunk at ``t_ns`` to its chunk's window, its
        direction times ``scale`` (:func:`staleness_scale`); True if that window is now due (flush
        it: ``take(u.chunk)``): full (async_with_aggr, sync), or of mean staleness ≤ β_k with
        ``staleness`` this update's δ̂ (stellaris; required there). ``elements``: ``u.grads`` as an
        int64 array already (:func:`olaf.wire.update_elements`)."""
        self.see(u, src)
        w = self.windows.get(u.chunk)
        if w is None:
            w = self.windows[u.chunk] = Window(first_ns=t_ns, chunk=u.chunk)
        g: np.ndarray = np.asarray(u.grads if elements is None else elements, dtype=np.int64)
        if scale != 1.0:
            g = g * scale
        w.grad_sum = g if w.grad_sum is None else w.grad_sum + g
        w.reward_sum += u.reward_sum
        w.count += u.count
        w.updates += 1
        w.clusters[u.cluster_id] = self.known[u.cluster_id]
        if self.params.mode is Mode.STELLARIS:
            if staleness is None:
                raise ValueError("stellaris mode needs each update's staleness")
            w.staleness_sum += u.count * staleness
            if self.round(u.chunk) == 0:
                self.delta_max[u.chunk] = max(self.delta_max.get(u.chunk, 0.0), float(staleness))
            mean = w.mean_staleness
            return mean is not None and mean <= self.beta(u.chunk)
        return w.count >= self._target()

    def round(self, chunk: int) -> int:
        """stellaris: slice ``chunk``'s round ``k`` (worker updates flushed // ``round_updates``)."""
        r = self.params.round_updates
        return 0 if not r else self.flushed.get(chunk, 0) // r

    def beta(self, chunk: int) -> float:
        """stellaris: slice ``chunk``'s threshold ``β_k = max(β_min, δ_max · d^k)`` (Eq. 3); ∞ in round 0."""
        k = self.round(chunk)
        if k == 0:
            return math.inf
        p = self.params
        return max(p.beta_min, self.delta_max.get(chunk, 0.0) * p.stellaris_decay ** k)

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
        ms = p.round_timeout_ms if p.mode in (Mode.SYNC, Mode.STELLARIS) else p.aggr_t_ms
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
        self.flushed[w.chunk] = self.flushed.get(w.chunk, 0) + w.count
        return w

    def state(self, num_chunks: int, chunk_len: int) -> dict[str, np.ndarray]:
        """The aggregation state for the PS checkpoint, per chunk (K of them, windows of L elements):
        ``aggr_delta_max`` ``(K,)`` and ``aggr_flushed`` ``(K,)`` (Stellaris' rounds), and the open
        windows: ``aggr_window`` ``(K, 4)`` int64 rows ``[open, reward_sum, count, updates]``,
        ``aggr_window_staleness`` ``(K,)`` (Σ count·δ̂) and ``aggr_window_grad`` ``(K, L)`` float64.
        The windows' clusters are not kept: a resumed PS's flush ACKs every cluster it has seen."""
        win = np.zeros((num_chunks, 4), dtype=np.int64)
        stale = np.zeros(num_chunks)
        grad = np.zeros((num_chunks, chunk_len))
        for i, w in self.windows.items():
            win[i] = (1, w.reward_sum, w.count, w.updates)
            stale[i] = w.staleness_sum
            if w.grad_sum is not None:
                grad[i] = w.grad_sum
        return {"aggr_delta_max": np.array([self.delta_max.get(i, 0.0) for i in range(num_chunks)]),
                "aggr_flushed": np.array([self.flushed.get(i, 0) for i in range(num_chunks)], dtype=np.int64),
                "aggr_window": win, "aggr_window_staleness": stale, "aggr_window_grad": grad}

    def load_state(self, state: dict[str, np.ndarray], t_ns: int) -> None:
        """Continue from :meth:`state`'s arrays (absent: a checkpoint of an async PS, a fresh start);
        reopened windows' cutoff timers restart at ``t_ns``.

        Raises:
            ValueError: arrays of inconsistent shapes.
        """
        if "aggr_flushed" not in state:
            return
        dm, fl = np.asarray(state["aggr_delta_max"]), np.asarray(state["aggr_flushed"])
        win, stale, grad = (np.asarray(state[k]) for k in ("aggr_window", "aggr_window_staleness", "aggr_window_grad"))
        k = fl.shape[0]
        if dm.shape != (k,) or win.shape != (k, 4) or stale.shape != (k,) or grad.ndim != 2 or grad.shape[0] != k:
            raise ValueError(f"the checkpoint's aggregation state has inconsistent shapes: delta_max {dm.shape}, "
                             f"flushed {fl.shape}, window {win.shape}, staleness {stale.shape}, grad {grad.shape}")
        self.delta_max = {i: float(x) for i, x in enumerate(dm) if x}
        self.flushed = {i: int(x) for i, x in enumerate(fl) if x}
        self.windows = {}
        for i in range(k):
            if win[i, 0]:
                self.windows[i] = Window(first_ns=t_ns, chunk=i, reward_sum=int(win[i, 1]), count=int(win[i, 2]),
                                         updates=int(win[i, 3]), grad_sum=grad[i].copy(),
                                         staleness_sum=float(stale[i]))

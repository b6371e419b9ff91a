"""The PS's online estimate of an update's staleness, from what it sent to the update's worker.

The staleness δ of a worker's update (Stellaris §III) is how many versions a slice of the global
model moved between the version the worker's iteration started from (its *base*) and the
update's arrival. No wire field carries the base, so the PS infers it from the ACKs it sent the
worker: a worker (``olaf worker``, :mod:`olaf.hosts.worker`) adopts the newest weights it holds at
the start of each iteration, and it starts the next iteration right after sending an update, or,
with ``--ack-wait-ms`` W, on the first answer that arrives within W.

So for a worker whose previous update (or INIT: its first iteration starts after it) arrived at
``T``, the base of its next update is the newest version among the ACKs sent to it at or before
``T``, or the version of the first ACK sent to it after ``T`` if that was sent within ``T + W``.
The estimate is

* exact when the PS's ACKs are what reaches the worker: loopback, in every mode, with the
  workers' ``W`` given to the PS (``PsConfig.worker_ack_wait_ms``);
* an upper bound behind an Olaf switch in the async mode, where a cluster-mate's ACK (multicast
  by the switch) may be newer than anything the PS sent to this worker;
* a lower bound when an ACK was lost, or when the worker took longer than its transmission time
  to receive one.

:mod:`olaf.training.staleness` measures the exact δ offline from the workers' ``base`` records, and
so how good the estimate was. Versions and δ are counted per slice (chunk).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

WorkerChunk = tuple[int, int, int]
"""``(cluster_id, worker_id, chunk)``: one worker's view of one slice."""


@dataclass
class _View:
    floor: int = 0
    """Newest version sent to the worker at or before its previous update arrived (0: the INIT)."""
    latest: int = 0
    """Newest version sent to it."""
    prev_t: Optional[int] = None
    """When its previous update arrived (CLOCK_REALTIME ns; None: none yet)."""
    first_after: Optional[tuple[int, int]] = None
    """``(t_ns, version)`` of the first ACK sent to it after ``prev_t``."""


class StalenessTracker:
    """Per worker and slice, the versions the PS sent and when (module docstring).

    Args:
        worker_ack_wait_ns: the workers' ``--ack-wait-ms`` in ns (≥ 0): an ACK sent this soon after
            a worker's update is its next iteration's base.

    Raises:
        ValueError: a negative ``worker_ack_wait_ns``.
    """

    def __init__(self, worker_ack_wait_ns: int = 0) -> None:
        if worker_ack_wait_ns < 0:
            raise ValueError(f"worker_ack_wait_ns={worker_ack_wait_ns} must be >= 0")
        self.wait_ns = worker_ack_wait_ns
        self._views: dict[WorkerChunk, _View] = {}

    def on_update(self, key: WorkerChunk, t_ns: int, version_now: int) -> int:
        """A (non-INIT) update of ``key`` arrived at ``t_ns`` while its slice is at ``version_now``;
        returns its estimated staleness δ̂ ≥ 0."""
        v = self._views.setdefault(key, _View())
        base = v.floor
        if v.prev_t is not None and v.first_after is not None and v.first_after[0] <= v.prev_t + self.wait_ns:
            base = max(base, v.first_after[1])
        v.floor, v.prev_t, v.first_after = v.latest, t_ns, None
        return max(version_now - base, 0)

    def on_ack(self, key: WorkerChunk, t_ns: int, version: int) -> None:
        """An ACK carrying ``version`` of ``key``'s slice was sent to that worker at ``t_ns``."""
        v = self._views.setdefault(key, _View())
        v.latest = max(v.latest, version)
        if v.prev_t is not None and t_ns > v.prev_t and v.first_after is None:
            v.first_after = (t_ns, version)
        elif v.prev_t is None or t_ns <= v.prev_t:
            v.floor = max(v.floor, version)

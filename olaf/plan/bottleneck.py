"""A bottleneck whose capacity follows the offered rate (``uplinks.<switch>.load``).

The paper states its congestion as *offered load / capacity* (§8.1, Table 1: 60 Gbit/s offered
into 40, 20 and 5 Gbit/s). A synthetic workload's offered rate is known from the plan
(:meth:`olaf.plan.plan.RunPlan.offered_pps`), so a fixed ``pps`` expresses it. A training job's
workers send one update per PPO iteration, as fast as the machine lets them iterate: a fixed
capacity congests a fast machine and leaves a busy one idle. A link given as ``load`` instead
gets the capacity ``offered / load``, where *offered* is the rate of packets arriving at the
switch for the PS, measured over the last :data:`WINDOW_S` seconds of the run (longer when
fewer than :data:`MIN_PACKETS` arrived in them):

    rate_pps = max(1, ⌊Δarrivals / Δt / load⌋)          (packets/s, BMv2's whole unit)

rounded down, so a load above 1 always congests the link unless the offered rate is below 2
packets/s (the capacity cannot go below 1 packet/s).

Arrivals are the switch's ingress decisions (one per update or chunk packet toward the PS,
``p4src/olaf.p4``), so they count what the workers offered, whatever the queue then did with it.
Until :data:`MIN_PACKETS` have arrived the link is unlimited; afterwards the rate is changed
when it moves by more than :data:`TOLERANCE` of the current one and by more than 1 packet/s (a
rate near an integer boundary would flap between the two) (each change is a Thrift write
and a P4Runtime write of the tokens' sojourn bound, :meth:`OlafController.set_bottleneck`).

Transmission control (paper §5) lowers the workers' sending when the queue fills, so a
capacity measured from it would follow it down: a plan refuses the two together.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

WINDOW_S = 30.0
"""Seconds of arrivals the offered rate is measured over (a sliding window): long enough to span
several PPO iterations of every worker on a busy machine (a few seconds each)."""
MIN_PACKETS = 16
"""Packets that must have arrived in the window before the first capacity is set."""
TOLERANCE = 0.25
"""A new capacity is applied when it differs from the current one by more than this fraction."""


@dataclass
class LoadTracker:
    """The capacity of one switch's link toward the PS under ``load`` (module docstring).

    Args:
        load: offered rate / capacity (> 0; above 1 congests).
        window_s / min_packets / tolerance: :data:`WINDOW_S`, :data:`MIN_PACKETS`, :data:`TOLERANCE`.

    Attributes:
        rate_pps: the capacity now, packets/s (None: unlimited, not measured yet).
        offered_pps: the offered rate of the last measurement, packets/s (None: none yet).

    Raises:
        ValueError: ``load``, ``window_s`` or ``tolerance`` not > 0, ``min_packets`` < 1.
    """

    load: float
    window_s: float = WINDOW_S
    min_packets: int = MIN_PACKETS
    tolerance: float = TOLERANCE
    rate_pps: Optional[int] = None
    offered_pps: Optional[float] = None
    _samples: deque[tuple[float, int]] = field(default_factory=deque, repr=False)

    def __post_init__(self) -> None:
        for name in ("load", "window_s", "tolerance"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)!r}: must be > 0")
        if self.min_packets < 1:
            raise ValueError(f"min_packets={self.min_packets!r}: must be >= 1")

    def observe(self, t_s: float, arrivals: int) -> Optional[int]:
        """Record the switch's cumulative arrivals toward the PS at ``t_s`` (seconds, increasing);
        returns the capacity to apply now (packets/s, >= 1), or None to leave it as it is.

        Arrivals below the previous observation's mean the switch restarted (its counters start
        from zero): the measurement starts anew, the capacity stays until it has.

        Raises:
            ValueError: ``t_s`` not after the previous observation.
        """
        if self._samples:
            t_prev, a_prev = self._samples[-1]
            if t_s <= t_prev:
                raise ValueError(f"observation at {t_s} s after one at {t_prev} s: time must increase")
            if arrivals < a_prev:
                self._samples.clear()
        self._samples.append((t_s, arrivals))
        while (len(self._samples) > 2 and self._samples[1][0] <= t_s - self.window_s
               and arrivals - self._samples[1][1] >= self.min_packets):
            self._samples.popleft()
        t0, a0 = self._samples[0]
        if arrivals - a0 < self.min_packets:
            return None
        self.offered_pps = (arrivals - a0) / (t_s - t0)
        rate = max(1, math.floor(self.offered_pps / self.load))
        if self.rate_pps is not None and abs(rate - self.rate_pps) <= max(1.0, self.tolerance * self.rate_pps):
            return None
        self.rate_pps = rate
        return rate

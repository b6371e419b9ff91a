"""A finished simulation (:class:`SimRun`): what :func:`olaf.sim.backend.simulate` returns and
:mod:`olaf.sim.rundir` writes as a run directory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from olaf.chunks import Chunking
from olaf.plan.plan import RunPlan
from olaf.sim.topology import Network


@dataclass
class SimRun:
    """A finished simulation: the C++ object (results), node indices and run statistics.

    ``stats``: ``wall_s`` (seconds in ns-3's event loop), ``events``, ``packets``
    (link transmissions, every hop), ``sim_end_ns``; ``setup_s``: building the network.
    """

    plan: RunPlan
    net: Network
    sim: Any
    switch_index: dict[str, int]
    worker_index: dict[str, int]
    ps_index: int
    stats: dict[str, float]
    setup_s: float
    chunking: Chunking
    """How each update travelled: K chunks of L elements (:mod:`olaf.chunks`)."""

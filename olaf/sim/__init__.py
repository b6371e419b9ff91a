"""ns-3 simulation backend (paper §8.3): the OlafQueue core as an ns-3 QueueDisc, the Olaf
switch pipeline, workers and PS as ns-3 applications over point-to-point links.

Entry points: :class:`~olaf.sim.scenario.Scenario` and :func:`~olaf.sim.backend.run_ns3`
(writes a run directory that ``olaf report`` reads). docs/simulation.md has the model.
"""

from __future__ import annotations

from olaf.sim.backend import run_ns3, simulate
from olaf.sim.build import SimUnavailable
from olaf.sim.scenario import ClusterGroup, Link, Scenario

__all__ = ["ClusterGroup", "Link", "Scenario", "SimUnavailable", "run_ns3", "simulate"]

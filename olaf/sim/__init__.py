"""ns-3 simulation backend (paper §8.3): the OlafQueue core as an ns-3 QueueDisc, the Olaf
switch pipeline, workers and PS as ns-3 applications over point-to-point links.

Entry point: :func:`~olaf.sim.backend.run_ns3` runs a :class:`~olaf.plan.plan.RunPlan`
(writes a run directory that ``olaf report`` reads). docs/simulation.md has the model.
"""

from __future__ import annotations

from olaf.sim.backend import run_ns3, simulate
from olaf.sim.build import SimUnavailable

__all__ = ["SimUnavailable", "run_ns3", "simulate"]

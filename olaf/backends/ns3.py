"""The ``ns3`` backend: the plan as it is, simulated (:func:`olaf.sim.backend.run_ns3`).

Refuses, when set in the plan: ``workload`` (ns-3's workers are synthetic C++ applications
with no learning task, docs/simulation.md) and ``faults`` (the simulation injects none). It
takes no monitor: a simulation runs to its end in simulated time.

Model size: any ``grads`` whose update fits K ≤ 65535 chunks of the links' MTU
(:meth:`RunPlan.chunking`, docs/protocol.md "Chunks"); an update larger than one frame is sent
as K chunks, and each switch's queue gets ``queue_size · K`` segments, which must fit its
``segments``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from olaf.backends.base import Backend, BackendOptions, PlanRefused, RunResult, refuse_set, refuse_shared_hosts
from olaf.chunks import ChunkingError
from olaf.constants import JUMBO_MTU
from olaf.harness import RunMonitor
from olaf.plan.plan import RunPlan
from olaf.rundir.manifest import read_manifest
from olaf.rundir.summary import SUMMARY_FILE, read_summary

REFUSED = {
    "workload": "ns-3's workers are synthetic C++ applications (reward U(-1, 0), no learning task; "
                "docs/simulation.md): run a training workload on the local or mininet backend",
    "faults": "the simulation injects no faults: run them on the mininet backend",
    "uplinks.*.load": "a simulated link has a fixed capacity; the workers' offered rate is the plan's, so give "
                      "pps = offered / load (an experiment's load.<switch> parameter computes it)",
}


class Ns3Backend(Backend):
    """Paper-scale simulation, deterministic per seed."""

    name = "ns3"
    description = "ns-3 simulation: the OlafQueue core as a QueueDisc, synthetic workers (fast, paper scale)"
    mtu = JUMBO_MTU
    max_mtu = JUMBO_MTU

    def __init__(self, options: BackendOptions) -> None:
        self.options = options

    def preflight(self) -> None:
        """Load (and on first use compile) the simulation library.

        Raises:
            olaf.sim.build.SimUnavailable: ns-3 or a compiler missing (the message has the install command).
        """
        from olaf.sim.build import load  # noqa: PLC0415

        load()

    def check(self, plan: RunPlan) -> None:
        refuse_set(self.name, plan, REFUSED)
        refuse_shared_hosts(self.name, plan, "the simulated switch identifies a worker by its address and every "
                            "simulated worker has its own: run it on the mininet backend")
        try:
            ch = plan.chunking(self.mtu)
        except ChunkingError as e:
            raise PlanRefused(self.name, "grads", str(e)) from None
        for sw, segs in plan.queue_segments(ch).items():
            if segs > plan.segments:
                raise PlanRefused(self.name, "queue_sizes", f"{sw}: {segs // ch.num_chunks} updates of K = "
                                  f"{ch.num_chunks} chunks need {segs} segments; {plan.segments} segments hold "
                                  f"1..{plan.segments // ch.num_chunks} updates")
        from olaf.sim.backend import check_arrivals  # noqa: PLC0415

        check_arrivals(plan, ch)

    def run(self, plan: RunPlan, out: Path, monitor: Optional[RunMonitor] = None) -> RunResult:
        """Simulate ``plan`` into ``out``.

        Raises:
            PlanRefused: see :meth:`check`; a monitor (a simulation cannot be watched in wall time).
            olaf.sim.build.SimUnavailable: ns-3 missing (the message has the install command).
        """
        self.check(plan)
        if monitor is not None:
            raise PlanRefused(self.name, "monitor", "a simulation runs to its end; it cannot be stopped on a goal")
        from olaf.sim.backend import run_ns3  # noqa: PLC0415 (ns-3 and cppyy load on first use)

        run_ns3(plan, out, report=self.options.report and plan.records, plots=self.options.plots)
        summary = read_summary(out).model_dump(mode="json") if (out / SUMMARY_FILE).exists() else None
        sim_end_ns = read_manifest(out).backend_info.get("sim", {}).get("sim_end_ns", 0)
        return RunResult.of_run(self.name, out, float(sim_end_ns) / 1e9, summary)

"""The ``ray`` backend (:class:`RayBackend`; the package docstring says what it runs).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

from olaf.backends.base import RunResult
from olaf.backends.mininet import MininetBackend, emulated_run
from olaf.backends.ray.actors import RayLauncher
from olaf.backends.ray.cluster import LocalRayHead, require_ray
from olaf.harness import RunMonitor
from olaf.paths import build_dir
from olaf.plan.plan import RunPlan
from olaf.rundir.atomic import write_json


class RayBackend(MininetBackend):
    """Mininet + BMv2 as the mininet backend, the workers as Ray actors (module docstring)."""

    name = "ray"
    description = "Mininet + BMv2 as mininet, the workers as Ray actors joined to the hosts' namespaces (ray extra)"

    def preflight(self) -> None:
        """The mininet backend's needs and Ray at :data:`RAY_VERSION`.

        Raises:
            RunFailed: what is missing and how to get it.
        """
        super().preflight()
        require_ray()

    def run(self, plan: RunPlan, out: Path, monitor: Optional[RunMonitor] = None) -> RunResult:
        """Emulate ``plan`` into ``out`` with the workers in Ray actors (a Ray cluster of this
        machine, started for the run on the loopback address and shut down after it).

        Raises:
            PlanRefused: see :meth:`check`.
            RunFailed: Ray is missing, or the run failed.
        """
        from olaf.topologies.emulation import run_once  # noqa: PLC0415 (Mininet on first use)

        ray = require_ray()
        run = emulated_run(plan, self.options)
        out.mkdir(parents=True, exist_ok=True)
        t = time.monotonic()
        nodes = self.options.ray_nodes
        head = None if nodes else LocalRayHead(ray, out / "ray-head.out", num_cpus=os.cpu_count() or 1)
        launcher = RayLauncher(ray, self.options.workers_per_actor, nodes=nodes, restarts=self.options.actor_restarts,
                               nice=self.options.worker_nice)
        try:
            summary = run_once(run, out, self.options.build or build_dir(), self.options.console,
                               progress=self.options.progress, quiet=self.options.quiet, monitor=monitor,
                               launch=launcher)
        finally:
            ray.shutdown()
            launcher.close()
            if head is not None:
                head.close()
        if launcher.placement:
            write_json(out / "ray_nodes.json", launcher.placement, indent=1)
        return RunResult.of_run(self.name, out, time.monotonic() - t, summary)

"""The ``ray`` backend: the mininet backend's network — BMv2 switches with the OlafQueue extern,
the P4Runtime controller, the PS — with every worker inside a Ray actor (Ray Core, ``ray``
extra, pinned to :data:`RAY_VERSION`).

On one machine the Ray cluster (GCS, raylet, the actor processes) runs in the root network
namespace on the loopback address, so none of Ray's own traffic crosses BMv2. Each worker runs
in a thread of its actor that first joins its Mininet host's network namespace
(:func:`olaf.netns.join_netns` on ``/proc/<host pid>/ns/net``) and then opens its Olaf socket
there: only Olaf updates and ACKs cross the switch, with the identity of the host (address, and
the UDP port of :attr:`~olaf.plan.topology.LayoutHost.udp_port`). A worker is the same
:class:`olaf.hosts.worker.Worker` an ``olaf worker`` process runs (same log, summary, report);
``workers_per_actor`` of them share an actor process (:class:`BackendOptions`), each actor
asking Ray for an equal share of the machine's CPUs (Ray's default of one CPU per actor would
schedule only as many actors as cores). The Ray cluster is started for the run and stopped by
its own handle (``ray.shutdown``); ``ray stop``, which kills every Ray process on the machine,
is never used.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Optional

from olaf.backends.base import RunFailed, RunMonitor, RunResult
from olaf.backends.mininet import MininetBackend, run_spec
from olaf.hosts.worker import Worker, WorkerConfig
from olaf.netns import host_netns_path, join_netns
from olaf.paths import build_dir
from olaf.plan.plan import RunPlan
from olaf.rl.extra import RAY_VERSION
from olaf.rundir.manifest import read_manifest

ACTOR_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""Environment of the actor processes: one math thread per worker, as the worker processes have."""


def require_ray() -> Any:
    """The ``ray`` module at :data:`RAY_VERSION`.

    Raises:
        RunFailed: Ray is not installed, or another version is (the message says how to install it).
    """
    try:
        import ray  # noqa: PLC0415
    except ImportError:
        raise RunFailed(f"the ray backend needs Ray: pip install -e '.[ray]' (ray=={RAY_VERSION})") from None
    if ray.__version__ != RAY_VERSION:
        raise RunFailed(f"ray {ray.__version__} is installed; the ray backend is tested with {RAY_VERSION}: "
                        f"pip install ray=={RAY_VERSION}")
    return ray


class WorkerHost:
    """The body of one Ray actor: Olaf workers, each in its own thread inside its Mininet host's
    network namespace. Methods return at once; :meth:`codes` reports who has finished."""

    def __init__(self) -> None:
        self._stops: dict[str, threading.Event] = {}
        self._codes: dict[str, int] = {}

    def start(self, name: str, netns: str, cfg: WorkerConfig, log_path: str) -> None:
        """Run worker ``name`` (``cfg``) in a new thread joined to ``netns``; a failure's
        traceback goes to ``log_path`` and its code is 1 (0: its schedule ended or it was stopped)."""
        stop = threading.Event()

        def body() -> None:
            try:
                join_netns(netns)
                Worker(cfg, stop).run()
                self._codes[name] = 0
            except BaseException:  # noqa: BLE001 (reported as the worker's exit code and log)
                Path(log_path).write_text(traceback.format_exc())
                self._codes[name] = 1

        self._stops[name] = stop
        threading.Thread(target=body, name=f"olaf-{name}", daemon=True).start()

    def stop(self, name: str) -> None:
        """Ask worker ``name`` to stop (as SIGTERM asks an ``olaf worker``: it writes its summary)."""
        self._stops[name].set()

    def codes(self) -> dict[str, int]:
        """Exit codes of the workers that have finished."""
        return dict(self._codes)


POLL_S = 0.1
"""Age after which an actor's exit codes are asked for again (one call answers for all its workers)."""


class ActorCodes:
    """The exit codes of one actor's workers (:meth:`WorkerHost.codes`), asked for at most every
    :data:`POLL_S` whoever of its workers is polled; ``died`` is set when the actor is gone."""

    def __init__(self, ray: Any, actor: Any) -> None:
        self.ray, self.actor = ray, actor
        self.codes: dict[str, int] = {}
        self.died: Optional[str] = None
        self._asked = float("-inf")

    def get(self, name: str) -> Optional[int]:
        if name not in self.codes and self.died is None and time.monotonic() - self._asked >= POLL_S:
            try:
                self.codes = self.ray.get(self.actor.codes.remote(), timeout=30)
            except self.ray.exceptions.RayActorError as e:
                self.died = str(e)
            self._asked = time.monotonic()
        return self.codes.get(name)


class ActorWorker:
    """One worker inside an actor, seen as a process (``poll``, ``wait``, ``returncode``,
    ``terminate``, ``kill``: what the emulation and :meth:`OlafNetwork.stop_procs` use)."""

    def __init__(self, ray: Any, actor: Any, codes: ActorCodes, name: str, log_path: Path) -> None:
        self.ray, self.actor, self.codes, self.name, self.log_path = ray, actor, codes, name, log_path
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self.returncode = self.codes.get(self.name)
            if self.returncode is None and self.codes.died is not None:
                self.log_path.write_text(f"its Ray actor died: {self.codes.died}\n")
                self.returncode = 1
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.name, timeout or 0)
            time.sleep(0.05)
        return code

    def terminate(self) -> None:
        self.actor.stop.remote(self.name)

    def kill(self) -> None:
        self.ray.kill(self.actor)
        self.returncode = -9


class RayLauncher:
    """A :data:`olaf.topologies.emulation.WorkerLauncher` that puts the workers into Ray actors,
    ``per_actor`` workers each (in the order of the run's clusters)."""

    def __init__(self, ray: Any, per_actor: int) -> None:
        self.ray, self.per_actor = ray, per_actor

    def __call__(self, net: Any, configs: dict[str, WorkerConfig], logs_dir: Path) -> dict[str, Any]:
        names = list(configs)
        n_actors = -(-len(names) // self.per_actor)
        cpus = (os.cpu_count() or 1) / n_actors
        cls = self.ray.remote(num_cpus=cpus, max_restarts=0)(WorkerHost)
        handles: dict[str, Any] = {}
        for i in range(n_actors):
            actor = cls.remote()
            codes = ActorCodes(self.ray, actor)
            for name in names[i * self.per_actor:(i + 1) * self.per_actor]:
                log = logs_dir / f"{name}.out"
                log.write_text("")
                actor.start.remote(name, str(host_netns_path(net.host(name).pid)), configs[name], str(log))
                handles[name] = h = ActorWorker(self.ray, actor, codes, name, log)
                net.track(h)
        return handles


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
        spec = run_spec(plan, self.options)
        out.mkdir(parents=True, exist_ok=True)
        t = time.monotonic()
        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False,
                 _node_ip_address="127.0.0.1", runtime_env={"env_vars": ACTOR_ENV}, logging_level="ERROR")
        try:
            launcher = RayLauncher(ray, self.options.workers_per_actor)
            summary = run_once(spec, out, self.options.build or build_dir(), self.options.console,
                               progress=self.options.progress, quiet=self.options.quiet, monitor=monitor,
                               launch=launcher)
        finally:
            ray.shutdown()
        m = read_manifest(out)
        status = "incomplete" if m.incomplete else "stopped" if m.stopped_early_s is not None else "ok"
        return RunResult(self.name, out, status, time.monotonic() - t, summary)

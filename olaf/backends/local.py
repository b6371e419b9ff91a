"""The ``local`` backend: real ``olaf ps`` and ``olaf worker`` processes on this host over
loopback UDP, no switch — the ideal network (nothing lost, aggregated or delayed), the
reference a training job through the switch is compared with.

Every host has its own loopback address (Linux routes all of 127/8 to ``lo``): the PS at
``127.<a>.0.100`` and worker ``w<i>`` at ``127.<a>.<i // 250 + 1>.<i % 250 + 1>`` — the layout
of the emulated network with a random ``a`` (32..249) per run, so concurrent runs do not
collide. Workers are numbered 1..N in cluster-group order (worker_id ``i``, clusters in
group order) and seeded as on every backend (:func:`olaf.topologies.build.worker_seed`).

The run: the PS, then the workers (command lines from :mod:`olaf.hosts.argv`, one OpenMP
thread each); once every host has written its log (all up: torch and the environments
loaded) the start files get ``t0`` = now + 1 s (a group with ``start_ms`` its own). The
run ends when every worker's schedule has ended (its updates or its ``duration_s``), when
the monitor says its goal is reached, or at the deadline (``updates_per_worker`` without a
duration: :meth:`RunPlan.deadline_s <olaf.plan.plan.RunPlan.deadline_s>`; workers not done then make
the run ``incomplete``). Workers are stopped first, the PS last (it ACKs their last
updates); then ``run.json`` and the report are written as for the other backends.

Refused when set in the plan (:data:`REFUSED`): everything about a network this backend does
not have — switches and their queues, links, transmission control (it needs the switches'
queue status), faults.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

from olaf.backends.base import Backend, BackendOptions, PlanRefused, RunResult, refuse_set, refuse_shared_hosts
from olaf.constants import IPV4_MAX_LEN
from olaf.harness import RunFailed, RunInterrupted, RunMonitor
from olaf.hosts import jobconfig
from olaf.hosts.argv import ps_argv, worker_argv
from olaf.hosts.runlog import group_start_file, start_run
from olaf.hosts.schedule import worker_schedule
from olaf.hosts.task import weights_problem
from olaf.plan.plan import PPOWorkload, RunPlan
from olaf.plan.topology import Placement, layout, worker_seed
from olaf.plan.tx import TxParams
from olaf.priority import niced
from olaf.rundir.manifest import write_run_manifest

_NO_NETWORK = "the local backend has no switch or links (loopback only): run it on mininet or ns3"
REFUSED = {
    "topology": _NO_NETWORK,
    "queue": _NO_NETWORK,
    "queue_size": _NO_NETWORK,
    "uplinks": _NO_NETWORK,
    "access": _NO_NETWORK,
    "reward_threshold": "the reward filter is the switch's: " + _NO_NETWORK,
    "activity_window_ms": "the active-cluster count is the switch's: " + _NO_NETWORK,
    "segments": _NO_NETWORK,
    "device_queue_packets": _NO_NETWORK,
    "linger_ms": "a local run ends when its workers stopped",
    "tc": "transmission control needs the switches' queue status in the ACKs: " + _NO_NETWORK,
    "faults": "no switch to restart here; faults run on the mininet backend",
}
STARTUP_TIMEOUT_S = 300.0
"""Hang guard: every host must have written its log this long after its launch (torch loads)."""
OLAF = [sys.executable, "-m", "olaf.cli"]


class LocalRunFailed(RunFailed):
    """A host process of a local run failed (exited early or did not come up); the message has its
    command and the end of its stderr."""


def _name(p: subprocess.Popen[Any]) -> str:
    args = list(p.args) if isinstance(p.args, (list, tuple)) else [p.args]
    start = args.index(OLAF[-1]) + 1 if OLAF[-1] in args else 0  # after a `nice -n N` and `python -m olaf.cli`
    return " ".join(map(str, args[start:start + 2]))


def _failed(p: subprocess.Popen[Any], what: str) -> LocalRunFailed:
    err = p.stderr.read() if p.stderr else ""
    return LocalRunFailed(f"{_name(p)} {what} (exit {p.returncode}): {err[-2000:]}")


class LocalBackend(Backend):
    """Loopback processes, no switch: the ideal network."""

    name = "local"
    description = "real PS and worker processes over loopback UDP, no switch (the ideal network)"
    mtu = IPV4_MAX_LEN
    max_mtu = IPV4_MAX_LEN

    def __init__(self, options: BackendOptions) -> None:
        self.options = options

    def preflight(self) -> None:
        """Nothing beyond Olaf itself (a training workload checks the ``train`` extra in its workers)."""

    def check(self, plan: RunPlan) -> None:
        refuse_set(self.name, plan, REFUSED)
        refuse_shared_hosts(self.name, plan, "loopback workers each have their own address and no switch tells "
                            "workers apart by UDP port: run it on the mininet backend")
        problem = None if isinstance(plan.workload, PPOWorkload) else weights_problem(plan.grads)
        if problem:
            raise PlanRefused(self.name, "grads", problem)
        if plan.trace is not None:
            plan.traces()  # raises ConfigError naming trace.file

    def run(self, plan: RunPlan, out: Path, monitor: Optional[RunMonitor] = None) -> RunResult:
        """Run ``plan`` on loopback into ``out`` (``hosts/`` logs, ``run.json``, the report).

        Raises:
            PlanRefused: see :meth:`check`.
            LocalRunFailed: a host exited with an error or did not come up.
        """
        from olaf.report.commands import report_run  # noqa: PLC0415
        from olaf.topologies.rundir import updates_run_end  # noqa: PLC0415

        self.check(plan)
        hosts_dir, start_file = out / "hosts", out / "start_ns"
        hosts_dir.mkdir(parents=True, exist_ok=True)
        a = random.randrange(32, 250)
        ps_ip = f"127.{a}.0.100"
        job = plan.workload.job if isinstance(plan.workload, PPOWorkload) else None
        lay = layout(plan.topology, [Placement(g.switch, g.clusters, g.workers_per_cluster) for g in plan.groups])
        workers = []
        for gi, (g, ids) in enumerate(zip(plan.groups, plan.group_clusters())):
            for cid in ids:
                for name in lay.clusters[cid]:
                    wid = lay.hosts[name].worker_id
                    assert wid is not None
                    schedule = worker_schedule(plan, gi, wid, duration_s=plan.duration_s,
                                               max_updates=plan.updates_per_worker, trace_dir=hosts_dir, name=name)
                    workers.append(jobconfig.worker_config(
                        job, ps_ip=ps_ip, bind_ip=f"127.{a}.{wid // 250 + 1}.{wid % 250 + 1}", schedule=schedule,
                        num_weights=plan.grads, task_seed=plan.seed, tx=TxParams(),
                        seed=worker_seed(plan.seed, wid), cluster_id=cid, worker_id=wid,
                        start_file=group_start_file(start_file, gi) if g.start_ms > 0 else start_file,
                        out_dir=hosts_dir, name=name))
        ps = jobconfig.ps_config(job, bind_ip=ps_ip, worker_ips=[w.bind_ip for w in workers], out_dir=hosts_dir,
                                 switch=False)
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

        def popen(args: list[str], nice: int = 0) -> subprocess.Popen[str]:
            return subprocess.Popen(niced(OLAF + args, nice), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True, env=env)

        procs = [popen(["ps", *ps_argv(ps)])]
        tick = threading.Event()
        partial = False
        t0 = 0
        stopped_early: Optional[float] = None
        t_start = time.monotonic()
        try:
            self._wait_up([ps.log_path], procs, tick)
            procs += [popen(["worker", *worker_argv(w)], self.options.worker_nice) for w in workers]
            self._wait_up([w.log_path for w in workers], procs, tick)
            t0 = start_run(start_file, [g.start_ms for g in plan.groups])
            end_s = plan.schedule_end_ns() / 1e9
            deadline_s = plan.deadline_s()
            self._write_manifest(out, plan, t0, t0 + round(min(end_s, deadline_s) * 1e9))
            while True:
                elapsed = (time.time_ns() - t0) / 1e9
                for p in procs:
                    if p.poll() not in (None, 0):
                        raise _failed(p, "exited during the run")
                if all(p.poll() is not None for p in procs[1:]):
                    break
                if monitor is not None and elapsed >= 0:
                    text, stop = monitor.poll(elapsed)
                    if self.options.progress and text:
                        self.options.console.print(f"{elapsed:6.0f} s  {text}")
                    if stop:
                        stopped_early = elapsed
                        break
                if elapsed >= deadline_s + 2:  # the workers' own linger is over
                    break
                tick.wait(1.0)
        except KeyboardInterrupt:
            partial = True
        finally:
            self._stop(procs)
        t_end, incomplete = time.time_ns(), None
        if plan.updates_per_worker is not None:
            t_end, incomplete = updates_run_end(hosts_dir, t0, plan.updates_per_worker, plan.duration_s)
            if stopped_early is not None:  # the monitor's goal, not the deadline, ended it
                incomplete = None
        self._write_manifest(out, plan, t0, t_end, partial=partial, partial_reason="interrupted" if partial else None,
                             incomplete=incomplete, stopped_early_s=stopped_early)
        summary = report_run(out, plots=self.options.plots, quiet=self.options.quiet) if self.options.report else None
        if partial:
            raise RunInterrupted(f"interrupted; hosts stopped, partial report in {out}")
        return RunResult.of_run(self.name, out, time.monotonic() - t_start, summary)

    def _write_manifest(self, out: Path, plan: RunPlan, t0: int, t_end: int, **fields: Any) -> None:
        write_run_manifest(out, self.name, plan, t0, t_end, **fields)

    @staticmethod
    def _wait_up(paths: list[Path], procs: list[subprocess.Popen[str]], tick: threading.Event) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not all(p.exists() for p in paths):
            for p in procs:
                if p.poll() is not None:
                    raise _failed(p, "exited during start-up")
            if time.monotonic() > deadline:
                raise LocalRunFailed(f"hosts not up within {STARTUP_TIMEOUT_S:.0f} s: "
                                     + ", ".join(str(x) for x in paths if not x.exists())[:500])
            tick.wait(0.1)

    @staticmethod
    def _stop(procs: list[subprocess.Popen[str]]) -> None:
        """Workers first, the PS last (it ACKs their last updates); SIGKILL after 30 s each."""
        for group in (procs[1:], procs[:1]):
            for p in group:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in group:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

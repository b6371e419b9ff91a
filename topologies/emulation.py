"""One emulated run: Mininet + BMv2 Olaf switches + controller + PS + workers.

Build the network of a plan (:class:`~olaf.topologies.emulated.EmulatedRun`)
(:mod:`olaf.topologies.network`), program it with the controller, start the PS and
the workers in their hosts (command lines from their configuration objects,
:mod:`olaf.hosts.argv`), let updates flow until the plan's deadline (or open the Mininet CLI
in an interactive run, so ``olafctl`` can regroup clusters from another terminal), stop
everything, read the switch counters and write the report into the run directory
(:mod:`olaf.topologies.rundir`).

Ctrl-C (or SIGTERM) during the run stops the hosts (they write their summaries), reads
the counters and writes a report marked ``"partial": true``; the network is torn down
in every case.

With ``updates_per_worker`` the run ends when every worker has sent its updates, or at
``duration_s`` (the deadline): workers still generating then are stopped, the report
covers what they generated, and ``run.json`` has ``"incomplete"`` (the workers that did
not finish and how many updates each generated).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from olaf import harness
from olaf.bmv2 import SwitchStartError, missing_p4_tools
from olaf.constants import WORKER_NICE
from olaf.controller import config as cfgmod
from olaf.controller.controller import OlafController
from olaf.controller.p4rt import P4RuntimeWriteError, SwitchUnavailable
from olaf.controller.tm import ThriftError
from olaf.harness import RunMonitor
from olaf.hosts.argv import ps_argv, worker_argv
from olaf.hosts.runlog import start_run
from olaf.hosts.worker import WorkerConfig
from olaf.plan.bottleneck import LoadTracker
from olaf.plan.faults import parse_fault
from olaf.priority import niced, set_session_nice
from olaf.report.commands import report_run
from olaf.rundir.atomic import write_json
from olaf.topologies.emulated import INTERACTIVE_DURATION_S, EmulatedRun
from olaf.topologies.faults import FaultInjector
from olaf.topologies.rundir import copy_program, give_back, update_run_json, updates_run_end, write_run_json

log = logging.getLogger(__name__)

SESSION_LEAD_S = 30.0
"""Hang guard of the wait for a worker started through ``mnexec -d`` to lead its own session
before its autogroup is lowered (:func:`olaf.priority.set_session_nice`); a busy machine delays
that ``setsid()`` by a scheduling slice or a few, and a worker still waiting keeps its own nice."""


class RunFailed(click.ClickException, harness.RunFailed):
    """The run did not complete; the message says what failed and where its log is."""


class RunInterrupted(RunFailed, harness.RunInterrupted):
    """Ctrl-C or SIGTERM stopped the run; its partial report is written."""


class PsDied(RuntimeError):
    """The PS process exited during the run (the message names it and its log)."""


def preflight(build: Path) -> None:
    """Raise RunFailed naming what is missing (root, tools, build outputs, Mininet)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("Mininet needs root: run `sudo make run`")
    missing = missing_p4_tools()
    if missing:
        problems.append(f"not on PATH: {', '.join(missing)} (README \"P4 toolchain\")")
    for f in ("olaf.json", "olaf.p4info.txt", "olaf_queue.so"):
        if not (build / f).exists():
            problems.append(f"{build / f} missing: run `make build`")
    try:
        import mininet.net  # noqa: F401,PLC0415
    except ImportError:
        problems.append("Mininet's Python package is not importable (`make run` links Debian's `mininet`)")
    if problems:
        raise RunFailed("cannot start the run:\n  " + "\n  ".join(problems))


def _olaf_bin() -> str:
    return str(Path(sys.executable).parent / "olaf")


WorkerLauncher = Callable[[Any, dict[str, WorkerConfig], Path], dict[str, Any]]
"""Starts a run's workers: ``(network, {worker name: config}, logs dir) → {name: handle}``, each
handle answering ``poll``, ``wait``, ``returncode`` (negative: stopped by the harness) and, when
not a process, ``terminate``/``kill`` (:meth:`OlafNetwork.track`)."""


def launch_processes(net: Any, configs: dict[str, WorkerConfig], logs_dir: Path,
                     nice: int = WORKER_NICE) -> dict[str, Any]:
    """The default :data:`WorkerLauncher`: one ``olaf worker`` process per worker, in its Mininet
    host, at nice value ``nice`` — its own and its session's, which it leads (:mod:`olaf.priority`,
    :data:`olaf.constants.WORKER_NICE`); output in ``logs/<worker>.out``."""
    procs = {w: net.popen(w, niced([_olaf_bin(), "worker", *worker_argv(cfg)], nice), logs_dir / f"{w}.out")
             for w, cfg in configs.items()}
    for p in procs.values():
        set_session_nice(p.pid, nice, wait_s=SESSION_LEAD_S)
    return procs


def run_once(run: EmulatedRun, out: Path, build: Path, console: Console, *, progress: bool = True,
             quiet: bool = False, monitor: Optional[RunMonitor] = None,
             launch: WorkerLauncher = launch_processes) -> dict[str, Any]:
    """One run into ``out``; returns the summary. Raises RunFailed.

    ``launch`` starts the workers (:data:`WorkerLauncher`; by default as processes).
    ``progress``: show the run's own progress bar (off when a caller shows one, e.g.
    ``olaf experiment``); ``quiet``: do not print the report's tables; ``monitor``: polled
    during the run, its text joins the progress line and it may end the run early (the
    generation window then ends at that moment; ``run.json`` has ``"stopped_early_s"``).
    """
    from olaf.topologies.network import OlafNetwork  # noqa: PLC0415 (needs Mininet)

    d = run.deployment()
    hosts_dir, logs_dir = out / "hosts", out / "logs"
    hosts_dir.mkdir(parents=True, exist_ok=True)
    cfgmod.save(d, out / "network.yaml")
    copy_program(build, out)
    start_file = out / "start_ns"
    ctl = OlafController(d, build / "olaf.p4info.txt", build / "olaf.json")
    partial = False
    early: Optional[float] = None
    injector: Optional[FaultInjector] = None
    measured: Optional[MeasuredLinks] = None
    ps_died: Optional[str] = None
    lost: dict[str, dict[str, Any]] = {}
    try:
        with OlafNetwork(d, build / "olaf_queue.so", logs_dir, log_level=run.bmv2_log_level,
                         pcap_dir=out / "pcap" if run.pcap else None, mtu=run.links_mtu) as net:
            queues = run.switch_queues()
            if not quiet:
                console.print(f"[bold]{run.topo}[/] network up: {len(d.switches)} switch(es), "
                              f"{len(d.clusters)} clusters, {sum(map(len, d.clusters.values()))} workers; queue "
                              f"[bold]{run.queue}[/] " + ", ".join(f"{sw} size {q.size} rate {q.rate_pps or '∞'} pps"
                                                                    for sw, q in queues.items()))
            try:
                ctl.deploy(push_pipeline=True)
            except (SwitchUnavailable, P4RuntimeWriteError, ThriftError):
                net.check_switches()  # a dead switch explains more than the controller's error
                raise
            ps = net.popen(d.ps, [_olaf_bin(), "ps", *ps_argv(run.ps_config(d, hosts_dir))], logs_dir / "ps.out")
            _wait_files([hosts_dir / "ps.jsonl"], [ps], timeout_s=60, what="the PS")
            workers = launch(net, {w: run.worker_config(d, w, cid, hosts_dir, start_file)
                                   for cid, members in d.clusters.items() for w in members}, logs_dir)
            _wait_files([hosts_dir / f"{w}.jsonl" for w in workers], list(workers.values()),
                        timeout_s=120, what="the workers")
            duration = INTERACTIVE_DURATION_S if run.interactive else run.generation_limit_s()
            t0 = start_run(start_file, [g.start_ms for g in run.cluster_groups()])
            write_run_json(out, run, t0, None if run.interactive else t0 + int(duration * 1e9))
            try:
                if run.interactive:
                    from mininet.cli import CLI  # noqa: PLC0415

                    console.print(f"Mininet CLI: updates are flowing. From another terminal: "
                                  f"`olafctl --network {out / 'network.yaml'} clusters`. Type `exit` to stop.")
                    CLI(net.net)
                    write_run_json(out, run, t0, time.time_ns())
                else:
                    procs = list(workers.values())
                    injector = FaultInjector([parse_fault(f) for f in run.faults], net, ctl, ps, list(d.clusters))
                    measured = MeasuredLinks(ctl, run.plan)
                    early = _progress(console, net, ctl, t0, duration, workers, show=progress, monitor=monitor,
                                      injector=injector, ps=ps, lost=lost, measured=measured)
                    longest_period = max(g.period_ms + g.jitter_ms for g in run.cluster_groups())
                    if early is not None:
                        write_run_json(out, run, t0, time.time_ns(), stopped_early_s=early)
                        _stop_generation(net, ctl, workers, run, hosts_dir)
                    elif run.updates_per_worker is None:
                        _wait_exit(procs, timeout_s=30 + longest_period / 1000)
                    else:  # the deadline is the generation limit: give the workers their linger, then stop them
                        _wait_exit(procs, timeout_s=2 + longest_period / 1000)
            except KeyboardInterrupt:
                partial = True
                console.print("[yellow]interrupted[/]: stopping hosts, reading counters, writing a partial report")
                write_run_json(out, run, t0, min(time.time_ns(), t0 + int(duration * 1e9)), partial=True,
                               partial_reason="interrupted", faults=injector.done if injector else [])
            except PsDied as e:
                partial, ps_died = True, str(e)
                console.print(f"[red]{e}[/]: stopping the workers, reading counters, writing a partial report")
                write_run_json(out, run, t0, min(time.time_ns(), t0 + int(duration * 1e9)), partial=True,
                               partial_reason=str(e), faults=injector.done if injector else [])
            net.stop_procs()
            _note_lost(console, workers, lost, (time.time_ns() - t0) / 1e9, monitor)
            if lost:
                update_run_json(out, lost_workers=list(lost.values()))
            if measured is not None and measured.changes:
                update_run_json(out, bottleneck_changes=measured.changes)
            if run.updates_per_worker is not None and not partial and not run.interactive:
                _close_updates_run(out, run, t0, hosts_dir)
            final = {n: sc.counters.snapshot(d.clusters) for n, sc in ctl.switches.items()}
            write_json(out / "switch_counters.json", injector.counters(final) if injector else final, indent=1)
            if injector and injector.done and not partial:
                update_run_json(out, faults=injector.done)
            net.check_switches()
            # workers the harness stopped (deadline, or the monitor's goal reached mid-iteration) did not fail
            stopped = _signalled(workers) if run.updates_per_worker is not None or early is not None else set()
            if injector and any(f["fault"] == "ps-kill" for f in injector.done):
                stopped.add("ps")
            stopped |= set(lost)  # lost with their machine: the run went on without them (run.json)
            bad = [f"{name} (exit {p.returncode}, log {logs_dir / (name + '.out')})"
                   for name, p in [("ps", ps), *workers.items()] if p.returncode not in (0, None) and name not in stopped]
            if bad and not partial:
                raise RunFailed("host programs failed: " + ", ".join(bad))
    except SwitchStartError as e:
        raise RunFailed(str(e)) from None
    except (SwitchUnavailable, P4RuntimeWriteError, ThriftError, cfgmod.ConfigError) as e:
        raise RunFailed(f"controller: {e} (switch logs in {logs_dir})") from None
    finally:
        ctl.close()
        give_back(out)
    summary = report_run(out, quiet=quiet)
    give_back(out)
    if ps_died is not None:
        raise RunFailed(f"{ps_died}; the run stopped there, partial report in {out}")
    if partial:
        raise RunInterrupted(f"interrupted; network stopped, partial report in {out}")
    return summary


def _queued(counters: Any) -> int:
    """Segments in a switch's OlafQueue: APPENDs that neither departed nor were reclaimed."""
    fates, reclaimed = counters.token_fates(), counters.reclaimed()
    return (counters.decisions()["append"] - fates["departed"] - fates["departed_after_loss"]
            - sum(reclaimed.values()))


def _stop_generation(net: Any, ctl: OlafController, workers: dict[str, Any], run: EmulatedRun,
                     hosts_dir: Path) -> None:
    """End a run before its schedule (the monitor's goal reached): stop the workers, wait until
    their first switches have decided every update packet they sent (:func:`_undecided`; at most
    5 s), then let every queue drain to the PS (polled on the switches' counters, at most the
    slowest queue's drain time + 5 s) and the PS read what arrived (0.5 s, a worker's linger), so each APPEND
    the report counts was delivered."""
    net.stop_procs(procs=list(workers.values()))
    sent = _sent_per_first_switch(ctl, list(workers), hosts_dir)
    deadline = time.monotonic() + 5
    while _undecided(ctl, sent) > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    drain_s = max((q.size / q.rate_pps for q in run.switch_queues().values() if q.rate_pps), default=0.0)
    deadline = time.monotonic() + drain_s + 5
    while any(_queued(sc.counters) for sc in ctl.switches.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)


def _sent_per_first_switch(ctl: OlafController, workers: list[str], hosts_dir: Path) -> dict[str, int]:
    """Update packets the stopped workers sent (their summaries: chunks, or updates when K = 1), per
    first switch on their path. Empty when a summary is missing (a worker killed before it wrote
    one: nothing to wait for)."""
    from olaf.controller.routing import switch_path  # noqa: PLC0415

    d = ctl.d
    sent: dict[str, int] = {}
    for w in workers:
        try:
            s = json.loads((hosts_dir / f"{w}.summary.json").read_text())
        except (OSError, ValueError):
            return {}
        path = switch_path(d, w, d.ps)
        if path:
            sent[path[0]] = sent.get(path[0], 0) + int(s.get("chunks_sent") or s.get("sent") or 0)
    return sent


def _undecided(ctl: OlafController, sent: dict[str, int]) -> int:
    """Of ``sent`` (:func:`_sent_per_first_switch`), the packets their first switch has not yet
    decided or counted as malformed: a stop mid-burst leaves packets in the veths and in BMv2's
    ingress buffer."""
    seen = sum(sum(c.decisions().values()) + sum(c.malformed().values())
               for c in (ctl.switches[name].counters for name in sent))
    return sum(sent.values()) - seen


def _signalled(workers: dict[str, Any]) -> set[str]:
    """Workers that the deadline stopped (SIGTERM/SIGKILL exit), not failed ones."""
    return {n for n, p in workers.items() if p.returncode is not None and p.returncode < 0}


def _close_updates_run(out: Path, run: EmulatedRun, t0: int, hosts_dir: Path) -> None:
    """``run.json`` of an ``updates_per_worker`` run: the window ends at the last generation;
    workers that did not generate all their updates by the deadline are listed."""
    assert run.updates_per_worker is not None
    t_end, incomplete = updates_run_end(hosts_dir, t0, run.updates_per_worker, run.duration_s)
    write_run_json(out, run, t0, t_end, incomplete=incomplete)


def _wait_files(paths: list[Path], procs: list, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not all(p.exists() for p in paths):
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            raise RunFailed(f"{what} exited during start-up (see the .out files in the run's logs/)")
        if time.monotonic() > deadline:
            raise RunFailed(f"{what} did not start within {timeout_s:.0f} s")
        time.sleep(0.1)


def _wait_exit(procs: list, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.2)


def _poll_all(workers: dict[str, Any]) -> bool:
    """Poll every worker (not only up to the first one running: a handle learns on its poll that
    its worker was lost); whether any still runs."""
    return [p.poll() for p in workers.values()].count(None) > 0


def _note_lost(console: Console, workers: dict[str, Any], lost: dict[str, dict[str, Any]], elapsed_s: float,
               monitor: Optional[RunMonitor] = None) -> None:
    """Record into ``lost`` the workers (polled) whose handle says they were ``lost`` with their
    machine, once each, with ``elapsed_s``; say so on the console and tell the monitor."""
    gone = {n: reason for n, p in workers.items() if n not in lost and (reason := getattr(p, "lost", None))}
    if not gone:
        return
    for n, reason in gone.items():
        lost[n] = {"worker": n, "at_s": round(elapsed_s, 3), "reason": reason}
    console.print(f"[yellow]lost[/] {', '.join(sorted(gone))} at {elapsed_s:.1f} s: "
                  f"{next(iter(gone.values()))}; the run goes on with the other workers")
    if monitor is not None:
        monitor.workers_lost(set(gone))


class MeasuredLinks:
    """The links toward the PS whose capacity follows the offered rate (``uplinks.<switch>.load``,
    :mod:`olaf.plan.bottleneck`): polled with the switches' decision counters, each capacity change
    applied through the controller (BMv2 queue rate and the tokens' sojourn bound) and recorded
    in ``changes`` (``run.json``'s ``bottleneck_changes``: switch, ``at_s`` after t0, the
    ``offered_pps`` measured and the ``rate_pps`` set, packets/s)."""

    def __init__(self, ctl: OlafController, plan: Any) -> None:
        self.ctl = ctl
        self.trackers = {sw: LoadTracker(link.load) for sw, link in plan.uplinks.items() if link.load is not None}
        self.changes: list[dict[str, Any]] = []

    def poll(self, t_s: float, decisions: dict[str, dict[str, int]]) -> None:
        """``decisions``: each switch's decision counters now, ``t_s``: seconds since t0."""
        for sw, tracker in self.trackers.items():
            rate = tracker.observe(t_s, sum(decisions[sw].values()))
            if rate is not None:
                self.ctl.set_bottleneck(sw, rate_pps=rate)
                self.changes.append({"switch": sw, "at_s": round(t_s, 3),
                                     "offered_pps": round(tracker.offered_pps or 0.0, 3), "rate_pps": rate})

    def text(self) -> str:
        """The capacities now, for the progress line (empty without measured links)."""
        return " ".join(f"{sw} {'∞' if t.rate_pps is None else t.rate_pps} pps" for sw, t in self.trackers.items())


def _progress(console: Console, net, ctl: OlafController, t0: int, duration: float, workers: dict[str, Any],
              show: bool = True, monitor: Optional[RunMonitor] = None, injector: Optional[FaultInjector] = None,
              ps: Any = None, lost: Optional[dict[str, dict[str, Any]]] = None,
              measured: Optional[MeasuredLinks] = None) -> Optional[float]:
    """Progress bar over the run, with the switches' live decision counts and the monitor's text;
    returns at the end of ``duration`` or when every worker has exited (a run of
    ``updates_per_worker``) with None, or when the monitor says stop with the seconds since t0.

    A worker handle whose ``lost`` attribute is set (a Ray actor whose node was lost) was lost
    with its machine: it is recorded into ``lost`` (``run.json``'s ``lost_workers``), said on the
    console and told to the monitor, and the run goes on with the others."""
    lost = {} if lost is None else lost
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn(),
                  console=console, transient=False, disable=not show) as prog:
        task = prog.add_task("starting", total=duration)
        while (now := time.time_ns()) < t0 + duration * 1e9 and _poll_all(workers):
            done = max(0.0, (now - t0) / 1e9)
            _note_lost(console, workers, lost, done, monitor)
            if injector is not None:
                injector.poll(done)
            if ps is not None and ps.poll() is not None:
                raise PsDied(f"the PS exited with status {ps.returncode} {done:.1f} s into the run "
                             f"(log: {net.log_dir / 'ps.out'})")
            net.check_switches()
            per_switch = {name: sc.counters.decisions() for name, sc in ctl.switches.items()}
            dec: dict[str, int] = {}
            for counts in per_switch.values():
                for k, v in counts.items():
                    dec[k] = dec.get(k, 0) + v
            if measured is not None and measured.trackers and done > 0:
                measured.poll(done, per_switch)
            text, stop = monitor.poll(done) if monitor is not None else ("", False)
            if measured is not None and measured.trackers:
                text = f"cap {measured.text()}" + (f" | {text}" if text else "")
            prog.update(task, completed=done, description=(
                f"append {dec['append']} aggregate {dec['aggregate']} "
                f"replace {dec['replace_worker'] + dec['replace_reward']} "
                f"drop {dec['drop_full'] + dec['drop_reward']}" + (f" | {text}" if text else "")))
            if stop:
                return done
            time.sleep(1.0)
        prog.update(task, completed=duration)
    return None

"""One emulated run: Mininet + BMv2 Olaf switches + controller + PS + workers.

Build the network of a :class:`~olaf.topologies.spec.RunSpec`
(:mod:`olaf.topologies.network`), program it with the controller, start the PS and
the workers in their hosts (command lines from their configuration objects,
:mod:`olaf.hosts.argv`), let updates flow for ``duration_s`` (or open the Mininet CLI
when it is 0, so ``olafctl`` can regroup clusters from another terminal), stop
everything, read the switch counters and write the report into the run directory
(:mod:`olaf.topologies.rundir`).

Ctrl-C (or SIGTERM) during the run stops the hosts (they write their summaries), reads
the counters and writes a report marked ``"partial": true``; the network is torn down
in every case.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from olaf.bmv2 import SwitchStartError, missing_p4_tools
from olaf.controller import config as cfgmod
from olaf.controller.controller import OlafController
from olaf.controller.p4rt import P4RuntimeWriteError, SwitchUnavailable
from olaf.controller.tm import ThriftError
from olaf.hosts.argv import ps_argv, worker_argv
from olaf.report.commands import report_run
from olaf.topologies.rundir import copy_program, give_back, write_json_atomic, write_run_json
from olaf.topologies.spec import INTERACTIVE_DURATION_S, RunSpec

log = logging.getLogger(__name__)


class RunFailed(click.ClickException):
    """The run did not complete; the message says what failed and where its log is."""


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


def run_once(spec: RunSpec, out: Path, build: Path, console: Console) -> dict[str, Any]:
    """One run into ``out``; returns the summary. Raises RunFailed."""
    from olaf.topologies.network import OlafNetwork  # noqa: PLC0415 (needs Mininet)

    d = spec.deployment()
    hosts_dir, logs_dir = out / "hosts", out / "logs"
    hosts_dir.mkdir(parents=True, exist_ok=True)
    cfgmod.save(d, out / "network.yaml")
    copy_program(build, out)
    start_file = out / "start_ns"
    ctl = OlafController(d, build / "olaf.p4info.txt", build / "olaf.json")
    partial = False
    try:
        with OlafNetwork(d, build / "olaf_queue.so", logs_dir, log_level=spec.bmv2_log_level,
                         pcap_dir=out / "pcap" if spec.pcap else None) as net:
            console.print(f"[bold]{spec.topo}[/] network up: {len(d.switches)} switch(es), "
                          f"{len(d.clusters)} clusters, {sum(map(len, d.clusters.values()))} workers; "
                          f"queue [bold]{spec.queue}[/] size {spec.queue_size}, bottleneck {spec.rate_pps} pps")
            try:
                ctl.deploy(push_pipeline=True)
            except (SwitchUnavailable, P4RuntimeWriteError, ThriftError):
                net.check_switches()  # a dead switch explains more than the controller's error
                raise
            ps = net.popen(d.ps, [_olaf_bin(), "ps", *ps_argv(spec.ps_config(d, hosts_dir))], logs_dir / "ps.out")
            _wait_files([hosts_dir / "ps.jsonl"], [ps], timeout_s=60, what="the PS")
            workers = {w: net.popen(w, [_olaf_bin(), "worker",
                                        *worker_argv(spec.worker_config(d, w, cid, hosts_dir, start_file))],
                                    logs_dir / f"{w}.out")
                       for cid, members in d.clusters.items() for w in members}
            _wait_files([hosts_dir / f"{w}.jsonl" for w in workers], list(workers.values()),
                        timeout_s=120, what="the workers")
            duration = INTERACTIVE_DURATION_S if spec.interactive else spec.duration_s
            t0 = time.time_ns() + 1_000_000_000
            tmp = start_file.with_suffix(".tmp")
            tmp.write_text(str(t0))
            tmp.replace(start_file)
            write_run_json(out, spec, t0, None if spec.interactive else t0 + int(duration * 1e9))
            try:
                if spec.interactive:
                    from mininet.cli import CLI  # noqa: PLC0415

                    console.print(f"Mininet CLI: updates are flowing. From another terminal: "
                                  f"`olafctl --network {out / 'network.yaml'} clusters`. Type `exit` to stop.")
                    CLI(net.net)
                    write_run_json(out, spec, t0, time.time_ns())
                else:
                    _progress(console, net, ctl, t0, duration)
                    _wait_exit(list(workers.values()), timeout_s=30 + spec.period_ms / 1000)
            except KeyboardInterrupt:
                partial = True
                console.print("[yellow]interrupted[/]: stopping hosts, reading counters, writing a partial report")
                write_run_json(out, spec, t0, min(time.time_ns(), t0 + int(duration * 1e9)), partial=True)
            net.stop_procs()
            write_json_atomic(out / "switch_counters.json",
                              {n: sc.counters.snapshot(d.clusters) for n, sc in ctl.switches.items()})
            net.check_switches()
            bad = [f"{name} (exit {p.returncode}, log {logs_dir / (name + '.out')})"
                   for name, p in [("ps", ps), *workers.items()] if p.returncode not in (0, None)]
            if bad and not partial:
                raise RunFailed("host programs failed: " + ", ".join(bad))
    except SwitchStartError as e:
        raise RunFailed(str(e)) from None
    except (SwitchUnavailable, P4RuntimeWriteError, ThriftError, cfgmod.ConfigError) as e:
        raise RunFailed(f"controller: {e} (switch logs in {logs_dir})") from None
    finally:
        ctl.close()
        give_back(out)
    summary = report_run(out)
    give_back(out)
    if partial:
        raise RunFailed(f"interrupted; network stopped, partial report in {out}")
    return summary


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


def _progress(console: Console, net, ctl: OlafController, t0: int, duration: float) -> None:
    """Progress bar over the run, with the switches' live decision counts."""
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn(),
                  console=console, transient=False) as prog:
        task = prog.add_task("starting", total=duration)
        while (now := time.time_ns()) < t0 + duration * 1e9:
            net.check_switches()
            done = max(0.0, (now - t0) / 1e9)
            dec: dict[str, int] = {}
            for sc in ctl.switches.values():
                for k, v in sc.counters.decisions().items():
                    dec[k] = dec.get(k, 0) + v
            prog.update(task, completed=done, description=(
                f"append {dec['append']} aggregate {dec['aggregate']} "
                f"replace {dec['replace_worker'] + dec['replace_reward']} "
                f"drop {dec['drop_full'] + dec['drop_reward']}"))
            time.sleep(1.0)
        prog.update(task, completed=duration)


def write_compare(dirs: dict[str, Path]) -> None:
    """``olaf compare``: the Olaf run's report against the FIFO baseline (``compare.json``)."""
    report_run(dirs["olaf"], baseline_dir=dirs["fifo"])
    give_back(dirs["olaf"])
    log.info("compare: %s", json.dumps({k: str(v) for k, v in dirs.items()}))

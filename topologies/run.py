"""`olaf run` / `olaf compare`: Olaf end to end in Mininet (``make run``, ``make compare``).

One run: build the topology (:mod:`olaf.topologies.build`), start Mininet with
BMv2 Olaf switches (:mod:`olaf.topologies.network`), program them with the
controller, start the PS and the workers in their hosts, let updates flow for
``duration_s`` (or open the Mininet CLI when it is 0, so ``olafctl`` can regroup
clusters from another terminal), stop everything, read the switch counters and
write the report (``olaf report``) into ``results/<stamp>-<topo>-<queue>/``;
``results/latest`` points at it.

Files of a run directory: ``network.yaml`` (what ``olafctl`` needs),
``run.json`` (window and parameters), ``hosts/*.jsonl`` (PS and worker logs),
``logs/<switch>.log`` (BMv2), ``switch_counters.json``, ``summary.json``,
``summary.csv``, ``aom.png``, ``aggregations_cdf.png``, ``reward.png``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from olaf.bmv2 import SwitchStartError, missing_p4_tools
from olaf.controller import config as cfgmod
from olaf.controller.controller import OlafController
from olaf.controller.p4rt import P4RuntimeWriteError, SwitchUnavailable
from olaf.controller.tm import ThriftError
from olaf.fixedpoint import reward_to_fixed
from olaf.topologies.build import QueueSetup, multihop, tor

ROOT = Path(__file__).resolve().parents[1]
INTERACTIVE_DURATION_S = 10 * 24 * 3600


@dataclass
class RunSpec:
    """Parameters of one run (defaults: paper §8.1 microbenchmark shape, congested).

    Attributes:
        topo: "tor" (one switch) or "multihop" (paper Fig. 9).
        queue: "olaf" or "fifo" (the FIFO baseline of the same switch and size).
        duration_s: seconds of update generation; 0 = interactive (Mininet CLI).
        clusters: tor: clusters; multihop: clusters per edge switch.
        workers_per_cluster: workers per cluster.
        period_ms / jitter_ms: each worker's update period and its jitter, ms.
        queue_size: Q_max in segments (tor and multihop core; multihop edges use edge_queue_size).
        edge_queue_size: multihop only: Q_max of s1 and s2.
        rate_pps: bottleneck (egress toward the PS) in packets/s, 0 = unlimited.
        edge_rate_pps: multihop only: rate of s1/s2 toward s3 (0 = unlimited).
        grads: gradient elements per update.
        reward_threshold: reward filter T in reward units, None = off.
        activity_window_ms: window for the active-cluster count in ACKs.
        tc: worker transmission control (paper §5), with tc_delta_t_ms and tc_v_per_s.
        seed: task seed (worker i uses seed + i for its own draws).
    """

    topo: str = "tor"
    queue: str = "olaf"
    duration_s: float = 30.0
    clusters: int = 9
    workers_per_cluster: int = 3
    period_ms: float = 50.0
    jitter_ms: float = 10.0
    queue_size: int = 8
    edge_queue_size: int = 5
    rate_pps: int = 200
    edge_rate_pps: int = 0
    grads: int = 16
    reward_threshold: Optional[float] = None
    activity_window_ms: float = 200.0
    tc: bool = False
    tc_delta_t_ms: float = 400.0
    tc_v_per_s: float = 2.5
    seed: int = 1

    def __post_init__(self) -> None:
        if self.topo not in ("tor", "multihop"):
            raise click.BadParameter(f"{self.topo!r}: use tor or multihop", param_hint="--topo / TOPO")
        if self.queue not in ("olaf", "fifo"):
            raise click.BadParameter(f"{self.queue!r}: use olaf or fifo", param_hint="--queue / QUEUE")
        if self.duration_s < 0:
            raise click.BadParameter("must be >= 0 seconds (0: interactive)", param_hint="--duration / DURATION")

    def deployment(self) -> cfgmod.Deployment:
        thr = None if self.reward_threshold is None else reward_to_fixed(self.reward_threshold)
        common = dict(num_grads=self.grads, discipline=self.queue, reward_threshold=thr,
                      activity_window_ns=int(self.activity_window_ms * 1e6))
        try:
            if self.topo == "tor":
                return tor(self.clusters, self.workers_per_cluster,
                           queue=QueueSetup(self.queue_size, self.rate_pps), **common)
            return multihop(self.clusters, self.workers_per_cluster,
                            edge_queue=QueueSetup(self.edge_queue_size, self.edge_rate_pps),
                            core_queue=QueueSetup(self.queue_size, self.rate_pps), **common)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--clusters / --workers-per-cluster") from None


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
    from olaf.run.commands import report_run  # noqa: PLC0415
    from olaf.topologies.network import OlafNetwork  # noqa: PLC0415 (needs Mininet)

    d = spec.deployment()
    hosts_dir, logs_dir = out / "hosts", out / "logs"
    hosts_dir.mkdir(parents=True, exist_ok=True)
    cfgmod.save(d, out / "network.yaml")
    interactive = spec.duration_s == 0
    duration = INTERACTIVE_DURATION_S if interactive else spec.duration_s
    ps_ip = d.hosts[d.ps].ip
    start_file = out / "start_ns"
    t0 = 0
    ctl = OlafController(d, build / "olaf.p4info.txt", build / "olaf.json")
    try:
        with OlafNetwork(d, build / "olaf_queue.so", logs_dir) as net:
            console.print(f"[bold]{spec.topo}[/] network up: {len(d.switches)} switch(es), "
                          f"{len(d.clusters)} clusters, {sum(map(len, d.clusters.values()))} workers; "
                          f"queue [bold]{spec.queue}[/] size {spec.queue_size}, bottleneck {spec.rate_pps} pps")
            try:
                ctl.deploy(push_pipeline=True)
            except (SwitchUnavailable, P4RuntimeWriteError, ThriftError):
                net.check_switches()  # a dead switch explains more than the controller's error
                raise
            ps = net.popen(d.ps, [_olaf_bin(), "ps", "--bind", ps_ip, "--out-dir", str(hosts_dir),
                                  "--name", "ps"], logs_dir / "ps.out")
            _wait_files([hosts_dir / "ps.jsonl"], [ps], timeout_s=60, what="the PS")
            workers = {}
            for cid, members in d.clusters.items():
                for w in members:
                    h = d.hosts[w]
                    cmd = [_olaf_bin(), "worker", "--ps", ps_ip, "--bind", h.ip,
                           "--period-ms", str(spec.period_ms), "--jitter-ms", str(spec.jitter_ms),
                           "--duration", str(duration), "--start-file", str(start_file),
                           "--grads", str(spec.grads), "--task-seed", str(spec.seed),
                           "--seed", str(spec.seed + h.worker_id), "--cluster-id", str(cid),
                           "--worker-id", str(h.worker_id), "--out-dir", str(hosts_dir), "--name", w]
                    if spec.tc:
                        cmd += ["--tc", "--tc-delta-t-ms", str(spec.tc_delta_t_ms),
                                "--tc-v-per-s", str(spec.tc_v_per_s)]
                    workers[w] = net.popen(w, cmd, logs_dir / f"{w}.out")
            _wait_files([hosts_dir / f"{w}.jsonl" for w in workers], list(workers.values()),
                        timeout_s=120, what="the workers")
            t0 = time.time_ns() + 1_000_000_000
            tmp = start_file.with_suffix(".tmp")
            tmp.write_text(str(t0))
            tmp.replace(start_file)
            _write_run_json(out, spec, t0, t0 + int(duration * 1e9) if not interactive else None)
            if interactive:
                from mininet.cli import CLI  # noqa: PLC0415

                console.print(f"Mininet CLI: updates are flowing. From another terminal: "
                              f"`olafctl --network {out / 'network.yaml'} clusters`. Type `exit` to stop.")
                CLI(net.net)
                t_end = time.time_ns()
                _write_run_json(out, spec, t0, t_end)
            else:
                _progress(console, net, ctl, t0, duration)
                _wait_exit(list(workers.values()), timeout_s=30 + spec.period_ms / 1000)
            net.stop_procs()
            counters = {n: {"decisions": sc.counters.decisions(), "malformed": sc.counters.malformed(),
                            "traffic": sc.counters.traffic(),
                            "clusters": {c: asdict(k) for c, k in sc.counters.clusters(d.clusters).items()}}
                        for n, sc in ctl.switches.items()}
            (out / "switch_counters.json").write_text(json.dumps(counters, indent=1))
            net.check_switches()
            bad = [f"{name} (exit {p.returncode}, log {logs_dir / (name + '.out')})"
                   for name, p in [("ps", ps), *workers.items()] if p.returncode not in (0, None)]
            if bad:
                raise RunFailed("host programs failed: " + ", ".join(bad))
    except SwitchStartError as e:
        raise RunFailed(str(e)) from None
    except (SwitchUnavailable, P4RuntimeWriteError, ThriftError, cfgmod.ConfigError) as e:
        raise RunFailed(f"controller: {e} (switch logs in {logs_dir})") from None
    finally:
        ctl.close()
    return report_run(out)


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
            dec = {}
            for sc in ctl.switches.values():
                for k, v in sc.counters.decisions().items():
                    dec[k] = dec.get(k, 0) + v
            prog.update(task, completed=done, description=(
                f"append {dec['append']} aggregate {dec['aggregate']} "
                f"replace {dec['replace_worker'] + dec['replace_reward']} "
                f"drop {dec['drop_full'] + dec['drop_reward']}"))
            time.sleep(1.0)
        prog.update(task, completed=duration)


def _write_run_json(out: Path, spec: RunSpec, t0: int, t_end: Optional[int]) -> None:
    meta = {"t_start_ns": t0, "t_end_ns": t_end, **asdict(spec)}
    (out / "run.json").write_text(json.dumps(meta, indent=1))


def _new_run_dir(results: Path, label: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = results.resolve() / f"{stamp}-{label}"
    out.mkdir(parents=True, exist_ok=False)
    latest = results / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(out.name)
    return out


def _term_as_interrupt(signum, frame):  # noqa: ARG001
    raise KeyboardInterrupt


def spec_options(f):
    """The run parameters as click options (shared by `olaf run` and `olaf compare`)."""
    d = RunSpec()
    opts = [
        click.option("--topo", default=d.topo, show_default=True, type=click.Choice(["tor", "multihop"])),
        click.option("--duration", "duration_s", default=d.duration_s, show_default=True,
                     type=click.FloatRange(min=0), help="Seconds of updates; 0 opens the Mininet CLI."),
        click.option("--clusters", default=d.clusters, show_default=True, type=click.IntRange(1, 250),
                     help="Clusters (multihop: per edge switch)."),
        click.option("--workers-per-cluster", default=d.workers_per_cluster, show_default=True, type=click.IntRange(1, 16)),
        click.option("--period-ms", default=d.period_ms, show_default=True, type=click.FloatRange(min=0, min_open=True)),
        click.option("--jitter-ms", default=d.jitter_ms, show_default=True, type=click.FloatRange(min=0)),
        click.option("--queue-size", default=d.queue_size, show_default=True, type=click.IntRange(1, 64)),
        click.option("--edge-queue-size", default=d.edge_queue_size, show_default=True, type=click.IntRange(1, 64)),
        click.option("--rate-pps", default=d.rate_pps, show_default=True, type=click.IntRange(min=0),
                     help="Bottleneck toward the PS, packets/s (0 = unlimited)."),
        click.option("--edge-rate-pps", default=d.edge_rate_pps, show_default=True, type=click.IntRange(min=0)),
        click.option("--grads", default=d.grads, show_default=True, type=click.IntRange(0, 361)),
        click.option("--reward-threshold", type=click.FloatRange(min=0), help="Reward filter T (off by default)."),
        click.option("--activity-window-ms", default=d.activity_window_ms, show_default=True, type=click.FloatRange(min=0)),
        click.option("--tc/--no-tc", default=d.tc, show_default=True, help="Worker transmission control (paper §5)."),
        click.option("--tc-delta-t-ms", default=d.tc_delta_t_ms, show_default=True, type=click.FloatRange(min=0, min_open=True)),
        click.option("--tc-v-per-s", default=d.tc_v_per_s, show_default=True, type=click.FloatRange(min=0)),
        click.option("--seed", default=d.seed, show_default=True, type=int),
        click.option("--build", type=click.Path(file_okay=False, path_type=Path), default=ROOT / "build", show_default=True),
        click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"), show_default=True),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _spec(kw: dict, queue: str) -> tuple[RunSpec, Path, Path]:
    build, results = kw.pop("build"), kw.pop("results")
    return RunSpec(queue=queue, **kw), build, results


@click.command("run")
@click.option("--queue", default="olaf", show_default=True, type=click.Choice(["olaf", "fifo"]))
@spec_options
def run_cmd(queue: str, **kw) -> None:
    """Run Olaf end to end in Mininet and report AoM and loss per cluster (root)."""
    spec, build, results = _spec(kw, queue)
    preflight(build)
    signal.signal(signal.SIGTERM, _term_as_interrupt)
    out = _new_run_dir(results, f"{spec.topo}-{spec.queue}")
    console = Console()
    try:
        run_once(spec, out, build, console)
    except KeyboardInterrupt:
        raise RunFailed(f"interrupted; network stopped, partial logs in {out}") from None
    console.print(f"results: {out} (results/latest)")


@click.command("compare")
@spec_options
def compare_cmd(**kw) -> None:
    """Run FIFO then Olaf on the same topology and load; print both and their comparison (root)."""
    from olaf.run.commands import report_run  # noqa: PLC0415

    if kw["duration_s"] == 0:
        raise click.BadParameter("compare needs a fixed duration", param_hint="--duration / DURATION")
    console = Console()
    signal.signal(signal.SIGTERM, _term_as_interrupt)
    dirs = {}
    for queue in ("fifo", "olaf"):
        spec, build, results = _spec(dict(kw), queue)
        preflight(build)
        dirs[queue] = _new_run_dir(results, f"{spec.topo}-{queue}")
        try:
            run_once(spec, dirs[queue], build, console)
        except KeyboardInterrupt:
            raise RunFailed(f"interrupted; network stopped, partial logs in {dirs[queue]}") from None
    report_run(dirs["olaf"], baseline_dir=dirs["fifo"])
    console.print(f"results: {dirs['fifo']} (FIFO), {dirs['olaf']} (Olaf, results/latest, compare.json)")

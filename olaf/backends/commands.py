"""``olaf run`` / ``olaf compare``: Olaf end to end on a backend (Mininet + BMv2 by default;
``make run``, ``make compare``).

The command-line layer only: options → their run plan (:func:`plan_of_options`, a
:class:`~olaf.plan.plan.RunPlan`; each bad value names its option) → the chosen backend
(imported when a run starts, so ``--help`` needs neither Mininet nor the P4Runtime packages).
Every run's ``run.json`` holds the plan, as every backend's does.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any, Optional

import click
from rich.console import Console

from olaf import backends
from olaf.backends.base import Backend, BackendOptions
from olaf.bmv2 import BMV2_LOG_LEVEL
from olaf.cliplan import plan_options
from olaf.clitypes import FiniteFloat
from olaf.configfile import ConfigError, validate
from olaf.constants import DEFAULT_ACTIVITY_WINDOW_MS, DEFAULT_JITTER_MS, DEFAULT_PERIOD_MS, SEGMENTS
from olaf.hosts.task import MAX_NUM_WEIGHTS
from olaf.plan.plan import RunPlan
from olaf.plan.topology import EDGE_QUEUE_SIZE, EDGE_SWITCHES, QUEUES
from olaf.plan.tx import DEFAULT_DELTA_T_MS, DEFAULT_V_PER_S, READINGS
from olaf.topologies.rundir import new_run_dir

DEFAULT_DURATION_S = 30.0
"""``olaf run``'s seconds of updates (the paper §8.1 microbenchmark, congested)."""
DEFAULT_RATE_PPS = 200
"""``olaf run``'s bottleneck toward the PS, updates/s: below the default job's 540 offered."""
DEFAULT_GRADS = 16
"""``olaf run``'s model parameters per update (the bandit task)."""

_GROUP_OPTIONS = {"period_ms": "--period-ms", "jitter_ms": "--jitter-ms", "clusters": "--clusters",
                  "workers_per_cluster": "--workers-per-cluster", "workers_per_host": "--workers-per-host"}
_TOP_OPTIONS = {"duration_s": "--duration", "faults": "--fault", "topology": "--topo", "grads": "--grads",
                "seed": "--seed", "reward_threshold": "--reward-threshold", "queue": "--queue",
                "activity_window_ms": "--activity-window-ms", "bmv2_log_level": "--bmv2-log-level"}


def option_of(path: str, message: str = "", topo: str = "tor") -> str:
    """The ``olaf run`` option behind plan field ``path`` (``groups[0].jitter_ms`` → ``--jitter-ms``,
    ``queue_size.s1`` of a multihop plan → ``--edge-queue-size``); ``message`` decides for a
    group-wide error (``jitter_ms … must be <= period_ms``)."""
    head, _, rest = path.partition(".")
    top = head.split("[")[0]
    if top == "groups":
        name = rest or next((f for f in _GROUP_OPTIONS if message.startswith(f)), None) or next(
            (f for f in _GROUP_OPTIONS if f in message), "clusters")
        return _GROUP_OPTIONS.get(name, "--clusters")
    if top in ("queue_size", "uplinks"):
        edge = rest.split(".")[0] in EDGE_SWITCHES["multihop"] and topo == "multihop"
        return ("--edge-" if edge else "--") + ("queue-size" if top == "queue_size" else "rate-pps")
    if top == "tc":
        return "--tc-" + rest.replace("_", "-") if rest else "--tc"
    if top == "workload":
        return "--grads"
    return _TOP_OPTIONS.get(top, "--" + top.replace("_", "-"))


def plan_of_options(*, topo: str, queue: str, duration_s: float, clusters: int, workers_per_cluster: int,
                    workers_per_host: int, period_ms: float, jitter_ms: float, queue_size: Optional[int],
                    edge_queue_size: Optional[int], rate_pps: float, edge_rate_pps: float, grads: int,
                    reward_threshold: Optional[float], activity_window_ms: float, tc: bool, tc_delta_t_ms: float,
                    tc_v_per_s: float, tc_reading: str, seed: int, faults: tuple[str, ...],
                    interactive_s: float) -> RunPlan:
    """The plan of ``olaf run``'s options: one group of ``clusters`` behind ``s1`` (tor), or one
    behind each edge switch (multihop, paper Fig. 9); ``queue_size`` and ``rate_pps`` (updates/s,
    0 unlimited) for the switch attached to the PS, ``edge_*`` for the multihop edges; a field
    left at the plan's default is not set in it (so a backend refuses only what was asked for).
    ``duration_s`` 0 (the interactive Mininet CLI) becomes ``interactive_s``.

    Raises:
        click.BadParameter: a bad value, naming the option (:func:`option_of`).
    """
    edges = EDGE_SWITCHES[topo]
    root = "s3" if topo == "multihop" else "s1"
    raw: dict[str, Any] = {
        "duration_s": duration_s or interactive_s,
        "groups": [{"name": f"S{i + 1}", "clusters": clusters, "workers_per_cluster": workers_per_cluster,
                    "period_ms": period_ms, "jitter_ms": jitter_ms, "switch": sw, "workers_per_host": workers_per_host}
                   for i, sw in enumerate(edges)]}
    raw.update({k: v for k, v in (("topology", topo), ("queue", queue), ("grads", grads), ("seed", seed))
                if v != RunPlan.model_fields[k].default})
    sizes = {root: queue_size} if queue_size is not None else {}
    rates = {root: rate_pps}
    if topo == "multihop":
        sizes.update({sw: edge_queue_size for sw in edges if edge_queue_size is not None})
        rates.update(dict.fromkeys(edges, edge_rate_pps))
    if sizes:
        raw["queue_size"] = sizes
    if any(rates.values()):
        raw["uplinks"] = {sw: {"pps": r} for sw, r in rates.items() if r}
    tx = {k: v for k, v, d in (("enabled", tc, False), ("delta_t_ms", tc_delta_t_ms, DEFAULT_DELTA_T_MS),
                               ("v_per_s", tc_v_per_s, DEFAULT_V_PER_S), ("reading", tc_reading, READINGS[0]))
          if v != d}
    if tx:
        raw["tc"] = tx
    if activity_window_ms != DEFAULT_ACTIVITY_WINDOW_MS:
        raw["activity_window_ms"] = activity_window_ms
    if reward_threshold is not None:
        raw["reward_threshold"] = reward_threshold
    if faults:
        raw["faults"] = list(faults)
    try:
        return validate(RunPlan, raw)
    except ConfigError as e:
        raise _bad_parameter(e, topo) from None


def _bad_parameter(e: ConfigError, topo: str) -> click.BadParameter:
    """``e`` (a plan field's error) as the error of its ``olaf run`` option."""
    return click.BadParameter(e.message, param_hint=option_of(e.path, e.message, topo))


def run_options(f):
    """The run parameters as click options (shared by `olaf run` and `olaf compare`)."""
    opts = [
        click.option("--duration", "duration_s", default=DEFAULT_DURATION_S, show_default=True,
                     type=FiniteFloat(min=0), help="Seconds of updates; 0 opens the Mininet CLI."),
        click.option("--period-ms", default=DEFAULT_PERIOD_MS, show_default=True,
                     type=FiniteFloat(min=0, min_open=True)),
        click.option("--jitter-ms", default=DEFAULT_JITTER_MS, show_default=True, type=FiniteFloat(min=0)),
        click.option("--edge-queue-size", type=click.IntRange(1, SEGMENTS),
                     help=f"multihop: Q_max of s1 and s2, updates [default: {EDGE_QUEUE_SIZE}]."),
        click.option("--rate-pps", default=DEFAULT_RATE_PPS, show_default=True, type=FiniteFloat(min=0),
                     help="Bottleneck toward the PS, updates/s (K chunk packets each; 0 = unlimited)."),
        click.option("--edge-rate-pps", default=0, show_default=True, type=FiniteFloat(min=0),
                     help="multihop: s1's and s2's link toward s3, updates/s (0 = unlimited)."),
        click.option("--grads", default=DEFAULT_GRADS, show_default=True,
                     type=click.IntRange(1, MAX_NUM_WEIGHTS),
                     help="Model parameters per update (the workers' bandit task); more than one 1500 B frame "
                          "holds travel in chunks."),
        click.option("--reward-threshold", type=FiniteFloat(min=0), help="Reward filter T (off by default)."),
        click.option("--activity-window-ms", default=DEFAULT_ACTIVITY_WINDOW_MS, show_default=True,
                     type=FiniteFloat(min=0)),
        click.option("--tc-delta-t-ms", default=DEFAULT_DELTA_T_MS, show_default=True,
                     type=FiniteFloat(min=0, min_open=True)),
        click.option("--tc-v-per-s", default=DEFAULT_V_PER_S, show_default=True, type=FiniteFloat(min=0)),
        click.option("--tc-reading", default=READINGS[0], show_default=True, type=click.Choice(READINGS),
                     help="probabilistic: paper §5, every update draws; backoff: §6, a skipped draw silences the "
                          "worker until its next ACK or Δ̄_T."),
        click.option("--pcap/--no-pcap", default=False, show_default=True,
                     help="Capture every switch port into <run>/pcap/ (BMv2 --pcap; mininet, ray)."),
        click.option("--admission/--no-admission", default=False, show_default=True,
                     help="olafctl create-cluster/add-worker ask the AoM verifier first (paper §6; mininet, ray)."),
        click.option("--fault", "faults", multiple=True, metavar="FAULT",
                     help="Inject a fault (repeatable): switch-restart:<switch>@<s> or ps-kill@<s> after the start "
                          "(docs/reliability.md)."),
        click.option("--backend", default="mininet", show_default=True, type=click.Choice(backends.names()),
                     help="What runs the plan: mininet (root, the P4 toolchain), local (loopback, no switch), "
                          "ns3, ray (docs/architecture.md)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return plan_options(f)


_EMULATED = ("mininet", "ray")


def _backend(kw: dict[str, Any], build: Path, console: Console) -> Backend:
    """The chosen backend with the run's options (progress, report tables and plots, switch
    logging), after refusing the options only an emulated network honours on another one.

    Raises:
        click.BadParameter: a Mininet-only option on another backend (naming it)."""
    name = kw.pop("backend")
    if name not in _EMULATED:
        for opt, bad in (("--pcap", kw["pcap"]), ("--admission", kw["admission"]), ("--duration 0", not kw["duration_s"]),
                         ("--bmv2-log-level", kw["bmv2_log_level"] != BMV2_LOG_LEVEL)):
            if bad:
                raise click.BadParameter(f"{opt} is for an emulated network ({', '.join(_EMULATED)}); drop it or give "
                                         f"--backend mininet", param_hint="--backend")
    return backends.get(name, BackendOptions(
        console=console, build=build, quiet=False, progress=True, report=True, plots=True,
        bmv2_log_level=kw.pop("bmv2_log_level"), pcap=kw.pop("pcap"), admission=kw.pop("admission"),
        interactive=not kw["duration_s"]))


def _checked(runner: Backend, plan: RunPlan, topo: str) -> RunPlan:
    """``plan`` after ``runner``'s check; a refusal names the option behind the field."""
    try:
        runner.check(plan)
    except ConfigError as e:
        raise _bad_parameter(e, topo) from None
    return plan


def _term_as_interrupt(signum, frame):  # noqa: ARG001
    raise KeyboardInterrupt


def _interactive_s() -> float:
    from olaf.topologies.emulated import INTERACTIVE_DURATION_S  # noqa: PLC0415

    return INTERACTIVE_DURATION_S


@click.command("run")
@click.option("--queue", default="olaf", show_default=True, type=click.Choice(QUEUES))
@run_options
def run_cmd(build: Path, results: Path, **kw) -> None:
    """Run Olaf end to end on a backend (Mininet + BMv2 by default, root) and report AoM and loss per cluster."""
    console = Console()
    runner = _backend(kw, build, console)
    plan = _checked(runner, plan_of_options(**kw, interactive_s=_interactive_s()), kw["topo"])
    runner.preflight()
    signal.signal(signal.SIGTERM, _term_as_interrupt)
    out = new_run_dir(results, f"{plan.topology}-{plan.queue}")
    runner.run(plan, out)
    console.print(f"results: {out} ({results / 'latest'})")


@click.command("compare")
@run_options
def compare_cmd(build: Path, results: Path, **kw) -> None:
    """Run FIFO then Olaf on the same topology and load; print both and their comparison."""
    from olaf.report.commands import report_run  # noqa: PLC0415
    from olaf.topologies.rundir import give_back  # noqa: PLC0415

    if kw["duration_s"] == 0:
        raise click.BadParameter("compare needs a fixed duration", param_hint="--duration / DURATION")
    console = Console()
    runner = _backend(kw, build, console)
    plans = {q: _checked(runner, plan_of_options(queue=q, **kw, interactive_s=_interactive_s()), kw["topo"])
             for q in ("fifo", "olaf")}
    runner.preflight()
    signal.signal(signal.SIGTERM, _term_as_interrupt)
    dirs = {}
    for queue, plan in plans.items():
        dirs[queue] = new_run_dir(results, f"{plan.topology}-{queue}")
        runner.run(plan, dirs[queue])
    report_run(dirs["olaf"], baseline_dir=dirs["fifo"])
    give_back(dirs["olaf"])
    console.print(f"results: {dirs['fifo']} (FIFO), {dirs['olaf']} (Olaf, {results / 'latest'}, compare.json)")

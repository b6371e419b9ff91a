"""``olaf run`` / ``olaf compare``: Olaf end to end in Mininet (``make run``, ``make compare``).

The command-line layer only: options → the emulation's parameters
(:class:`~olaf.topologies.spec.RunSpec`: each bad value names its option) → their run plan
(:meth:`~olaf.topologies.spec.RunSpec.to_plan`) → the ``mininet`` backend (imported when a run
starts, so ``--help`` needs neither Mininet nor the P4Runtime packages). Every run's
``run.json`` holds the plan, as every backend's does.
"""

from __future__ import annotations

import signal
from pathlib import Path

import click
from rich.console import Console

from olaf import backends
from olaf.backends.base import Backend, BackendOptions
from olaf.cliplan import plan_options
from olaf.clitypes import FiniteFloat
from olaf.constants import SEGMENTS
from olaf.hosts.task import MAX_NUM_WEIGHTS
from olaf.plan.tx import READINGS
from olaf.topologies.rundir import new_run_dir
from olaf.topologies.spec import QUEUES, RunSpec, RunSpecError

_FLAG = {"duration_s": "--duration", "faults": "--fault"}


def option_name(field: str) -> str:
    """The CLI option of a RunSpec field (``rate_pps`` → ``--rate-pps``)."""
    return _FLAG.get(field, "--" + field.replace("_", "-"))


def make_spec(**kw) -> RunSpec:
    """A RunSpec from click values; a bad value becomes click.BadParameter naming the option."""
    if kw.get("queue_size") is None:
        kw["queue_size"] = RunSpec.queue_size  # the topology's root queue (olaf.plan.topology)
    try:
        return RunSpec(**kw)
    except RunSpecError as e:
        raise click.BadParameter(e.message, param_hint=option_name(e.field)) from None


def spec_options(f):
    """The run parameters as click options (shared by `olaf run` and `olaf compare`)."""
    d = RunSpec()
    opts = [
        click.option("--duration", "duration_s", default=d.duration_s, show_default=True,
                     type=FiniteFloat(min=0), help="Seconds of updates; 0 opens the Mininet CLI."),
        click.option("--period-ms", default=d.period_ms, show_default=True,
                     type=FiniteFloat(min=0, min_open=True)),
        click.option("--jitter-ms", default=d.jitter_ms, show_default=True, type=FiniteFloat(min=0)),
        click.option("--edge-queue-size", default=d.edge_queue_size, show_default=True,
                     type=click.IntRange(1, SEGMENTS)),
        click.option("--rate-pps", default=d.rate_pps, show_default=True, type=click.IntRange(min=0),
                     help="Bottleneck toward the PS, updates/s (K chunk packets each; 0 = unlimited)."),
        click.option("--edge-rate-pps", default=d.edge_rate_pps, show_default=True, type=click.IntRange(min=0)),
        click.option("--grads", default=d.grads, show_default=True,
                     type=click.IntRange(1, MAX_NUM_WEIGHTS),
                     help="Model parameters per update (the workers' bandit task); more than one 1500 B frame "
                          "holds travel in chunks."),
        click.option("--reward-threshold", type=FiniteFloat(min=0), help="Reward filter T (off by default)."),
        click.option("--activity-window-ms", default=d.activity_window_ms, show_default=True,
                     type=FiniteFloat(min=0)),
        click.option("--tc-delta-t-ms", default=d.tc_delta_t_ms, show_default=True,
                     type=FiniteFloat(min=0, min_open=True)),
        click.option("--tc-v-per-s", default=d.tc_v_per_s, show_default=True, type=FiniteFloat(min=0)),
        click.option("--tc-reading", default=d.tc_reading, show_default=True, type=click.Choice(READINGS),
                     help="probabilistic: paper §5, every update draws; backoff: §6, a skipped draw silences the "
                          "worker until its next ACK or Δ̄_T."),
        click.option("--pcap/--no-pcap", default=d.pcap, show_default=True,
                     help="Capture every switch port into <run>/pcap/ (BMv2 --pcap)."),
        click.option("--admission/--no-admission", default=d.admission, show_default=True,
                     help="olafctl create-cluster/add-worker ask the AoM verifier first (paper §6)."),
        click.option("--fault", "faults", multiple=True, metavar="FAULT",
                     help="Inject a fault (repeatable): switch-restart:<switch>@<s> or ps-kill@<s> after the start "
                          "(docs/reliability.md)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return plan_options(f)


def _term_as_interrupt(signum, frame):  # noqa: ARG001
    raise KeyboardInterrupt


@click.command("run")
@click.option("--queue", default="olaf", show_default=True, type=click.Choice(QUEUES))
@spec_options
def run_cmd(build: Path, results: Path, **kw) -> None:
    """Run Olaf end to end in Mininet and report AoM and loss per cluster (root)."""
    spec = make_spec(**kw)
    console = Console()
    runner = _mininet(spec, build, console)
    runner.preflight()
    signal.signal(signal.SIGTERM, _term_as_interrupt)
    out = new_run_dir(results, f"{spec.topo}-{spec.queue}")
    runner.run(spec.to_plan(), out)
    console.print(f"results: {out} (results/latest)")


def _mininet(spec: RunSpec, build: Path, console: Console) -> Backend:
    """The mininet backend with the run's options (progress, report tables and plots, switch logging)."""
    return backends.get("mininet", BackendOptions(
        console=console, build=build, quiet=False, progress=True, report=True, plots=True,
        bmv2_log_level=spec.bmv2_log_level, pcap=spec.pcap, admission=spec.admission, interactive=spec.interactive))


@click.command("compare")
@spec_options
def compare_cmd(build: Path, results: Path, **kw) -> None:
    """Run FIFO then Olaf on the same topology and load; print both and their comparison (root)."""
    from olaf.topologies.emulation import write_compare  # noqa: PLC0415

    if kw["duration_s"] == 0:
        raise click.BadParameter("compare needs a fixed duration", param_hint="--duration / DURATION")
    specs = {q: make_spec(queue=q, **kw) for q in ("fifo", "olaf")}
    console = Console()
    _mininet(specs["olaf"], build, console).preflight()
    signal.signal(signal.SIGTERM, _term_as_interrupt)
    dirs = {}
    for queue, spec in specs.items():
        dirs[queue] = new_run_dir(results, f"{spec.topo}-{queue}")
        _mininet(spec, build, console).run(spec.to_plan(), dirs[queue])
    write_compare(dirs)
    console.print(f"results: {dirs['fifo']} (FIFO), {dirs['olaf']} (Olaf, results/latest, compare.json)")

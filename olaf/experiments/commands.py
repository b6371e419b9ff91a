"""``olaf experiment SPEC --backend NAME [--out DIR]`` (registered in :mod:`olaf.cli`).

Exit status: 0 every run completed; 1 some run failed, could not finish in its duration or
the experiment was interrupted (the message lists what completed); 2 a bad spec or option
(the message names the field).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Optional

import click
from rich.console import Console

from olaf import backends
from olaf.configfile import ConfigError
from olaf.experiments.outputs import write_outputs
from olaf.experiments.runner import run_experiment, write_results
from olaf.experiments.spec import load_spec
from olaf.paths import build_dir


class SpecError(click.ClickException):
    exit_code = 2


def _term_as_interrupt(signum, frame):  # noqa: ARG001
    raise KeyboardInterrupt


@click.command("experiment")
@click.argument("spec_path", metavar="SPEC", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--backend", type=click.Choice(backends.names()), default="ns3", show_default=True,
              help="A registered backend (olaf.backends): ns3, the simulation (fast, paper scale); mininet, "
                   "Mininet + BMv2 (root, P4 toolchain); local, loopback hosts without a switch.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Results directory [default: results/experiments/<name>/<backend>].")
@click.option("--seeds", "n_seeds", type=click.IntRange(min=1), help="Run only the first N seeds of the spec.")
@click.option("--resume/--no-resume", default=False, show_default=True,
              help="Reuse the runs that already have metrics in the results directory.")
@click.option("--keep-logs/--no-keep-logs", default=False, show_default=True,
              help="Keep every run's host logs (per-update records, what `olaf report` reads).")
@click.option("--build", type=click.Path(file_okay=False, path_type=Path), default=build_dir(), show_default=True,
              help="mininet: the P4 build outputs (make build).")
def experiment_cmd(spec_path: Path, backend: str, out_dir: Optional[Path], n_seeds: Optional[int], resume: bool,
                   keep_logs: bool, build: Path) -> None:
    """Run an experiment spec (sweep points x seeds) and write results, table and figure.

    SPEC is a YAML experiment (experiments/*.yaml; schema docs/schemas/experiment.schema.json).
    Writes results.json/csv (mean and 95 % CI over seeds per point), table.md (ours beside
    the paper's) and figure.png into the results directory.
    """
    console = Console()
    try:
        spec = load_spec(spec_path)
    except ConfigError as e:
        raise SpecError(str(e)) from None
    if n_seeds is not None:
        spec = spec.model_copy(update={"seeds": spec.seeds[:n_seeds], "backends": {
            k: b.model_copy(update={"seeds": b.seeds[:n_seeds] if b.seeds else None}) for k, b in spec.backends.items()}})
    out = out_dir or Path("results") / "experiments" / spec.name / backend
    signal.signal(signal.SIGTERM, _term_as_interrupt)
    from olaf.sim.build import SimUnavailable  # noqa: PLC0415

    try:
        res = run_experiment(spec, backend, out, console=console, build=build, resume=resume, keep_logs=keep_logs,
                             spec_path=spec_path)
    except ConfigError as e:
        raise SpecError(str(e)) from None
    except SimUnavailable as e:
        raise click.ClickException(str(e)) from None
    points = write_results(res)
    written = write_outputs(spec, points, out, backend)
    table = out / "table.md"
    if table.exists():
        console.print(table.read_text(), markup=False, highlight=False, soft_wrap=True)
    console.print("wrote " + ", ".join(str(p) for p in [out / "results.json", out / "results.csv", *written]))
    if not res.complete:
        lines = [r.describe() for r in res.problems]
        if res.interrupted:
            lines.append(f"interrupted: {len(res.runs)} of {res.planned} runs completed")
        raise click.ClickException("not every run completed:\n  " + "\n  ".join(lines))

"""Update-generation traces of a run directory, for a plan's trace replay (the plan's ``trace``,
:mod:`olaf.plan.arrivals`): ``olaf trace extract RUN_DIR -o traces.json``.

A worker's trace is the generation time (``gen_ts``) of every update it **sent**, as an offset
from its own start (its ``go`` record's ``t0_ns``), in ms: what its log holds as
:attr:`olaf.report.rundata.WorkerLog.sent_ts`. Generations it did not send (transmission
control, a PPO iteration without an ended episode) are not in it: a replay generates an update
at each time and sends it. Workers are in natural order of their names (``w1``, ``w2``, …,
``w10``: worker ids in a run Olaf laid out), so worker ``i`` of a replaying plan gets the
``i``-th worker's times.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from olaf.plan.arrivals import WorkerTrace, check_times, traces_json
from olaf.report.rundata import RunDirError, WorkerLog, load_run


def _natural(name: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"(\d+)", name))


def worker_trace(w: WorkerLog) -> WorkerTrace:
    """``w``'s sent updates' generation times from its start, ms (module docstring).

    Raises:
        RunDirError: the worker never started or sent no update (the message names its log).
    """
    if w.t0_ns is None:
        raise RunDirError(f"{w.path}: worker {w.name} never started (no go record); it has no trace")
    try:
        return WorkerTrace(w.name, tuple(check_times(f"{w.path}: worker {w.name}",
                                                     [(t - w.t0_ns) / 1e6 for t in w.sent_ts])))
    except ValueError as e:
        raise RunDirError(f"{e} (sent updates' gen_ts from its start)") from None


def extract_traces(run_dir: Path | str) -> list[WorkerTrace]:
    """Every worker's trace in run directory ``run_dir`` (:func:`olaf.report.rundata.load_run`), in
    natural order of the workers' names.

    Raises:
        RunDirError: not a run directory, no workers, or a worker that never started or sent nothing.
    """
    run = load_run(run_dir)
    if not run.workers:
        raise RunDirError(f"{run_dir}: no worker logs")
    return [worker_trace(w) for w in sorted(run.workers, key=lambda w: _natural(w.name))]


def write_traces(run_dir: Path | str, out: Path | str) -> list[WorkerTrace]:
    """Write :func:`extract_traces` of ``run_dir`` as a trace file ``out`` (the format of
    :mod:`olaf.plan.arrivals`, read back by :func:`olaf.plan.arrivals.read_traces`); return the traces."""
    traces = extract_traces(run_dir)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(traces_json(traces, str(run_dir))) + "\n")
    return traces


@click.group("trace")
def trace_cmd() -> None:
    """Update-generation traces for a run plan's trace replay (the plan's ``trace.file``)."""


@trace_cmd.command("extract")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Trace file to write (JSON); give it to a plan as trace.file.")
def extract_cmd(run_dir: Path, out: Path) -> None:
    """Each worker's sent updates' generation times (ms from its start) of RUN_DIR, in worker order."""
    try:
        traces = write_traces(run_dir, out)
    except RunDirError as e:
        raise click.ClickException(str(e)) from None
    n = [len(t.t_ms) for t in traces]
    click.echo(f"{out}: {len(traces)} workers, {min(n)}..{max(n)} updates each "
               f"(up to {max(t.t_ms[-1] for t in traces) / 1000:.1f} s)")

"""Run an experiment: every sweep point × seed on one backend, with a progress bar, results
written after every run.

Output directory (``olaf experiment SPEC --out DIR``)::

    DIR/spec.yaml                      the spec as run (copy)
    DIR/runs/<point>/seed-<n>/         each run's directory: summary.json/csv, switch counters,
                                       run.json, metrics.json; the host logs (``olaf report``
                                       reads them) only with ``keep_logs``
    DIR/results.json                   every run's metrics and, per point, mean and 95 % CI
    DIR/results.csv                    one row per point: parameters, <metric>_mean, <metric>_ci95, n
    DIR/table.md, DIR/figure.png       ours beside the paper's (olaf.experiments.outputs)

``results.json`` is rewritten after each run, so an interrupted experiment (Ctrl-C) keeps
what completed; ``--resume`` reuses the runs whose directory already has ``metrics.json``. A run
whose workers could not generate their updates in its duration is ``incomplete``: its
metrics cover what it generated and the results say how far it got.
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from olaf import backends
from olaf.backends.base import Backend, BackendOptions
from olaf.experiments.metrics import MetricsFileError, RunMetrics, metric_names, read_metrics, run_metrics, write_metrics
from olaf.experiments.spec import ExperimentSpec, sweep_of
from olaf.experiments.stats import estimate
from olaf.experiments.sweep import PlannedRun, Sweep, point_label, same_value
from olaf.harness import RunFailed, RunInterrupted
from olaf.plan.plan import PPOWorkload, RunPlan
from olaf.provenance import provenance
from olaf.report.rundata import RunDirError
from olaf.rundir.atomic import write_json
from olaf.rundir.training import TrainingResult


@dataclass
class RunRecord:
    """One finished (or failed) run."""

    index: int
    point: dict[str, Any]
    seed: int
    run_dir: str
    status: str  # ok | incomplete | failed
    metrics: dict[str, Optional[float]] = field(default_factory=dict)
    agg_hist: dict[int, int] = field(default_factory=dict)
    incomplete: Optional[dict[str, Any]] = None
    fates_consistent: Optional[bool] = None
    error: Optional[str] = None
    wall_s: float = 0.0

    def describe(self) -> str:
        head = f"{point_label(self.point)}, seed {self.seed}"
        if self.status == "failed":
            return f"{head}: failed: {self.error}"
        if self.status == "incomplete" and self.incomplete:
            gen = self.incomplete["generated"]
            lo, hi = min(gen.values()), max(gen.values())
            span = f"{lo}" if lo == hi else f"{lo}–{hi}"
            limit = self.incomplete.get("deadline_s")
            within = f" within {limit:g} s" if limit else ""
            return (f"{head}: incomplete: {len(gen)} worker(s) generated {span} of "
                    f"{self.incomplete['updates_per_worker']} updates{within}; results cover what was generated "
                    f"({self.metrics.get('completed_pct') or 0:.1f} % of all updates)")
        return f"{head}: ok"


@dataclass
class ExperimentResult:
    spec: ExperimentSpec
    backend: str
    out: Path
    runs: list[RunRecord]
    planned: int
    interrupted: bool = False

    @property
    def problems(self) -> list[RunRecord]:
        return [r for r in self.runs if r.status != "ok"]

    @property
    def complete(self) -> bool:
        return not self.interrupted and len(self.runs) == self.planned and not self.problems


def _pair_reductions(spec: ExperimentSpec, runs: list[RunRecord]) -> None:
    """The paired metrics of every run against the baseline run of its point and seed:
    ``aom_reduction_pct`` and, with the plan's ``updates_from_each``, ``speedup_each.<N>`` =
    baseline ``time_to_each_ms.<N>`` / the run's (paper §8.2's Fig. 7 speedup, FIFO's time over
    Olaf's; None when either never got N updates from every worker)."""
    (param, base_value), = spec.baseline.items()
    by_key = {(r.index, r.seed): r for r in runs if r.status != "failed"}
    points = spec.points()
    each = spec.plan.updates_from_each
    for r in runs:
        r.metrics["aom_reduction_pct"] = None
        for n in each:
            r.metrics[f"speedup_each.{n}"] = None
        if r.status == "failed" or param not in r.point or same_value(r.point[param], base_value):
            continue
        want = {**r.point, param: base_value}
        j = next((i for i, p in enumerate(points) if all(same_value(p[k], want[k]) for k in want)), None)
        b = by_key.get((j, r.seed)) if j is not None else None
        if b is None:
            continue
        a0 = b.metrics.get("aom_avg_ms")
        a1 = r.metrics.get("aom_avg_ms")
        if a0 and a1 is not None:
            r.metrics["aom_reduction_pct"] = 100.0 * (1.0 - a1 / a0)
        for n in each:
            t0, t1 = b.metrics.get(f"time_to_each_ms.{n}"), r.metrics.get(f"time_to_each_ms.{n}")
            if t0 is not None and t1:
                r.metrics[f"speedup_each.{n}"] = t0 / t1


def aggregate(spec: ExperimentSpec, runs: list[RunRecord]) -> list[dict[str, Any]]:
    """Per point: its parameters, the runs' count, each metric's mean/CI95 and the pooled
    aggregation-count histogram."""
    _pair_reductions(spec, runs)
    names = metric_names(spec.plan)
    out = []
    for i, point in enumerate(spec.points()):
        rs = [r for r in runs if r.index == i and r.status != "failed"]
        if not rs:
            continue
        hist: dict[int, int] = {}
        for r in rs:
            for k, n in r.agg_hist.items():
                hist[int(k)] = hist.get(int(k), 0) + n
        out.append({"index": i, "point": point, "label": point_label(point), "runs": len(rs),
                    "incomplete_runs": sum(1 for r in rs if r.status == "incomplete"),
                    "metrics": {m: estimate(r.metrics.get(m) for r in rs).to_json() for m in names},
                    "agg_hist": {str(k): hist[k] for k in sorted(hist)}})
    return out


def write_results(res: ExperimentResult) -> list[dict[str, Any]]:
    """``results.json`` and ``results.csv``; returns the per-point aggregates."""
    points = aggregate(res.spec, res.runs)
    doc = {"experiment": res.spec.name, "title": res.spec.title, "reproduces": res.spec.reproduces,
           "backend": res.backend, "planned_runs": res.planned, "complete": res.complete,
           "interrupted": res.interrupted, "problems": [r.describe() for r in res.problems],
           "spec": res.spec.model_dump(mode="json"), "points": points, "runs": [asdict(r) for r in res.runs],
           "provenance": provenance()}
    write_json(res.out / "results.json", doc, indent=1)
    names = metric_names(res.spec.plan)
    with open(res.out / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["point", *res.spec.sweep, "runs", *(f"{m}_{s}" for m in names for s in ("mean", "ci95"))])
        for p in points:
            w.writerow([p["label"], *(p["point"][k] for k in res.spec.sweep), p["runs"],
                        *(("" if p["metrics"][m][s] is None else p["metrics"][m][s]) for m in names
                          for s in ("mean", "ci95"))])
    return points


def _record(pr: PlannedRun, m: RunMetrics, wall_s: float = 0.0) -> RunRecord:
    return RunRecord(pr.index, pr.point, pr.seed, "", "incomplete" if m.incomplete else "ok", m.values, m.agg_hist,
                     None if m.incomplete is None else m.incomplete.model_dump(), m.fates_consistent, wall_s=wall_s)


def _reuse(pr: PlannedRun, run_dir: Path) -> Optional[RunRecord]:
    """The record of a run finished earlier (its ``metrics.json``), None if there is none."""
    try:
        return _record(pr, read_metrics(run_dir))
    except MetricsFileError:
        return None


def run_experiment(spec: ExperimentSpec, backend: str, out: Path, *, console: Console,
                   build: Optional[Path] = None, resume: bool = False, keep_logs: bool = False,
                   spec_path: Optional[Path] = None) -> ExperimentResult:
    """Run every point × seed of ``spec`` on ``backend`` into ``out`` (:func:`run_sweep`); write the results.

    ``keep_logs``: keep each run's host logs (per-update records; ``olaf report`` needs them);
    otherwise they are deleted once the run's metrics are computed.

    Raises:
        olaf.configfile.ConfigError: a point is not a valid plan, or the backend refuses it (``PlanRefused``,
            naming the field) — checked for every run before the first starts.
        olaf.sim.build.SimUnavailable: ns3 missing (the message has the install command).
    """
    sweep = sweep_of(spec, backend)
    options = BackendOptions(console=console, build=build, quiet=True, progress=False, report=False, plots=False)
    res = ExperimentResult(spec, backend, out, [], len(sweep.points) * len(sweep.seeds))

    def started() -> None:
        if spec_path is not None:
            shutil.copyfile(spec_path, out / "spec.yaml")

    res.interrupted = run_sweep(sweep, backend, out, options, res.runs, name=spec.name, resume=resume,
                                keep_logs=keep_logs, on_start=started, on_run=lambda: write_results(res))
    write_results(res)
    return res


def run_sweep(sweep: Sweep, backend: str, out: Path, options: BackendOptions, records: list[RunRecord], *,
              name: str = "", resume: bool = False, keep_logs: bool = False,
              on_start: Optional[Callable[[], object]] = None, on_run: Optional[Callable[[], object]] = None) -> bool:
    """Run every point × seed of ``sweep`` on ``backend`` into ``out/runs/<point>/seed-<n>/``, appending a
    :class:`RunRecord` to ``records`` after each run (then ``on_run``), under a progress bar.

    The engine of experiments and of the training figures. Every run's plan is checked by the backend
    before the first starts, then the backend's preflight runs (``on_start`` after it). A plan with a
    training workload runs with a :class:`~olaf.training.monitor.TrainMonitor` (:func:`run_plan`) and its
    metrics include the training metrics (:data:`olaf.experiments.metrics.TRAINING_METRICS`).
    ``resume`` reuses runs that already have ``metrics.json``. Returns True if Ctrl-C (or SIGTERM)
    interrupted it; what completed is in ``records``.

    Raises:
        olaf.configfile.ConfigError: an invalid point or a refused plan (``PlanRefused``, naming the field).
        RuntimeError: the backend cannot run here (its preflight says what is missing).
    """
    planned = sweep.runs(backend)
    runner = backends.get(backend, options)
    for pr in planned:
        runner.check(pr.plan)
    runner.preflight()
    out.mkdir(parents=True, exist_ok=True)
    if on_start is not None:
        on_start()
    columns = (TextColumn("[bold]{task.fields[name]}[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn(), TextColumn("{task.description}"))
    try:
        with Progress(*columns, console=options.console, transient=False) as prog:
            task = prog.add_task("", total=len(planned), name=f"{name} ({backend})")
            for pr in planned:
                rel = Path("runs") / pr.slug / f"seed-{pr.seed}"
                run_dir = out / rel
                prog.update(task, description=f"{sweep.label(pr.index)} · seed {pr.seed}")
                rec = _reuse(pr, run_dir) if resume else None
                if rec is None:
                    if run_dir.exists():
                        shutil.rmtree(run_dir)
                    rec = _one(runner, pr, run_dir, keep_logs)
                rec.run_dir = str(rel)
                records.append(rec)
                if rec.status != "ok":
                    prog.console.print(f"[yellow]{rec.describe()}[/]")
                if on_run is not None:
                    on_run()
                prog.advance(task)
    except KeyboardInterrupt:
        options.console.print(f"[yellow]interrupted[/]: {len(records)} of {len(planned)} runs completed; "
                              f"results so far in {out}")
        return True
    return False


def run_plan(runner: Backend, plan: RunPlan, out: Path) -> Optional[TrainingResult]:
    """Run ``plan`` on ``runner`` into ``out``. A training workload runs with a
    :class:`~olaf.training.monitor.TrainMonitor` and gets its training outputs (``training.json``, curves)
    written, also when the run fails after it started; returns ``training.json``'s content, None for
    another workload.

    Workers run one OpenMP/MKL thread each (set for this process, which a backend's hosts inherit):
    many learners share the cores.

    Raises:
        olaf.harness.RunFailed: as the backend's ``run``, or a worker's task failed (after the
            training outputs are written).
    """
    if not isinstance(plan.workload, PPOWorkload):
        runner.run(plan, out)
        return None
    from olaf.training.monitor import TrainMonitor, write_training_outputs  # noqa: PLC0415

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    job = plan.workload.job
    monitor = TrainMonitor(out / "hosts", [f"w{i}" for i in range(1, plan.num_workers + 1)], job.target, job.window,
                           job.stop_at_target, job.iterations, job.ps_updates, job.solve_at)
    g, root = plan.groups[0], plan.root_switch
    meta = {"env": job.task.env_id, "backend": runner.name, "queue": plan.discipline,
            "rate_pps": (plan.uplinks[root].pps or 0) if root in plan.uplinks else 0,
            "load": plan.uplinks[root].load if root in plan.uplinks else None, "topo": plan.topology,
            "clusters": g.clusters, "workers_per_cluster": g.workers_per_cluster, "mode": job.mode,
            "seed": plan.seed, "budget_s": plan.duration_s, "iterations": job.iterations,
            "ps_updates": job.ps_updates, "num_params": job.num_params}
    evaluator: Any = contextlib.nullcontext()
    if job.eval_every_s is not None:
        from olaf.training.evaluator import EvalSchedule, Evaluator  # noqa: PLC0415

        evaluator = Evaluator(job.task, out / "hosts", EvalSchedule(job.eval_every_s, job.eval_episodes, plan.seed,
                                                                    until_solved=job.solve_at),
                              nice=runner.options.worker_nice)
    try:
        with evaluator:  # on exit, its final evaluation (the PS's last checkpoint) ends before the outputs
            runner.run(plan, out, monitor)
    except RunFailed:
        if (out / "run.json").exists():
            write_training_outputs(out, monitor, meta)
        raise
    result = write_training_outputs(out, monitor, meta)
    if result.worker_errors:
        raise RunFailed("worker task errors: " + "; ".join(f"{w}: {e}" for w, e in result.worker_errors.items())
                        + f" (what was collected is in {out})")
    return result


def _one(runner: Backend, pr: PlannedRun, run_dir: Path, keep_logs: bool) -> RunRecord:
    t0 = time.perf_counter()
    try:
        run_plan(runner, pr.plan, run_dir)
        m = run_metrics(run_dir, pr.plan)
    except RunInterrupted:
        raise KeyboardInterrupt from None  # the backend caught Ctrl-C: stop the sweep too
    except (RunFailed, RunDirError, OSError) as e:
        return RunRecord(pr.index, pr.point, pr.seed, "", "failed", error=str(getattr(e, "message", e)),
                         wall_s=time.perf_counter() - t0)
    write_metrics(run_dir, m)
    if not keep_logs:
        for log in (run_dir / "hosts").glob("*.jsonl"):
            log.unlink()
    return _record(pr, m, time.perf_counter() - t0)

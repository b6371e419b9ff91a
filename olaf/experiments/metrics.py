"""The numbers an experiment reports for one run, from its run directory (either backend).

Metrics of a run (``RunMetrics.values``; None where undefined):

* ``sent``, ``generated``, ``skipped``, ``delivered``, ``aggregated``, ``dropped`` — worker
  updates, summed over clusters (:func:`olaf.report.report.summarize`; paper Table 1's
  "# updates received@PS" is ``delivered``, "# updates aggregated" is ``aggregated``);
* ``loss_pct`` — ``100 · dropped / sent`` (paper Tables 1–3 "update loss (%)");
* ``fully_delivered`` — ``delivered + aggregated``: worker updates whose content reached the
  PS (with updates in K chunks: every chunk's, docs/simulation.md "Chunks");
* with updates in chunks (a run directory whose ``run.json`` has ``backend_info.chunks``, the
  ns3 backend): ``num_chunks`` (K), ``partial_pct`` — ``100 · partially delivered / sent``
  updates, ``chunk_loss_pct`` — ``100 ·`` chunks sent whose content never reached the PS
  ``/`` chunks sent (None for other backends);
* ``aom_avg_ms``, ``aom_peak_ms`` — the mean over clusters of the time-average AoM and of
  the average peak AoM (paper §2.2, §6); ``jain`` — Jain's index over the clusters' average
  AoM (paper Table 2);
* ``aggregations_mean`` — mean aggregations per delivered update (``count − 1``, Fig. 6);
* ``completed_pct`` — with ``updates_per_worker``: ``100 · generated / (workers · updates)``
  (below 100 when the run could not finish in its duration);
* per cluster group ``<g>`` (clusters are numbered in group order): ``aom_avg_ms.<g>``,
  ``aom_peak_ms.<g>``, ``loss_pct.<g>``, and ``aom_peak_periods.<g>`` = ``aom_peak_ms.<g>``
  over the group's period (the verifier's ``period`` unit, docs/verifier.md);
* ``peak_gap_periods`` — the largest gap between two groups' ``aom_peak_periods``
  (:func:`olaf.aom.peak_aom_gap`, unit ``period``: the verifier's query);
* ``aom_peak_per_update_periods.<g>`` and ``peak_gap_per_update_periods`` — the same with the
  verifier's ``peak_average: update``: a cluster's peaks summed over the window and divided
  by the updates it generated (each update's ``Δp(k)``, 0 for the ones without a peak);
* with ``updates_from_each`` in the plan, for each N: ``time_to_each_ms.<N>`` — ms from the run's
  start until the PS had received N updates from every worker, aggregated ones counted per
  contributing worker (paper §8.2, the quantity of Fig. 7; :mod:`olaf.report.deliveries`), None
  if a worker never got there; ``speedup_each.<N>`` — set by the runner, paired by seed: the
  baseline run's ``time_to_each_ms.<N>`` over this run's (Fig. 7's speedup); and
  ``each_exact_pct`` — the share of receptions whose contributors were attributed exactly (100
  with the ns-3 ledger);
* ``aom_reduction_pct`` — set by the runner, paired by seed: ``100 · (1 − aom_avg_ms /
  aom_avg_ms of the baseline run)`` (paper §8.1 "reduces the average AoM by 69 %").

The aggregation counts of every delivered update (``agg_hist``: count − 1 → deliveries)
feed the CDF of paper Fig. 6.
"""

from __future__ import annotations

import csv
from collections import Counter
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from olaf.aom import Delivery, aggregations_per_delivery, peak_aom_gap, peak_aoms
from olaf.plan.plan import PPOWorkload, RunPlan
from olaf.report.deliveries import time_to_n_from_each, worker_deliveries
from olaf.report.report import deliveries_by_cluster, summarize, write_summary
from olaf.report.rundata import load_run
from olaf.rundir.atomic import write_json
from olaf.rundir.manifest import Incomplete
from olaf.rundir.training import read_training

RUN_METRICS = ("sent", "generated", "skipped", "delivered", "aggregated", "dropped", "loss_pct", "aom_avg_ms",
               "aom_peak_ms", "jain", "aggregations_mean", "completed_pct", "fully_delivered", "num_chunks",
               "partial_pct", "chunk_loss_pct")
GROUP_METRICS = ("aom_avg_ms", "aom_peak_ms", "loss_pct", "aom_peak_periods", "aom_peak_per_update_periods")
PAIRED_METRICS = ("aom_reduction_pct",)
TRAINING_METRICS = ("reached", "time_to_target_s", "iterations_to_target", "final_mean_worker_reward", "ps_updates",
                    "iterations", "env_steps")
"""Metrics of a run whose workload is a training job (its ``training.json``, ``rewards.csv``): whether (1/0)
and when (s; worker iterations, the mean over workers at each iteration index) the mean worker reward
reached the target, the final mean worker reward, updates at the PS, iterations and environment steps of
all workers."""


def metric_names(s: RunPlan) -> list[str]:
    """Every metric an experiment on scenarios shaped like ``s`` reports."""
    names = [*RUN_METRICS, *PAIRED_METRICS, *(f"{m}.{g.name}" for g in s.groups for m in GROUP_METRICS)]
    if len(s.groups) > 1:
        names += ["peak_gap_periods", "peak_gap_per_update_periods"]
    if s.updates_from_each:
        names += [*(f"{m}.{n}" for m in ("time_to_each_ms", "speedup_each") for n in s.updates_from_each),
                  "each_exact_pct"]
    if isinstance(s.workload, PPOWorkload):
        names += list(TRAINING_METRICS)
    return names


def iteration_curve(run_dir: Path) -> list[tuple[float, float]]:
    """``(iteration, mean worker reward)`` of a training run: the mean over workers of their reward at
    their i-th iteration (``rewards.csv``)."""
    by_it: dict[int, list[float]] = {}
    with open(run_dir / "rewards.csv") as f:
        for r in csv.DictReader(f):
            if r["reward"] and r["iteration"]:
                by_it.setdefault(int(r["iteration"]), []).append(float(r["reward"]))
    return [(float(i), sum(v) / len(v)) for i, v in sorted(by_it.items())]


def training_metrics(run_dir: Path) -> dict[str, Optional[float]]:
    """:data:`TRAINING_METRICS` of the training run in ``run_dir`` (its ``training.json`` and ``rewards.csv``)."""
    t = read_training(run_dir)
    return {"reached": 1.0 if t.reached else 0.0, "time_to_target_s": t.time_to_target_s,
            "iterations_to_target": next((x for x, y in iteration_curve(run_dir) if y >= t.target), None),
            "final_mean_worker_reward": t.final_mean_worker_reward, "ps_updates": float(t.ps_updates),
            "iterations": float(t.iterations), "env_steps": float(t.env_steps)}


METRICS_FILE = "metrics.json"


class MetricsFileError(ValueError):
    """A run's ``metrics.json`` that cannot be read (missing, not JSON, not :class:`RunMetrics`)."""


class RunMetrics(BaseModel):
    """One run's metrics, its aggregation-count histogram and its completeness (``metrics.json`` of
    each run of an experiment; JSON Schema ``docs/schemas/metrics.schema.json``)."""

    model_config = ConfigDict(extra="forbid")
    values: dict[str, Optional[float]] = Field(description="metric name → value (module docstring; None: undefined)")
    agg_hist: dict[int, int] = Field(default_factory=dict, description="aggregation count − 1 → delivered updates")
    incomplete: Optional[Incomplete] = Field(default=None, description="workers that did not generate their "
                                             "updates in time (run.json's)")
    fates_consistent: Optional[bool] = Field(default=None, description="the hop-by-hop fates of every packet close "
                                             "(None: no switch counters)")


def write_metrics(run_dir: Path, m: RunMetrics) -> Path:
    """Write ``run_dir/metrics.json`` atomically; returns its path."""
    return write_json(run_dir / METRICS_FILE, m.model_dump(mode="json"), indent=1)


def read_metrics(run_dir: Path) -> RunMetrics:
    """The metrics of a finished run (``run_dir/metrics.json``).

    Raises:
        MetricsFileError: missing, not JSON or not :class:`RunMetrics` (the message names the file).
    """
    path = run_dir / METRICS_FILE
    try:
        return RunMetrics.model_validate_json(path.read_text())
    except OSError as e:
        raise MetricsFileError(f"{path}: cannot read ({e.strerror})") from None
    except ValidationError as e:
        raise MetricsFileError(f"{path}: not a run's metrics ({e.errors()[0]['msg']})") from None


def _chunk_metrics(chunks: Optional[dict[str, Any]]) -> dict[str, Optional[float]]:
    """``num_chunks``, ``partial_pct`` and ``chunk_loss_pct`` from ``backend_info.chunks`` (module
    docstring); None each when the backend does not account for chunks."""
    if not chunks:
        return {"num_chunks": None, "partial_pct": None, "chunk_loss_pct": None}
    up, ch = chunks["updates"], chunks["chunks"]
    return {"num_chunks": float(chunks["num_chunks"]),
            "partial_pct": 100.0 * up["partially_delivered"] / up["sent"] if up["sent"] else None,
            "chunk_loss_pct": 100.0 * (ch["sent"] - ch["content_delivered"]) / ch["sent"] if ch["sent"] else None}


def _mean(xs: list[Optional[float]]) -> Optional[float]:
    ys = [x for x in xs if x is not None]
    return float(np.mean(ys)) if ys else None


def _peak_sum_ms(ds: list[Delivery], t0: int, t1: int) -> float:
    """Sum of the peak AoMs (ms) of the receptions in ``[t0, t1]`` (as the report's ``aom_peak_ms``)."""
    return sum(p for _, p in peak_aoms([d for d in ds if t0 <= d.t_ns <= t1], t_start_ns=t0)) / 1e6


def _largest_gap(avgs: dict[str, tuple[Optional[float], float]]) -> Optional[float]:
    """Largest pairwise :func:`olaf.aom.peak_aom_gap` (unit ``period``) of ``(average, period)`` pairs."""
    gaps = [float(peak_aom_gap(Fraction(a), Fraction(b), "period", period_a=Fraction(pa), period_b=Fraction(pb)))
            for (a, pa), (b, pb) in combinations(avgs.values(), 2) if a is not None and b is not None]
    return max(gaps) if gaps else None


def run_metrics(run_dir: Path, s: RunPlan) -> RunMetrics:
    """Report the run in ``run_dir`` (``summary.json``/``summary.csv`` are (re)written) and
    compute its metrics for scenario ``s``.

    Raises:
        olaf.report.rundata.RunDirError: the run directory cannot be reported on.
    """
    run = load_run(run_dir)
    summary = summarize(run)
    write_summary(summary, run_dir)
    ov, clusters = summary["overall"], summary["clusters"]
    t0, t1 = summary["window"]["t_start_ns"], summary["window"]["t_end_ns"]
    by_cluster = deliveries_by_cluster(run)
    v: dict[str, Optional[float]] = {k: ov[k] for k in ("sent", "generated", "skipped", "delivered", "aggregated",
                                                         "dropped")}
    v["loss_pct"] = 100.0 * ov["loss_fraction"]
    v["fully_delivered"] = ov["delivered"] + ov["aggregated"]
    v.update(_chunk_metrics(summary["run"].get("backend_info", {}).get("chunks")))
    v["aom_avg_ms"], v["aom_peak_ms"], v["jain"] = ov["aom_avg_ms"], ov["aom_peak_ms"], ov["jain_fairness"]
    ds = [d for dl in by_cluster.values() for d in dl]
    aggs = aggregations_per_delivery(ds)
    v["aggregations_mean"] = float(aggs.mean()) if aggs.size else None
    v["completed_pct"] = (100.0 * ov["generated"] / (s.num_workers * s.updates_per_worker)
                          if s.updates_per_worker else None)
    peaks: dict[str, tuple[Optional[float], float]] = {}
    per_update: dict[str, tuple[Optional[float], float]] = {}
    for g, ids in zip(s.groups, s.group_clusters()):
        ms = [clusters.get(str(c), {}) for c in ids]
        v[f"aom_avg_ms.{g.name}"] = _mean([m.get("aom_avg_ms") for m in ms])
        peak = _mean([m.get("aom_peak_ms") for m in ms])
        v[f"aom_peak_ms.{g.name}"] = peak
        v[f"aom_peak_periods.{g.name}"] = None if peak is None else peak / g.period_ms
        sent = sum(m.get("sent", 0) for m in ms)
        v[f"loss_pct.{g.name}"] = 100.0 * sum(m.get("dropped", 0) for m in ms) / sent if sent else None
        peaks[g.name] = (peak, g.period_ms)
        upd = _mean([_peak_sum_ms(by_cluster.get(c, []), t0, t1) / m["generated"] if m.get("generated") else None
                     for c, m in zip(ids, ms)])
        v[f"aom_peak_per_update_periods.{g.name}"] = None if upd is None else upd / g.period_ms
        per_update[g.name] = (upd, g.period_ms)
    if len(s.groups) > 1:
        v["peak_gap_periods"] = _largest_gap(peaks)
        v["peak_gap_per_update_periods"] = _largest_gap(per_update)
    if s.updates_from_each:
        wd = worker_deliveries(run)
        names = [w.name for w in run.workers]
        for n in s.updates_from_each:
            t = time_to_n_from_each(wd, names, n, t0)
            v[f"time_to_each_ms.{n}"] = None if t is None else t / 1e6
        v["each_exact_pct"] = wd.exact_pct
    if isinstance(s.workload, PPOWorkload) and (run_dir / "training.json").exists():
        v.update(training_metrics(run_dir))
    incomplete = run.manifest.incomplete if run.manifest is not None else None
    return RunMetrics(values=v, agg_hist=dict(Counter(int(a) for a in aggs)), incomplete=incomplete,
                      fates_consistent=ov.get("fates_consistent"))

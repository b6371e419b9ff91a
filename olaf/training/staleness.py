"""Staleness of a training job's updates, measured from its logs (no wire field carries it).

The **staleness** δ of a worker update (Stellaris §III, Fig. 3(b)) is how many versions the
global model moved between the version the update's iteration started from and the update's
arrival at the PS. A version is counted per slice: chunks (updates or aggregates) applied to
the slice so far (:meth:`olaf.hosts.global_model.GlobalModel.version`); slice 0 stands for the
model here.

* The PS logs every update with the slice's ``version`` after it and its own online estimate
  ``staleness`` δ̂ (:mod:`olaf.hosts.staleness`).
* A worker logs with every generation the ``base``: the key ``[worker_id, seq, gen_ts]`` of the
  ACK whose slice 0 it last adopted. That ACK answered the PS record with the same key, whose
  ``version`` is the version the iteration started from (a worker that kept training from its own
  weights since counts from the version it last adopted).

So for a sent update with PS record ``u`` (chunk 0) and base record ``b``:
``δ = version_before(u) − version(b)``, where ``version_before(u)`` is ``u.version`` less one if
``u`` was applied. Updates the PS received without a matching generation (a worker killed before
its log was written) or whose base record is not in the PS's log are counted, not measured.

The PS logs the norm of every direction it applies and its cosine with the slice's previous one:
how aligned concurrent updates are (aligned updates add up to a step K times one update's, noisy
ones to √K times).

The policy's drift is read from the workers' PPO records: ``approx_kl`` (the worker's own step, an
estimate over its minibatches) against ``kl_adopted`` (KL(π_rollout ‖ π_adopted) over the previous
rollout's states: how far the global model the worker adopted next had moved from the policy that
collected the rollout — its own step plus every update applied meanwhile; Stellaris Fig. 3(c)).

:func:`write_staleness` writes ``staleness.json`` (:class:`StalenessReport`) and
``staleness.png`` (the histograms of δ and δ̂, the KL distributions) into a run directory.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from olaf.rundir.atomic import write_json
from olaf.rundir.jsonl import read_jsonl
from olaf.rundir.records import GenRecord, Outcome, UpdateRecord

REPORT = "staleness.json"
"""The report's file name in the run directory."""
PLOT = "staleness.png"


class Distribution(BaseModel):
    """Summary of a sample: ``n``, ``mean``, ``median``, ``p90``, ``max`` (None when ``n`` is 0)."""

    model_config = ConfigDict(extra="forbid")
    n: int
    mean: Optional[float]
    median: Optional[float]
    p90: Optional[float]
    max: Optional[float]

    @classmethod
    def of(cls, values: list[float]) -> "Distribution":
        if not values:
            return cls(n=0, mean=None, median=None, p90=None, max=None)
        a = np.asarray(values, dtype=np.float64)
        return cls(n=a.size, mean=round(float(a.mean()), 6), median=round(float(np.median(a)), 6),
                   p90=round(float(np.percentile(a, 90)), 6), max=round(float(a.max()), 6))


class StalenessReport(BaseModel):
    """``staleness.json``: the distribution of δ (exact, from the workers' ``base``) and of the PS's
    δ̂, how often δ̂ = δ, the histogram of δ (``{δ: updates}``), the updates not measured and why,
    the workers' KL records (nats), and of the directions the PS applied (slice 0): the cosine
    between consecutive ones (``cos_prev``) and their norm."""

    model_config = ConfigDict(extra="forbid")
    updates: int
    staleness: Distribution
    estimate: Distribution
    estimate_exact_fraction: Optional[float]
    histogram: dict[str, int]
    not_measured: dict[str, int]
    approx_kl: Distribution
    kl_adopted: Distribution
    cos_prev: Distribution
    norm: Distribution


def _chunk0(r: UpdateRecord) -> bool:
    return not r.init and (r.chunk is None or r.chunk == 0)


def measure(hosts_dir: Path, ps_log: str = "ps.jsonl") -> tuple[StalenessReport, list[int], list[int]]:
    """The report of the job whose host logs are in ``hosts_dir``, with the per-update δ and δ̂ lists
    (in the PS's order of arrival).

    Raises:
        FileNotFoundError: no PS log.
    """
    ps = [r for r in read_jsonl(hosts_dir / ps_log).records if isinstance(r, UpdateRecord)]
    version_by_key: dict[tuple[int, int, int], int] = {}
    for r in ps:
        if (r.chunk is None or r.chunk == 0) and r.version is not None:
            version_by_key[(r.worker_id, r.seq, r.gen_ts)] = r.version
    gens: dict[tuple[int, int], GenRecord] = {}
    approx, adopted = [], []
    for log in sorted(hosts_dir.glob("*.jsonl")):
        if log.name == ps_log:
            continue
        for g in read_jsonl(log).records:
            if not isinstance(g, GenRecord):
                continue
            if g.sent and g.seq is not None:
                gens[(g.seq, g.t_ns)] = g
            if g.approx_kl is not None:
                approx.append(g.approx_kl)
            if g.kl_adopted is not None:
                adopted.append(g.kl_adopted)
    deltas: list[int] = []
    estimates: list[int] = []
    exact = 0
    missing: Counter[str] = Counter()
    for r in ps:
        if not _chunk0(r) or r.version is None:
            continue
        g = gens.get((r.seq, r.gen_ts))
        if g is None:
            missing["no_generation"] += 1
            continue
        if g.base is None:
            missing["no_base"] += 1
            continue
        base = version_by_key.get(g.base)
        if base is None:
            missing["base_not_in_ps_log"] += 1
            continue
        before = r.version - (1 if r.outcome == Outcome.ACCEPTED else 0)
        d = max(before - base, 0)
        deltas.append(d)
        if r.staleness is not None:
            estimates.append(r.staleness)
            exact += r.staleness == d
    hist = Counter(deltas)
    report = StalenessReport(
        updates=len(deltas), staleness=Distribution.of([float(d) for d in deltas]),
        estimate=Distribution.of([float(e) for e in estimates]),
        estimate_exact_fraction=round(exact / len(estimates), 4) if estimates else None,
        histogram={str(k): hist[k] for k in sorted(hist)}, not_measured=dict(missing),
        approx_kl=Distribution.of(approx), kl_adopted=Distribution.of(adopted),
        cos_prev=Distribution.of([r.cos_prev for r in ps if r.cos_prev is not None and (r.chunk or 0) == 0]),
        norm=Distribution.of([r.norm for r in ps if r.norm is not None and (r.chunk or 0) == 0]))
    return report, deltas, estimates


def write_staleness(run_dir: Path) -> Optional[StalenessReport]:
    """Write ``staleness.json`` and ``staleness.png`` into ``run_dir`` (its host logs are in
    ``run_dir/hosts``); None, writing nothing, when the run has no PS log or no measured update."""
    hosts = run_dir / "hosts"
    if not (hosts / "ps.jsonl").exists():
        return None
    report, deltas, estimates = measure(hosts)
    if not report.updates:
        return None
    write_json(run_dir / REPORT, report.model_dump(mode="json"), indent=1)
    _plot(run_dir / PLOT, deltas, estimates, report)
    return report


def _plot(path: Path, deltas: list[int], estimates: list[int], report: StalenessReport) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    top = max(deltas + estimates + [1])
    bins = np.arange(0, top + 2) - 0.5
    a.hist(deltas, bins=bins, density=True, alpha=0.6, label="δ (exact, workers' base)")
    if estimates:
        a.hist(estimates, bins=bins, density=True, histtype="step", lw=1.5, label="δ̂ (PS estimate)")
    a.set_xlabel("staleness, versions of slice 0")
    a.set_ylabel("probability density")
    a.legend(fontsize=8)
    for name, dist in (("approx_kl", report.approx_kl), ("kl_adopted", report.kl_adopted)):
        if dist.n:
            b.bar(name, dist.mean or 0.0, yerr=[[0], [max((dist.p90 or 0.0) - (dist.mean or 0.0), 0.0)]], capsize=4)
    b.set_ylabel("KL, nats (mean; whisker: p90)")
    b.set_title("worker's own step vs the global drift it adopts", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

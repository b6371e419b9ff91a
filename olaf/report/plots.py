"""Figures of a run (matplotlib, Agg backend; files are PNG).

* ``aom.png`` — the AoM sawtooth of every cluster over the window
  (:func:`olaf.aom.sawtooth`, paper §2.2 / Fig. 5): time since the window start
  (s) against AoM (ms); below it, a zoom on :data:`ZOOM_S` seconds in the middle
  of the window where single teeth are visible;
* ``aggregations_cdf.png`` — CDF of aggregations per delivered update
  (``count − 1``, paper Fig. 6), one curve per run;
* ``reward.png`` — the PS's global reward over time (paper Fig. 8) and the
  task's expected reward of the weights the workers used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from olaf.aom import Delivery, aggregations_per_delivery, ecdf, sawtooth
from olaf.report.rundata import RunData

LEGEND_MAX = 12
"""More clusters than this: no legend (the lines speak for the spread)."""

ZOOM_S = 1.0
"""Width of the zoomed AoM panel, s."""


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, ax, path: Path | str, legend: bool = True) -> Path:
    ax.grid(alpha=0.3)
    if legend:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    fig.clf()
    _pyplot().close(fig)
    return Path(path)


def plot_aom(by_cluster: Mapping[int, list[Delivery]], t_start_ns: int, t_end_ns: int, path: Path | str) -> Path:
    """AoM sawtooth per cluster over ``[t_start_ns, t_end_ns]`` and a zoom on its middle, saved to ``path``."""
    plt = _pyplot()
    fig, (ax, zoom) = plt.subplots(2, 1, figsize=(9, 7), gridspec_kw={"height_ratios": [3, 2]})
    span_s = (t_end_ns - t_start_ns) / 1e9
    z0 = max(0.0, span_s / 2 - ZOOM_S / 2)
    for c in sorted(by_cluster):
        ds = [d for d in by_cluster[c] if t_start_ns <= d.t_ns <= t_end_ns]
        t, a = sawtooth(ds, t_end_ns, t_start_ns=t_start_ns)
        x, y = (t - t_start_ns) / 1e9, a / 1e6
        line, = ax.plot(x, y, lw=0.9, label=f"cluster {c}")
        zoom.plot(x, y, lw=1.0, color=line.get_color())
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("AoM (ms)")
    ax.set_title("Age of Model at the PS")
    zoom.set_xlim(z0, min(span_s, z0 + ZOOM_S))
    zoom.set_xlabel(f"time since start (s), zoom on {ZOOM_S:g} s")
    zoom.set_ylabel("AoM (ms)")
    zoom.grid(alpha=0.3)
    return _save(fig, ax, path, legend=0 < len(by_cluster) <= LEGEND_MAX)


def plot_aggregations_cdf(runs: Mapping[str, list[Delivery]], path: Path | str) -> Path:
    """CDF of aggregations per delivered update, one curve per labelled run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, ds in runs.items():
        x, f = ecdf(aggregations_per_delivery(ds))
        if x.size:
            ax.step(np.concatenate([[x[0]], x]), np.concatenate([[0.0], f]), where="post", label=label)
    ax.set_xlabel("aggregations per delivered update")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.02)
    return _save(fig, ax, path)


def plot_reward(run: RunData, t_start_ns: int, path: Path | str) -> Path:
    """Global reward at the PS (step) and the workers' expected reward (dots) over time."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    pts = [(r.t_ns, r.global_reward) for r in run.ps_updates if r.global_reward is not None]
    if pts:
        t, g = np.array(sorted(pts)).T
        ax.step((t - t_start_ns) / 1e9, g, where="post", label="PS global reward")
    ex = [p for w in run.workers for p in w.exp_rewards]
    if ex:
        t, j = np.array(ex).T
        ax.plot((t - t_start_ns) / 1e9, j, ".", ms=1.5, alpha=0.4, label="expected reward of worker weights")
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("reward")
    return _save(fig, ax, path)

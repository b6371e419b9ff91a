"""Click command ``olaf report`` (registered in :mod:`olaf.cli`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import click
from rich.console import Console

from olaf.clitypes import FiniteFloat
from olaf.report.report import compare, deliveries_by_cluster, summarize, write_summary
from olaf.report.rundata import RunData, RunDirError, load_run
from olaf.report.tables import compare_table, summary_table
from olaf.rundir.atomic import write_json


def _label(run: RunData, run_dir: Path) -> str:
    return (run.manifest.label if run.manifest is not None else None) or run_dir.resolve().name


def _report(run_dir: Path, k: Optional[int], reward_target: Optional[float]) -> tuple[RunData, dict[str, Any]]:
    try:
        run = load_run(run_dir)
        return run, summarize(run, k=k, reward_target=reward_target)
    except RunDirError as e:
        raise click.ClickException(f"cannot report on {run_dir}: {e}") from None


@click.command("report")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where to write summary.json, summary.csv and the plots [default: RUN_DIR].")
@click.option("--k", type=click.IntRange(min=1),
              help="Also report the time until the PS holds K updates per worker of each cluster (time-to-reward).")
@click.option("--reward-target", type=FiniteFloat(), help="Also report when the PS's global reward first reaches this.")
@click.option("--compare", "baseline_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A baseline run (e.g. the FIFO run) to compare with in one table; writes compare.json "
                   "and a two-run aggregations CDF.")
@click.option("--plots/--no-plots", default=True, show_default=True, help="Write aom.png, aggregations_cdf.png, reward.png.")
def report_cmd(run_dir: Path, out_dir: Optional[Path], k: Optional[int], reward_target: Optional[float],
               baseline_dir: Optional[Path], plots: bool) -> None:
    """Per-cluster table of a run (sent, delivered, aggregated, dropped, AoM, Jain's fairness).

    RUN_DIR is a run directory of any backend: the `olaf ps` and `olaf worker` logs of one
    run (and optionally its manifest run.json and switch_counters.json). Exit status 1
    if the run cannot be reported on.
    """
    report_run(run_dir, out_dir, k=k, reward_target=reward_target, baseline_dir=baseline_dir, plots=plots)


def report_run(run_dir: Path, out_dir: Optional[Path] = None, *, k: Optional[int] = None,
               reward_target: Optional[float] = None, baseline_dir: Optional[Path] = None,
               plots: bool = True, quiet: bool = False) -> dict[str, Any]:
    """Write summary.json/csv (and plots) for ``run_dir``, print the table(s) (unless ``quiet``);
    return the summary.

    Raises click.ClickException if the run cannot be reported on.
    """
    out_dir = out_dir or run_dir
    run, summary = _report(run_dir, k, reward_target)
    jpath, cpath = write_summary(summary, out_dir)
    written = [jpath, cpath]
    console = Console(quiet=True) if quiet else Console() if sys.stdout.isatty() else Console(width=120)
    if plots:
        from olaf.report import plots as pl

        by_cluster = deliveries_by_cluster(run)
        for c in summary["clusters"]:
            by_cluster.setdefault(int(c), [])
        w = summary["window"]
        written.append(pl.plot_aom(by_cluster, w["t_start_ns"], w["t_end_ns"], out_dir / "aom.png"))
        written.append(pl.plot_reward(run, w["t_start_ns"], out_dir / "reward.png"))
        cdf_runs = {_label(run, run_dir): [d for ds in by_cluster.values() for d in ds]}
    console.print(summary_table(summary, title=f"Per-cluster results: {run_dir}"))
    for host, d in summary["socket_drops"].items():
        buf = "unknown" if d["rcvbuf_bytes"] is None else f"{d['rcvbuf_bytes']:,} B"
        console.print(f"[yellow]{host}[/]: the kernel dropped {d['drops']:,} datagrams for a full socket receive "
                      f"buffer ({buf}): {d['advice']}", markup=True, highlight=False)
    if baseline_dir is not None:
        base, base_summary = _report(baseline_dir, k, reward_target)
        labels = (_label(base, baseline_dir), _label(run, run_dir))
        if labels[0] == labels[1]:
            labels = (f"{labels[0]} (baseline)", labels[1])
        cmp = compare(base_summary, summary)
        write_json(out_dir / "compare.json", {"labels": list(labels), **cmp})
        written.append(out_dir / "compare.json")
        console.print(compare_table(cmp, labels))
        if plots:
            cdf_runs[labels[0]] = [d for ds in deliveries_by_cluster(base).values() for d in ds]
    if plots:
        written.append(pl.plot_aggregations_cdf(cdf_runs, out_dir / "aggregations_cdf.png"))
    console.print("wrote " + ", ".join(str(p) for p in written))
    return summary

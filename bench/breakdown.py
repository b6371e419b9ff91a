"""Where the samples go: one row per run of the sample-gap breakdown (``docs/training.md``).

Reads finished runs — ``olaf train --solve`` run directories (``--olaf LABEL=DIR``) and
``bench/sb3_baseline.py`` output directories (``--sb3 LABEL=DIR``) — and prints, per run, the
environment steps to the confirmed solved evaluation (or, for a run that did not solve, its best
evaluation and the steps it had then), the ratio to the mean of the runs labelled ``--baseline``
(default ``sb3``), and for Olaf runs what their logs say about the updates: the staleness δ
(mean), the global policy's drift between a worker's iterations (``kl_adopted``, mean), the
worker's own step (``approx_kl``), the cosine between consecutive applied directions, and the
workers' mean entropy and clip fraction over the run. ``--marks M1,M2,…`` (millions of environment
steps) adds, per Olaf run, the mean worker reward at each mark (the rewards of the last
``WINDOW_ITERATIONS`` iterations of every worker before it, in the PS's order of arrival) and, per
block of ``TREND_UPDATES`` applied updates, the median cosine and norm of the applied directions.
``--out FILE`` also writes the rows as JSON.

    .venv/bin/python bench/breakdown.py --sb3 sb3=build/exp/sb3-s11 --olaf "sgd γ 1"=build/exp/sgd1-s11/latest
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Optional

import click

from olaf.rundir.jsonl import read_jsonl
from olaf.rundir.manifest import ManifestError
from olaf.rundir.records import GenRecord, UpdateRecord
from olaf.rundir.training import TrainingFileError
from olaf.training.solve import SolveRun, read_olaf, read_sb3
from olaf.training.staleness import REPORT, measure


def _pairs(values: tuple[str, ...], option: str) -> list[tuple[str, Path]]:
    out = []
    for v in values:
        label, sep, path = v.partition("=")
        if not sep or not Path(path).is_dir():
            raise click.BadParameter(f"{v!r}: LABEL=DIR with DIR a run directory", param_hint=option)
        out.append((label, Path(path).resolve()))
    return out


def _best(run: SolveRun) -> tuple[Optional[float], Optional[int]]:
    if not run.curve:
        return None, None
    t, steps, mean = max(run.curve, key=lambda c: c[2])
    return mean, steps


def _worker_means(hosts: Path) -> dict[str, Optional[float]]:
    """Mean entropy and clip fraction of every worker iteration in ``hosts``."""
    ent, clip = [], []
    for log in hosts.glob("w*.jsonl"):
        for r in read_jsonl(log).records:
            if isinstance(r, GenRecord):
                if r.entropy is not None:
                    ent.append(r.entropy)
                if r.clip_fraction is not None:
                    clip.append(r.clip_fraction)
    return {"entropy": statistics.fmean(ent) if ent else None, "clip_fraction": statistics.fmean(clip) if clip else None}


WINDOW_ITERATIONS = 10
"""Iterations per worker in the window of a mean worker reward (``--marks``)."""
TREND_UPDATES = 1000
"""Applied updates per block of the direction trend (``--marks``)."""


def _updates(hosts: Path) -> list[UpdateRecord]:
    """The PS's records of worker updates (not INITs), in its order of arrival."""
    return [r for r in read_jsonl(hosts / "ps.jsonl").records if isinstance(r, UpdateRecord) and not r.init]


def _steps_per_update(hosts: Path) -> int:
    """Environment steps of one worker iteration (its ``gen`` records' ``steps``)."""
    for log in sorted(hosts.glob("w*.jsonl")):
        for r in read_jsonl(log).records:
            if isinstance(r, GenRecord) and r.steps:
                return int(r.steps)
    raise click.ClickException(f"{hosts}: no worker iteration records the environment steps it took")


def worker_reward_at(hosts: Path, ups: list[UpdateRecord], marks_m: list[float],
                     workers: int) -> dict[str, Optional[float]]:
    """Mean worker reward at each mark (millions of environment steps): the mean reward of the
    ``WINDOW_ITERATIONS · workers`` updates before the update that reaches the mark; None past
    the run's end."""
    per = _steps_per_update(hosts)
    window = WINDOW_ITERATIONS * workers
    out: dict[str, Optional[float]] = {}
    for m in marks_m:
        i = int(m * 1e6 // per)
        out[f"{m:g}"] = None if i > len(ups) or i == 0 else statistics.fmean(u.reward for u in ups[max(0, i - window):i])
    return out


def direction_trend(ups: list[UpdateRecord]) -> list[dict[str, float]]:
    """Per block of ``TREND_UPDATES`` applied updates: the median cosine between consecutive
    applied directions and the median norm of an applied direction (the PS's ``cos_prev``, ``norm``)."""
    ups = [u for u in ups if u.cos_prev is not None and u.norm is not None]
    out = []
    for a in range(0, len(ups) - TREND_UPDATES + 1, TREND_UPDATES):
        block = ups[a:a + TREND_UPDATES]
        out.append({"first_update": a, "cos_prev_median": statistics.median(u.cos_prev for u in block),  # type: ignore[misc]
                    "norm_median": statistics.median(u.norm for u in block)})  # type: ignore[misc]
    return out


def row(label: str, run: SolveRun, run_dir: Path) -> dict[str, Any]:
    best, best_steps = _best(run)
    r: dict[str, Any] = {"label": label, "system": run.system, "seed": run.seed, "solved": run.solved,
                         "env_steps_to_solved": run.env_steps_to_solved, "time_to_solved_s": run.time_to_solved_s,
                         "best_eval": best, "best_eval_env_steps": best_steps}
    if run.system == "olaf":
        path = run_dir / REPORT
        report = json.loads(path.read_text()) if path.exists() else measure(run_dir / "hosts")[0].model_dump()
        r.update(staleness_mean=report["staleness"]["mean"], kl_adopted_mean=report["kl_adopted"]["mean"],
                 approx_kl_mean=report["approx_kl"]["mean"], cos_prev_mean=report.get("cos_prev", {}).get("mean"),
                 **_worker_means(run_dir / "hosts"))
    return r


def _f(x: Any, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


@click.command()
@click.option("--sb3", "sb3", multiple=True, help="LABEL=DIR of a bench/sb3_baseline.py run (repeat).")
@click.option("--olaf", "olaf", multiple=True, help="LABEL=DIR of an olaf train --solve run directory (repeat).")
@click.option("--baseline", default="sb3", show_default=True, help="The label whose mean the ratios divide by.")
@click.option("--marks", default=None, metavar="M1,M2,…",
              help="Millions of environment steps at which to give each Olaf run's mean worker reward.")
@click.option("--out", type=click.Path(path_type=Path), help="Also write the rows as JSON here.")
def main(sb3: tuple[str, ...], olaf: tuple[str, ...], baseline: str, marks: Optional[str], out: Optional[Path]) -> None:
    """One row per run: environment steps to solved, the ratio to the baseline, and what the logs say."""
    try:
        marks_m = [float(x) for x in marks.split(",")] if marks else []
    except ValueError:
        raise click.BadParameter(f"{marks!r}: comma-separated numbers of millions of steps, e.g. 0.5,1,2",
                                 param_hint="--marks") from None
    if any(not m > 0 for m in marks_m):
        raise click.BadParameter(f"{marks!r}: every mark must be > 0 (millions of steps)", param_hint="--marks")
    rows = [row(lab, read_sb3(d), d) for lab, d in _pairs(sb3, "--sb3")]
    for lab, d in _pairs(olaf, "--olaf"):
        try:
            run = read_olaf(d)
        except (TrainingFileError, ManifestError) as e:
            raise click.BadParameter(f"{lab}={d}: {e}", param_hint="--olaf") from None
        rows.append(row(lab, run, d))
        if marks_m:
            workers = len(list((d / "hosts").glob("w*.summary.json")))
            ups = _updates(d / "hosts")  # the PS log, read once for both
            rows[-1]["worker_reward_at_msteps"] = worker_reward_at(d / "hosts", ups, marks_m, workers)
            rows[-1]["direction_trend"] = direction_trend(ups)
    base = [r["env_steps_to_solved"] for r in rows if r["label"] == baseline and r["env_steps_to_solved"]]
    ref = statistics.fmean(base) if base else None
    click.echo("| run | seed | env steps to solved | / baseline | best evaluation (at steps) | δ mean | "
               "kl_adopted | approx_kl | cos_prev | entropy | clip fraction |")
    click.echo("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        n = r["env_steps_to_solved"]
        ratio = "–" if n is None or ref is None else f"{n / ref:.2f}"
        best = "–" if r["best_eval"] is None else f"{r['best_eval']:.1f} ({r['best_eval_env_steps']:,})"
        click.echo(f"| {r['label']} | {r['seed']} | {'not solved' if n is None else f'{n:,}'} | {ratio} | {best} | "
                   f"{_f(r.get('staleness_mean'), '.1f')} | {_f(r.get('kl_adopted_mean'), '.4f')} | "
                   f"{_f(r.get('approx_kl_mean'), '.4f')} | {_f(r.get('cos_prev_mean'), '.2f')} | "
                   f"{_f(r.get('entropy'), '.3f')} | {_f(r.get('clip_fraction'), '.3f')} |")
    for r in rows:
        if "worker_reward_at_msteps" in r:
            at = " / ".join(_f(v, ".0f") for v in r["worker_reward_at_msteps"].values())
            trend = ", ".join(f"{b['cos_prev_median']:.2f} ({b['norm_median']:.2f})" for b in r["direction_trend"])
            click.echo(f"{r['label']}: worker reward at {marks} M steps: {at}; median cos_prev (norm) per "
                       f"{TREND_UPDATES} updates: {trend or '–'}")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"baseline": baseline, "baseline_env_steps": ref, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()

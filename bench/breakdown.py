"""Where the samples go: one row per run of the sample-gap breakdown (``docs/training.md``).

Reads finished runs — ``olaf train --solve`` run directories (``--olaf LABEL=DIR``) and
``bench/sb3_baseline.py`` output directories (``--sb3 LABEL=DIR``) — and prints, per run, the
environment steps to the confirmed solved evaluation (or, for a run that did not solve, its best
evaluation and the steps it had then), the ratio to the mean of the runs labelled ``--baseline``
(default ``sb3``), and for Olaf runs what their logs say about the updates: the staleness δ
(mean), the global policy's drift between a worker's iterations (``kl_adopted``, mean), the
worker's own step (``approx_kl``), the cosine between consecutive applied directions, and the
workers' mean entropy and clip fraction over the run. ``--out FILE`` also writes the rows as JSON.

    .venv/bin/python bench/breakdown.py --sb3 sb3=build/exp/sb3-s11 --olaf "sgd γ 1"=build/exp/sgd1-s11/latest
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Optional

import click

from olaf.rundir.jsonl import read_jsonl
from olaf.rundir.records import GenRecord
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
@click.option("--out", type=click.Path(path_type=Path), help="Also write the rows as JSON here.")
def main(sb3: tuple[str, ...], olaf: tuple[str, ...], baseline: str, out: Optional[Path]) -> None:
    """One row per run: environment steps to solved, the ratio to the baseline, and what the logs say."""
    rows = [row(lab, read_sb3(d), d) for lab, d in _pairs(sb3, "--sb3")]
    rows += [row(lab, read_olaf(d), d) for lab, d in _pairs(olaf, "--olaf")]
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
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"baseline": baseline, "baseline_env_steps": ref, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()

"""Time to "solved": Olaf's 27-worker job with Stable-Baselines3's network against single-process
Stable-Baselines3 PPO, measured in the same session on the same machine.

``run`` runs, one after the other (never side by side: each gets the whole machine),

1. ``bench/sb3_baseline.py``: one process, one torch thread, RL Zoo's LunarLander settings,
   evaluated every 30 s of training (paused) on 100 deterministic episodes;
2. ``olaf train --backend local --net sb3 --solve``: 9 clusters × 3 workers over loopback (the
   ideal network) with the job's PS settings (or ``--olaf-arg`` ones), its global model evaluated
   beside it every 30 s (``docs/training.md``),

then ``table`` compares them: time and environment steps to the first evaluation with a mean
of at least 200 — for Olaf the time its PS wrote the evaluated checkpoint, for SB3 its training
time without the evaluation pauses (and with them) — and the ratio to SB3's mean time to solved (goal: < 1).
``table`` also reads existing run directories (``--sb3 DIR --olaf DIR``, repeatable), writes
``solve.md`` (the table) and ``solve.png`` (evaluation reward over wall time and over
environment steps).

    nice .venv/bin/python bench/solve.py run --out build/solve
    .venv/bin/python bench/solve.py table --sb3 build/solve/sb3 --olaf build/solve/olaf/latest --out build/solve
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import click

HERE = Path(__file__).resolve().parent


def _olaf_run(d: Path) -> dict[str, Any]:
    t = json.loads((d / "training.json").read_text())
    s = t.get("solved_eval")
    job = json.loads((d / "run.json").read_text())["plan"]["workload"]["job"]
    gamma = f"γ {job['ps_lr']:g}" + (f"→{job['ps_lr_final']:g}" if job.get("ps_lr_final") else "")
    return {"label": f"Olaf seed {t['job']['seed']} ({job['ps_step']}, {gamma})", "solved": t["solved"],
            "time_s": s["t_s"] if s else None, "time_wall_s": s["t_s"] if s else None,
            "steps": s["env_steps"] if s else None, "best": max((e["mean"] for e in t["evaluations"]), default=None),
            "curve": [(e["t_s"], e["env_steps"], e["mean"]) for e in t["evaluations"]],
            "budget_s": t["job"].get("budget_s")}


def _sb3_run(d: Path) -> dict[str, Any]:
    r = json.loads((d / "result.json").read_text())
    with open(d / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    return {"label": f"SB3 seed {r['seed']}", "solved": r["solved"], "time_s": r["train_s_to_solved"],
            "time_wall_s": r["wall_s_to_solved"], "steps": r["env_steps_to_solved"], "best": r["best_eval"],
            "curve": [(float(x["train_s"]), int(x["env_steps"]), float(x["eval_mean"])) for x in rows]}


def _fmt(x: Optional[float], unit: str = "") -> str:
    return "not solved" if x is None else f"{x:,.0f}{unit}"


@click.group()
def main() -> None:
    """Olaf vs single-process Stable-Baselines3: time to LunarLander's "solved"."""


@main.command("table")
@click.option("--sb3", "sb3_dirs", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--olaf", "olaf_dirs", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True)
def table(sb3_dirs: tuple[Path, ...], olaf_dirs: tuple[Path, ...], out: Path) -> None:
    """Compare finished runs: solve.md and solve.png in --out."""
    out.mkdir(parents=True, exist_ok=True)
    sb3 = [_sb3_run(d) for d in sb3_dirs]
    olaf = [_olaf_run(d.resolve()) for d in olaf_dirs]
    solved_sb3 = [r["time_s"] for r in sb3 if r["solved"]]
    base = sum(solved_sb3) / len(solved_sb3) if solved_sb3 else None
    lines = ["| run | solved | time to solved (s) | with SB3's evaluation pauses (s) | env steps to solved | "
             "best evaluation | time ratio to SB3's mean |", "|---|---|---|---|---|---|---|"]
    for r in sb3 + olaf:
        ratio = "" if not (r["solved"] and base) else f"{r['time_s'] / base:.2f}"
        lines.append(f"| {r['label']} | {'yes' if r['solved'] else 'no'} | {_fmt(r['time_s'])} | "
                     f"{_fmt(r['time_wall_s'])} | {_fmt(r['steps'])} | {r['best']:.1f} | {ratio} |")
    (out / "solve.md").write_text("\n".join(lines) + "\n")
    click.echo("\n".join(lines))
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for r in sb3 + olaf:
        for ax, i in zip(axes, (0, 1)):
            ax.plot([c[i] for c in r["curve"]], [c[2] for c in r["curve"]], marker="o", ms=3, label=r["label"])
    for ax, xl in zip(axes, ("wall time, s (SB3: training only)", "environment steps")):
        ax.axhline(200, ls=":", color="grey", lw=0.8)
        ax.set_xlabel(xl)
        ax.set_ylabel("evaluation: mean return, 100 deterministic episodes")
        ax.set_ylim(-400, 300)
    axes[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "solve.png", dpi=110)


@main.command("run")
@click.option("--out", type=click.Path(path_type=Path), default=Path("build/solve"), show_default=True)
@click.option("--budget-s", default=900.0, show_default=True, help="Each job's wall-time budget, s.")
@click.option("--seed", default=1, show_default=True)
@click.option("--olaf-arg", "olaf_args", multiple=True, help="An extra `olaf train` argument (repeat).")
def run(out: Path, budget_s: float, seed: int, olaf_args: tuple[str, ...]) -> None:
    """SB3, then Olaf, then the table."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(HERE / "sb3_baseline.py"), "--budget-s", str(budget_s), "--seed", str(seed),
                    "--out", str(out / "sb3")], check=True)
    subprocess.run([sys.executable, "-m", "olaf.cli", "train", "--backend", "local", "--net", "sb3", "--solve",
                    "--budget-s", str(budget_s), "--seed", str(seed), "--results", str(out / "olaf"), *olaf_args],
                   check=True)
    table.callback(sb3_dirs=(out / "sb3",), olaf_dirs=((out / "olaf" / "latest").resolve(),), out=out)  # type: ignore[misc]


if __name__ == "__main__":
    main()

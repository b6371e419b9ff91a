"""Time to "solved": Olaf's 27-worker job with Stable-Baselines3's network against Stable-Baselines3 PPO,
measured in the same session on the same machine.

``run`` runs, one after the other for every seed (never side by side: each gets the whole machine),

1. ``sb3``: ``bench/sb3_baseline.py``, one process, one torch thread, RL Zoo's LunarLander settings,
   evaluated every 30 s of training (paused) on 100 deterministic episodes;
2. ``sb3-2core``: the same with the environments in subprocesses and two torch threads (the
   fastest set-up of two cores measured here, ``docs/training.md``);
3. ``olaf``: ``olaf train --backend local --net sb3 --solve``: 9 clusters × 3 workers over loopback
   (the ideal network) with the job's PS settings (or ``--olaf-arg`` ones), its global model
   evaluated beside it every 30 s (``docs/training.md``),

then ``table`` compares them: time and environment steps to the first evaluation with a mean of at
least 200 that the next evaluation confirms (:func:`olaf.plan.workload.first_solved`) — for Olaf the
time its PS wrote the evaluated checkpoint, for SB3 its training time without the evaluation
pauses — and the ratios to SB3's mean over the seeds. ``table`` reads run directories (``--sb3 DIR``,
``--sb3-2core DIR``, ``--olaf DIR``, each repeatable) and writes ``solve.md`` (the table),
``solve.png`` (evaluation reward over wall time and over environment steps, every run on one plot)
and ``solve.json`` (:class:`olaf.training.solve.SolveRecord`).

    nice .venv/bin/python bench/solve.py run --seeds 1,2,3 --out build/solve
    .venv/bin/python bench/solve.py table --sb3 build/solve/sb3-seed1 --olaf build/solve/olaf-seed1/latest --out build/solve
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Optional

import click

from olaf.provenance import git_commit
from olaf.rundir.atomic import write_json
from olaf.training.solve import SYSTEMS, SolveRecord, SolveRun, read_olaf, read_sb3

HERE = Path(__file__).resolve().parent
SB3_2CORE = ["--vec", "subproc", "--torch-threads", "2"]
"""``bench/sb3_baseline.py``'s arguments of the 2-core baseline."""


def _fmt(x: Optional[float], unit: str = "") -> str:
    return "not solved" if x is None else f"{x:,.0f}{unit}"


def _mean(xs: list[float]) -> Optional[float]:
    return statistics.fmean(xs) if xs else None


def _seeds(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    try:
        seeds = [int(s) for s in value.split(",") if s.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: comma-separated integers, e.g. 1,2,3", ctx, param) from None
    if not seeds:
        raise click.BadParameter("at least one seed", ctx, param)
    return seeds


def _machine() -> str:
    model = ""
    try:
        model = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("model name")), "")
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model or platform.processor() or platform.machine()}"


def write_table(runs: list[SolveRun], out: Path) -> None:
    """``solve.md``, ``solve.png`` and ``solve.json`` of ``runs`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    base_t = _mean([r.time_to_solved_s for r in runs if r.system == "sb3" and r.time_to_solved_s is not None])
    base_n = _mean([float(r.env_steps_to_solved) for r in runs if r.system == "sb3" and r.env_steps_to_solved])
    lines = ["| run | seed | solved | time to solved (s) | env steps to solved | best evaluation | "
             "time / SB3's mean | steps / SB3's mean |", "|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (SYSTEMS.index(r.system), r.label, r.seed)):
        rt = "" if r.time_to_solved_s is None or not base_t else f"{r.time_to_solved_s / base_t:.2f}"
        rn = "" if r.env_steps_to_solved is None or not base_n else f"{r.env_steps_to_solved / base_n:.2f}"
        best = "" if r.best_eval is None else f"{r.best_eval:.1f}"
        lines.append(f"| {r.label} | {r.seed} | {'yes' if r.solved else 'no'} | {_fmt(r.time_to_solved_s)} | "
                     f"{_fmt(r.env_steps_to_solved)} | {best} | {rt} | {rn} |")
    (out / "solve.md").write_text("\n".join(lines) + "\n")
    click.echo("\n".join(lines))
    commit = git_commit()
    record = SolveRecord(runs=runs, commit=None if commit is None else commit.removesuffix("-dirty"),
                         dirty=None if commit is None else commit.endswith("-dirty"), machine=_machine())
    write_json(out / "solve.json", record.model_dump(mode="json"), indent=1)
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    for r in runs:
        for ax, i in zip(axes, (0, 1)):
            ax.plot([c[i] for c in r.curve], [c[2] for c in r.curve], marker="o", ms=2.5, lw=1,
                    ls="-" if r.system == "olaf" else "--", label=f"{r.label}, seed {r.seed}")
    for ax, xl in zip(axes, ("wall time, s (SB3: training only)", "environment steps")):
        ax.axhline(200, ls=":", color="grey", lw=0.8)
        ax.set_xlabel(xl)
        ax.set_ylabel("evaluation: mean return, 100 deterministic episodes")
        ax.set_ylim(-400, 300)
    axes[0].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "solve.png", dpi=110)


@click.group()
def main() -> None:
    """Olaf vs Stable-Baselines3: time and environment steps to LunarLander's "solved"."""


@main.command("table")
@click.option("--sb3", "sb3_dirs", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--sb3-2core", "sb3_2core_dirs", multiple=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--olaf", "olaf_dirs", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True)
def table(sb3_dirs: tuple[Path, ...], sb3_2core_dirs: tuple[Path, ...], olaf_dirs: tuple[Path, ...], out: Path) -> None:
    """Compare finished runs: solve.md, solve.png and solve.json in --out."""
    runs = [read_sb3(d) for d in sb3_dirs] + [read_sb3(d, "sb3-2core") for d in sb3_2core_dirs]
    runs += [read_olaf(d.resolve()) for d in olaf_dirs]
    write_table(runs, out)


@main.command("run")
@click.option("--out", type=click.Path(path_type=Path), default=Path("build/solve"), show_default=True)
@click.option("--budget-s", default=900.0, show_default=True, help="Each job's wall-time budget, s.")
@click.option("--seeds", default="1", show_default=True, callback=_seeds, help="Comma-separated seeds.")
@click.option("--systems", default=",".join(SYSTEMS), show_default=True,
              help=f"Comma-separated, of {', '.join(SYSTEMS)}.")
@click.option("--olaf-arg", "olaf_args", multiple=True, help="An extra `olaf train` argument (repeat).")
def run(out: Path, budget_s: float, seeds: list[int], systems: str, olaf_args: tuple[str, ...]) -> None:
    """Every system on every seed, one after the other, then the table."""
    chosen = [s.strip() for s in systems.split(",") if s.strip()]
    bad = [s for s in chosen if s not in SYSTEMS]
    if bad or not chosen:
        raise click.BadParameter(f"{systems!r}: comma-separated, of {', '.join(SYSTEMS)}", param_hint="--systems")
    out.mkdir(parents=True, exist_ok=True)
    runs: list[SolveRun] = []
    for seed in seeds:
        for system in chosen:
            d = out / f"{system}-seed{seed}"
            if system == "olaf":
                subprocess.run([sys.executable, "-m", "olaf.cli", "train", "--backend", "local", "--net", "sb3",
                                "--solve", "--budget-s", str(budget_s), "--seed", str(seed), "--results", str(d),
                                *olaf_args], check=True)
                runs.append(read_olaf((d / "latest").resolve()))
            else:
                subprocess.run([sys.executable, str(HERE / "sb3_baseline.py"), "--budget-s", str(budget_s),
                                "--seed", str(seed), "--out", str(d), *(SB3_2CORE if system == "sb3-2core" else [])],
                               check=True)
                runs.append(read_sb3(d, "sb3-2core" if system == "sb3-2core" else "sb3"))
    write_table(runs, out)


if __name__ == "__main__":
    main()

"""Time and environment steps to "solved": the record of ``make bench-solve`` (``bench/solve.py``).

One :class:`SolveRun` per run of a system on a seed, read from the run's own files:

* ``sb3`` and ``sb3-2core`` — ``bench/sb3_baseline.py``'s ``result.json`` and ``progress.csv``:
  single-process Stable-Baselines3 PPO (one torch thread, environments in the process) or its
  2-core set-up (environments in subprocesses, two torch threads); the time is its training
  time, evaluation pauses excluded;
* ``olaf`` — an ``olaf train --solve`` run directory (``training.json``, ``run.json``): the time is
  the time since the job's start of the PS checkpoint whose evaluation first solved.

"Solved" is the environment's threshold (LunarLander-v3: 200) reached by a 100-episode
deterministic evaluation and confirmed by the next (:func:`olaf.plan.workload.first_solved`).
``solve.json`` (:class:`SolveRecord`, schema ``docs/schemas/solve.schema.json``) holds the runs and
the commit and machine they ran on.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from olaf.plan.workload import first_solved
from olaf.rundir.manifest import read_manifest
from olaf.rundir.training import read_training

SYSTEMS = ("sb3", "sb3-2core", "olaf")
"""The systems of the comparison."""


class SolveRun(BaseModel):
    """One run: ``system`` on ``seed``, whether and when it solved, and its configuration."""

    model_config = ConfigDict(extra="forbid")
    system: Literal["sb3", "sb3-2core", "olaf"]
    seed: int
    label: str = Field(description="what distinguishes the run (the system and its settings)")
    solved: bool
    time_to_solved_s: Optional[float] = Field(description="s since the start of training (SB3: evaluation "
                                              "pauses excluded; Olaf: the solving checkpoint's time)")
    env_steps_to_solved: Optional[int] = Field(description="environment steps of all workers (or the one "
                                               "process) at the solving evaluation's checkpoint")
    best_eval: Optional[float]
    budget_s: Optional[float] = Field(default=None, description="the run's wall-time budget, s")
    config: dict[str, Any] = Field(description="the run's settings: SB3's hyper-parameters, or Olaf's job")
    curve: list[tuple[float, int, float]] = Field(description="every evaluation: (s, environment steps, mean)")
    source: str = Field(description="the run directory it was read from")


class SolveRecord(BaseModel):
    """``solve.json``: every run of a comparison and where it ran."""

    model_config = ConfigDict(extra="forbid")
    runs: list[SolveRun]
    commit: Optional[str] = Field(default=None, description="git commit of the code the runs ran")
    dirty: Optional[bool] = Field(default=None, description="the tree had uncommitted changes")
    machine: Optional[str] = Field(default=None, description="cores and model of the machine")


def read_sb3(d: Path, system: Literal["sb3", "sb3-2core"] = "sb3", label: Optional[str] = None) -> SolveRun:
    """A ``bench/sb3_baseline.py`` output directory as a :class:`SolveRun`.

    Raises:
        FileNotFoundError, ValueError: ``result.json`` or ``progress.csv`` missing or unreadable.
    """
    r = json.loads((d / "result.json").read_text())
    with open(d / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    hyper = r.get("hyperparameters", {})
    return SolveRun(system=system, seed=r["seed"], label=label or f"{system} (n_envs {hyper.get('n_envs')}, "
                    f"n_steps {hyper.get('n_steps')})", solved=r["solved"], time_to_solved_s=r["train_s_to_solved"],
                    env_steps_to_solved=r["env_steps_to_solved"], best_eval=r["best_eval"],
                    budget_s=r.get("budget_s"),
                    config={**hyper, "vec": r.get("vec", "dummy"), "torch_threads": r.get("torch_threads")},
                    curve=[(float(x["train_s"]), int(x["env_steps"]), float(x["eval_mean"])) for x in rows],
                    source=str(d))


def read_olaf(d: Path, label: Optional[str] = None) -> SolveRun:
    """An ``olaf train --solve`` run directory as a :class:`SolveRun`.

    Raises:
        olaf.rundir.training.TrainingFileError, olaf.rundir.manifest.ManifestError: ``training.json``
            or ``run.json`` missing or unreadable.
    """
    t = read_training(d)
    plan = read_manifest(d).plan
    job = plan["workload"]["job"]
    # one evaluation per model: a run recorded before the evaluator skipped a final checkpoint without
    # an update since its last snapshot has that model twice, which "confirmed" its own solved
    evals = [e for i, e in enumerate(t.evaluations) if i == 0 or e.ps_updates != t.evaluations[i - 1].ps_updates]
    i = None if t.solve_at is None else first_solved([(e.episodes, e.mean) for e in evals], t.solve_at)
    s = None if i is None else evals[i]
    return SolveRun(system="olaf", seed=plan.get("seed", t.job.get("seed", 0)), label=label or describe_job(job),
                    solved=s is not None, time_to_solved_s=s.t_s if s else None,
                    env_steps_to_solved=s.env_steps if s else None,
                    best_eval=max((e.mean for e in evals), default=None),
                    budget_s=plan.get("duration_s"), config=job,
                    curve=[(e.t_s, e.env_steps or 0, e.mean) for e in evals], source=str(d))


def describe_job(job: dict[str, Any]) -> str:
    """A short label of an Olaf job's PS and worker settings (what the comparison varies)."""
    ppo = job.get("task", {}).get("ppo", {})
    parts = [f"{job.get('ps_step')} γ {job.get('ps_lr'):g}"]
    if job.get("ps_lr_final"):
        parts[0] += f"→{job['ps_lr_final']:g}"
    if job.get("mode", "async") != "async":
        parts.append(job["mode"])
    if job.get("ps_staleness_root"):
        parts.append(f"v {job['ps_staleness_root']}")
    for k, name in (("n_epochs", "epochs"), ("target_kl", "target_kl"), ("lr", "lr")):
        default = {"n_epochs": 4, "target_kl": None, "lr": 3e-4}[k]
        if ppo.get(k, default) != default:
            parts.append(f"{name} {ppo[k]:g}")
    return "Olaf " + ", ".join(parts)

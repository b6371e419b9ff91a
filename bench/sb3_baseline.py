"""The baseline a distributed job must beat: single-process Stable-Baselines3 PPO to "solved".

One process, one torch thread, RL Zoo's LunarLander hyper-parameters (16 environments, n_steps
1024, batch 64, γ 0.999, λ 0.98, 4 epochs, ent_coef 0.01; SB3's default ``MlpPolicy``: separate
64×64 tanh MLPs, 9,797 parameters). Every ``--eval-every-s`` seconds of training it pauses and
evaluates the policy deterministically with the same code as Olaf's evaluator of the global
model (:func:`olaf.rl.evaluate.evaluate`, 100 episodes by default); it stops once an evaluation
whose mean reaches the environment's reward threshold (LunarLander-v3: 200) is confirmed by the
next (:func:`olaf.plan.workload.first_solved`), or at ``--budget-s`` of training.

Variants, for the measurements of ``docs/training.md`` ("Where the samples go"):

* ``--n-envs 4 --n-steps 128``: one Olaf worker's batch (512 samples per update) in one process,
  which separates the small batch's cost from asynchrony;
* ``--vec subproc --torch-threads 2``: the environments in subprocesses (SB3's ``SubprocVecEnv``)
  and two torch threads, the fastest set-up of the two cores measured here (``sb3-2core``).

``--out`` gets ``progress.csv`` (one row per evaluation: ``train_s`` — training wall time,
evaluations excluded; ``wall_s`` — including them; ``env_steps``; ``eval_mean``, ``eval_std``;
``train_reward`` — mean return of the last 100 training episodes, stochastic policy) and
``result.json`` (solved or not, time and steps to it, the settings).

    nice .venv/bin/python bench/sb3_baseline.py --out build/sb3_baseline
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path
from typing import Any

import click
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv

from olaf.plan.workload import SOLVED_EPISODES, first_solved
from olaf.rl.evaluate import evaluate
from olaf.training.job import env_threshold

ZOO = {"n_envs": 16, "n_steps": 1024, "batch_size": 64, "gamma": 0.999, "gae_lambda": 0.98, "n_epochs": 4,
       "ent_coef": 0.01}
"""RL Zoo's ``ppo.yml`` for LunarLander (policy MlpPolicy, everything else SB3's defaults)."""


class _EvalEvery(BaseCallback):
    def __init__(self, env_id: str, every_s: float, episodes: int, budget_s: float, solve_at: float, seed: int,
                 rows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.env_id, self.every_s, self.episodes, self.budget_s = env_id, every_s, episodes, budget_s
        self.solve_at, self.seed, self.rows = solve_at, seed, rows
        self.t0 = time.monotonic()
        self.eval_s = 0.0
        self.next_at = every_s
        self.solved = False

    def train_s(self) -> float:
        return time.monotonic() - self.t0 - self.eval_s

    def _on_step(self) -> bool:
        t = self.train_s()
        if t < self.next_at and t < self.budget_s:
            return True
        t_eval = time.monotonic()
        r = evaluate(self.model, self.env_id, self.episodes, self.seed)
        self.eval_s += time.monotonic() - t_eval
        buf = [e["r"] for e in self.model.ep_info_buffer]
        self.rows.append({"train_s": round(t, 2), "wall_s": round(time.monotonic() - self.t0, 2),
                          "env_steps": self.num_timesteps, "eval_mean": round(r.mean, 3), "eval_std": round(r.std, 3),
                          "eval_episodes": r.episodes, "train_reward": round(float(np.mean(buf)), 3) if buf else ""})
        click.echo(f"{t:6.0f} s  {self.num_timesteps:8d} steps  eval {r.mean:7.1f} ± {r.std:5.1f}  "
                   f"train {self.rows[-1]['train_reward']}")
        self.next_at = t + self.every_s
        self.solved = first_solved([(x["eval_episodes"], x["eval_mean"]) for x in self.rows], self.solve_at) is not None
        return not self.solved and t < self.budget_s


@click.command()
@click.option("--env", "env_id", default="LunarLander-v3", show_default=True)
@click.option("--budget-s", default=900.0, show_default=True, help="Training wall time at most, s.")
@click.option("--eval-every-s", default=30.0, show_default=True)
@click.option("--eval-episodes", default=SOLVED_EPISODES, show_default=True)
@click.option("--seed", default=1, show_default=True)
@click.option("--n-envs", type=click.IntRange(1), default=ZOO["n_envs"], show_default=True,
              help="Environments (RL Zoo: 16; one Olaf worker: 4).")
@click.option("--n-steps", type=click.IntRange(1), default=ZOO["n_steps"], show_default=True,
              help="Steps per environment and update (RL Zoo: 1024; one Olaf worker: 128).")
@click.option("--vec", type=click.Choice(["dummy", "subproc"]), default="dummy", show_default=True,
              help="SB3's vectorised environment: in this process, or one subprocess per environment.")
@click.option("--torch-threads", type=click.IntRange(1), default=1, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=Path("build/sb3_baseline"), show_default=True)
def main(env_id: str, budget_s: float, eval_every_s: float, eval_episodes: int, seed: int, n_envs: int, n_steps: int,
         vec: str, torch_threads: int, out: Path) -> None:
    torch.set_num_threads(torch_threads)
    out.mkdir(parents=True, exist_ok=True)
    solve_at = env_threshold(env_id)
    hyper = {**ZOO, "n_envs": n_envs, "n_steps": n_steps}
    venv = make_vec_env(env_id, n_envs=n_envs, seed=seed, vec_env_cls=SubprocVecEnv if vec == "subproc" else None)
    model = PPO("MlpPolicy", venv, seed=seed, device="cpu", verbose=0,
                **{k: v for k, v in hyper.items() if k != "n_envs"})
    rows: list[dict[str, Any]] = []
    cb = _EvalEvery(env_id, eval_every_s, eval_episodes, budget_s, solve_at, seed + 1000, rows)
    model.learn(total_timesteps=10**9, callback=cb)
    with open(out / "progress.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    i = first_solved([(r["eval_episodes"], r["eval_mean"]) for r in rows], solve_at)
    solved = None if i is None else rows[i]
    result = {"env": env_id, "solve_at": solve_at, "solved": solved is not None,
              "train_s_to_solved": solved["train_s"] if solved else None,
              "wall_s_to_solved": solved["wall_s"] if solved else None,
              "env_steps_to_solved": solved["env_steps"] if solved else None,
              "best_eval": max(r["eval_mean"] for r in rows), "evaluations": len(rows), "budget_s": budget_s,
              "num_params": sum(p.numel() for p in model.policy.parameters()), "seed": seed,
              "hyperparameters": hyper, "vec": vec, "torch_threads": torch.get_num_threads(),
              "eval_every_s": eval_every_s,
              "eval_episodes": eval_episodes}
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    click.echo(json.dumps(result))


if __name__ == "__main__":
    main()

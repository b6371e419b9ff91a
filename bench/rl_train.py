"""Time to reward: a PPO training job on the local backend (real ``olaf ps`` and ``olaf worker``
processes over loopback UDP, no switch).

The default job of ``docs/training.md``: 9 clusters × 3 workers on LunarLander-v3, ideal network
(nothing lost), until the mean worker reward (:mod:`olaf.training.progress`) reaches 0 or the budget
runs out. The run directory (``--out``) has what every training job writes (``training.json``,
``progress.csv``, ``rewards.csv``, the report); ``result.json`` adds the wall time, the start-up and
the load.

    nice .venv/bin/python bench/rl_train.py                        # the default job
    nice .venv/bin/python bench/rl_train.py --step paper --lr 0.001 --gate   # paper §2.1 as printed
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import click
from rich.console import Console

from olaf import backends
from olaf.backends.base import BackendOptions
from olaf.configfile import validate
from olaf.constants import MTU
from olaf.experiments.runner import run_plan
from olaf.plan.plan import RunPlan
from olaf.plan.workload import DEFAULT_ENV, JOB_ACK_WAIT_MS, JOB_PS, PPOConfig, PPOTaskSpec, TrainJob
from olaf.training.job import check_task


@click.command()
@click.option("--clusters", default=9, show_default=True)
@click.option("--per-cluster", default=3, show_default=True)
@click.option("--env", "env_id", default=DEFAULT_ENV, show_default=True)
@click.option("--target", default=0.0, show_default=True, help="Mean worker reward to reach.")
@click.option("--budget", "budget_s", default=900.0, show_default=True, help="Seconds of training at most.")
@click.option("--step", default=JOB_PS["step"], show_default=True)
@click.option("--lr", default=JOB_PS["lr"], show_default=True)
@click.option("--gate/--no-gate", default=JOB_PS["gate"], show_default=True)
@click.option("--mode", default="async", show_default=True)
@click.option("--aggr-k", default=8, show_default=True)
@click.option("--aggr-t-ms", default=100.0, show_default=True)
@click.option("--update", "update_kind", default="delta", show_default=True)
@click.option("--apply-locally/--no-apply-locally", default=True, show_default=True)
@click.option("--hidden", default=",".join(map(str, PPOConfig().hidden)), show_default=True)
@click.option("--ack-wait-ms", default=JOB_ACK_WAIT_MS, show_default=True)
@click.option("--n-steps", default=PPOConfig().n_steps, show_default=True)
@click.option("--n-envs", default=PPOConfig().n_envs, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=Path("results/rl_train"), show_default=True)
def main(clusters: int, per_cluster: int, env_id: str, target: float, budget_s: float, step: str, lr: float,
         gate: bool, mode: str, aggr_k: int, aggr_t_ms: float, update_kind: str, apply_locally: bool, hidden: str,
         ack_wait_ms: float, n_steps: int, n_envs: int, out: Path) -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the PS and workers on the way out
    widths = tuple(int(x) for x in hidden.split(","))
    n_params = check_task(env_id, widths, MTU)
    job = TrainJob(task=PPOTaskSpec(env_id=env_id, update=update_kind, apply_locally=apply_locally,
                                    ppo=PPOConfig(hidden=widths, n_steps=n_steps, n_envs=n_envs)),
                   num_params=n_params, ps_step=step, ps_lr=lr, ps_gate=gate, mode=mode, aggr_k=aggr_k,
                   aggr_t_ms=aggr_t_ms, ack_wait_ms=ack_wait_ms, target=target)
    plan = validate(RunPlan, {"grads": n_params, "duration_s": budget_s, "workload": {"kind": "ppo", "job": job},
                              "groups": [{"clusters": clusters, "workers_per_cluster": per_cluster, "period_ms": 1.0}]})
    if out.exists():
        shutil.rmtree(out)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    t_start = time.monotonic()
    runner = backends.get("local", BackendOptions(console=Console(stderr=True), progress=True, report=True))
    t = run_plan(runner, plan, out)
    assert t is not None
    result = {"plan": plan.model_dump(mode="json"), "training": t.model_dump(mode="json"),
              "wall_s_total": time.monotonic() - t_start,
              "load_avg_end": os.getloadavg()}
    (out / "result.json").write_text(json.dumps(result, indent=1))
    if t.reached:
        click.echo(f"reached {target} after {t.time_or_elapsed_s:.1f} s and {t.env_steps} env steps; "
                   f"{t.ps_updates} updates at the PS")
    else:
        click.echo(f"not reached within {budget_s} s: final mean worker reward {t.final_mean_worker_reward} after "
                   f"{t.env_steps} env steps; {t.ps_updates} updates at the PS")


if __name__ == "__main__":
    main()

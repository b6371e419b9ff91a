"""Time to reward: a PPO training job over loopback UDP (real ``olaf ps`` and ``olaf worker`` processes, no switch).

The default job of ``docs/training.md``: 9 clusters × 3 workers on LunarLander-v3, ideal network
(nothing lost), until the mean worker reward (:mod:`olaf.rl.progress`) reaches 0 or the budget
runs out. Prints and writes (``--out``/result.json) the wall time to the target, the environment
steps by then, the start-up time and the PS's counters.

    nice .venv/bin/python bench/rl_train.py                        # the default job
    nice .venv/bin/python bench/rl_train.py --step paper --lr 0.001 --gate   # paper §2.1 as printed
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path

import click

from olaf.hosts.modes import ModeParams
from olaf.hosts.ps import PsConfig
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.worker import WorkerConfig
from olaf.plan.workload import DEFAULT_ENV, JOB_ACK_WAIT_MS, JOB_PS, PPOConfig, PPOTaskSpec
from olaf.rl.localjob import run_local_job


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
    a, b = random.randrange(32, 250), random.randrange(1, 250)
    ip = lambda h: f"127.{a}.{b}.{h}"  # noqa: E731
    n = clusters * per_cluster
    ps = PsConfig(bind_ip=ip(250), lr=lr, step=step, gate=gate, flush_s=1.0,
                  modes=ModeParams(mode=mode, aggr_k=aggr_k, aggr_t_ms=aggr_t_ms,
                                   sync_workers=n if mode == "sync" else None))
    spec = PPOTaskSpec(env_id=env_id, update=update_kind, apply_locally=apply_locally,
                       ppo=PPOConfig(hidden=tuple(int(x) for x in hidden.split(",")), n_steps=n_steps, n_envs=n_envs))
    workers = [WorkerConfig(ps_ip=ip(250), bind_ip=ip(i + 1), task_kind="ppo", ppo=spec, seed=1000 + i,
                            ack_wait_ms=5000.0 if mode == "sync" else ack_wait_ms, cluster_id=i // per_cluster,
                            worker_id=i % per_cluster + 1,
                            schedule=ScheduleSpec(period_ms=1.0, duration_s=budget_s + 60), linger_ms=200.0,
                            name=f"w{i + 1:02d}")
               for i in range(n)]
    t_start = time.monotonic()

    def show(t: float, p) -> None:
        r = "-" if p.mean_worker_reward is None else f"{p.mean_worker_reward:8.1f}"
        click.echo(f"\r{t:7.1f} s  reward {r}  ({p.workers_with_reward}/{n} workers)  steps {p.env_steps:>9}  "
                   f"updates {p.sent}", nl=False, err=True)

    res = run_local_job(out, ps, workers, target=target, budget_s=budget_s, poll_s=2.0, on_progress=show,
                        startup_timeout_s=1800.0)
    click.echo("", err=True)
    ps_file = out / f"{ps.name}.summary.json"
    ps_sum = json.loads(ps_file.read_text()) if ps_file.exists() else {}
    result = {
        "job": {"clusters": clusters, "per_cluster": per_cluster, "env": env_id, "target": target, "ps": {
            "step": step, "lr": lr, "gate": gate, "mode": mode}, "ppo": spec.describe()},
        "reached_s": res.reached_s, "reached": None if res.reached is None else asdict(res.reached),
        "final": asdict(res.final), "elapsed_s": res.elapsed_s, "startup_s": res.startup_s,
        "wall_s_total": time.monotonic() - t_start, "load_avg_end": os.getloadavg(),
        "ps": {k: ps_sum.get(k) for k in ("updates", "accepted", "rejected", "flushes", "global_reward")},
        "history": [(round(t, 1), p.mean_worker_reward, p.env_steps) for t, p in res.history],
    }
    (out / "result.json").write_text(json.dumps(result, indent=1))
    if res.reached_s is not None:
        click.echo(f"reached {target} after {res.reached_s:.1f} s and {res.reached.env_steps} env steps "
                   f"(start-up {res.startup_s:.1f} s); PS {result['ps']}")
    else:
        click.echo(f"not reached within {budget_s} s: final mean worker reward {res.final.mean_worker_reward} after "
                   f"{res.final.env_steps} env steps; PS {result['ps']}")


if __name__ == "__main__":
    main()

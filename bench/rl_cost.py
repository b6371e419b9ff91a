"""Cost of one update with the PPO task against the bandit task, measured in the same run.

* **Worker**: one generation of the task (:meth:`olaf.hosts.learning.Task.generate`) plus
  packing the direction to Q7.24 — for PPO one rollout of ``n_steps × n_envs`` steps,
  GAE and the iteration's PPO epochs; for the bandit ``B`` episodes and their mean
  gradient. Milliseconds per update (median over rounds), one torch thread.
* **PS**: the per-update work of ``olaf ps`` without the socket calls: strict decode
  (:func:`olaf.wire.parse_update`), the update rule
  (:meth:`olaf.hosts.global_model.GlobalModel.apply`) and the ACK encoding
  (:func:`olaf.wire.encode_ack`) — for the PPO model's ``G`` and the bandit's ``G``,
  each with the paper step and gating off (every update applied, the expensive path).
  Microseconds per update (median over rounds).

The two tasks alternate round by round so that load from other processes hits both alike;
the machine's load average is printed. Usage:

    nice .venv/bin/python bench/rl_cost.py [--env LunarLander-v3] [--rounds 7] [--iters 5]
"""

from __future__ import annotations

import os
import statistics
import time

import click
import numpy as np

from olaf.fixedpoint import pack_q724, reward_to_fixed
from olaf.hosts.global_model import GlobalModel
from olaf.hosts.task import BanditWorkerTask, TaskParams
from olaf.update import Update
from olaf.wire import encode_ack, encode_update, parse_update


def worker_ms(task, iters: int) -> float:
    t = time.perf_counter()
    for _ in range(iters):
        gen = task.generate(None)
        pack_q724(gen.direction)
    return (time.perf_counter() - t) / iters * 1e3


def ps_us(num_weights: int, updates: int, rng: np.random.Generator) -> float:
    m = GlobalModel(lr=1.0, step="paper", gate=False)
    m.init(pack_q724(rng.normal(0, 0.1, num_weights))[0])
    datas = [encode_update(Update(cluster_id=i % 9, worker_id=1, seq=i + 1, reward_sum=reward_to_fixed(-100.0 + i),
                                  gen_ts=i, grads=tuple(pack_q724(rng.normal(0, 1e-3, num_weights))[0])))
             for i in range(updates)]
    t = time.perf_counter()
    for data in datas:
        u = parse_update(data)
        m.apply(u)
        encode_ack(cluster_id=u.cluster_id, worker_id=u.worker_id, seq=u.seq, count=u.count,
                   global_reward=m.global_reward_fixed(), gen_ts=u.gen_ts, weights=m.ack_weights())
    return (time.perf_counter() - t) / updates * 1e6


@click.command()
@click.option("--env", "env_id", default="LunarLander-v3", show_default=True)
@click.option("--rounds", default=7, show_default=True, help="Alternating rounds (median reported).")
@click.option("--iters", default=5, show_default=True, help="PPO updates per round (the bandit does 4x as many).")
@click.option("--ps-updates", default=2000, show_default=True, help="Updates per PS round.")
def main(env_id: str, rounds: int, iters: int, ps_updates: int) -> None:
    from olaf.plan.workload import PPOTaskSpec
    from olaf.rl.task import PPOTask

    ppo = PPOTask(PPOTaskSpec(env_id=env_id), seed=0)
    bandit = BanditWorkerTask(TaskParams(), np.random.default_rng(0), np.random.default_rng(1))
    rng = np.random.default_rng(2)
    worker_ppo, worker_bandit, ps_ppo, ps_bandit = [], [], [], []
    worker_ms(ppo, 1)  # warm-up: first rollout, allocator
    for _ in range(rounds):
        worker_ppo.append(worker_ms(ppo, iters))
        worker_bandit.append(worker_ms(bandit, 4 * iters))
        ps_ppo.append(ps_us(ppo.num_weights, ps_updates, rng))
        ps_bandit.append(ps_us(bandit.num_weights, ps_updates, rng))
    med = statistics.median
    spec = ppo.spec.ppo
    click.echo(f"load average {os.getloadavg()[0]:.2f} (2 cores shared with other work); {rounds} rounds, medians")
    click.echo(f"worker, one update:  PPO {env_id} ({spec.n_steps}x{spec.n_envs} steps, {spec.n_epochs} epochs, "
               f"G={ppo.num_weights}) {med(worker_ppo):8.1f} ms   bandit (B={bandit.task.params.batch}, "
               f"G={bandit.num_weights}) {med(worker_bandit):8.3f} ms   ratio {med(worker_ppo) / med(worker_bandit):7.0f}")
    click.echo(f"PS, one update:      PPO G={ppo.num_weights} {med(ps_ppo):8.1f} us   bandit G={bandit.num_weights} "
               f"{med(ps_bandit):8.1f} us   ratio {med(ps_ppo) / med(ps_bandit):7.2f}")
    ppo.close()


if __name__ == "__main__":
    main()

"""RLlib's own PPO against the same PPO through Olaf (OlafPPO), one after the other in one invocation
on this machine: does turning Olaf on cost an RLlib user time to reward when the network is ideal?

Both arms use one RLlib config (CartPole-v1 by default, N EnvRunners, the same model, rollout,
minibatch, epochs and learning rate, one seed):

* ``rllib``: RLlib's synchronous PPO — every iteration gathers N rollouts, one Learner updates on
  them, the weights are broadcast;
* ``olaf``: ``OlafPPOConfig`` — every EnvRunner learns from its own rollout with its own Learner and
  pushes the change to an ``olaf ps`` over loopback (the paper step without reward gate; γ =
  ``--ps-lr``, by default :data:`olaf.rl.rllib.OLAF_PPO_PS_LR` = 1, what ``docs/rllib.md``
  recommends for ``OlafPPO``), asynchronously.

For each seed (``--seeds``) and arm it records the wall time and environment steps until RLlib's
``episode_return_mean`` (over the EnvRunners' last 100 episodes) first reaches the target, within
a budget. It prints one table and the ratios olaf / rllib per seed and of the means over seeds; a
ratio is only taken within one invocation.

    .venv/bin/python bench/rllib_olaf.py --env-runners 4 --target 150 --budget-s 300 --seeds 1,2,3
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import click
import ray
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

from olaf.backends.ray.cluster import LocalRayHead
from olaf.constants import MTU
from olaf.plan.workload import JOB_PS
from olaf.rl.rllib import OLAF_PPO_PS_LR, OlafPPOConfig


def configure(cfg: Any, env: str, runners: int, hidden: list[int], seed: int) -> Any:
    """The arms' shared RLlib settings."""
    return (cfg.environment(env)
            .env_runners(num_env_runners=runners, num_cpus_per_env_runner=0.5, rollout_fragment_length=256)
            .training(lr=3e-4, minibatch_size=64, num_epochs=4, train_batch_size_per_learner=256 * runners)
            .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=hidden))
            .debugging(seed=seed))


def until_target(algo: Any, target: float, budget_s: float) -> dict[str, Any]:
    """Train until episode_return_mean ≥ target or the budget; time and steps to it."""
    t0 = time.monotonic()
    best, reached, steps = float("-inf"), None, 0
    while time.monotonic() - t0 < budget_s:
        r = algo.train()
        er = r.get("env_runners", {})
        ret = er.get("episode_return_mean")
        steps = int(er.get("num_env_steps_sampled_lifetime", steps) or steps)
        if ret is not None:
            best = max(best, float(ret))
            if ret >= target:
                reached = time.monotonic() - t0
                break
    return {"time_to_target_s": reached, "env_steps": steps, "best_return": best,
            "elapsed_s": time.monotonic() - t0}


def start_ps(num_params: int, out: Path, lr: float) -> tuple[subprocess.Popen[str], str]:
    ip = "127.77.0.1"
    ps = subprocess.Popen([sys.executable, "-m", "olaf.cli", "ps", "--bind", ip, "--out-dir", str(out),
                           "--num-params", str(num_params), "--mtu", str(MTU), "--step", JOB_PS["step"],
                           "--lr", str(lr), "--no-reward-gate"], stderr=subprocess.PIPE, text=True)
    log = out / "ps.jsonl"
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_text().strip()):
        if ps.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the PS did not start: {ps.stderr.read() if ps.stderr else ''}")
        time.sleep(0.1)
    return ps, ip


@click.command()
@click.option("--env", default="CartPole-v1", show_default=True)
@click.option("--env-runners", default=4, show_default=True, type=click.IntRange(1))
@click.option("--hidden", default="64,64", show_default=True)
@click.option("--target", default=150.0, show_default=True)
@click.option("--budget-s", default=300.0, show_default=True)
@click.option("--seeds", default="1", show_default=True, help="Comma-separated seeds, each run on both arms.")
@click.option("--ps-lr", default=OLAF_PPO_PS_LR, show_default=True,
              help="The PS's γ (paper step): the share of each EnvRunner's parameter change that reaches the model.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the results as JSON here.")
def main(env: str, env_runners: int, hidden: str, target: float, budget_s: float, seeds: str, ps_lr: float,
         out: Optional[Path]) -> None:
    widths = [int(h) for h in hidden.split(",")]
    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError:
        raise click.BadParameter(f"{seeds!r}: comma-separated integers", param_hint="--seeds") from None
    per_seed = {seed: one_seed(env, env_runners, widths, target, budget_s, seed, ps_lr) for seed in seed_list}
    reached = [r for r in per_seed.values() if r["rllib"]["time_to_target_s"] and r["olaf"]["time_to_target_s"]]
    summary: dict[str, Any] = {"env": env, "env_runners": env_runners, "hidden": widths, "target": target,
                               "ps_lr": ps_lr, "seeds": per_seed}
    print(f"{env}, {env_runners} EnvRunners, model {widths}, target {target:g}, PS γ {ps_lr:g}")
    print(f"{'seed':>4} {'arm':6} {'time to target (s)':>19} {'env steps':>10} {'best return':>12}")
    for seed, res in per_seed.items():
        for arm in ("rllib", "olaf"):
            r = res[arm]
            t = "not reached" if r["time_to_target_s"] is None else f"{r['time_to_target_s']:.1f}"
            print(f"{seed:>4} {arm:6} {t:>19} {r['env_steps']:>10} {r['best_return']:>12.1f}")
        if "ratio_time" in res:
            print(f"{seed:>4} olaf / rllib: time {res['ratio_time']:.2f}, environment steps {res['ratio_steps']:.2f}")
    if reached:
        for k, arm_key in (("time_to_target_s", "time"), ("env_steps", "steps")):
            a = sum(r["rllib"][k] for r in reached) / len(reached)
            b = sum(r["olaf"][k] for r in reached) / len(reached)
            summary[f"ratio_mean_{arm_key}"] = b / a
        print(f"means over the {len(reached)} seed(s) where both reached it: olaf / rllib time "
              f"{summary['ratio_mean_time']:.2f}, environment steps {summary['ratio_mean_steps']:.2f}")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(summary, indent=1))


def one_seed(env: str, env_runners: int, widths: list[int], target: float, budget_s: float, seed: int,
             ps_lr: float) -> dict[str, Any]:
    """Both arms on one seed, one after the other; their results and ratios."""
    results: dict[str, Any] = {}
    head_log = tempfile.NamedTemporaryFile(prefix="olaf-bench-ray-head-", suffix=".out", delete=False)
    head = LocalRayHead(ray, Path(head_log.name), num_cpus=2, env_vars={"OMP_NUM_THREADS": "1"})
    try:
        algo = configure(PPOConfig(), env, env_runners, widths, seed).build_algo()
        try:
            results["rllib"] = until_target(algo, target, budget_s)
        finally:
            algo.stop()
        olaf_cfg = configure(OlafPPOConfig(), env, env_runners, widths, seed).training(
            train_batch_size_per_learner=256)
        num_params = olaf_cfg.olaf_num_params()
        with tempfile.TemporaryDirectory() as tmp:
            ps, ip = start_ps(num_params, Path(tmp), ps_lr)
            try:
                prefix = ip.rsplit(".", 1)[0]
                algo = olaf_cfg.olaf(ps=ip, endpoints=[f"{prefix}.{i + 2}" for i in range(env_runners)],
                                     log_dir=Path(tmp) / "runners").build_algo()
                try:
                    results["olaf"] = until_target(algo, target, budget_s)
                    results["olaf"]["updates_sent"] = algo.train()["olaf"]["updates_sent"]
                finally:
                    algo.stop()
            finally:
                ps.send_signal(signal.SIGTERM)
                ps.wait(60)
    finally:
        head.close()
        Path(head_log.name).unlink()
    a, b = results["rllib"], results["olaf"]
    results["num_params"] = num_params
    if a["time_to_target_s"] and b["time_to_target_s"]:
        results["ratio_time"] = b["time_to_target_s"] / a["time_to_target_s"]
        results["ratio_steps"] = b["env_steps"] / max(1, a["env_steps"])
    return results


if __name__ == "__main__":
    main()

"""A short real training run: PPO on CartPole-v1 with real `olaf ps` and `olaf worker` processes over
loopback UDP (no switch), the PS's default-job rule. The mean worker reward rises from about 22
(random policy) above 150 — an untrained policy does not get there."""

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from hostnet import loopback_net  # noqa: E402

from olaf.hosts.ps import PsConfig  # noqa: E402
from olaf.hosts.schedule import ScheduleSpec  # noqa: E402
from olaf.hosts.worker import WorkerConfig  # noqa: E402
from olaf.plan.workload import JOB_ACK_WAIT_MS, JOB_PS, PPOConfig, PPOTaskSpec  # noqa: E402
from olaf.rl.localjob import run_local_job  # noqa: E402

THRESHOLD = 150.0
BUDGET_S = 60.0


def test_cartpole_mean_worker_reward_rises_over_loopback(tmp_path):
    ip = loopback_net()
    ps = PsConfig(bind_ip=ip(100), flush_s=0.5, **JOB_PS)
    spec = PPOTaskSpec(env_id="CartPole-v1", ppo=PPOConfig(gamma=0.99))
    workers = [WorkerConfig(ps_ip=ip(100), bind_ip=ip(i + 1), task_kind="ppo", ppo=spec, seed=i, cluster_id=i // 2,
                            ack_wait_ms=JOB_ACK_WAIT_MS,
                            worker_id=i % 2 + 1, schedule=ScheduleSpec(period_ms=1.0, duration_s=BUDGET_S + 60),
                            linger_ms=100.0, name=f"w{i + 1}") for i in range(4)]
    res = run_local_job(tmp_path, ps, workers, target=THRESHOLD, budget_s=BUDGET_S, poll_s=0.5, window=3)
    print(f"reached {THRESHOLD} after {res.reached_s} s, {res.reached and res.reached.env_steps} steps; "
          f"start-up {res.startup_s:.1f} s")
    first = next(p.mean_worker_reward for _, p in res.history if p.mean_worker_reward is not None)
    assert first < 50, f"an untrained policy scores about 22, the run started at {first}"
    assert res.reached_s is not None, (f"mean worker reward {res.final.mean_worker_reward} after {res.elapsed_s:.0f} s "
                                       f"and {res.final.env_steps} steps, below {THRESHOLD}")
    ps_sum = json.loads((tmp_path / "ps.summary.json").read_text())
    assert ps_sum["accepted"] >= 10 and ps_sum["malformed"] == 0 and ps_sum["num_weights"] == 4 * 24 + 24 + 25 * 3
    for w in workers:
        s = json.loads((tmp_path / f"{w.name}.summary.json").read_text())
        assert s["task"] == "ppo" and s["model_acked"] and s["stop_reason"] == "signal" and s["saturated_elements"] == 0

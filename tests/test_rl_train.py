"""A short real training run: PPO on CartPole-v1 with real `olaf ps` and `olaf worker` processes over
loopback UDP (no switch), the PS's default-job rule. Each worker stops after ITERATIONS iterations;
within them the mean worker reward must rise from about 22 (an untrained policy: this job with a
learning rate of 1e-12 scored 22.5 after its 50 iterations) to THRESHOLD.

Measured on a 2-core machine under load (seeds 0, 10, 20; two of the jobs side by side): mean
worker reward 147, 114, 83 after 30 iterations per worker and 224, 205, 193 after 50. The test
counts iterations, not seconds: a slower machine takes longer for the same iterations, and
BUDGET_S only guards against a hang."""

import json

import pytest
from hostnet import loopback_net
from tiers import require

require("train")
pytestmark = pytest.mark.train

from olaf.hosts.ps import PsConfig  # noqa: E402
from olaf.hosts.schedule import ScheduleSpec  # noqa: E402
from olaf.hosts.worker import WorkerConfig  # noqa: E402
from olaf.plan.workload import JOB_ACK_WAIT_MS, JOB_PS, PPOConfig, PPOTaskSpec  # noqa: E402
from olaf.rl.localjob import run_local_job  # noqa: E402

THRESHOLD = 120.0
ITERATIONS = 50
BUDGET_S = 600.0


@pytest.mark.timeout(BUDGET_S + 300)
def test_cartpole_mean_worker_reward_rises_over_loopback(tmp_path):
    ip = loopback_net()
    ps = PsConfig(bind_ip=ip(100), flush_s=0.5, **JOB_PS)
    spec = PPOTaskSpec(env_id="CartPole-v1", ppo=PPOConfig(gamma=0.99))
    workers = [WorkerConfig(ps_ip=ip(100), bind_ip=ip(i + 1), task_kind="ppo", ppo=spec, seed=i, cluster_id=i // 2,
                            ack_wait_ms=JOB_ACK_WAIT_MS, worker_id=i % 2 + 1,
                            schedule=ScheduleSpec(period_ms=1.0, max_updates=ITERATIONS, duration_s=BUDGET_S + 60),
                            linger_ms=100.0, name=f"w{i + 1}") for i in range(4)]
    res = run_local_job(tmp_path, ps, workers, target=THRESHOLD, budget_s=BUDGET_S, poll_s=0.5, window=3)
    done = {w.name: json.loads((tmp_path / f"{w.name}.summary.json").read_text()) for w in workers}
    iterations = {n: s["generated"] for n, s in done.items()}
    print(f"reached {THRESHOLD}: {res.reached is not None}, iterations per worker {iterations}, "
          f"{res.elapsed_s:.0f} s; start-up {res.startup_s:.1f} s")
    first = next(p.mean_worker_reward for _, p in res.history if p.mean_worker_reward is not None)
    assert first < 50, f"an untrained policy scores about 22, the run started at {first}"
    assert res.reached is not None or res.schedules_ended, \
        f"hang guard: {BUDGET_S:.0f} s passed before the workers did {ITERATIONS} iterations ({iterations})"
    assert res.reached is not None, (f"mean worker reward {res.final.mean_worker_reward} after {ITERATIONS} "
                                     f"iterations per worker, below {THRESHOLD}")
    assert res.reached.fewest_generations <= ITERATIONS and max(iterations.values()) <= ITERATIONS
    ps_sum = json.loads((tmp_path / "ps.summary.json").read_text())
    assert ps_sum["accepted"] >= 10 and ps_sum["malformed"] == 0 and ps_sum["num_weights"] == 4 * 24 + 24 + 25 * 3
    for s in done.values():
        assert s["task"] == "ppo" and s["model_acked"] and s["saturated_elements"] == 0
        assert s["stop_reason"] in ("signal", "schedule_end")  # stopped at the target, or done at the last poll

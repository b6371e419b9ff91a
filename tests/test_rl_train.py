"""A short real training run: PPO on CartPole-v1 on the local backend (real `olaf ps` and `olaf worker`
processes over loopback UDP, no switch), the PS's default-job rule. Each worker stops after ITERATIONS iterations;
within them the mean worker reward must rise from about 22 (an untrained policy: this job with a
learning rate of 1e-12 scored 22.5 after its 50 iterations) to THRESHOLD.

Measured on a 2-core machine under load (seeds 0, 10, 20; two of the jobs side by side): mean
worker reward 147, 114, 83 after 30 iterations per worker and 224, 205, 193 after 50. The test
counts iterations, not seconds: a slower machine takes longer for the same iterations, and
BUDGET_S only guards against a hang."""

import csv
import json

import pytest
from hostnet import guard
from tiers import require

require("train")
pytestmark = pytest.mark.train

from olaf import backends  # noqa: E402
from olaf.backends.base import BackendOptions  # noqa: E402
from olaf.configfile import validate  # noqa: E402
from olaf.experiments.runner import run_plan  # noqa: E402
from olaf.plan.plan import RunPlan  # noqa: E402
from olaf.plan.workload import PPOConfig, PPOTaskSpec, TrainJob  # noqa: E402

THRESHOLD = 120.0
ITERATIONS = 50
BUDGET_S = 600.0
GRADS = 4 * 24 + 24 + 25 * 3
"""The shared-trunk network of CartPole-v1 (4 observations, 24 hidden, 2 actions + a value)."""


def run_cartpole(tmp_path, task: PPOTaskSpec) -> tuple[dict, dict, dict]:
    """The 2 x 2-worker CartPole job over loopback until THRESHOLD or ITERATIONS iterations per worker:
    (the training result, each worker's summary, each worker's iterations); asserts the run ended
    at the target or after its iterations (BUDGET_S only guards against a hang)."""
    job = TrainJob(task=task, num_params=GRADS, target=THRESHOLD, window=3)
    plan = validate(RunPlan, {"grads": GRADS, "updates_per_worker": ITERATIONS, "duration_s": guard(BUDGET_S),
                              "groups": [{"clusters": 2, "workers_per_cluster": 2, "period_ms": 1.0}],
                              "workload": {"kind": "ppo", "job": job}})
    t = run_plan(backends.get("local", BackendOptions(report=False)), plan, tmp_path)
    assert t is not None
    hosts = tmp_path / "hosts"
    done = {w: json.loads((hosts / f"{w}.summary.json").read_text()) for w in ("w1", "w2", "w3", "w4")}
    iterations = {n: s["generated"] for n, s in done.items()}
    assert t.reached or all(n == ITERATIONS for n in iterations.values()), \
        f"hang guard: {BUDGET_S:.0f} s passed before the workers did {ITERATIONS} iterations ({iterations})"
    return t, done, iterations


@pytest.mark.timeout(BUDGET_S + 300)
def test_cartpole_mean_worker_reward_rises_over_loopback(tmp_path):
    t, done, iterations = run_cartpole(tmp_path, PPOTaskSpec(env_id="CartPole-v1", ppo=PPOConfig(gamma=0.99)))
    hosts = tmp_path / "hosts"
    print(f"reached {THRESHOLD}: {t.reached}, iterations per worker {iterations}, {t.elapsed_s:.0f} s")
    with open(tmp_path / "progress.csv") as f:
        first = next(float(r["mean_worker_reward"]) for r in csv.DictReader(f) if r["mean_worker_reward"])
    assert first < 50, f"an untrained policy scores about 22, the run started at {first}"
    assert t.reached, (f"mean worker reward {t.final_mean_worker_reward} after {ITERATIONS} iterations per "
                          f"worker, below {THRESHOLD}")
    assert max(iterations.values()) <= ITERATIONS and not t.worker_errors
    ps_sum = json.loads((hosts / "ps.summary.json").read_text())
    assert ps_sum["accepted"] >= 10 and ps_sum["malformed"] == 0 and ps_sum["num_weights"] == GRADS
    for s in done.values():
        assert s["task"] == "ppo" and s["model_acked"] and s["saturated_elements"] == 0
        assert s["stop_reason"] in ("signal", "schedule_end")  # stopped at the target, or done at the last poll


CHUNK_MTU = 20 + 8 + 38 + 4 * 70
"""Links whose chunk holds at most 70 elements: the 195 parameters travel as K = 3 chunks of 65."""


@pytest.mark.timeout(BUDGET_S + 300)
def test_cartpole_rises_with_the_model_in_three_chunks(tmp_path):
    """The same job with every update and ACK in K = 3 chunks over loopback (the PS applies each to
    its slice, the workers adopt slices between iterations): the mean worker reward reaches THRESHOLD
    within ITERATIONS iterations per worker, and every chunk sent is received and ACKed."""
    from olaf.chunks import Chunking  # noqa: PLC0415

    assert Chunking.for_model(GRADS, CHUNK_MTU).num_chunks == 3
    t, done, iterations = run_cartpole(
        tmp_path, PPOTaskSpec(env_id="CartPole-v1", ppo=PPOConfig(gamma=0.99), mtu=CHUNK_MTU))
    hosts = tmp_path / "hosts"
    print(f"K = 3: reached {THRESHOLD}: {t.reached}, iterations per worker {iterations}, {t.elapsed_s:.0f} s")
    assert t.reached, (f"mean worker reward {t.final_mean_worker_reward} after {ITERATIONS} iterations per "
                          f"worker, below {THRESHOLD}")
    assert not t.worker_errors
    ps = json.loads((hosts / "ps.summary.json").read_text())
    assert (ps["num_chunks"], ps["num_weights"], ps["wrong_size"], ps["malformed"]) == (3, GRADS, 0, 0)
    assert ps["accepted"] >= 30 and ps["initialised"] == 3
    for cluster, per in ps["per_chunk"].items():
        assert sorted(per) == ["0", "1", "2"], cluster
        assert all(k["acked"] == k["chunks"] for k in per.values()), per  # every chunk received was ACKed
    received = sum(k["chunks"] for per in ps["per_chunk"].values() for k in per.values())
    assert received == sum(s["chunks_sent"] for s in done.values())  # loopback loses none
    for s in done.values():
        assert s["num_chunks"] == 3 and s["chunks_sent"] == 3 * s["sent"] and s["model_acked"]
        assert sum(s["ack_slices"].values()) == s["sent"]

"""How a training job ends on progress rather than wall time: olaf.training.monitor.TrainMonitor (the
`olaf train` monitor) on logs written by hand, and the local backend with real bandit workers
that each stop after a number of iterations (no torch needed)."""

import json

import pytest

from olaf import backends
from olaf.backends.base import BackendOptions
from olaf.configfile import validate
from olaf.plan.plan import RunPlan
from olaf.rundir.records import GenRecord, Outcome, UpdateRecord
from olaf.training.monitor import TrainMonitor


def append(path, *records):
    with open(path, "a") as f:
        for r in records:
            f.write(r.line() + "\n")


def gens(n, reward):
    return [GenRecord(ev="gen", t_ns=(i + 1) * 10**8, idx=i, late_ms=0.0, sent=True, seq=i + 1, reward=reward,
                      folded=1, exp_reward=None, reason="tc_off", p_send=1.0, draw=None, delta_hat_ms=None, N=None,
                      q_max=None, steps=32, episodes=1, env_steps=32 * (i + 1)) for i in range(n)]


def ps_update(count, init=False):
    return UpdateRecord(ev="update", t_ns=10**8, src="127.0.0.1", cluster_id=0, worker_id=1, seq=1, count=count,
                        gen_ts=10**8, reward_sum=0, reward=0.0, init=init, outcome=Outcome.ACCEPTED, global_reward=1.0)


def test_monitor_ends_the_job_at_the_iterations_of_the_slowest_worker(tmp_path):
    m = TrainMonitor(tmp_path, ["a", "b"], target=100.0, window=2, iterations=3)
    append(tmp_path / "a.jsonl", *gens(5, 10.0))
    append(tmp_path / "b.jsonl", *gens(2, 10.0))
    text, stop = m.poll(1.0)
    assert not stop and "fewest 2/3 per worker" in text
    append(tmp_path / "b.jsonl", *gens(1, 10.0))
    _, stop = m.poll(2.0)
    assert stop and m.reached_s is None  # the limit, not the target


def test_monitor_ends_the_job_at_the_updates_the_ps_received(tmp_path):
    m = TrainMonitor(tmp_path, ["a"], target=100.0, ps_updates=5)
    append(tmp_path / "a.jsonl", *gens(1, 10.0))
    append(tmp_path / "ps.jsonl", ps_update(1, init=True), ps_update(1), ps_update(3))   # INIT not counted
    text, stop = m.poll(1.0)
    assert not stop and "PS 4/5 updates" in text
    append(tmp_path / "ps.jsonl", ps_update(1))
    assert m.poll(2.0)[1]


def test_monitor_without_limits_ends_only_at_the_target(tmp_path):
    m = TrainMonitor(tmp_path, ["a", "b"], target=50.0, window=1)
    append(tmp_path / "a.jsonl", *gens(100, 60.0))
    assert not m.poll(1.0)[1]                    # b has no reward yet
    append(tmp_path / "b.jsonl", *gens(1, 40.0))
    assert m.poll(2.0)[1] and m.reached_s == 2.0  # every worker has one, mean (60 + 40) / 2 = the target
    m2 = TrainMonitor(tmp_path, ["a", "b"], target=50.0, window=1, stop_at_target=False)
    assert not m2.poll(1.0)[1] and m2.reached_s == 1.0


def test_a_lost_worker_leaves_the_target_and_the_iteration_limit_but_keeps_its_steps(tmp_path):
    """A worker lost with its machine (a Ray node) no longer holds the job back: the iteration limit
    and the target count the others; its steps and iterations stay in the totals."""
    m = TrainMonitor(tmp_path, ["a", "b", "c"], target=50.0, window=1, iterations=3)
    append(tmp_path / "a.jsonl", *gens(3, 60.0))
    append(tmp_path / "b.jsonl", *gens(3, 40.0))
    append(tmp_path / "c.jsonl", *gens(1, -100.0))
    text, stop = m.poll(1.0)
    assert not stop and "fewest 1/3" in text and m.reached_s is None
    m.workers_lost({"c"})
    m.workers_lost({"c"})  # told again: nothing changes
    text, stop = m.poll(2.0)
    assert stop and m.reached_s == 2.0 and "(2/2 workers, 1 lost" in text
    p = m.history[-1][1]
    assert p.generations == 7 and p.env_steps == 3 * 32 * 2 + 32 and p.mean_worker_reward == 50.0
    with pytest.raises(KeyError):
        m._tracker.retire(tmp_path / "nobody.jsonl")


def test_local_run_ends_when_every_worker_has_done_its_iterations(tmp_path):
    """No monitor, no target: the run ends when every worker has ended its schedule (its updates), long
    before its duration, which only guards against a hang."""
    plan = validate(RunPlan, {"updates_per_worker": 20, "duration_s": 300,
                              "groups": [{"clusters": 2, "workers_per_cluster": 1, "period_ms": 5.0}]})
    res = backends.get("local", BackendOptions(report=False)).run(plan, tmp_path)
    assert res.status == "ok" and res.elapsed_s < 300
    for w in ("w1", "w2"):
        s = json.loads((tmp_path / "hosts" / f"{w}.summary.json").read_text())
        assert s["generated"] == 20 and s["stop_reason"] == "schedule_end"

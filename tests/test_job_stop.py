"""How a training job ends on progress rather than wall time: olaf.rl.trainrun.TrainMonitor (the
`olaf train` monitor) on logs written by hand, and olaf.rl.localjob.run_local_job with real
bandit workers that each stop after a number of iterations (no torch needed)."""

import json

from hostnet import loopback_net

from olaf.hosts.ps import PsConfig
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.worker import WorkerConfig
from olaf.rl.localjob import run_local_job
from olaf.rl.trainrun import TrainMonitor
from olaf.rundir.records import GenRecord, Outcome, UpdateRecord


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


def test_local_job_ends_when_every_worker_has_done_its_iterations(tmp_path):
    ip = loopback_net()
    workers = [WorkerConfig(ps_ip=ip(100), bind_ip=ip(i + 1), seed=i, cluster_id=i, worker_id=1, name=f"w{i + 1}",
                            schedule=ScheduleSpec(period_ms=5.0, max_updates=20 + 10 * i, duration_s=600),
                            linger_ms=50.0) for i in range(2)]
    res = run_local_job(tmp_path, PsConfig(bind_ip=ip(100), flush_s=0.2), workers, target=None, budget_s=300,
                        poll_s=0.2)
    assert res.schedules_ended and res.reached is None
    assert res.final.generations == 50 and res.final.fewest_generations == 20
    for w, n in (("w1", 20), ("w2", 30)):
        s = json.loads((tmp_path / f"{w}.summary.json").read_text())
        assert s["generated"] == n and s["stop_reason"] == "schedule_end"

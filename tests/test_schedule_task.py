"""Worker schedules (period/jitter, trace files) and the learning task."""

import json
from itertools import islice

import numpy as np
import pytest

from olaf.experience import Experience, Generation
from olaf.fixedpoint import grads_to_fixed, reward_to_fixed
from olaf.hosts.global_model import GlobalModel, Outcome
from olaf.hosts.schedule import ScheduleSpec, TraceError, load_trace
from olaf.hosts.task import BanditTask, TaskParams
from olaf.update import Update


def test_periodic_gaps_stay_within_jitter():
    spec = ScheduleSpec(period_ms=100, jitter_ms=30, max_updates=500)
    gaps = np.array(list(spec.gaps(np.random.default_rng(3)))) / 1e6
    assert len(gaps) == 500
    assert gaps.min() >= 70 and gaps.max() <= 130 and abs(gaps.mean() - 100) < 3
    # the duration is the worker's to apply on the wall clock: the gaps go on
    endless = ScheduleSpec(period_ms=10, duration_s=1).gaps(np.random.default_rng(0))
    assert list(islice(endless, 500)) == [10_000_000] * 500


@pytest.mark.parametrize("kw, msg", [
    (dict(period_ms=100, jitter_ms=101, duration_s=1), "jitter"),
    (dict(period_ms=0, duration_s=1), "period"),
    (dict(period_ms=100), "duration or a number"),
    (dict(trace_ms=[1.0], trace_scale=0), "scale"),
])
def test_schedule_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        ScheduleSpec(**kw)


def test_trace_formats(tmp_path):
    (tmp_path / "a.csv").write_text("t_ms,other\n10,x\n25,y\n25,z\n")
    (tmp_path / "b.csv").write_text("interval_ms\n10\n15\n0\n")
    (tmp_path / "c.json").write_text(json.dumps({"interval_ms": [10, 15, 0]}))
    (tmp_path / "d.json").write_text(json.dumps([10, 25, 25]))
    for f in "a.csv", "b.csv", "c.json", "d.json":
        assert load_trace(tmp_path / f) == [10.0, 25.0, 25.0]
    spec = ScheduleSpec(trace_ms=[10.0, 25.0, 25.0], trace_scale=2.0)
    assert list(spec.gaps(np.random.default_rng(0))) == [20_000_000, 30_000_000, 0]
    assert len(list(ScheduleSpec(trace_ms=[1, 2, 3], max_updates=2).gaps(np.random.default_rng(0)))) == 2


@pytest.mark.parametrize("text, msg", [
    ("t_ms\n10\n5\n", "before entry"),
    ("time\n10\n", "no 't_ms'"),
    ("t_ms\n-1\n", ">= 0"),
    ("t_ms\nabc\n", "could not convert"),
])
def test_bad_traces_name_the_problem(tmp_path, text, msg):
    f = tmp_path / "t.csv"
    f.write_text(text)
    with pytest.raises(TraceError, match=msg):
        load_trace(f)
    with pytest.raises(TraceError, match="cannot read"):
        load_trace(tmp_path / "missing.csv")


def test_gradient_is_an_unbiased_estimate_of_the_expected_reward_gradient():
    p = TaskParams(num_weights=4, batch=200_000, reward_scale=10.0, sigma=0.1)
    task = BanditTask(p, np.random.default_rng(1))
    w = task.initial_weights(np.random.default_rng(2))
    rewards, grads = task.rollout(w)
    assert rewards.mean() == pytest.approx(task.expected_reward(w), rel=0.02)
    assert np.allclose(grads.mean(axis=0), -2 * p.reward_scale * (w - task.target), atol=0.1)


def test_experience_subsumes_skipped_generations():
    e = Experience(2)
    e.add(Generation(np.array([1.0, 3.0]), np.array([2.0, 0.0]), 2))
    e.add(Generation(np.array([5.0]), np.array([0.0, 6.0]), 1))
    r, g, k, episodes = e.take()
    assert (r, g.tolist(), k, episodes) == (3.0, [4 / 3, 2.0], 2, 3)
    with pytest.raises(ValueError, match="no experience"):
        e.take()


def test_experience_without_an_ended_episode_carries_the_last_reward():
    """PPO rollouts may end no episode: the update then carries the previous reward; before any
    episode has ended no update can be formed (the worker folds the iteration into the next one)."""
    e = Experience(1)
    e.add(Generation(np.array([]), np.array([1.0]), 100))
    assert not e.ready
    with pytest.raises(ValueError, match="no episode"):
        e.take()
    e.add(Generation(np.array([-50.0]), np.array([3.0]), 300))
    assert e.take() == (-50.0, np.array([2.5]), 2, 1)
    e.add(Generation(np.array([]), np.array([4.0]), 10))
    assert e.ready and e.take()[0] == -50.0


def test_ps_rule_learns_the_task():
    """Workers computing gradients at the global weights, the PS's gated rule with γ = 0.001:
    the expected reward improves from its start by more than half of the way to the optimum."""
    p = TaskParams(num_weights=32)
    tasks = [BanditTask(p, np.random.default_rng(10 + i)) for i in range(6)]
    ps = GlobalModel(lr=0.001)
    w0 = tasks[0].initial_weights(np.random.default_rng(0))
    ps.init(grads_to_fixed(w0))
    local = [ps.weights.copy() for _ in tasks]
    outcomes = []
    for step in range(600):
        i = step % len(tasks)
        rewards, grads = tasks[i].rollout(local[i])
        u = Update(cluster_id=0, worker_id=i, seq=step + 1, reward_sum=reward_to_fixed(rewards.mean()),
                   grads=tuple(grads_to_fixed(grads.mean(axis=0))))
        outcomes.append(ps.apply(u))
        local[i] = np.asarray(ps.ack_weights()) / (1 << 24)
    j0, j1, jmax = (tasks[0].expected_reward(w0), tasks[0].expected_reward(ps.weights),
                    -p.reward_scale * p.sigma**2)
    assert j1 - j0 > 0.5 * (jmax - j0)
    assert outcomes.count(Outcome.ACCEPTED) > 30 and outcomes.count(Outcome.REJECTED) > 30


def test_stratified_contexts_make_the_mean_reward_exact_up_to_exploration_noise():
    p = TaskParams(num_weights=8, batch=20, reward_scale=10.0, sigma=1e-6)
    task = BanditTask(p, np.random.default_rng(4))
    w = task.initial_weights(np.random.default_rng(5))
    rewards, grads = task.rollout(w)
    assert rewards.shape == (24,) and grads.shape == (24, 8)  # 20 rounded up to 3 blocks of 8
    assert rewards.mean() == pytest.approx(task.expected_reward(w), rel=1e-6)
    assert np.allclose(grads.mean(axis=0), -2 * p.reward_scale * (w - task.target), atol=1e-4)

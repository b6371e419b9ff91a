"""The evaluator of the global model (olaf/training/evaluator.py, olaf/rl/evaluate.py) on real
CartPole episodes: it scores the PS's checkpoint deterministically, skips a checkpoint it has
already scored, and scores the final one when stopped."""

import os
import threading
import time

import numpy as np
import pytest
from hostnet import guard
from tiers import require

require("train")
pytestmark = pytest.mark.train

from olaf.hosts.checkpoint import write_checkpoint  # noqa: E402
from olaf.hosts.global_model import GlobalModel  # noqa: E402
from olaf.plan.workload import PPOConfig, PPOTaskSpec  # noqa: E402
from olaf.priority import autogroups, session_nice  # noqa: E402
from olaf.rundir.jsonl import read_jsonl  # noqa: E402
from olaf.rundir.records import EvalRecord  # noqa: E402
from olaf.training.evaluator import EvalSchedule, Evaluator, evaluate_checkpoints  # noqa: E402

SPEC = PPOTaskSpec(env_id="CartPole-v1", ppo=PPOConfig(hidden=(4,)))


def weights(bias_right: float) -> np.ndarray:
    """The CartPole network (4 obs, hidden 4, 2 actions, value: 43 parameters) with zero weights
    except the policy head's bias: the greedy policy always pushes right (or left)."""
    w = np.zeros(4 * 4 + 4 + 4 * 2 + 2 + 4 + 1)
    w[4 * 4 + 4 + 4 * 2 + 1] = bias_right
    return w


def checkpoint(path, w, t_ns, updates):
    m = GlobalModel(0.1, "sgd")
    m.init(np.rint(w * (1 << 24)).astype(int).tolist())
    write_checkpoint(path, m.state(), t_ns=t_ns, updates=updates, worker_updates=updates)


def test_an_always_right_policy_scores_what_cartpole_gives_it_and_each_checkpoint_is_scored_once(tmp_path):
    from olaf.rl.evaluate import evaluate_weights

    r = evaluate_weights(SPEC, weights(1.0), episodes=12, seed=3)
    assert r.episodes == 12 and 8 <= r.min <= r.mean <= r.max <= 11      # the pole falls within 8-11 steps
    assert r.mean_length == r.mean and r.steps == round(r.mean * 12)    # CartPole: +1 per step
    ck, log = tmp_path / "ps.checkpoint.npz", tmp_path / "evaluator.jsonl"
    checkpoint(ck, weights(1.0), t_ns=1, updates=5)
    stop = threading.Event()
    stop.set()                          # stopped at once: only the final evaluation of the last checkpoint
    none = tmp_path / "ps.snapshots"
    assert evaluate_checkpoints(SPEC, none, ck, log, EvalSchedule(every_s=3600, episodes=12, seed=3), stop) == 1
    (rec,) = read_jsonl(log).records
    assert isinstance(rec, EvalRecord) and rec.ckpt_t_ns == 1 and rec.ps_updates == 5
    assert rec.mean == pytest.approx(r.mean)                             # same seeds: same episodes


def test_without_a_checkpoint_nothing_is_scored(tmp_path):
    stop = threading.Event()
    stop.set()
    assert evaluate_checkpoints(SPEC, tmp_path / "snaps", tmp_path / "none.npz", tmp_path / "e.jsonl",
                                EvalSchedule(1.0, 5), stop) == 0
    assert read_jsonl(tmp_path / "e.jsonl").records == []
    with pytest.raises(ValueError, match="episodes=0"):
        EvalSchedule(1.0, 0)


def test_the_evaluator_process_runs_at_the_workers_priority_in_a_session_of_its_own(tmp_path):
    """Its share of the cores is then one more worker's (olaf/priority.py), not the harness's."""
    def seen(pid):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[3]), int(fields[16]), session_nice(pid)  # session id, nice, autogroup nice

    with Evaluator(SPEC, tmp_path, EvalSchedule(every_s=3600, episodes=1), nice=8) as ev:
        deadline = time.monotonic() + guard(60)  # guards a hang only: the child sets it first thing
        while (state := seen(ev.pid))[1] != 8:
            assert time.monotonic() < deadline, f"hang guard: evaluator at {state}"
            time.sleep(0.01)
        sid, nice, group = state
        assert sid == ev.pid and sid != os.getsid(0)
        assert group == (8 if autogroups() else None)


def test_every_snapshot_is_scored_in_order_then_the_final_checkpoint(tmp_path):
    """The PS's snapshot series is the schedule: each snapshot scored once, in name order, however
    late (here all after the job ended), then the final checkpoint if newer. With until_solved the
    snapshots left once two in a row show a solved model are not scored."""
    snaps, ck, log = tmp_path / "ps.snapshots", tmp_path / "ps.checkpoint.npz", tmp_path / "evaluator.jsonl"
    snaps.mkdir()
    for k, bias in ((1, 1.0), (2, -1.0), (3, 1.0)):
        checkpoint(snaps / f"{k:06d}.npz", weights(bias), t_ns=k, updates=10 * k)
    checkpoint(ck, weights(1.0), t_ns=4, updates=40)
    stop = threading.Event()
    stop.set()
    assert evaluate_checkpoints(SPEC, snaps, ck, log, EvalSchedule(every_s=30, episodes=4, seed=3), stop) == 4
    assert [r.ckpt_t_ns for r in read_jsonl(log).records] == [1, 2, 3, 4]
    log2 = tmp_path / "e2.jsonl"   # "solved" at 8 steps: the first two snapshots confirm it, the third is skipped
    assert evaluate_checkpoints(SPEC, snaps, ck, log2, EvalSchedule(every_s=30, episodes=100, seed=3, until_solved=8),
                                stop) == 3
    assert [r.ckpt_t_ns for r in read_jsonl(log2).records] == [1, 2, 4]


def test_a_final_checkpoint_without_an_update_since_the_last_snapshot_is_not_scored_again(tmp_path):
    """The PS writes its final checkpoint at stop, later than its last snapshot even when no update
    came in between: the same weights, which must not count as the next evaluation confirming
    "solved" (olaf.plan.workload.first_solved)."""
    snaps, ck, log = tmp_path / "ps.snapshots", tmp_path / "ps.checkpoint.npz", tmp_path / "evaluator.jsonl"
    snaps.mkdir()
    checkpoint(snaps / "000001.npz", weights(1.0), t_ns=1, updates=10)
    checkpoint(snaps / "000002.npz", weights(-1.0), t_ns=2, updates=20)
    checkpoint(ck, weights(-1.0), t_ns=3, updates=20)
    stop = threading.Event()
    stop.set()
    assert evaluate_checkpoints(SPEC, snaps, ck, log, EvalSchedule(every_s=30, episodes=4, seed=3), stop) == 2
    assert [r.ckpt_t_ns for r in read_jsonl(log).records] == [1, 2]

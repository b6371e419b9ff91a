"""bench/breakdown.py's readings of a run's logs, checked on logs written by hand: the mean worker
reward at environment-step marks and the trend of the PS's applied directions."""

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("breakdown", ROOT / "bench" / "breakdown.py")
assert _spec is not None and _spec.loader is not None
breakdown = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(breakdown)

STEPS = 100
"""Environment steps of one worker iteration in these logs."""


def write_run(hosts: Path, rewards: list[float], cos: list[float], norms: list[float]) -> None:
    """A PS log of one INIT and len(rewards) applied updates of two workers, and each worker's log
    of one iteration of STEPS steps."""
    hosts.mkdir(parents=True)
    recs = [{"ev": "update", "t_ns": 1, "src": "127.0.0.2", "cluster_id": 0, "worker_id": 0, "seq": 0, "count": 1,
             "gen_ts": 1, "reward_sum": 0, "reward": 0.0, "init": True, "outcome": "init_ignored",
             "global_reward": None, "version": 0}]
    for i, (r, c, n) in enumerate(zip(rewards, cos, norms)):
        recs.append({"ev": "update", "t_ns": 2 + i, "src": f"127.0.0.{2 + i % 2}", "cluster_id": 0,
                     "worker_id": i % 2, "seq": 1 + i // 2, "count": 1, "gen_ts": 2 + i, "reward_sum": 0,
                     "reward": r, "init": False, "outcome": "accepted", "global_reward": None, "version": 1 + i,
                     "norm": n, "cos_prev": c})
    (hosts / "ps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    for w in (1, 2):
        gen = {"ev": "gen", "t_ns": 5, "idx": 0, "late_ms": 0.0, "sent": True, "seq": 1, "reward": 1.0, "folded": 1,
               "adopted": True, "exp_reward": None, "reason": "tc_off", "p_send": 1.0, "draw": None,
               "delta_hat_ms": 0.0, "N": None, "q_max": None, "steps": STEPS, "env_steps": STEPS, "episodes": 1}
        (hosts / f"w{w}.jsonl").write_text(json.dumps(gen) + "\n")


def test_worker_reward_at_a_mark_is_the_mean_of_the_window_before_it(tmp_path):
    rewards = [float(i) for i in range(30)]
    write_run(tmp_path / "hosts", rewards, [0.0] * 30, [1.0] * 30)
    # update i reaches i·100 steps; the window is 10 iterations of each of 2 workers = 20 updates
    hosts = tmp_path / "hosts"
    at = breakdown.worker_reward_at(hosts, breakdown._updates(hosts), [0.0002, 0.0025, 0.003, 0.01], workers=2)
    assert at == {"0.0002": 0.5, "0.0025": sum(range(5, 25)) / 20, "0.003": sum(range(10, 30)) / 20, "0.01": None}


def test_direction_trend_takes_medians_of_full_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(breakdown, "TREND_UPDATES", 4)
    cos = [0.1, 0.2, 0.9, 0.3, -0.5, 0.0, 0.5, 0.4, 0.7]  # two full blocks of 4 and a partial one
    norms = [1.0, 2.0, 3.0, 4.0, 8.0, 6.0, 7.0, 5.0, 9.0]
    write_run(tmp_path / "hosts", [0.0] * 9, cos, norms)
    assert breakdown.direction_trend(breakdown._updates(tmp_path / "hosts")) == [
        {"first_update": 0, "cos_prev_median": 0.25, "norm_median": 2.5},
        {"first_update": 4, "cos_prev_median": 0.2, "norm_median": 6.5}]


def test_marks_must_be_positive_numbers():
    runner = CliRunner()
    for bad in ("a,1", "0,1", "-1"):
        res = runner.invoke(breakdown.main, ["--marks", bad])
        assert res.exit_code == 2 and "--marks" in res.output, res.output


@pytest.mark.parametrize("arg", ["sb3", "sb3=/nonexistent"])
def test_a_run_is_label_equals_directory(arg):
    res = CliRunner().invoke(breakdown.main, ["--sb3", arg])
    assert res.exit_code == 2 and "LABEL=DIR" in res.output, res.output

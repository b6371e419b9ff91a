"""User errors of the PPO task: unknown or continuous environments, a model too large for the frame,
a missing `train` extra, NaN during training — each a clear message, never a traceback."""

import json
import sys
import threading

import pytest
from click.testing import CliRunner
from tiers import require

require("train")
pytestmark = pytest.mark.train

import rl_envs  # noqa: E402, F401  (registers OlafNan-v0)
from hostnet import loopback_net  # noqa: E402

from olaf.cli import main  # noqa: E402
from olaf.hosts.schedule import ScheduleSpec  # noqa: E402
from olaf.hosts.worker import TaskFailed, Worker, WorkerConfig  # noqa: E402
from olaf.plan.workload import PPOConfig, PPOTaskSpec  # noqa: E402
from olaf.rl.envs import EnvError, env_shape  # noqa: E402
from olaf.rl.extra import TrainExtraMissing, require_train_extra  # noqa: E402
from olaf.rl.network import ModelTooLarge, check_fits  # noqa: E402
from olaf.rl.task import PPOTask  # noqa: E402

PPO = ["worker", "--ps", "127.0.0.1", "--bind", "127.0.0.1", "--duration", "1", "--task", "ppo"]


def test_unknown_and_continuous_environments():
    with pytest.raises(EnvError, match="unknown Gymnasium environment 'Nope-v1'"):
        env_shape("Nope-v1")
    with pytest.raises(EnvError, match=r"'Pendulum-v1' has action space Box.*discrete"):
        env_shape("Pendulum-v1")
    assert (env_shape("CartPole-v1").obs_dim, env_shape("CartPole-v1").n_actions) == (4, 2)


def test_a_large_model_is_chunked_and_too_many_chunks_name_the_count_and_the_limit():
    assert check_fits(358, 1500).num_chunks == 1
    assert (check_fits(359, 1500).num_chunks, check_fits(9797, 1500).num_chunks, check_fits(9797, 9000).num_chunks) == (
        2, 28, 5)
    with pytest.raises(ModelTooLarge, match=r"9797 parameters: .*K = 28 chunks of at most 358 elements at MTU 1500 B; "
                                            r"this deployment allows K <= 4"):
        check_fits(9797, 1500, max_chunks=4)
    with pytest.raises(ModelTooLarge, match=r"5061 parameters: mtu=68 B leaves no room for one element"):
        PPOTask(PPOTaskSpec(env_id="LunarLander-v3", ppo=PPOConfig(hidden=(64, 64)), mtu=68), seed=0)
    task = PPOTask(PPOTaskSpec(env_id="LunarLander-v3", ppo=PPOConfig(hidden=(64, 64)), mtu=1500), seed=0)
    assert (task.num_weights, task.chunking.num_chunks) == (5061, 15)
    task.close()


def test_missing_train_extra_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)  # as if the package were not installed
    with pytest.raises(TrainExtraMissing, match=r"'stable-baselines3' of Olaf's `train` extra.*pip install -e '\.\[train\]'"):
        require_train_extra()
    r = CliRunner().invoke(main, PPO)
    assert r.exit_code == 1 and "pip install -e '.[train]'" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("args, message", [
    (["--env", "Nope-v1"], "unknown Gymnasium environment 'Nope-v1'"),
    (["--env", "Pendulum-v1"], "discrete"),
    (["--env", "LunarLander-v3", "--hidden", "64,64", "--mtu", "68"], "5061 parameters: mtu=68 B leaves no room"),
    (["--grads", "16"], "--grads: bandit options"),
    (["--hidden", "32,x"], "comma-separated positive integers"),
])
def test_cli_errors(args, message):
    r = CliRunner().invoke(main, PPO + args)
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, r.output


def test_nan_during_training_stops_the_worker_and_keeps_its_log(tmp_path):
    """A simulator that returns NaN observations: the policy's output turns NaN in the first rollout, the worker stops
    (reason non_finite_loss) and its log and summary keep what happened (INIT sent, the error)."""
    ip = loopback_net()
    cfg = WorkerConfig(ps_ip=ip(100), bind_ip=ip(1), task_kind="ppo", schedule=ScheduleSpec(period_ms=1, max_updates=5),
                       ppo=PPOTaskSpec(env_id="OlafNan-v0", ppo=PPOConfig(n_steps=16, n_envs=1, hidden=(4,))),
                       out_dir=tmp_path, name="w", linger_ms=0)
    with pytest.raises(TaskFailed, match="logits are NaN"):
        Worker(cfg, threading.Event()).run()
    s = json.loads((tmp_path / "w.summary.json").read_text())
    assert s["stop_reason"] == "non_finite_loss" and "PPO loss would be NaN" in s["error"] and s["init_sent"] == 1
    assert s["task"] == "ppo" and s["num_params"] == 4 * 1 + 4 + 4 * 2 + 2 + 4 + 1
    events = [json.loads(line)["ev"] for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    assert events[-2:] == ["error", "stop"]

"""`olaf worker` / `olaf ps` argument errors name the option and the fix (no socket is opened)."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from olaf.cli import main
from olaf.hosts.argv import ps_argv, worker_argv
from olaf.hosts.commands import ps_cmd, ps_config, worker_cmd, worker_config
from olaf.hosts.modes import ModeParams
from olaf.hosts.ps import PsConfig
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.task import TaskParams
from olaf.hosts.worker import WorkerConfig
from olaf.plan.tx import TxParams
from olaf.plan.workload import PPOConfig, PPOTaskSpec

BASE = ["worker", "--ps", "127.0.0.1", "--bind", "127.0.0.1"]


@pytest.mark.parametrize("args, message", [
    (["worker", "--ps", "10.0.0.300", "--bind", "127.0.0.1", "--duration", "1"], "'--ps': '10.0.0.300' is not an IPv4"),
    (["worker", "--ps", "10.0.0.1:0", "--bind", "127.0.0.1", "--duration", "1"], "the port must be 1-65535"),
    (["worker", "--ps", "10.0.0.1", "--bind", "host1", "--duration", "1"], "--bind"),
    (BASE, "--duration SECONDS or --updates N"),
    (BASE + ["--duration", "1", "--jitter-ms", "200"], "jitter must be in [0, period=100.0]"),
    (BASE + ["--duration", "1", "--start-at-ns", "5", "--start-file", "go"], "give one of them"),
    (BASE + ["--duration", "1", "--grads", "3000"], "--grads"),
    (["ps", "--bind", "1.2.3"], "'--bind': '1.2.3' is not an IPv4"),
])
def test_bad_arguments(args, message):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2 and message in r.output, r.output


def test_trace_conflicts_and_errors(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("time\n1\n")
    r = CliRunner().invoke(main, BASE + ["--trace", str(bad)])
    assert r.exit_code == 2 and "no 't_ms' or 'interval_ms' column" in r.output
    r = CliRunner().invoke(main, BASE + ["--trace", str(bad), "--period-ms", "5"])
    assert r.exit_code == 2 and "--trace replaces --period-ms" in r.output


# -- command lines built from configuration objects (olaf.hosts.argv) -------------------------


@pytest.mark.parametrize("cfg", [
    WorkerConfig(ps_ip="10.0.0.100", bind_ip="10.0.1.1", schedule=ScheduleSpec(period_ms=50.0, jitter_ms=10.0,
                                                                                  duration_s=30.0)),
    WorkerConfig(ps_ip="10.0.0.100", ps_port=50200, bind_ip="10.0.1.2",
                 schedule=ScheduleSpec(period_ms=100.0, jitter_ms=0.5, max_updates=500),
                 task=TaskParams(num_weights=361, batch=64, reward_scale=2.5, sigma=0.3, task_seed=7),
                 tx=TxParams(enabled=True, delta_t_ms=300.0, v_per_s=1.5, q_max=4, reading="backoff"), seed=11,
                 cluster_id=3,
                 worker_id=12, start_file=Path("/tmp/start_ns"), init_retry_ms=250.0, linger_ms=0.0,
                 out_dir=Path("/tmp/run/hosts"), name="w12", mtu=1500, ack_port=50107),
    WorkerConfig(ps_ip="10.0.0.100", bind_ip="10.0.1.3", schedule=ScheduleSpec(period_ms=1.0, duration_s=600.0),
                 task_kind="ppo", ack_wait_ms=100.0, seed=5, cluster_id=1, worker_id=2, name="w3",
                 ppo=PPOTaskSpec(env_id="CartPole-v1", update="grad", apply_locally=False, mtu=9000,
                                 ppo=PPOConfig(n_steps=64, n_envs=2, gamma=0.99, gae_lambda=0.9, clip_range=0.1,
                                               ent_coef=0.0, vf_coef=0.25, max_grad_norm=1.0, n_epochs=2,
                                               batch_size=32, lr=1e-3, hidden=(16, 8), reward_scale=0.1,
                                               target_kl=0.02, target_drift=0.05))),
])
def test_worker_argv_round_trips(cfg):
    ctx = worker_cmd.make_context("worker", worker_argv(cfg))
    assert worker_config(ctx.params) == cfg


@pytest.mark.parametrize("cfg", [
    PsConfig(bind_ip="10.0.0.100", lr=0.01, duration_s=12.5, out_dir=Path("/tmp/hosts"), name="ps",
             flush_s=0.25, rcvbuf=1 << 20),
    PsConfig(bind_ip="10.0.0.100", lr=1.0, step="paper", gate=False,
             modes=ModeParams(mode="async_with_aggr", aggr_k=4, aggr_t_ms=50.0)),
    PsConfig(bind_ip="10.0.0.100", lr=1e-3, step="adam", gate=True,
             modes=ModeParams(mode="sync", sync_workers=27, round_timeout_ms=2000.0)),
    PsConfig(bind_ip="10.0.0.100", num_params=9797, mtu=1500),
    PsConfig(bind_ip="10.0.0.100", lr=1.0, step="sgd", snapshot_s=30.0, staleness_root=3, worker_ack_wait_ms=100.0,
             ack_each_worker=True, modes=ModeParams(mode="stellaris", round_updates=27, stellaris_decay=0.9,
                                                    beta_min=2.0, round_timeout_ms=1000.0)),
])
def test_ps_argv_round_trips(cfg):
    assert ps_config(ps_cmd.make_context("ps", ps_argv(cfg)).params) == cfg


def test_ps_mode_errors_name_the_option():
    r = CliRunner().invoke(main, ["ps", "--mode", "sync"])
    assert r.exit_code == 2 and "--sync-workers" in r.output
    r = CliRunner().invoke(main, ["ps", "--mode", "stellaris"])
    assert r.exit_code == 2 and "--round-updates" in r.output
    r = CliRunner().invoke(main, ["ps", "--staleness-v", "0"])
    assert r.exit_code == 2 and "--staleness-v" in r.output


def test_the_chunks_of_a_worker_and_a_ps_come_from_the_same_size_and_mtu():
    """K is derived, never given: the PS's from --num-params and --mtu, the worker's from its model
    and --mtu (the bandit sends one message unless --mtu is given)."""
    assert PsConfig(num_params=9797, mtu=1500).chunking.num_chunks == 28
    assert PsConfig(num_params=9797, mtu=9000).chunking.num_chunks == 5
    assert PsConfig().chunking is None
    r = CliRunner().invoke(main, ["ps", "--num-params", "9797", "--mtu", "68"])
    assert r.exit_code == 2 and "--num-params/--mtu" in r.output and "leaves no room for one element" in r.output
    with pytest.raises(ValueError, match="a PPO worker's MTU is ppo.mtu"):
        WorkerConfig(ps_ip="10.0.0.100", bind_ip="10.0.1.1", schedule=ScheduleSpec(max_updates=1), task_kind="ppo",
                     mtu=1500)


def test_worker_argv_refuses_a_trace_schedule():
    cfg = WorkerConfig(ps_ip="10.0.0.100", bind_ip="10.0.1.1", schedule=ScheduleSpec(trace_ms=[1.0, 2.0]))
    with pytest.raises(ValueError, match="--trace FILE"):
        worker_argv(cfg)


def test_the_ps_console_line_counts_worker_updates_apart_from_chunks_and_names_each_refusal():
    from olaf.hosts.commands import ps_summary_line

    s = {"updates": 1680, "accepted": 1600, "rejected": 0, "wrong_size": 28, "before_init": 0, "untrusted": 52,
         "untrusted_reasons": {"reward": 50, "gen_ts": 2}, "wrong_size_reasons": {"num_chunks 5 != 28": 28},
         "inits": 100, "malformed": 3, "stop_reason": "signal", "num_chunks": 28,
         "per_cluster": {"0": {"worker_updates": 40}, "1": {"worker_updates": 20}}}
    assert ps_summary_line(s) == ("60 worker updates in 1680 chunk messages (28 per update), of them 1600 accepted; "
                                  "28 of another model size: num_chunks 5 != 28 28; 52 untrusted: gen_ts 2, reward 50; "
                                  "100 INIT, 3 malformed (signal)")
    one = {**s, "num_chunks": 1, "updates": 57, "accepted": 56, "wrong_size": 0, "untrusted": 0, "rejected": 1}
    assert ps_summary_line(one) == ("57 updates, of them 56 accepted; 1 rejected by the reward gate; 100 INIT, "
                                    "3 malformed (signal)")
    refused = {**one, "untrusted": 2, "untrusted_reasons": {"reward": 2}, "refusals_sent": 2,
               "refusal_reasons": {"reward": 2}}
    assert ps_summary_line(refused) == ("57 updates, of them 56 accepted; 1 rejected by the reward gate; 2 untrusted: "
                                        "reward 2; 100 INIT, 3 malformed; 2 refusals sent (reward 2) (signal)")


def test_olaf_ps_prints_a_progress_line_while_it_runs(tmp_path):
    """`olaf ps --progress-s` prints the console line every period while it runs (``running``), then the
    summary line once stopped; 0 turns the progress lines off."""
    import subprocess
    import sys

    from hostnet import loopback_net

    ip = loopback_net()(100)
    base = [sys.executable, "-m", "olaf.cli", "ps", "--bind", ip, "--out-dir", str(tmp_path), "--duration", "1"]
    r = subprocess.run([*base, "--progress-s", "0.2"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    running = [x for x in lines if x.endswith("(running)")]
    assert running and all(x.startswith("ps: ") and "0 updates, of them 0 accepted; 0 INIT" in x for x in running)
    assert lines[-1].startswith("ps: 0 updates") and "(duration)" in lines[-1]
    r = subprocess.run([*base, "--progress-s", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not any(x.endswith("(running)") for x in r.stderr.splitlines()), r.stderr

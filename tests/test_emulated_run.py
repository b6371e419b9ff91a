"""The emulated run of a plan (topologies/emulated.py) and ``olaf run``'s plan: errors name the
plan field and the CLI option, a field left at its default is not set in the plan, and the
deployment and host configurations the emulation builds."""

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from olaf.backends.base import BackendOptions, PlanRefused
from olaf.backends.commands import (
    DEFAULT_DURATION_S,
    DEFAULT_GRADS,
    DEFAULT_RATE_PPS,
    option_of,
    plan_of_options,
)
from olaf.backends.mininet import emulated_run
from olaf.cli import main
from olaf.configfile import ConfigError
from olaf.constants import DEFAULT_ACTIVITY_WINDOW_MS, DEFAULT_JITTER_MS, DEFAULT_PERIOD_MS
from olaf.hosts.argv import worker_argv
from olaf.plan.plan import RunPlan
from olaf.plan.tx import DEFAULT_DELTA_T_MS, DEFAULT_V_PER_S, READINGS
from olaf.plan.workload import PPOTaskSpec, TrainJob
from olaf.topologies.emulated import EmulatedRun

CLI_DEFAULTS = dict(topo="tor", queue="olaf", duration_s=DEFAULT_DURATION_S, clusters=9, workers_per_cluster=3,
                    workers_per_host=1, period_ms=DEFAULT_PERIOD_MS, jitter_ms=DEFAULT_JITTER_MS, queue_size=None,
                    edge_queue_size=None, rate_pps=DEFAULT_RATE_PPS, edge_rate_pps=0, grads=DEFAULT_GRADS,
                    reward_threshold=None, activity_window_ms=DEFAULT_ACTIVITY_WINDOW_MS, tc=False,
                    tc_delta_t_ms=DEFAULT_DELTA_T_MS, tc_v_per_s=DEFAULT_V_PER_S, tc_reading=READINGS[0], seed=1,
                    faults=(), interactive_s=3600.0)


def cli_plan(**kw) -> RunPlan:
    return plan_of_options(**{**CLI_DEFAULTS, **kw})


def plan(**kw) -> RunPlan:
    return RunPlan.model_validate({"duration_s": 5, "groups": [{"clusters": 2, "workers_per_cluster": 2}], **kw})


@pytest.mark.parametrize("args, option, says", [
    (["--jitter-ms", "80"], "--jitter-ms", "period_ms"),
    (["--queue-size", "200", "--grads", "2000"], "--queue-size", "1..42 updates"),
    (["--topo", "multihop", "--edge-queue-size", "200", "--grads", "2000"], "--edge-queue-size", "1..42 updates"),
    (["--fault", "ps-kill@40"], "--fault", "within the run's 30 s"),
    (["--fault", "switch-restart:s3@1"], "--fault", "tor has switches s1"),
    (["--tc-reading", "backoff", "--tc-delta-t-ms", "0"], "--tc-delta-t-ms", "0"),
])
def test_the_cli_names_the_option(args, option, says):
    """A bad value exits 2 before any run, naming the option and what is wrong."""
    r = CliRunner().invoke(main, ["run", *args])
    assert r.exit_code == 2, r.output
    assert option in r.output and says in r.output


def test_mininet_only_options_are_refused_on_another_backend():
    r = CliRunner().invoke(main, ["run", "--backend", "local", "--pcap"])
    assert r.exit_code == 2 and "--pcap is for an emulated network" in r.output


@pytest.mark.parametrize("path, message, topo, option", [
    ("groups[0]", "jitter_ms (80.0) must be <= period_ms (50.0)", "tor", "--jitter-ms"),
    ("groups[0].period_ms", "must be > 0", "tor", "--period-ms"),
    ("queue_size.s1", "", "multihop", "--edge-queue-size"), ("queue_size.s3", "", "multihop", "--queue-size"),
    ("uplinks.s1", "", "tor", "--rate-pps"), ("uplinks.s2.pps", "", "multihop", "--edge-rate-pps"),
    ("tc.delta_t_ms", "", "tor", "--tc-delta-t-ms"), ("faults[0]", "", "tor", "--fault"),
    ("duration_s", "", "tor", "--duration"), ("grads", "", "tor", "--grads"),
])
def test_option_of_each_plan_field(path, message, topo, option):
    assert option_of(path, message, topo) == option


def test_the_cli_sets_only_what_differs_from_the_plans_defaults():
    """A field at its default is not set in the plan, so a backend that cannot honour a field
    refuses it only when it was asked for (the local backend and ``activity_window_ms``)."""
    p = cli_plan(rate_pps=0)
    assert p.model_fields_set == {"duration_s", "groups"}
    assert cli_plan(queue="fifo", topo="multihop").model_fields_set >= {"queue", "topology"}
    p = cli_plan(activity_window_ms=300.0, tc=True, tc_reading="backoff", queue_size=4)
    assert {"activity_window_ms", "tc", "queue_size", "uplinks"} <= p.model_fields_set
    assert p.tc.model_fields_set == {"enabled", "reading"} and p.queue_size == {"s1": 4}
    assert p.uplinks["s1"].pps == DEFAULT_RATE_PPS


def test_the_cli_plan_of_a_multihop_run():
    p = cli_plan(topo="multihop", clusters=3, workers_per_cluster=2, rate_pps=150, edge_rate_pps=90,
                 edge_queue_size=4, queue_size=6)
    assert [(g.name, g.switch, g.clusters) for g in p.groups] == [("S1", "s1", 3), ("S2", "s2", 3)]
    assert p.queue_sizes == {"s1": 4, "s2": 4, "s3": 6}
    assert {sw: link.pps for sw, link in p.uplinks.items()} == {"s1": 90, "s2": 90, "s3": 150}


def test_rates_in_updates_per_s_become_packets_per_s_of_k_chunks():
    """The plan's (and the CLI's) rates are updates/s; BMv2's egress rate is packets/s: K chunk
    frames per update. 2,000 parameters at 1500 B are K = 6 chunks."""
    run = emulated_run(cli_plan(grads=2000, rate_pps=200))
    assert run.chunking.num_chunks == 6 and run.switch_queues()["s1"].rate_pps == 1200
    assert run.backend_info()["rates_pps"] == {"s1": 1200}


def test_deployment_and_host_configs(tmp_path):
    run = EmulatedRun(cli_plan(clusters=2, workers_per_cluster=2, tc=True, period_ms=40, jitter_ms=4), admission=True)
    d = run.deployment()
    assert sorted(d.clusters) == [0, 1] and d.admission.enabled and d.admission.worker_period_ms == 40
    w = run.worker_config(d, "w3", 1, tmp_path / "hosts", tmp_path / "start_ns")
    assert (w.bind_ip, w.cluster_id, w.worker_id, w.tx.enabled) == (d.hosts["w3"].ip, 1, 3, True)
    argv = worker_argv(w)
    assert argv[argv.index("--start-file") + 1] == str(tmp_path / "start_ns")
    assert Path(argv[argv.index("--out-dir") + 1]) == tmp_path / "hosts"


def test_groups_queues_rates_and_updates(tmp_path):
    from olaf.hosts.runlog import group_start_file

    groups = [{"name": "S1", "clusters": 2, "workers_per_cluster": 3, "period_ms": 100, "jitter_ms": 10, "switch": "s1"},
              {"name": "S2", "clusters": 1, "workers_per_cluster": 2, "period_ms": 300, "switch": "s2", "start_ms": 50}]
    p = RunPlan.model_validate({"topology": "multihop", "groups": groups, "queue_size": {"s3": 4},
                                "uplinks": {"s1": {"pps": 70}, "s2": {"pps": 90}, "s3": {"pps": 30}},
                                "updates_per_worker": 20, "duration_s": 60})
    run = emulated_run(p)
    d = run.deployment()
    assert {c: len(ws) for c, ws in d.clusters.items()} == {0: 3, 1: 3, 2: 2}
    assert [d.hosts[w].switch for w in d.clusters[2]] == ["s2", "s2"]
    assert {n: (s.queue.queue_size, s.rate_pps) for n, s in d.switches.items()} == {
        "s1": (5, 70), "s2": (5, 90), "s3": (4, 30)}
    w = run.worker_config(d, "w7", 2, tmp_path, tmp_path / "start_ns")
    assert (w.schedule.period_ms, w.schedule.max_updates, w.schedule.duration_s) == (300, 20, None)
    assert w.start_file == group_start_file(tmp_path / "start_ns", 1) != tmp_path / "start_ns"
    # S2's workers start up to one period (300 ms) after its start_ms (random start phases) ...
    assert run.generation_limit_s() == pytest.approx(0.05 + 0.3 + 20 * 0.3)
    assert 0 <= w.schedule.phase_ns < 300_000_000
    # ... or at it (aligned)
    aligned = RunPlan.model_validate({**p.model_dump(), "groups": [{**g, "start_phase": "aligned"} for g in groups]})
    assert EmulatedRun(aligned).generation_limit_s() == pytest.approx(0.05 + 20 * 0.3)
    assert EmulatedRun(cli_plan(duration_s=5)).generation_limit_s() == pytest.approx(5 + 0.05)  # + one 50 ms period


def test_an_interactive_run_runs_its_workers_until_the_cli_exits(tmp_path):
    from olaf.topologies.emulated import INTERACTIVE_DURATION_S

    run = emulated_run(cli_plan(duration_s=0, interactive_s=INTERACTIVE_DURATION_S),
                       BackendOptions(interactive=True))
    assert run.duration_s == 0 and run.generation_limit_s() == 0
    d = run.deployment()
    assert run.worker_config(d, "w1", 0, tmp_path, tmp_path / "s").schedule.duration_s == INTERACTIVE_DURATION_S


@pytest.mark.parametrize("kw, field", [
    (dict(grads=5000), "grads"),                                           # the bandit's largest model
    (dict(queue_size={"s1": 100}, grads=2000), "queue_size.s1"),           # 100 · 6 segments > 256
    (dict(faults=["ps-kill@9"]), "faults[0]"),                             # after the run's 5 s
    (dict(uplinks={"s1": {"pps": 0.1}}), "uplinks.s1"),                    # below one packet/s
    (dict(uplinks={"s1": {"pps": 10, "delay_us": 100}}), "uplinks.s1.delay_us"),   # veths add no delay
])
def test_what_the_emulation_cannot_build_is_refused_naming_the_field(kw, field):
    with pytest.raises(PlanRefused) as e:
        emulated_run(plan(**kw))
    assert e.value.field == field and "the mininet backend cannot honour it" in str(e.value)


def test_a_chunked_model_programs_every_switch_and_host_with_its_k(tmp_path):
    """SB3's 9,797 parameters at the emulated 1500 B MTU: K = 28 chunks of L = 350. Every switch's
    olaf_params get K and L and Q_max · K segments (the deployment file says so too), the PS gets P
    and the MTU (so it expects K chunks), and the config file round-trips K."""
    from olaf.controller import config as cfgmod
    from olaf.hosts.argv import ps_argv

    job = TrainJob(task=PPOTaskSpec(mtu=1500), num_params=9797)   # a PPO job's network (the bandit stops at 2,235)
    p = RunPlan.model_validate({"topology": "multihop", "duration_s": 5, "grads": 9797,
                                "workload": {"kind": "ppo", "job": job}, "queue_size": {"s1": 4, "s2": 4, "s3": 8},
                                "groups": [{"clusters": 1, "workers_per_cluster": 1}]})
    run = emulated_run(p)
    assert (run.chunking.num_chunks, run.chunking.chunk_len) == (28, 350)
    d = run.deployment()
    assert d.num_chunks == 28 and d.num_grads == 350
    assert {n: (s.queue.queue_size, s.queue.num_chunks, s.queue.num_grads) for n, s in d.switches.items()} == {
        "s1": (4 * 28, 28, 350), "s2": (4 * 28, 28, 350), "s3": (8 * 28, 28, 350)}
    assert all(s.depth >= s.queue.queue_size for s in d.switches.values())
    ps = ps_argv(run.ps_config(d, tmp_path))
    assert ps[ps.index("--mtu") + 1] == "1500"
    f = tmp_path / "network.yaml"
    cfgmod.save(d, f)
    back = cfgmod.load(f)
    assert back.num_chunks == 28 and back.switches["s3"].queue.queue_size == 8 * 28


def _job_plan(mtu: int, **kw) -> RunPlan:
    job = TrainJob(task=PPOTaskSpec(mtu=mtu), num_params=9797)
    return plan(grads=9797, workload={"kind": "ppo", "job": job}, **kw)


@pytest.mark.parametrize("mtu, k, chunk_len, links", [(1500, 28, 350, 1500), (9000, 5, 1960, 9000), (1000, 43, 228, 1500)])
def test_a_training_jobs_mtu_chunks_the_model_and_sets_the_veths(mtu, k, chunk_len, links):
    """A training job's MTU (``olaf train --mtu``) decides K for the hosts and every switch; the
    veths are raised to it for jumbo frames and stay at 1500 below that."""
    run = emulated_run(_job_plan(mtu, queue_size={"s1": 4}))
    assert (run.chunking.num_chunks, run.chunking.chunk_len, run.links_mtu) == (k, chunk_len, links)
    d = run.deployment()
    assert d.num_chunks == k and d.num_grads == chunk_len


def test_a_training_mtu_above_jumbo_frames_is_refused_naming_the_field():
    with pytest.raises(ConfigError) as e:
        EmulatedRun(_job_plan(9001))
    assert e.value.field == "workload.job.task.mtu" and "at most 9000" in str(e.value)


def test_a_queue_size_is_checked_against_the_models_k():
    """K = 43 (MTU 1000) allows 5 updates of 43 segments in the 256 of the P4 build."""
    assert EmulatedRun(_job_plan(1000, queue_size={"s1": 5})).deployment().switches["s1"].queue.queue_size == 5 * 43
    with pytest.raises(ConfigError) as e:
        EmulatedRun(_job_plan(1000, queue_size={"s1": 6}))
    assert e.value.field == "queue_size.s1" and "1..5 updates" in str(e.value)


def test_the_click_error_is_a_bad_parameter():
    with pytest.raises(click.BadParameter) as e:
        cli_plan(jitter_ms=80.0)
    assert e.value.param_hint == "--jitter-ms"


def test_clusters_are_numbered_in_group_order():
    p = RunPlan.model_validate({"topology": "multihop", "duration_s": 1, "groups": [
        {"name": "a", "clusters": 2, "workers_per_cluster": 1, "switch": "s1"},
        {"name": "b", "clusters": 3, "workers_per_cluster": 2, "switch": "s2"}]})
    assert p.group_clusters() == [range(0, 2), range(2, 5)]
    assert [p.group_of_cluster(c) for c in range(5)] == [0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="cluster 5 is in no group"):
        p.group_of_cluster(5)
    assert EmulatedRun(p).group_of_cluster(3) == (1, p.groups[1])

"""RunSpec (topologies/spec.py): errors name the field, the CLI names the option, and the
deployment and host configurations it implies."""

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from olaf.cli import main
from olaf.hosts.argv import worker_argv
from olaf.topologies.spec import RunSpec, RunSpecError, WorkerGroup


@pytest.mark.parametrize("kw, field", [
    (dict(topo="ring"), "topo"), (dict(queue="red"), "queue"), (dict(duration_s=-1), "duration_s"),
    (dict(jitter_ms=60.0), "jitter_ms"), (dict(queue_size=257), "queue_size"), (dict(rate_pps=-5), "rate_pps"),
    (dict(grads=0), "grads"), (dict(bmv2_log_level="loud"), "bmv2_log_level"), (dict(clusters=251), "clusters"),
])
def test_errors_name_the_field(kw, field):
    with pytest.raises(RunSpecError) as e:
        RunSpec(**kw).deployment()
    assert e.value.field == field and str(e.value).startswith(f"{field}: ")


def test_cli_names_the_option():
    r = CliRunner().invoke(main, ["run", "--jitter-ms", "80"])
    assert r.exit_code == 2 and "--jitter-ms" in r.output and "0..period_ms" in r.output


def test_deployment_and_host_configs(tmp_path):
    spec = RunSpec(clusters=2, workers_per_cluster=2, tc=True, admission=True, period_ms=40, jitter_ms=4)
    d = spec.deployment()
    assert sorted(d.clusters) == [0, 1] and d.admission.enabled and d.admission.worker_period_ms == 40
    w = spec.worker_config(d, "w3", 1, tmp_path / "hosts", tmp_path / "start_ns")
    assert (w.bind_ip, w.cluster_id, w.worker_id, w.tx.enabled) == (d.hosts["w3"].ip, 1, 3, True)
    argv = worker_argv(w)
    assert argv[argv.index("--start-file") + 1] == str(tmp_path / "start_ns")
    assert Path(argv[argv.index("--out-dir") + 1]) == tmp_path / "hosts"


def test_groups_queues_rates_and_updates(tmp_path):
    from olaf.hosts.runlog import group_start_file
    from olaf.topologies.spec import WorkerGroup

    spec = RunSpec(topo="multihop", groups=(WorkerGroup("S1", 2, 3, 100, 10, "s1"),
                                            WorkerGroup("S2", 1, 2, 300, 0, "s2", start_ms=50)),
                   queue_sizes={"s3": 4}, rates_pps={"s1": 70, "s3": 30}, edge_rate_pps=90, updates_per_worker=20,
                   duration_s=60)
    d = spec.deployment()
    assert {c: len(ws) for c, ws in d.clusters.items()} == {0: 3, 1: 3, 2: 2}
    assert [d.hosts[w].switch for w in d.clusters[2]] == ["s2", "s2"]
    assert {n: (s.queue.queue_size, s.rate_pps) for n, s in d.switches.items()} == {
        "s1": (5, 70), "s2": (5, 90), "s3": (4, 30)}
    w = spec.worker_config(d, "w7", 2, tmp_path, tmp_path / "start_ns")
    assert (w.schedule.period_ms, w.schedule.max_updates, w.schedule.duration_s) == (300, 20, None)
    assert w.start_file == group_start_file(tmp_path / "start_ns", 1) != tmp_path / "start_ns"
    # S2's workers start up to one period (300 ms) after its start_ms (random start phases) ...
    assert spec.generation_limit_s() == pytest.approx(0.05 + 0.3 + 20 * 0.3)
    assert 0 <= w.schedule.phase_ns < 300_000_000
    # ... or at it (aligned)
    aligned = RunSpec(topo="multihop", groups=tuple(replace(g, start_phase="aligned") for g in spec.groups),
                      updates_per_worker=20, duration_s=60)
    assert aligned.generation_limit_s() == pytest.approx(0.05 + 20 * 0.3)
    assert RunSpec(duration_s=5).generation_limit_s() == pytest.approx(5 + 0.05)  # + one 50 ms period of phases


@pytest.mark.parametrize("kw, field", [
    (dict(queue_sizes={"s9": 4}), "queue_sizes"), (dict(rates_pps={"s1": -1}), "rates_pps"),
    (dict(updates_per_worker=0), "updates_per_worker"), (dict(updates_per_worker=5, duration_s=0), "duration_s"),
    (dict(topo="multihop", groups=()), None),
])
def test_group_and_switch_errors_name_the_field(kw, field):
    from olaf.topologies.spec import WorkerGroup

    if field is None:  # a group on a switch the topology does not have
        kw = dict(groups=(WorkerGroup("S1", 1, 1, 100, 0, "s2"),))
        field = "groups"
    with pytest.raises(RunSpecError) as e:
        RunSpec(**kw).deployment()
    assert e.value.field == field


@pytest.mark.parametrize("kw", [
    {},
    dict(topo="multihop", clusters=3, workers_per_cluster=2, rate_pps=150, edge_rate_pps=90, tc=True,
         tc_delta_t_ms=300.0, tc_reading="backoff", reward_threshold=0.5, faults=("switch-restart:s3@2",)),
    dict(queue="fifo", queue_size=4, rate_pps=0, grads=64, seed=7, activity_window_ms=300.0),
    dict(groups=(WorkerGroup("a", 2, 1, 100.0, 5.0, "s1", 5.0), WorkerGroup("b", 1, 2, 300.0, 5.0, "s1", 55.0)),
         updates_per_worker=20, queue_sizes={"s1": 1}, rates_pps={"s1": 500}),
])
def test_olaf_run_through_the_plan_runs_the_same_emulation(tmp_path, kw):
    """`olaf run` hands the mininet backend the plan of its parameters; the backend's emulation of that
    plan is the run `olaf run` asked for: the same network, queues, rates, PS and workers."""
    from olaf.backends.base import BackendOptions
    from olaf.backends.mininet import run_spec

    spec = RunSpec(**kw)
    back = run_spec(spec.to_plan(), BackendOptions())
    assert back.switch_queues() == spec.switch_queues()
    assert back.deployment() == spec.deployment()
    assert back.cluster_groups() == spec.cluster_groups() and back.generation_limit_s() == spec.generation_limit_s()
    d = spec.deployment()
    assert back.ps_config(d, tmp_path) == spec.ps_config(d, tmp_path)
    for cid, members in d.clusters.items():
        for w in members:
            assert back.worker_config(d, w, cid, tmp_path, tmp_path / "s") == spec.worker_config(d, w, cid, tmp_path,
                                                                                                  tmp_path / "s")
    assert (back.tc, back.faults, back.reward_threshold, back.seed) == (spec.tc, spec.faults, spec.reward_threshold,
                                                                         spec.seed)
    assert back.tc_reading == spec.tc_reading


def test_a_chunked_model_programs_every_switch_and_host_with_its_k(tmp_path):
    """SB3's 9,797 parameters at the emulated 1500 B MTU: K = 28 chunks of L = 350. Every switch's
    olaf_params get K and L and Q_max · K segments (the deployment file says so too), the PS gets P
    and the MTU (so it expects K chunks), and the config file round-trips K."""
    from olaf.controller import config as cfgmod
    from olaf.hosts.argv import ps_argv
    from olaf.plan.workload import PPOTaskSpec, TrainJob

    job = TrainJob(task=PPOTaskSpec(mtu=1500), num_params=9797)   # a PPO job's network (the bandit stops at 2,235)
    spec = RunSpec(topo="multihop", grads=9797, training=job, queue_size=8, edge_queue_size=4)
    assert (spec.chunking.num_chunks, spec.chunking.chunk_len) == (28, 350)
    d = spec.deployment()
    assert d.num_chunks == 28 and d.num_grads == 350
    assert {n: (s.queue.queue_size, s.queue.num_chunks, s.queue.num_grads) for n, s in d.switches.items()} == {
        "s1": (4 * 28, 28, 350), "s2": (4 * 28, 28, 350), "s3": (8 * 28, 28, 350)}
    assert all(s.depth >= s.queue.queue_size for s in d.switches.values())
    ps = ps_argv(spec.ps_config(d, tmp_path))
    assert ps[ps.index("--mtu") + 1] == "1500"
    f = tmp_path / "network.yaml"
    cfgmod.save(d, f)
    back = cfgmod.load(f)
    assert back.num_chunks == 28 and back.switches["s3"].queue.queue_size == 8 * 28


@pytest.mark.parametrize("mtu, k, chunk_len, links", [(1500, 28, 350, 1500), (9000, 5, 1960, 9000), (1000, 43, 228, 1500)])
def test_a_training_jobs_mtu_chunks_the_model_and_sets_the_veths(tmp_path, mtu, k, chunk_len, links):
    """A training job's MTU (``olaf train --mtu``) decides K for the hosts and every switch; the
    veths are raised to it for jumbo frames and stay at 1500 below that."""
    from olaf.plan.workload import PPOTaskSpec, TrainJob

    job = TrainJob(task=PPOTaskSpec(mtu=mtu), num_params=9797)
    spec = RunSpec(grads=9797, training=job, queue_size=4)
    assert (spec.chunking.num_chunks, spec.chunking.chunk_len, spec.links_mtu) == (k, chunk_len, links)
    d = spec.deployment()
    assert d.num_chunks == k and d.num_grads == chunk_len
    assert spec.to_plan().chunking(spec.to_plan().hosts_mtu(1500)).num_chunks == k


def test_a_training_mtu_above_jumbo_frames_is_refused_naming_the_field():
    from olaf.plan.workload import PPOTaskSpec, TrainJob

    with pytest.raises(RunSpecError) as e:
        RunSpec(grads=9797, training=TrainJob(task=PPOTaskSpec(mtu=9001), num_params=9797))
    assert e.value.field == "training.task.mtu" and "at most 9000" in str(e.value)


def test_a_flat_queue_size_that_queue_sizes_overrides_is_not_checked():
    """``olaf train --queue-size 4`` sets the root switch's size in ``queue_sizes``; the flat default
    (8) it replaces must not refuse a model whose K allows only 4 updates (K = 43: 8 · 43 > 256)."""
    from olaf.plan.workload import PPOTaskSpec, TrainJob

    job = TrainJob(task=PPOTaskSpec(mtu=1000), num_params=9797)
    spec = RunSpec(grads=9797, training=job, queue_sizes={"s1": 4})
    assert spec.switch_queues()["s1"].size == 4 and spec.deployment().switches["s1"].queue.queue_size == 4 * 43
    with pytest.raises(RunSpecError) as e:
        RunSpec(grads=9797, training=job, queue_sizes={"s1": 6})
    assert e.value.field == "queue_sizes" and "1..5 updates" in str(e.value)

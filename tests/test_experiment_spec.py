"""Experiment specs (olaf/experiments): validation names the field and what is allowed, the
parameters (plain and derived) change the scenario as documented, every committed spec plans
on both backends, and the mapping onto the emulation keeps groups, queues, rates and updates."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from olaf.cli import main
from olaf.configfile import ConfigError, validate
from olaf.experiments.params import parameters, plan_with
from olaf.experiments.spec import ExperimentSpec, load_spec, plan
from olaf.plan.plan import RunPlan

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted((ROOT / "experiments").rglob("*.yaml"))

BASE = {"name": "t", "title": "t",
        "plan": {"topology": "multihop", "duration_s": 2,
                     "groups": [{"name": "S1", "clusters": 2, "workers_per_cluster": 2, "period_ms": 100,
                                 "switch": "s1"},
                                {"name": "S2", "clusters": 2, "workers_per_cluster": 2, "period_ms": 100,
                                 "switch": "s2"}]}}


def spec(**patch) -> ExperimentSpec:
    return validate(ExperimentSpec, {**BASE, **patch})


def error(**patch) -> str:
    with pytest.raises(ConfigError) as e:
        spec(**patch)
    return str(e.value)


def test_unknown_sweep_parameter_is_named_with_the_allowed_ones():
    msg = error(sweep={"alph": [0.1, 0.5]})
    assert msg.startswith("sweep: ") and "'alph'" in msg
    assert "alpha" in msg and "load.s3" in msg and "groups.S2.period_ms" in msg and "queue_size.s1" in msg


def test_unknown_parameter_in_set_and_backend_set():
    assert "'uplinks.s9.pps'" in error(set={"uplinks.s9.pps": 10})
    msg = error(backends={"mininet": {"set": {"groups.S3.clusters": 1}}})
    assert msg.startswith("backends: mininet.set: ") and "'groups.S3.clusters'" in msg


def test_unknown_field_and_out_of_range_values_name_the_field():
    assert error(sweeps={"queue": ["fifo"]}).startswith("sweeps: unknown field")
    assert error(seeds=[]).startswith("seeds: ")
    assert error(seeds=[1, 1]).startswith("seeds: ") and "distinct" in error(seeds=[1, 1])
    msg = error(plan={**BASE["plan"], "queue": "red"})
    assert msg.startswith("plan.queue: ") and "'olaf', 'olaf_tc' or 'fifo'" in msg
    assert error(name="Bad Name").startswith("name: ")
    msg = error(table={"columns": [{"metric": "aom_avg_ms.S3", "label": "x"}]})
    assert "table.columns: unknown metric(s) aom_avg_ms.S3" in msg and "aom_avg_ms.S2" in msg


def test_a_point_that_is_no_valid_scenario_names_the_point_and_field():
    s = spec(sweep={"queue_size.s1": [5, 0]})
    with pytest.raises(ConfigError) as e:
        plan(s, "ns3")
    assert "sweep point queue_size.s1=0 (ns3)" in str(e.value) and "queue_size.s1" in str(e.value)
    with pytest.raises(ConfigError, match="backend: 'qemu': use one of local, mininet, ns3"):
        plan(s, "qemu")


def test_load_and_alpha_set_capacities_from_the_offered_load():
    base = spec().plan
    s = plan_with(base, [("load.s1", 2), ("load.s2", 1), ("load.s3", 8)])
    # each edge carries 2 clusters x 2 workers x 10 updates/s = 40/s, s3 both (80/s)
    assert s.uplink("s1").pps == pytest.approx(20) and s.uplink("s2").pps == pytest.approx(40)
    assert s.uplink("s3").pps == pytest.approx(10)
    s = plan_with(s, [("alpha", 0.25)])
    assert s.uplink("s1").pps == pytest.approx(10)
    # order matters: loads first, then the period (Table 3 keeps Table 2's capacities)
    s = plan_with(base, [("load.s3", 8), ("groups.S2.period_ms", 300)])
    assert s.uplink("s3").pps == pytest.approx(10) and s.groups[1].period_ms == 300
    s = plan_with(base, [("uplinks.s1.gbps", 1), ("uplinks.s1.pps", 7)])  # one unit replaces the other
    assert s.uplink("s1").pps == 7 and s.uplink("s1").gbps is None
    with pytest.raises(ConfigError, match="alpha: must be a number > 0"):
        plan_with(base, [("alpha", 0)])
    assert "alpha" not in parameters(validate(RunPlan, {"duration_s": 1, "groups": [{"clusters": 1,
                                                                                   "workers_per_cluster": 1}]}))


def test_backend_set_comes_first_and_wins():
    s = spec(set={"duration_s": 5, "load.s3": 4},
             backends={"mininet": {"set": {"groups.*.workers_per_cluster": 1, "duration_s": 3}, "seeds": [7]}})
    ns3, mn = plan(s, "ns3"), plan(s, "mininet")
    assert ns3[0].plan.duration_s == 5 and mn[0].plan.duration_s == 3
    assert mn[0].seed == 7 and mn[0].plan.seed == 7
    # the load is computed on the backend's scenario: half the workers, half the capacity
    assert mn[0].plan.uplink("s3").pps == pytest.approx(ns3[0].plan.uplink("s3").pps / 2)


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_committed_specs_plan_on_both_backends(path: Path):
    from olaf.backends.mininet import emulated_run

    s = load_spec(path)
    assert (s.paper or s.paper_claim) and s.scaling and s.reproduces
    for backend in ("ns3", "mininet"):
        runs = plan(s, backend)
        assert len(runs) == len(s.points()) * len(s.seeds_for(backend))
        if backend == "mininet" and "mininet" in s.backends:
            for r in runs:
                emulated_run(r.plan)
    for row in s.paper:  # every paper row matches a sweep point
        assert any(all(p[k] == v for k, v in row.point.items()) for p in s.points()), row.label


def test_mininet_mapping_keeps_groups_queues_rates_and_updates(tmp_path):
    from olaf.backends.mininet import emulated_run

    s = load_spec(ROOT / "experiments" / "table3.yaml")
    r = next(r for r in plan(s, "mininet") if r.point["queue"] == "olaf_tc")
    rs = emulated_run(r.plan)
    assert (rs.topo, rs.queue, rs.tx.enabled) == ("multihop", "olaf", True)
    assert [(g.name, g.clusters, g.workers_per_cluster, g.period_ms, g.switch) for g in rs.cluster_groups()] == [
        ("S1", 5, 2, 100, "s1"), ("S2", 5, 2, 300, "s2")]
    q = rs.switch_queues()
    assert {sw: x.size for sw, x in q.items()} == {"s1": 5, "s2": 5, "s3": 8}
    assert {sw: x.rate_pps for sw, x in q.items()} == {"s1": 100, "s2": 100, "s3": 24}
    d = rs.deployment()
    assert len(d.clusters) == 10 and d.switches["s3"].rate_pps == 24 and d.switches["s1"].queue.queue_size == 5
    w = rs.worker_config(d, "w20", 9, tmp_path, tmp_path / "start_ns")  # last worker: S2
    assert w.schedule.period_ms == 300 and w.tx.enabled and d.hosts["w20"].switch == "s2"
    t1 = load_spec(ROOT / "experiments" / "table1-fig6.yaml")
    rs1 = emulated_run(plan(t1, "mininet")[0].plan)
    assert rs1.updates_per_worker == 500 and rs1.switch_queues()["s1"].rate_pps == 360
    w = rs1.worker_config(rs1.deployment(), "w1", 0, tmp_path, tmp_path / "start_ns")
    assert w.schedule.max_updates == 500 and w.schedule.duration_s is None


def test_mininet_refuses_what_it_cannot_emulate():
    from olaf.backends.mininet import emulated_run

    s = validate(RunPlan, {"duration_s": 1, "segments": 16, "groups": [{"clusters": 1, "workers_per_cluster": 1}]})
    with pytest.raises(ConfigError, match="segments: the mininet backend cannot honour it: 16: the P4 build has 256"):
        emulated_run(s)
    s = validate(RunPlan, {"duration_s": 1, "groups": [{"clusters": 1, "workers_per_cluster": 1}],
                            "uplinks": {"s1": {"pps": 0.4}}})
    with pytest.raises(ConfigError, match=r"uplinks.s1: the mininet backend cannot honour it: 0.4 packets/s"):
        emulated_run(s)
    s = validate(RunPlan, {"duration_s": 1, "groups": [{"clusters": 1, "workers_per_cluster": 1}],
                            "uplinks": {"s1": {"pps": 10, "delay_us": 100}}})
    with pytest.raises(ConfigError, match=r"uplinks.s1.delay_us: the mininet backend cannot honour it: veth") as e:
        emulated_run(s)
    assert e.value.field == "uplinks.s1.delay_us"


def test_cli_bad_spec_exits_2_naming_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**BASE, "sweep": {"bogus": [1]}}))
    r = CliRunner().invoke(main, ["experiment", str(bad)])
    assert r.exit_code == 2 and "sweep: unknown parameter 'bogus'" in r.output


def test_cli_without_ns3_says_how_to_install(tmp_path, monkeypatch):
    from importlib import metadata

    from olaf.sim import build

    def missing(name: str):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    monkeypatch.setattr(build, "load", build.load.__wrapped__)  # not the library this process may hold
    good = tmp_path / "ok.yaml"
    good.write_text(yaml.safe_dump(BASE))
    r = CliRunner().invoke(main, ["experiment", str(good), "--out", str(tmp_path / "out")])
    assert r.exit_code == 1 and "pip install 'olaf-drl[ns3]'" in r.output


def test_job_parameters_set_a_training_plan_and_are_refused_elsewhere():
    from olaf.plan.workload import TrainJob

    base = validate(RunPlan, {"duration_s": 5, "grads": 16, "groups": [{"clusters": 1, "workers_per_cluster": 1}],
                              "workload": {"kind": "ppo", "job": TrainJob(num_params=16, ack_wait_ms=100.0)}})
    p = plan_with(base, [("job.mode", "sync"), ("job.ps_lr", 0.1)])
    job = p.workload.job  # type: ignore[union-attr]
    assert (job.mode, job.ps_lr, job.num_params) == ("sync", 0.1, 16)
    assert job.ack_wait_ms == job.round_timeout_ms  # a sync worker waits for its round's ACK
    bandit = validate(RunPlan, {"duration_s": 5, "groups": [{"clusters": 1, "workers_per_cluster": 1}]})
    with pytest.raises(ConfigError, match="job.mode: only a plan with a training workload"):
        plan_with(bandit, [("job.mode", "sync")])


def test_exclude_leaves_out_points_and_names_a_bad_entry():
    s = spec(sweep={"queue": ["fifo", "olaf_tc"], "tc.reading": ["probabilistic", "backoff"]},
             exclude=[{"queue": "fifo", "tc.reading": "backoff"}])
    assert s.points() == [{"queue": "fifo", "tc.reading": "probabilistic"},
                          {"queue": "olaf_tc", "tc.reading": "probabilistic"},
                          {"queue": "olaf_tc", "tc.reading": "backoff"}]
    runs = plan(s, "ns3")
    assert [r.plan.tc.reading for r in runs if r.point["queue"] == "olaf_tc"] == ["probabilistic", "backoff"]
    assert "exclude[0]: alpha is not a swept parameter" in error(sweep={"queue": ["fifo"]}, exclude=[{"alpha": 1}])
    assert "exclude[0]: matches no point" in error(sweep={"queue": ["fifo"]}, exclude=[{"queue": "olaf"}])
    assert "leaves no point" in error(sweep={"queue": ["fifo"]}, exclude=[{"queue": "fifo"}])
    with pytest.raises(ConfigError, match="reading"):
        plan(spec(sweep={"tc.reading": ["back-off"]}), "ns3")


def test_a_figure_without_numbers_gets_ours_alone_and_the_papers_claim():
    from olaf.experiments.metrics import metric_names
    from olaf.experiments.outputs import markdown_table

    s = load_spec(Path("experiments/fig7.yaml"))
    assert not s.paper and "speedup increasing" in s.paper_claim
    est = {"mean": 2.5, "ci95": 0.1, "n": 3}
    pts = [{"index": 0, "point": p, "label": f"p{i}", "runs": 3, "incomplete_runs": 0,
            "metrics": {m: est for m in metric_names(s.plan)}} for i, p in enumerate(s.points())]
    table = markdown_table(s, pts, "ns3")
    head = table.splitlines()[0]
    assert "(paper)" not in head and head.count("(ours)") == len(s.table.columns)
    assert "The paper gives no numbers here: \"Fig. 7 shows" in table

"""Admission control of olafctl create-cluster / add-worker (controller/admission.py): the
verifier decides, a refusal writes nothing, --force overrides. Real Z3, in-process
P4Runtime server."""

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner
from p4rt_servicer import FakeSwitchServer, RecordingTM

from olaf.controller import admission
from olaf.controller import cli as olafctl
from olaf.controller import config as cfgmod
from olaf.controller.controller import OlafController
from olaf.topologies.build import QueueSetup, tor

pytest.importorskip("z3", reason="the 'verify' extra (z3-solver) is not installed")

P4INFO = Path(__file__).parent / "data" / "olaf.p4info.txt"
ADMISSION = cfgmod.AdmissionFile(worker_period_ms=100, worker_jitter_ms=5, epsilon=0.5, horizon=6, timeout_s=60)


def network(addr: str, queue_size: int, admission_file=ADMISSION) -> cfgmod.Deployment:
    """Three single-worker hosts, w3 in no cluster; the bottleneck serves one update per 10 ms."""
    d = tor(3, 1, queue=QueueSetup(size=queue_size, rate_pps=100), num_grads=8)
    s = d.switches["s1"]
    return cfgmod.validate(replace(d, clusters={0: ("w1",), 1: ("w2",)}, admission=admission_file,
                                   switches={"s1": replace(s, grpc=addr)}))


def test_verifier_problem_maps_the_deployment():
    d = network("127.0.0.1:1", 2, ADMISSION.model_copy(update=dict(tc=True, worker_period_ms=90, v_per_s=2.5)))
    clusters, engine, tr = admission.verifier_problem(d, {0: ("w1", "w2"), 1: ("w3",), 2: ()}, d.admission)
    assert [(c.name, c.period_ms, c.jitter_ms) for c in clusters] == [("c0", 45, 5), ("c1", 90, 5)]
    assert (engine.q_max, engine.p_over_c_ms) == (2, 10)
    assert clusters[0].v == Fraction(1, 400) and tr.model == "envelope" and tr.reading == "probabilistic"
    # the workers' reading of the rule reaches the verifier; another is refused naming the field
    d2 = replace(d, admission=d.admission.model_copy(update=dict(tc_reading="backoff")))
    assert admission.verifier_problem(d2, {0: ("w1",)}, d2.admission)[2].reading == "backoff"
    with pytest.raises(cfgmod.ConfigError, match="tc_reading"):
        cfgmod.validate_model(cfgmod.AdmissionFile, {"tc_reading": "sometimes"})


def test_an_emulated_run_hands_its_tc_reading_to_admission():
    from olaf.plan.plan import RunPlan
    from olaf.topologies.emulated import EmulatedRun

    plan = RunPlan.model_validate({"duration_s": 5, "groups": [{"clusters": 2, "workers_per_cluster": 1}],
                                   "tc": {"enabled": True, "reading": "backoff"}})
    d = EmulatedRun(plan, admission=True).deployment()
    assert d.admission.tc and d.admission.tc_reading == "backoff"


def test_no_admission_section_means_off():
    d = replace(network("127.0.0.1:1", 2), admission=None)
    assert admission.check(d, {0: ("w1",), 1: ("w2",), 2: ("w3",)}, 2).verdict == "off"


@pytest.fixture
def running(tmp_path, monkeypatch):
    """A deployed switch (in-process P4Runtime server); returns (server, olafctl args) per queue size."""
    monkeypatch.setattr("olaf.controller.controller.TrafficManager", RecordingTM)
    (tmp_path / "olaf.json").write_text("{}")
    with FakeSwitchServer() as fake:
        def make(queue_size: int):
            net = tmp_path / "network.yaml"
            d = network(fake.addr, queue_size)
            cfgmod.save(d, net)
            ctl = OlafController(d, P4INFO, tmp_path / "olaf.json")
            ctl.deploy()
            ctl.close()
            fake.servicer.clear_records()
            return ["--network", str(net), "--p4info", str(P4INFO), "--bmv2-json", str(tmp_path / "olaf.json")], net
        yield fake, make


def test_unfair_new_cluster_is_refused_and_nothing_written(running):
    fake, make = running
    args, net = make(queue_size=2)          # three clusters on two segments: congested, no TC
    r = CliRunner().invoke(olafctl.main, args + ["create-cluster", "2", "w3"])
    assert r.exit_code == 1, r.output
    assert "refused by admission control (violated" in r.output and "Average peak AoM" in r.output
    assert fake.servicer.updates() == []
    assert cfgmod.load(net).cluster_of("w3") is None
    r = CliRunner().invoke(olafctl.main, args + ["create-cluster", "2", "w3", "--force"])
    assert r.exit_code == 0, r.output
    assert "applied anyway (--force)" in r.output
    assert cfgmod.load(net).cluster_of("w3") == 2 and fake.servicer.updates()


def test_fair_new_cluster_is_admitted(running):
    fake, make = running
    args, net = make(queue_size=4)          # room for every cluster
    r = CliRunner().invoke(olafctl.main, args + ["add-worker", "w3", "--cluster", "1"])
    assert r.exit_code == 0, r.output
    assert "admission: verified" in r.output
    assert cfgmod.load(net).cluster_of("w3") == 1

"""The backend registry and protocol (olaf.backends): every backend refuses, by the field's path,
what a plan sets and it cannot honour (never a default); the same small ToR plan runs on
``local`` and ``ns3`` (and on ``mininet`` in its tier) into run directories that one
``olaf report`` reads, with the accounting closed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hostnet import guard

from olaf import backends
from olaf.backends.base import Backend, BackendOptions, PlanRefused, set_paths
from olaf.cli import main
from olaf.configfile import ConfigError, validate
from olaf.plan.plan import RunPlan
from olaf.plan.workload import PPOConfig, PPOTaskSpec, TrainJob
from olaf.rundir.manifest import read_manifest

ROOT = Path(__file__).resolve().parents[1]

SMALL = {"updates_per_worker": 30, "seed": 5,
         "groups": [{"name": "all", "clusters": 2, "workers_per_cluster": 2, "period_ms": 40, "jitter_ms": 5}]}


def plan(**kw) -> RunPlan:
    return validate(RunPlan, {**SMALL, **kw})


def test_registry_lists_the_backends_and_names_them_on_a_typo():
    assert set(backends.names()) == {"local", "mininet", "ns3", "ray"}
    for name in backends.names():
        b = backends.get(name)
        assert b.name == name and b.description
    with pytest.raises(ValueError, match="unknown backend 'qemu'; use one of local, mininet, ns3"):
        backends.get("qemu")


def test_set_paths_are_what_the_plan_sets_not_its_defaults():
    p = plan(uplinks={"s1": {"pps": 100, "delay_us": 50}}, tc={"v_per_s": 1.0})
    assert set_paths(p) == ["groups", "seed", "tc.v_per_s", "updates_per_worker", "uplinks.s1.delay_us",
                            "uplinks.s1.pps"]
    assert "access" not in set_paths(p) and "workload" not in set_paths(p)


@pytest.mark.parametrize(("backend", "fields", "path", "reason"), [
    ("local", {"uplinks": {"s1": {"pps": 100}}}, "uplinks.s1.pps", "no switch or links"),
    ("local", {"queue": "fifo"}, "queue", "no switch or links"),
    ("local", {"tc": {"enabled": True}}, "tc.enabled", "queue status"),
    ("local", {"faults": ["ps-kill@1"]}, "faults", "mininet"),
    ("ns3", {"faults": ["switch-restart:s1@1"]}, "faults", "injects no faults"),
    ("ns3", {"uplinks": {"s1": {"load": 2}}}, "uplinks.s1.load", "fixed capacity"),
    ("local", {"uplinks": {"s1": {"load": 2}}}, "uplinks.s1.load", "no switch or links"),
    ("mininet", {"uplinks": {"s1": {"pps": 100, "delay_us": 300}}}, "uplinks.s1.delay_us", "no propagation delay"),
    ("mininet", {"access": {"gbps": 1}}, "access.gbps", "not shaped"),
    ("mininet", {"linger_ms": 10}, "linger_ms", "last ACKs"),
    ("mininet", {"segments": 16}, "segments", "the P4 build has 256"),
])
def test_each_backend_refuses_a_set_field_it_cannot_honour_by_name(backend, fields, path, reason):
    with pytest.raises(PlanRefused, match=reason) as e:
        backends.get(backend).check(plan(**fields))
    assert e.value.field == path and e.value.backend == backend
    assert str(e.value).startswith(f"{path}: the {backend} backend cannot honour it")


def test_ns3_refuses_a_training_workload_because_its_workers_are_synthetic():
    job = TrainJob(task=PPOTaskSpec(env_id="CartPole-v1", ppo=PPOConfig(hidden=(8,))), num_params=67)
    p = plan(grads=67, workload={"kind": "ppo", "job": job})
    with pytest.raises(PlanRefused, match="synthetic C.. applications") as e:
        backends.get("ns3").check(p)
    assert e.value.field == "workload.job"
    backends.get("local").check(p)  # the local backend runs it
    backends.get("mininet").check(p)


def test_a_model_beyond_a_frame_travels_in_chunks_up_to_the_build_limit():
    """An update larger than a frame is K chunks (olaf.chunks); the mininet backend refuses a K above
    the P4 build's MAX_CHUNKS and a queue of Q updates that needs more than its segments, and the
    backends that run the bandit task refuse a model larger than it takes, naming the field."""
    from olaf.constants import IPV4_MAX_LEN, MAX_CHUNKS, SEGMENTS, max_chunk_elements
    from olaf.hosts.task import MAX_NUM_WEIGHTS
    from olaf.plan.plan import MAX_MODEL_PARAMS

    sb3 = plan(grads=9797)
    assert sb3.chunking(1500).num_chunks == 28 and sb3.chunking(9000).num_chunks == 5
    assert sb3.chunking(IPV4_MAX_LEN).num_chunks == 1
    assert sb3.queue_segments(sb3.chunking(1500)) == {"s1": 8 * 28}
    backends.get("ns3").check(sb3)
    for name in ("mininet", "local"):   # their workers run the bandit: a G x G basis
        with pytest.raises(PlanRefused, match=f"9797: the workers' bandit task takes at most {MAX_NUM_WEIGHTS}") as e:
            backends.get(name).check(sb3)
        assert e.value.field == "grads"
    largest = plan(grads=MAX_NUM_WEIGHTS)
    assert largest.chunking(1500).num_chunks == 7
    backends.get("mininet").check(largest)
    backends.get("local").check(largest)
    assert backends.get("local").mtu == IPV4_MAX_LEN and backends.get("mininet").mtu == 1500
    big = MAX_CHUNKS * max_chunk_elements(1500) + 1     # a PPO job's network: no bandit limit
    job = TrainJob(task=PPOTaskSpec(env_id="CartPole-v1", ppo=PPOConfig(hidden=(8,))), num_params=big)
    too_many = plan(grads=big, workload={"kind": "ppo", "job": job})
    with pytest.raises(PlanRefused, match=f"K = {MAX_CHUNKS + 1} chunks") as e:
        backends.get("mininet").check(too_many)
    assert e.value.field == "grads"
    deep = plan(grads=MAX_NUM_WEIGHTS, queue_size={"s1": SEGMENTS // 7 + 1})
    with pytest.raises(PlanRefused, match=f"1..{SEGMENTS // 7} updates") as e:
        backends.get("mininet").check(deep)
    assert e.value.field == "queue_size.s1"  # the plan's own path
    with pytest.raises(ConfigError, match="grads"):
        plan(grads=MAX_MODEL_PARAMS + 1)


def test_defaults_are_never_refused():
    for name in backends.names():
        backends.get(name).check(plan())


def test_a_training_plan_must_carry_the_jobs_parameter_count():
    with pytest.raises(ConfigError, match="grads: 16, but the training job's updates carry its 341 parameters"):
        plan(workload={"kind": "ppo"})


def _accounting(out) -> dict:
    s = json.loads((out / "summary.json").read_text())
    o = s["overall"]
    assert o["generated"] == 4 * 30, o
    assert o["generated"] == o["sent"] + o["skipped"]
    assert o["sent"] == o["delivered"] + o["aggregated"] + o["dropped"], o
    return o


@pytest.mark.ns3
def test_the_same_plan_on_local_and_ns3_reports_alike(tmp_path, sim):
    p = plan()
    opts = BackendOptions(quiet=True, report=True, plots=False)
    local = backends.get("local", opts).run(p, tmp_path / "local")
    ns3 = backends.get("ns3", opts).run(p, tmp_path / "ns3")
    assert (local.status, ns3.status) == ("ok", "ok")
    lo, no = _accounting(tmp_path / "local"), _accounting(tmp_path / "ns3")
    assert lo["delivered"] == lo["sent"]  # no switch: nothing aggregated or lost
    assert no["sent"] == 120
    for name, out in (("local", tmp_path / "local"), ("ns3", tmp_path / "ns3")):
        assert_manifest(out, name, p)
        r = CliRunner().invoke(main, ["report", str(out), "--no-plots"])
        assert r.exit_code == 0, r.output


def assert_manifest(out, backend: str, p: RunPlan) -> None:
    """``run.json`` validates against the published schema, names the backend and holds the plan."""
    import jsonschema

    raw = json.loads((out / "run.json").read_text())
    jsonschema.validate(raw, json.loads((ROOT / "docs" / "schemas" / "run-manifest.schema.json").read_text()))
    m = read_manifest(out)
    assert m.backend == backend and validate(RunPlan, m.plan) == p


def test_experiment_takes_any_registered_backend_and_an_unset_list(tmp_path):
    """A spec that sets link delays runs on a backend that refuses them only with backends.<name>.unset."""
    import yaml

    spec = {"name": "local-small", "title": "t", "plan": {**SMALL, "uplinks": {"s1": {"pps": 500, "delay_us": 30}}},
            "seeds": [1]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(spec))
    r = CliRunner().invoke(main, ["experiment", str(path), "--backend", "local", "--out", str(tmp_path / "a")])
    assert r.exit_code == 2 and "uplinks.s1.delay_us: the local backend cannot honour it" in r.output, r.output
    spec["backends"] = {"local": {"unset": ["uplinks.s1"]}}
    path.write_text(yaml.safe_dump(spec))
    r = CliRunner().invoke(main, ["experiment", str(path), "--backend", "local", "--out", str(tmp_path / "b")])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "b" / "results.json").read_text())
    (run,) = res["runs"]
    assert run["status"] == "ok" and run["metrics"]["sent"] == 120 and run["metrics"]["delivered"] == 120
    spec["backends"] = {"local": {"unset": ["access"]}}
    path.write_text(yaml.safe_dump(spec))
    r = CliRunner().invoke(main, ["experiment", str(path), "--backend", "local", "--out", str(tmp_path / "c")])
    assert r.exit_code == 2 and "access: is not set in the plan" in r.output, r.output


@pytest.mark.train
@pytest.mark.timeout(900)
def test_experiment_runs_a_training_sweep_through_the_same_engine(tmp_path):
    """A spec whose plan has a training workload: `olaf experiment` runs it on the local backend through the
    sweep engine of the network experiments; every run trains (its workers iterate, the PS applies their
    updates) and carries the training metrics beside the network ones."""
    import yaml

    spec = yaml.safe_load((ROOT / "experiments" / "training" / "fig3-cartpole.yaml").read_text())
    spec["plan"]["duration_s"] = guard(300)  # a hang guard: each job ends at its 4 updates at the PS
    spec["plan"]["workload"]["job"].update(target=1e9, ps_updates=4)  # the target is never reached
    spec.update(sweep={"groups.all.clusters": [1, 2]}, seeds=[1], paper=[], figure=None)
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(spec))
    r = CliRunner().invoke(main, ["experiment", str(path), "--backend", "local", "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [run["status"] for run in res["runs"]] == ["ok", "ok"]
    for run, n in zip(res["runs"], (1, 2)):
        m = run["metrics"]
        assert m["iterations"] >= n and m["ps_updates"] >= 4 and m["reached"] == 0.0, m
        assert m["delivered"] == m["sent"] == m["ps_updates"]  # no switch: the PS got every update sent
        assert (tmp_path / "out" / run["run_dir"] / "training.json").exists()
    assert "iterations to reward 100" in (tmp_path / "out" / "table.md").read_text()
    r = CliRunner().invoke(main, ["experiment", str(path), "--backend", "ns3", "--out", str(tmp_path / "ns3")])
    assert r.exit_code == 2 and "workload.job: the ns3 backend cannot honour it" in r.output, r.output


@pytest.mark.mininet
@pytest.mark.timeout(900)  # also waits for `make build` when it runs first
def test_the_same_plan_on_mininet_reports_alike(build, tmp_path):
    """The mininet tier: the plan of the local/ns3 test through BMv2 and real hosts, into the same manifest
    layout, with the accounting closed."""
    p = plan()
    res = backends.get("mininet", BackendOptions(build=build, quiet=True)).run(p, tmp_path / "mininet")
    assert res.status == "ok"
    _accounting(tmp_path / "mininet")
    assert_manifest(tmp_path / "mininet", "mininet", p)
    r = CliRunner().invoke(main, ["report", str(tmp_path / "mininet"), "--no-plots"])
    assert r.exit_code == 0, r.output


def test_workers_sharing_a_host_are_laid_out_by_five_tuple_and_only_mininet_runs_them():
    """``workers_per_host``: a cluster's workers share an address and switch port in runs of H,
    a UDP port each, under the five-tuple identity; the backends without a switch that tells
    them apart refuse it, naming the group's field."""
    from olaf.plan.topology import Placement, layout

    lay = layout("tor", [Placement("s1", 2, 3, workers_per_host=2)])
    got = {n: (h.ip, h.port, h.udp_port) for n, h in lay.hosts.items() if h.worker_id is not None}
    assert lay.identity == "five_tuple"
    assert [got[f"w{i}"][1:] for i in range(1, 7)] == [(1, 50101), (1, 50102), (2, 50101), (3, 50101), (3, 50102),
                                                        (4, 50101)]
    assert got["w1"][0] == got["w2"][0] != got["w3"][0] and got["w4"][0] == got["w5"][0] != got["w6"][0]
    assert lay.hosts["ps"].port == 5
    assert layout("tor", [Placement("s1", 2, 3)]).identity == "address_port"
    p = plan(groups=[{**SMALL["groups"][0], "workers_per_host": 2}])
    backends.get("mininet").check(p)
    for name in ("local", "ns3"):
        with pytest.raises(PlanRefused, match="mininet backend") as e:
            backends.get(name).check(p)
        assert e.value.field.endswith(".workers_per_host")


def test_the_ray_backend_names_the_extra_or_the_version_it_needs(monkeypatch):
    """Without Ray, or with another version than the pinned one, the ray backend says what to install."""
    import sys

    from olaf.backends.ray.cluster import require_ray
    from olaf.harness import RunFailed
    from olaf.rl.extra import RAY_VERSION

    monkeypatch.setitem(sys.modules, "ray", None)   # import ray raises ImportError
    with pytest.raises(RunFailed, match=r"pip install -e '\.\[ray\]' \(ray==" + RAY_VERSION.replace(".", r"\.")):
        require_ray()
    fake = type(sys)("ray")
    fake.__version__ = "2.0.0"
    monkeypatch.setitem(sys.modules, "ray", fake)
    with pytest.raises(RunFailed, match=f"ray 2.0.0 is installed; .* pip install ray=={RAY_VERSION}"):
        require_ray()


def test_the_ray_and_rllib_extras_pin_the_version_the_code_checks():
    import tomllib

    from olaf.rl.extra import RAY_VERSION

    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["ray"] == [f"ray=={RAY_VERSION}"]
    assert extras["rllib"] == [f"ray[rllib]=={RAY_VERSION}"]


class _WithoutRun(Backend):
    name, description, mtu, max_mtu = "norun", "no run method", 1500, 1500

    def __init__(self, options):
        self.options = options

    def preflight(self):
        pass

    def check(self, plan):
        pass


class _WithoutMtu:
    """Every method, but no ``mtu`` nor ``max_mtu``, and not derived from Backend."""

    name, description = "nomtu", "no MTU"
    __init__, preflight, check = _WithoutRun.__init__, _WithoutRun.preflight, _WithoutRun.check

    def run(self, plan, out, monitor=None):
        raise AssertionError("never run")


def test_the_registry_refuses_a_class_that_does_not_follow_the_backend_protocol(monkeypatch):
    monkeypatch.setitem(backends.REGISTRY, "norun", f"{__name__}:_WithoutRun")
    monkeypatch.setitem(backends.REGISTRY, "nomtu", f"{__name__}:_WithoutMtu")
    with pytest.raises(TypeError, match="abstract .*run"):
        backends.get("norun")
    with pytest.raises(TypeError, match="backend 'nomtu' .* does not follow olaf.backends.base.Backend: it has no "
                                        "mtu, max_mtu"):
        backends.get("nomtu")
    assert all(isinstance(backends.get(n), Backend) for n in ("local", "mininet", "ns3", "ray"))

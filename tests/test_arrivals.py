"""The arrival models of a run plan (olaf.plan.arrivals): random or aligned start phases, on/off
bursts and trace replay, the same on every backend that generates updates — the real worker's
schedule (olaf.hosts.schedule.worker_schedule, what the local and mininet backends hand ``olaf
worker``) and ns-3's C++ workers — and the traces ``olaf trace extract`` takes from a run directory."""

from __future__ import annotations

import json
from itertools import accumulate, islice
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from olaf.cli import main
from olaf.configfile import ConfigError, validate
from olaf.hosts.argv import worker_argv
from olaf.hosts.commands import worker_cmd, worker_config
from olaf.hosts.schedule import ScheduleSpec, load_trace, worker_schedule
from olaf.hosts.worker import WorkerConfig
from olaf.plan.arrivals import PHASE_STREAM, read_traces, start_phase_ns, trace_gaps_ns
from olaf.plan.plan import RunPlan
from olaf.plan.topology import worker_seed


def plan(group: dict, **top) -> RunPlan:
    """One tor group of 2 clusters x 3 workers at 40 ms into an uplink that never congests."""
    g = {"clusters": 2, "workers_per_cluster": 3, "period_ms": 40, **group}
    return validate(RunPlan, {"topology": "tor", "duration_s": 1, "seed": 7, "groups": [g],
                              "uplinks": {"s1": {"pps": 100000}}, **top})


def schedule_times_ns(p: RunPlan, worker_id: int, n: int) -> list[int]:
    """Due times (ns from t0) of a real worker's first ``n`` updates, from its schedule's start
    phase and gaps (its own seeded schedule stream, as olaf.hosts.worker.Worker draws it)."""
    s = worker_schedule(p, 0, worker_id, duration_s=p.duration_s, max_updates=p.updates_per_worker)
    rng = np.random.default_rng(np.random.SeedSequence(worker_seed(p.seed, worker_id)).spawn(4)[2])
    start = round(p.groups[0].start_ms * 1e6) + s.phase_ns
    return [start + t for t in accumulate(islice(s.gaps(rng), n))]


def write_traces(path: Path, workers: list[list[float]]) -> Path:
    path.write_text(json.dumps({"unit": "ms", "workers": [{"name": f"w{i + 1}", "t_ms": t}
                                                          for i, t in enumerate(workers)]}))
    return path


# -- start phases -----------------------------------------------------------------------------


def test_random_phases_are_each_workers_own_draw_over_one_period() -> None:
    p = plan({})
    assert p.groups[0].start_phase == "random"
    phases = [p.start_phase_ns(0, w) for w in range(1, 7)]
    assert all(0 <= x < 40_000_000 for x in phases) and len(set(phases)) == 6
    # the draw is the worker's: child PHASE_STREAM of its seed, a uniform over the cycle
    rng = np.random.default_rng(np.random.SeedSequence(worker_seed(7, 3), spawn_key=(PHASE_STREAM,)))
    assert phases[2] == round(rng.uniform(0, 40.0) * 1e6) == start_phase_ns(7, 3, 40.0)
    # another run seed, other phases; on/off draws over the whole burst cycle
    assert phases != [plan({}, seed=8).start_phase_ns(0, w) for w in range(1, 7)]
    onoff = plan({"arrivals": "onoff", "burst": 4})
    assert onoff.start_phase_ns(0, 3) == start_phase_ns(7, 3, 160.0)


def test_aligned_phases_reproduce_a_common_start() -> None:
    p = plan({"start_phase": "aligned", "start_ms": 5})
    assert {p.start_phase_ns(0, w) for w in range(1, 7)} == {0}
    assert p.generation_end_ns == round(1.005e9)
    # random phases: a worker's window counts from its own start, up to one period later
    assert plan({"start_ms": 5}).generation_end_ns == round(1.045e9)


def test_real_worker_starts_at_its_phase(tmp_path) -> None:
    p = plan({})
    s = worker_schedule(p, 0, 4, duration_s=1.0, max_updates=None)
    assert s.phase_ns == p.start_phase_ns(0, 4) > 0
    assert s.describe()["phase_ms"] == s.phase_ns / 1e6
    cfg = WorkerConfig(ps_ip="10.0.0.100", bind_ip="10.0.1.4", schedule=s)
    assert worker_config(worker_cmd.make_context("worker", worker_argv(cfg)).params) == cfg


# -- on/off arrivals ----------------------------------------------------------------------------


def test_onoff_bursts_keep_the_mean_rate() -> None:
    s = ScheduleSpec(period_ms=40, jitter_ms=0, burst=3, duration_s=1)
    assert list(islice(s.gaps(np.random.default_rng(1)), 7)) == [120_000_000, 0, 0, 120_000_000, 0, 0, 120_000_000]
    # jitter once per burst; burst 1 is the periodic model, draw for draw
    gaps = list(islice(ScheduleSpec(period_ms=40, jitter_ms=10, burst=2, duration_s=1).gaps(np.random.default_rng(2)), 6))
    assert gaps[1::2] == [0, 0, 0] and all(70_000_000 <= g <= 90_000_000 for g in gaps[::2])
    one = ScheduleSpec(period_ms=40, jitter_ms=10, burst=1, duration_s=1)
    periodic = ScheduleSpec(period_ms=40, jitter_ms=10, duration_s=1)
    assert list(islice(one.gaps(np.random.default_rng(3)), 20)) == list(islice(periodic.gaps(np.random.default_rng(3)), 20))


def test_onoff_worker_command_line_round_trips() -> None:
    cfg = WorkerConfig(ps_ip="10.0.0.100", bind_ip="10.0.1.1",
                       schedule=ScheduleSpec(period_ms=50.0, jitter_ms=10.0, burst=5, phase_ns=1234, max_updates=500))
    assert worker_config(worker_cmd.make_context("worker", worker_argv(cfg)).params) == cfg
    assert cfg.schedule.describe()["kind"] == "onoff"


@pytest.mark.parametrize("group, field", [
    ({"burst": 3}, "groups[0]"),                       # a burst needs arrivals: onoff
    ({"arrivals": "poisson"}, "groups[0].arrivals"),
    ({"start_phase": "staggered"}, "groups[0].start_phase"),
    ({"arrivals": "onoff", "burst": 0}, "groups[0].burst"),
])
def test_bad_arrival_fields_are_named(group: dict, field: str) -> None:
    with pytest.raises(ConfigError) as e:
        plan(group)
    assert e.value.path == field and (field != "groups[0]" or "arrivals: onoff" in str(e.value))


# -- trace replay ---------------------------------------------------------------------------------


def test_trace_replay_gives_worker_i_the_ith_trace(tmp_path) -> None:
    f = write_traces(tmp_path / "t.json", [[1.5 * k + i for k in range(1, 5)] for i in range(8)])
    p = plan({}, trace={"file": str(f), "scale": 2.0})
    assert [t.name for t in p.traces()] == [f"w{i}" for i in range(1, 7)]  # the first 6 of 8
    assert p.start_phase_ns(0, 3) == 0  # the trace carries its own timing
    s = worker_schedule(p, 0, 3, duration_s=None, max_updates=None, trace_dir=tmp_path / "hosts", name="w3")
    assert s.trace_ms == [1.5 * k + 2 for k in range(1, 5)] and s.trace_scale == 2.0
    assert load_trace(s.trace_path) == s.trace_ms  # the file `olaf worker --trace` reads
    assert list(s.gaps(np.random.default_rng(0))) == [7_000_000, 3_000_000, 3_000_000, 3_000_000]
    cfg = WorkerConfig(ps_ip="10.0.0.100", bind_ip="10.0.1.3", schedule=s)
    assert worker_config(worker_cmd.make_context("worker", worker_argv(cfg)).params) == cfg
    # the plan's schedule ends with its workers' last replayed times (scaled); no duration needed
    p2 = validate(RunPlan, {"groups": [{"clusters": 2, "workers_per_cluster": 3}], "trace": {"file": str(f)}})
    assert p2.schedule_end_ns() == round((1.5 * 4 + 5) * 1e6)


@pytest.mark.parametrize("workers, says", [
    ([[1.0]] * 5, "5 workers' traces for a plan of 6 workers"),
    ([], "no workers"),
    ([[1.0]] * 5 + [[]], "worker w6: no generation times"),
    ([[1.0]] * 5 + [[2.0, 1.0]], "worker w6: entry 1 (1.0 ms) is before entry 0"),
    ([[1.0]] * 5 + [[-1.0]], "worker w6: entry 0 is -1.0 ms"),
])
def test_unusable_traces_are_refused_naming_the_field(tmp_path, workers, says) -> None:
    p = plan({}, trace={"file": str(write_traces(tmp_path / "t.json", workers))})
    with pytest.raises(ConfigError) as e:
        p.traces()
    assert e.value.path == "trace.file" and says in str(e.value)


def test_missing_trace_file_says_how_to_make_one(tmp_path) -> None:
    with pytest.raises(ConfigError, match="trace.file: .*olaf trace extract"):
        plan({}, trace={"file": str(tmp_path / "none.json")}).traces()


def test_a_trace_excludes_the_groups_arrival_models(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"groups\[0\].arrivals: 'onoff', but the plan replays a trace"):
        plan({"arrivals": "onoff", "burst": 2}, trace={"file": str(tmp_path / "t.json")})


def test_trace_gaps_round_each_time_not_each_gap() -> None:
    assert list(trace_gaps_ns([0.0000004, 0.0000014, 0.0000024])) == [0, 1, 1]


# -- ns-3: the C++ workers generate at the times the real worker's schedule gives -----------------


def sim_gen_times(p: RunPlan) -> dict[int, list[int]]:
    from olaf.sim.backend import simulate
    from olaf.sim.rundir import _layout, records

    run = simulate(p)
    return {w.worker_id: records(run.sim.Gens(run.worker_index[w.name]), _layout("GEN_FIELDS"))["t_ns"].tolist()
            for w in run.net.workers}


@pytest.mark.ns3
@pytest.mark.parametrize("group", [
    {},                                                                        # random phases
    {"start_phase": "aligned"},                                                # everyone at t0
    {"arrivals": "onoff", "burst": 3},                                         # bursts, random phases
    {"arrivals": "onoff", "burst": 4, "start_phase": "aligned", "start_ms": 3},
])
def test_cpp_workers_agree_with_the_real_workers_schedule(sim, group: dict) -> None:
    p = plan(group)
    got = sim_gen_times(p)
    for wid, times in got.items():
        assert times == schedule_times_ns(p, wid, len(times))
        assert len(times) == 24  # 40, 80, ..., 960 ms after its own start, whatever its phase
    starts = {t[0] for t in got.values()}
    assert len(starts) == (1 if group.get("start_phase") == "aligned" else 6)


@pytest.mark.ns3
def test_cpp_onoff_burst_leaves_back_to_back(sim) -> None:
    times = sim_gen_times(plan({"arrivals": "onoff", "burst": 5, "start_phase": "aligned"}))[1]
    assert times[:10] == [200_000_000] * 5 + [400_000_000] * 5


@pytest.mark.ns3
def test_ns3_refuses_a_burst_its_device_queue_cannot_hold(sim) -> None:
    from olaf.sim.backend import simulate

    with pytest.raises(ConfigError, match=r"groups\[0\].burst: 8 updates .* device queue of 5 packets"):
        simulate(plan({"arrivals": "onoff", "burst": 8}, device_queue_packets=5))


@pytest.mark.ns3
def test_extracted_traces_replay_at_the_same_times(sim, tmp_path) -> None:
    """A simulated run's traces (olaf trace extract), replayed by a plan on ns-3: every worker
    generates at the times it sent at in the recorded run (from its own start)."""
    from olaf.sim.backend import run_ns3

    src = plan({"jitter_ms": 10})
    d = run_ns3(src, tmp_path / "run", plots=False)
    r = CliRunner().invoke(main, ["trace", "extract", str(d), "-o", str(tmp_path / "traces.json")])
    assert r.exit_code == 0, r.output
    traces = read_traces(tmp_path / "traces.json")
    recorded = sim_gen_times(src)
    assert len(traces) == 6
    for wid, t in enumerate(traces, start=1):
        start = src.start_phase_ns(0, wid)
        assert [round(x * 1e6) + start for x in t.t_ms] == recorded[wid]
    replayed = sim_gen_times(plan({}, trace={"file": str(tmp_path / "traces.json")}))
    assert replayed == {wid: [round(x * 1e6) for x in t.t_ms] for wid, t in enumerate(traces, start=1)}


@pytest.mark.ns3
def test_ns3_refuses_a_trace_of_too_few_workers(sim, tmp_path) -> None:
    from olaf.backends.base import BackendOptions
    from olaf.backends.ns3 import Ns3Backend

    p = plan({}, trace={"file": str(write_traces(tmp_path / "t.json", [[10.0, 20.0]] * 4))})
    with pytest.raises(ConfigError, match="trace.file: .*4 workers' traces for a plan of 6 workers"):
        Ns3Backend(BackendOptions()).check(p)

"""A replayed trace repeated until the plan's duration (``trace.repeat``, olaf.plan.arrivals.repeat_times)
and one recorded job per seed (``{seed}`` in ``trace.file``):
the same times on every backend, and refused where it could never end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from olaf.configfile import ConfigError, validate
from olaf.hosts.schedule import load_trace, worker_schedule
from olaf.plan.arrivals import repeat_times
from olaf.plan.plan import RunPlan


def _plan(tmp_path: Path, workers: list[list[float]], **trace) -> RunPlan:
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"unit": "ms", "workers": [{"name": f"w{i + 1}", "t_ms": t} for i, t in enumerate(workers)]}))
    return validate(RunPlan, {"duration_s": 0.1, "groups": [{"clusters": 1, "workers_per_cluster": 2}],
                              "uplinks": {"s1": {"pps": 100000}}, "trace": {"file": str(f), **trace}})


def test_repeat_times_keeps_the_rhythm_across_cycles() -> None:
    # 3 times ending at 30 ms: cycle = 30 + 30/3 = 40 ms, so the boundary gap is the mean gap (10 ms)
    assert repeat_times([10.0, 20.0, 30.0], 125.0) == (10.0, 20.0, 30.0, 50.0, 60.0, 70.0, 90.0, 100.0, 110.0)
    assert repeat_times([10.0, 20.0, 30.0], 25.0) == (10.0, 20.0)  # cut at until_ms
    with pytest.raises(ValueError, match="needs times after its start"):
        repeat_times([0.0, 0.0], 100.0)


def test_a_repeated_trace_needs_a_duration(tmp_path) -> None:
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"workers": [{"name": "w1", "t_ms": [1.0]}]}))
    with pytest.raises(ConfigError, match="trace.repeat: a repeated trace never ends; give duration_s"):
        validate(RunPlan, {"updates_per_worker": 5, "groups": [{"clusters": 1, "workers_per_cluster": 1}],
                           "trace": {"file": str(f), "repeat": True}})


def test_repeat_reaches_the_real_workers_schedule(tmp_path) -> None:
    p = _plan(tmp_path, [[10.0, 20.0, 30.0], [5.0, 45.0]], repeat=True, scale=0.5)
    # 0.1 s at scale 0.5 is 200 ms of trace time
    assert p.traces()[0].t_ms == repeat_times([10.0, 20.0, 30.0], 200.0)
    assert p.traces()[1].t_ms == (5.0, 45.0, 72.5, 112.5, 140.0, 180.0)
    s = worker_schedule(p, 0, 2, duration_s=p.duration_s, max_updates=None, trace_dir=tmp_path / "hosts", name="w2")
    assert load_trace(s.trace_path) == list(p.traces()[1].t_ms) and s.trace_scale == 0.5


@pytest.mark.ns3
def test_ns3_workers_generate_the_repeated_times(sim, tmp_path) -> None:
    from olaf.sim.backend import simulate
    from olaf.sim.rundir import _layout, records

    p = _plan(tmp_path, [[10.0, 20.0, 30.0], [5.0, 45.0]], repeat=True)
    run = simulate(p)
    got = {w.worker_id: records(run.sim.Gens(run.worker_index[w.name]), _layout("GEN_FIELDS"))["t_ns"].tolist()
           for w in run.net.workers}
    assert got == {i + 1: [round(t * 1e6) for t in tr.t_ms] for i, tr in enumerate(p.traces())}
    assert len(got[1]) == 7  # 10..30, 50..70, 90 (≤ 100 ms)


def test_seed_in_the_trace_file_name_picks_one_recorded_job_per_seed(tmp_path) -> None:
    for seed, t in ((1, [10.0]), (2, [20.0])):
        (tmp_path / f"job-{seed}.json").write_text(json.dumps({"workers": [{"name": "w1", "t_ms": t}]}))
    for seed, t in ((1, 10.0), (2, 20.0)):
        p = validate(RunPlan, {"duration_s": 1, "seed": seed, "groups": [{"clusters": 1, "workers_per_cluster": 1}],
                               "trace": {"file": str(tmp_path / "job-{seed}.json")}})
        assert p.trace_file == str(tmp_path / f"job-{seed}.json") and p.traces()[0].t_ms == (t,)
    p = validate(RunPlan, {"duration_s": 1, "seed": 3, "groups": [{"clusters": 1, "workers_per_cluster": 1}],
                           "trace": {"file": str(tmp_path / "job-{seed}.json")}})
    with pytest.raises(ConfigError, match="job-3.json: cannot read"):
        p.traces()

"""A bottleneck whose capacity follows the offered rate (olaf.plan.bottleneck, ``uplinks.<switch>.load``):
the capacity a tracker sets from counter readings, and the plans, parameters and options that give it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from olaf.cli import main
from olaf.configfile import ConfigError, validate
from olaf.experiments.params import plan_with
from olaf.plan.bottleneck import MIN_PACKETS, LoadTracker
from olaf.plan.plan import Link, RunPlan
from olaf.plan.workload import PPOConfig, PPOTaskSpec, TrainJob

SMALL = {"duration_s": 5, "groups": [{"clusters": 2, "workers_per_cluster": 2, "period_ms": 100}]}


def feed(tracker: LoadTracker, pps: float, seconds: int, t0: int = 1, a0: int = 0) -> list[tuple[int, int]]:
    """One reading per second of a switch receiving ``pps`` packets/s; the capacities set, (t, rate)."""
    out = []
    for i in range(seconds):
        t = t0 + i
        rate = tracker.observe(float(t), a0 + round(pps * (t - t0 + 1)))
        if rate is not None:
            out.append((t, rate))
    return out


def test_the_capacity_is_the_offered_rate_over_the_load_once_enough_packets_arrived():
    tr = LoadTracker(load=2.0)
    changes = feed(tr, pps=4.0, seconds=20)
    # 16 packets after the first reading, at 4/s: the first capacity once they are in the window
    assert changes == [(5, 2)] and tr.rate_pps == 2 and tr.offered_pps == pytest.approx(4.0)
    assert feed(tr, pps=4.0, seconds=60, t0=21, a0=80) == []  # steady: no further writes


def test_the_capacity_follows_a_machine_that_slows_down_and_never_goes_below_one_packet():
    tr = LoadTracker(load=2.0, window_s=10)
    feed(tr, pps=40.0, seconds=20)
    assert tr.rate_pps == 20
    changes = feed(tr, pps=4.0, seconds=30, t0=21, a0=800)  # the workers now get a tenth of the CPU
    assert changes and changes[-1][1] - 2 in (0, 1) and tr.offered_pps == pytest.approx(4.0)  # 4 / 2, or 1 above
    feed(tr, pps=0.5, seconds=120, t0=51, a0=920)
    assert tr.rate_pps == 1  # BMv2 rates are whole packets/s
    slow = LoadTracker(load=2.0, window_s=10)
    assert feed(slow, pps=0.5, seconds=40) == [(31, 1)]  # 16 packets take 32 s: the window stretches


def test_small_changes_are_not_applied():
    tr = LoadTracker(load=1.0, window_s=10, tolerance=0.25)
    feed(tr, pps=100.0, seconds=12)
    assert tr.rate_pps == 100
    assert feed(tr, pps=110.0, seconds=20, t0=13, a0=1200) == []  # within 25 %
    assert feed(tr, pps=140.0, seconds=20, t0=33, a0=3400) and tr.rate_pps > 125


def test_a_rate_near_an_integer_boundary_does_not_flap():
    tr = LoadTracker(load=3.0, window_s=10)
    feed(tr, pps=9.2, seconds=20)
    assert tr.rate_pps == 3
    assert feed(tr, pps=8.8, seconds=30, t0=21, a0=184) == [] and tr.rate_pps == 3  # 8.8 / 3: 2.9


def test_a_switch_restart_starts_the_measurement_anew_and_keeps_the_capacity():
    tr = LoadTracker(load=2.0)
    feed(tr, pps=10.0, seconds=10)
    assert tr.rate_pps == 5
    assert tr.observe(11.0, 0) is None and tr.rate_pps == 5  # counters back at zero
    assert feed(tr, pps=10.0, seconds=10, t0=12) == []


def test_time_must_increase_and_arguments_are_checked():
    tr = LoadTracker(load=2.0)
    tr.observe(1.0, 0)
    with pytest.raises(ValueError, match="time must increase"):
        tr.observe(1.0, 5)
    for kw, name in (({"load": 0}, "load"), ({"load": 1, "window_s": -1}, "window_s"),
                     ({"load": 1, "tolerance": 0}, "tolerance"), ({"load": 1, "min_packets": 0}, "min_packets")):
        with pytest.raises(ValueError, match=name):
            LoadTracker(**kw)


@given(pps=st.floats(min_value=1.0, max_value=5000.0), load=st.floats(min_value=1.01, max_value=20.0))
def test_a_load_above_one_always_sets_a_capacity_below_a_steady_offered_rate_or_one(pps, load):
    tr = LoadTracker(load=load, window_s=10)
    feed(tr, pps=pps, seconds=MIN_PACKETS + 2)
    assert tr.rate_pps is not None and (tr.rate_pps < pps or tr.rate_pps == 1)


def test_a_link_has_exactly_one_capacity_and_a_measured_one_has_no_fixed_bps():
    assert Link(load=2).load == 2
    for kw in ({}, {"pps": 1, "load": 2}, {"gbps": 1, "load": 2}):
        with pytest.raises(ValueError, match="exactly one of gbps, pps and load"):
            Link(**kw)
    with pytest.raises(ValueError, match="measured during the run"):
        Link(load=2).bps(16)


def test_a_plan_refuses_a_measured_access_link_and_one_under_transmission_control():
    with pytest.raises(ConfigError, match="access.load"):
        validate(RunPlan, {**SMALL, "access": {"load": 2}})
    with pytest.raises(ConfigError, match="transmission control lowers"):
        validate(RunPlan, {**SMALL, "queue": "olaf_tc", "uplinks": {"s1": {"load": 2}}})
    assert validate(RunPlan, {**SMALL, "uplinks": {"s1": {"load": 2}}}).uplink("s1").load == 2


def test_the_load_parameter_of_a_training_plan_is_measured_and_of_a_synthetic_one_computed():
    base = validate(RunPlan, SMALL)
    assert plan_with(base, [("load.s1", 2)]).uplink("s1").pps == pytest.approx(20)  # 4 workers x 10/s
    job = TrainJob(task=PPOTaskSpec(env_id="CartPole-v1", ppo=PPOConfig(hidden=(8,))), num_params=67)
    train = validate(RunPlan, {**SMALL, "grads": 67, "workload": {"kind": "ppo", "job": job}})
    up = plan_with(train, [("uplinks.s1.pps", 7), ("load.s1", 3)]).uplink("s1")
    assert (up.load, up.pps, up.gbps) == (3, None, None)  # a capacity form replaces the others
    assert plan_with(train, [("load.s1", 3), ("uplinks.s1.pps", 7)]).uplink("s1").load is None


def test_alpha_needs_a_fixed_capacity_on_s2():
    mh = validate(RunPlan, {"duration_s": 5, "topology": "multihop", "uplinks": {"s2": {"load": 2}},
                            "groups": [{"clusters": 1, "workers_per_cluster": 1, "switch": "s1"},
                                       {"name": "S2", "clusters": 1, "workers_per_cluster": 1, "switch": "s2"}]})
    with pytest.raises(ConfigError, match="α needs a fixed one"):
        plan_with(mh, [("alpha", 0.5)])


@pytest.mark.parametrize(("args", "message"), [
    (["--load", "2", "--rate-pps", "3"], "give one of them"),
    (["--load", "2", "--ideal"], "--ideal means no bottleneck, but --load is 2.0"),
    (["--load", "2", "--tc"], "give --rate-pps with --tc"),
    (["--load", "0"], "0"),
    (["--load", "2", "--backend", "local"], "Invalid value for --load: the local backend cannot honour it"),
    (["--load", "2", "compare", "fig8"], "drop `olaf train --load`"),
])
def test_olaf_train_load_option_errors_name_it(args, message):
    r = CliRunner().invoke(main, ["train", "--env", "CartPole-v1", "--budget-s", "5", *args])
    assert r.exit_code == 2 and message in r.output, r.output

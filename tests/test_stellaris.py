"""Stellaris' staleness control at the PS (Stellaris §V-C): Eq. 4's scale and Eq. 3's flush rule on
hand-computed cases, their state in the checkpoint, the PS's staleness estimate and the real PS
over UDP in the stellaris mode; the confirmation rule of "solved"."""

import time
from contextlib import contextmanager

import numpy as np
import pytest
from hostnet import AckReceiver, loopback_net, running

from olaf.hosts.checkpoint import read_checkpoint
from olaf.hosts.global_model import GlobalModel
from olaf.hosts.modes import Aggregator, Mode, ModeParams, staleness_scale
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.hosts.staleness import StalenessTracker
from olaf.plan.workload import MODES, first_solved
from olaf.rundir.jsonl import read_jsonl
from olaf.rundir.records import FlushRecord, UpdateRecord
from olaf.update import Update
from olaf.wire import UPDATE_PORT, encode_update

ONE = 1 << 24
R1 = 1 << 16
HANG_S = 10.0


def upd(cluster, worker, grads, seq=1, count=1, reward=R1, chunk=0, k=1):
    return Update(cluster_id=cluster, worker_id=worker, seq=seq, count=count, reward_sum=reward,
                  gen_ts=time.time_ns(), grads=tuple(grads), chunk=chunk, num_chunks=k)


@pytest.mark.parametrize(("delta", "v", "want"), [(0, 3, 1.0), (1, 3, 1.0), (8, 3, 0.5), (27, 3, 1 / 3), (16, 4, 0.5),
                                                  (9, 2, 1 / 3), (None, 3, 1.0), (5, None, 1.0)])
def test_eq4_scale_by_hand(delta, v, want):
    assert staleness_scale(delta, v) == pytest.approx(want)


def test_eq4_refuses_bad_values():
    with pytest.raises(ValueError, match="v must be"):
        staleness_scale(3, 0)
    with pytest.raises(ValueError, match="staleness"):
        staleness_scale(-1, 3)


def test_modes_of_the_plan_are_the_ps_modes():
    assert MODES == tuple(m.value for m in Mode)


def test_eq3_rounds_thresholds_and_the_floor_by_hand():
    """Rounds of 2 worker updates, d = 0.5, β_min = 1. Round 0 is pure asynchrony (every update is
    due at once) and sets δ_max = 6; round 1: β = 6·0.5 = 3, so a window of δ 5 waits and one more
    update of δ 0 brings its mean to 2.5 ≤ 3; round 2 (4 flushed): β = 6·0.25 = 1.5; round 3:
    6·0.125 = 0.75 → the floor 1."""
    agg = Aggregator(ModeParams(mode=Mode.STELLARIS, round_updates=2, stellaris_decay=0.5, beta_min=1.0,
                                round_timeout_ms=50))
    assert agg.beta(0) == float("inf")
    assert agg.add(upd(0, 1, [ONE]), "10.0.0.1", 0, staleness=4)
    agg.take(0)
    assert agg.add(upd(0, 2, [ONE]), "10.0.0.2", 0, staleness=6)
    agg.take(0)
    assert agg.delta_max[0] == 6.0 and agg.round(0) == 1 and agg.beta(0) == 3.0
    assert not agg.add(upd(0, 1, [ONE], seq=2), "10.0.0.1", 1_000_000, staleness=5)
    assert agg.windows[0].mean_staleness == 5.0
    assert not agg.due(50_999_999) and agg.due(51_000_000)  # the cutoff: 50 ms after the first update
    assert agg.add(upd(0, 2, [3 * ONE], seq=2), "10.0.0.2", 2_000_000, staleness=0)
    w = agg.take(0)
    assert (w.count, w.mean_staleness, w.grad_sum.tolist()) == (2, 2.5, [4 * ONE])
    assert agg.round(0) == 2 and agg.beta(0) == 1.5 and agg.delta_max[0] == 6.0  # δ_max only from round 0
    agg.add(upd(0, 1, [ONE], seq=3), "10.0.0.1", 0, staleness=1)
    agg.add(upd(0, 2, [ONE], seq=3), "10.0.0.2", 0, staleness=1)
    agg.take(0)
    assert agg.round(0) == 3 and agg.beta(0) == 1.0


def test_eq3_window_sums_scaled_directions_and_its_state_survives_a_checkpoint():
    agg = Aggregator(ModeParams(mode=Mode.STELLARIS, round_updates=1))
    agg.add(upd(0, 1, [ONE, 0]), "10.0.0.1", 0, staleness=3)  # round 0: due at once
    agg.take(0)
    assert not agg.add(upd(0, 1, [ONE, 2 * ONE], seq=2), "10.0.0.1", 5, staleness=8, scale=0.5)
    state = agg.state(num_chunks=2, chunk_len=2)
    assert state["aggr_window"].tolist() == [[1, R1, 1, 1], [0, 0, 0, 0]]
    assert state["aggr_window_grad"][0].tolist() == [0.5 * ONE, ONE] and state["aggr_flushed"].tolist() == [1, 0]
    again = Aggregator(ModeParams(mode=Mode.STELLARIS, round_updates=1))
    again.load_state(state, t_ns=99)
    w = again.windows[0]
    assert (w.first_ns, w.count, w.mean_staleness, w.grad_sum.tolist()) == (99, 1, 8.0, [0.5 * ONE, ONE])
    assert again.delta_max == {0: 3.0} and again.round(0) == 1 and again.beta(0) == pytest.approx(3 * 0.96)
    with pytest.raises(ValueError, match="inconsistent"):
        again.load_state({**state, "aggr_window": np.zeros((3, 4), dtype=np.int64)}, t_ns=0)


def test_stellaris_mode_needs_its_round_and_checks_its_knobs():
    with pytest.raises(ValueError, match="round_updates"):
        ModeParams(mode=Mode.STELLARIS)
    for kw, field in (({"stellaris_decay": 0.0}, "stellaris_decay"), ({"stellaris_decay": 1.5}, "stellaris_decay"),
                      ({"beta_min": -1.0}, "beta_min"), ({"round_updates": 0}, "round_updates")):
        with pytest.raises(ValueError, match=field):
            ModeParams(mode=Mode.STELLARIS, **{"round_updates": 3, **kw})
    with pytest.raises(ValueError, match="staleness"):
        Aggregator(ModeParams(mode=Mode.STELLARIS, round_updates=3)).add(upd(0, 1, [ONE]), "10.0.0.1", 0)


def test_a_scaled_update_moves_the_model_by_its_factor():
    m = GlobalModel(lr=1.0, step="sgd")
    m.init([0, 0])
    m.apply(upd(0, 1, [ONE, -ONE]), scale=0.5)
    assert m.weights.tolist() == [0.5, -0.5] and m.version() == 1


@contextmanager
def ps_and_two_workers(tmp_path, **cfg):
    """A real PS (SGD, γ 1; the workers' ack wait 60 s: they read every answer before sending
    again) in a thread and two worker sockets A and B; yields ``(ps, a, b, ps_address)`` and stops
    the PS when the block ends."""
    ip = loopback_net()
    ps = ParameterServer(PsConfig(bind_ip=ip(100), lr=1.0, step="sgd", out_dir=tmp_path, flush_s=0,
                                  worker_ack_wait_ms=60_000, **cfg))
    a, b = AckReceiver(ip(1)), AckReceiver(ip(2))
    try:
        with running(ps.run):
            assert ps.ready.wait(HANG_S)
            yield ps, a, b, (ip(100), UPDATE_PORT)
            ps.stop.set()
    finally:
        a.close()
        b.close()


def _ps_records(path):
    recs = read_jsonl(path).records
    return [r for r in recs if isinstance(r, UpdateRecord)], [r for r in recs if isinstance(r, FlushRecord)]


def test_the_ps_estimates_staleness_from_its_last_answer_to_each_worker(tmp_path):
    """Async, Eq. 4 with v = 1. Worker A's updates 1 and 2 are δ̂ 0 (each starts from A's last
    answer); B's update (its base: the INIT, version 0; the model is at 2) is δ̂ 2, applied at
    1/2 of its size; A's update 3 (its last answer carried version 2, the model is at 3) is δ̂ 1.
    Each record has the slice's version after it."""
    with ps_and_two_workers(tmp_path, staleness_root=1) as (_, a, b, dst):
        a.send_to(encode_update(upd(0, 1, [0]), init=True), dst)
        a.next()
        for seq in (1, 2):
            a.send_to(encode_update(upd(0, 1, [ONE], seq=seq)), dst)
            assert a.next().weights == (seq * ONE,)
        b.send_to(encode_update(upd(1, 2, [ONE])), dst)
        assert b.next().weights == (2 * ONE + ONE // 2,)  # δ̂ 2, v 1: half
        a.send_to(encode_update(upd(0, 1, [ONE], seq=3)), dst)
        assert a.next().weights == (3 * ONE + ONE // 2,)  # δ̂ 1: whole
    ups, _ = _ps_records(tmp_path / "ps.jsonl")
    assert [(r.init, r.staleness, r.version) for r in ups] == [(True, None, 0), (False, 0, 1), (False, 0, 2),
                                                               (False, 2, 3), (False, 1, 4)]


def test_the_stellaris_ps_over_udp_holds_a_stale_update_until_a_fresh_one_lowers_the_mean(tmp_path):
    """Stellaris with workers A and B of one cluster (one ACK per cluster, to its latest sender),
    rounds of 2 worker updates, d = 0.5, β_min = 0. Round 0 applies each update at once: A's (δ̂ 0,
    answered at version 1) and B's (its base is the INIT: δ̂ 1, answered at 2), so δ_max = 1 and
    β_1 = 0.5. In round 1 A's update (answered at 1, the model at 2: δ̂ 1) waits, unanswered, until
    B's (δ̂ 0) brings the window's mean to 0.5; the flush applies their mean and answers the cluster.
    The checkpoint keeps the rounds."""
    modes = ModeParams(mode="stellaris", round_updates=2, stellaris_decay=0.5, beta_min=0.0, round_timeout_ms=60_000)
    with ps_and_two_workers(tmp_path, modes=modes) as (_, a, b, dst):
        for host, worker in ((a, 1), (b, 2)):  # both INITs: A's sets the weights
            host.send_to(encode_update(upd(0, worker, [0]), init=True), dst)
            host.next()
        a.send_to(encode_update(upd(0, 1, [ONE])), dst)
        assert a.next().weights == (ONE,)
        b.send_to(encode_update(upd(0, 2, [ONE])), dst)
        assert b.next().weights == (2 * ONE,)
        a.send_to(encode_update(upd(0, 1, [3 * ONE], seq=2)), dst)
        b.send_to(encode_update(upd(0, 2, [ONE], seq=2)), dst)
        assert b.next().weights == (4 * ONE,)  # 2 + mean(3, 1)
    ups, flushes = _ps_records(tmp_path / "ps.jsonl")
    assert [r.staleness for r in ups if not r.init] == [0, 1, 1, 0]
    assert [(f.count, f.staleness, f.beta, f.acks) for f in flushes] == [(1, 0.0, None, 1), (1, 1.0, None, 1),
                                                                          (2, 0.5, 0.5, 1)]
    ck = read_checkpoint(tmp_path / "ps.checkpoint.npz")
    assert ck.state["aggr_flushed"].tolist() == [4] and ck.state["aggr_delta_max"].tolist() == [1.0]


@pytest.mark.parametrize(("means", "want"), [([150, 201, 195], 1), ([201, 189, 205, 199], 2), ([201], None),
                                             ([201, 150], None), ([100, 200, 190], 1)])
def test_solved_needs_the_next_evaluation_to_confirm(means, want):
    assert first_solved([(100, m) for m in means], 200) == want
    assert first_solved([(99, m) for m in means], 200) is None  # fewer than 100 episodes never solve


def test_the_estimate_takes_the_first_answer_within_the_workers_wait_as_the_next_base():
    """A worker with a 100 ms ack wait: after its update at t = 1 s it adopts the first ACK sent
    within 100 ms (version 3), not one sent later (version 5, adopted one iteration later, when it
    is the newest it held at its next update); without a wait it adopts only what it held when its
    update left."""
    ms = 1_000_000
    t = StalenessTracker(worker_ack_wait_ns=100 * ms)
    k = (0, 1, 0)
    t.on_ack(k, 0, 0)                            # the INIT's answer
    assert t.on_update(k, 1000 * ms, 2) == 2     # base: the INIT
    t.on_ack(k, 1050 * ms, 3)                    # within the wait: its next base
    t.on_ack(k, 1300 * ms, 5)                    # too late for that iteration
    assert t.on_update(k, 2000 * ms, 6) == 3     # 6 − 3
    assert t.on_update(k, 3000 * ms, 7) == 2     # 7 − 5: what it held when its previous update left
    no_wait = StalenessTracker()
    no_wait.on_update(k, 1000 * ms, 0)
    no_wait.on_ack(k, 1000 * ms + 1, 1)          # its own answer, a microsecond later: one iteration late
    assert no_wait.on_update(k, 2000 * ms, 4) == 4
    assert no_wait.on_update(k, 3000 * ms, 5) == 4  # 5 − 1
    with pytest.raises(ValueError, match="worker_ack_wait_ns"):
        StalenessTracker(-1)


def test_without_a_switch_a_flush_answers_every_worker_of_a_cluster(tmp_path):
    """A synchronous round of two workers of one cluster over loopback: with ack_each_worker each
    worker gets the round's ACK (nothing multicasts the cluster's one ACK), echoing its own update."""
    modes = ModeParams(mode="sync", sync_workers=2, round_timeout_ms=60_000)
    with ps_and_two_workers(tmp_path, modes=modes, ack_each_worker=True) as (_, a, b, dst):
        for host, worker in ((a, 1), (b, 2)):
            host.send_to(encode_update(upd(0, worker, [0]), init=True), dst)
            host.next()
        a.send_to(encode_update(upd(0, 1, [ONE], seq=5)), dst)
        b.send_to(encode_update(upd(0, 2, [3 * ONE], seq=9)), dst)
        ack_a, ack_b = a.next(), b.next()
    assert ack_a.weights == ack_b.weights == (2 * ONE,)  # 0 + mean(1, 3)
    assert (ack_a.worker_id, ack_a.seq, ack_b.worker_id, ack_b.seq) == (1, 5, 2, 9)

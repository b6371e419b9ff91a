"""PS training modes (paper Fig. 2) and optimizer steps: the window logic, and the real PS over UDP.

Sync waits for every worker's update, then broadcasts one ACK per cluster; periodic aggregation
flushes after K updates or T ms; the SGD and Adam steps on hand-computed numbers.
"""

import math
import threading
import time

import numpy as np
import pytest
from hostnet import AckReceiver, loopback_net, running

from olaf.fixedpoint import INT32_MIN
from olaf.hosts.global_model import GlobalModel, Outcome
from olaf.hosts.modes import Aggregator, Mode, ModeParams
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.update import Update
from olaf.wire import UPDATE_PORT, encode_update

ONE = 1 << 24
R1 = 1 << 16


T0 = time.time_ns()  # a real CLOCK_REALTIME gen_ts: the PS rejects ones far from its lifetime


@pytest.fixture(autouse=True)
def _fresh_t0():
    """T0 near each test's PS start: taken at import, it is minutes old when the whole suite runs
    (the PS's 60 s gen_ts slack, olaf/hosts/trust.py, then rejects every update)."""
    global T0
    T0 = time.time_ns()


def upd(cluster, worker, reward, grads, count=1, seq=1):
    return Update(cluster_id=cluster, worker_id=worker, seq=seq, count=count, reward_sum=reward, gen_ts=T0 + seq,
                  grads=tuple(grads))


# -- window logic -------------------------------------------------------------------------------


def test_sync_round_closes_only_when_every_worker_sent():
    agg = Aggregator(ModeParams(mode=Mode.SYNC, sync_workers=3, round_timeout_ms=50))
    assert not agg.add(upd(0, 1, R1, [ONE]), "10.0.0.1", 0)
    assert not agg.add(upd(0, 1, R1, [ONE], seq=2), "10.0.0.1", 10)  # an aggregate counts its workers:
    assert agg.add(upd(1, 1, 4 * R1, [2 * ONE], count=1), "10.0.1.1", 20)  # 1 + 1 + 1 = 3: full
    w = agg.take()
    assert (w.count, w.updates, w.reward_sum, w.grad_sum.tolist()) == (3, 3, 6 * R1, [4 * ONE])
    assert sorted(w.clusters) == [0, 1] and w.clusters[0].seq == 2
    assert agg.deadline_ns() is None
    # a lost update: the round's cutoff timer closes it 50 ms after its first update
    agg.add(upd(0, 1, R1, [ONE]), "10.0.0.1", 1_000_000)
    assert not agg.due(50_999_999) and agg.due(51_000_000)


def test_periodic_aggregation_flushes_by_k_and_by_t():
    agg = Aggregator(ModeParams(mode=Mode.ASYNC_WITH_AGGR, aggr_k=4, aggr_t_ms=20))
    assert not agg.add(upd(0, 1, R1, [ONE]), "a", 0)
    assert agg.add(upd(0, 2, R1, [ONE], count=3), "b", 5)  # a switch aggregate of 3: 1 + 3 >= K
    assert agg.take().count == 4
    agg.add(upd(2, 1, R1, [ONE]), "c", 100_000_000)
    assert agg.deadline_ns() == 120_000_000 and not agg.due(119_999_999) and agg.due(120_000_000)
    assert agg.take().count == 1
    with pytest.raises(ValueError, match="no open window"):
        agg.take()


def test_mode_parameters_are_checked():
    with pytest.raises(ValueError, match="--sync-workers"):
        ModeParams(mode="sync")
    with pytest.raises(ValueError, match="mode='bulk' must be one of async, async_with_aggr, sync"):
        ModeParams(mode="bulk")
    with pytest.raises(ValueError, match="aggr_k=0"):
        ModeParams(mode="async_with_aggr", aggr_k=0)


# -- optimizer steps ---------------------------------------------------------------------------


def test_sgd_step_by_hand_and_no_gating():
    m = GlobalModel(lr=0.5, step="sgd")
    assert not m.gate
    m.init([ONE, 0])
    assert m.apply(upd(0, 1, 2 * R1, [2 * ONE, -ONE])) is Outcome.ACCEPTED  # w = (1, 0) + 0.5 * (2, -1)
    assert m.apply(upd(0, 1, -5 * R1, [4 * ONE, 0], count=2)) is Outcome.ACCEPTED  # lower reward, applied: g = (2, 0)
    assert m.ack_weights() == (3 * ONE, -ONE // 2) and m.global_reward() == -2.5


def test_adam_step_by_hand():
    m = GlobalModel(lr=0.1, step="adam")
    m.init([0, 0])
    m.apply(upd(0, 1, 0, [ONE, -4 * ONE]))
    # first Adam step: m_hat = g, v_hat = g^2 -> each element moves by lr * sign(g)
    np.testing.assert_allclose(m.weights, [0.1, -0.1], rtol=1e-6)
    m.apply(upd(0, 1, 0, [-ONE, -4 * ONE]))
    b1, b2 = 0.9, 0.999
    mh = (b1 * 0.1 * 1 + 0.1 * -1) / (1 - b1**2), (b1 * 0.1 * -4 + 0.1 * -4) / (1 - b1**2)
    vh = (b2 * 0.001 * 1 + 0.001 * 1) / (1 - b2**2), (b2 * 0.001 * 16 + 0.001 * 16) / (1 - b2**2)
    np.testing.assert_allclose(m.weights, [0.1 + 0.1 * mh[0] / (math.sqrt(vh[0]) + 1e-8),
                                           -0.1 + 0.1 * mh[1] / (math.sqrt(vh[1]) + 1e-8)], rtol=1e-6)


def test_nesterov_step_by_hand():
    m = GlobalModel(lr=0.5, step="nesterov")
    assert not m.gate
    m.init([0, 0])
    m.apply(upd(0, 1, 0, [ONE, -2 * ONE]))
    # b = g = (1, -2); w += 0.5 * (g + 0.9 b) = 0.5 * 1.9 * g
    np.testing.assert_allclose(m.weights, [0.95, -1.9], rtol=1e-6)
    m.apply(upd(0, 1, 0, [ONE, 0]))
    # b = 0.9 (1, -2) + (1, 0) = (1.9, -1.8); w += 0.5 * ((1, 0) + 0.9 b) = 0.5 * (2.71, -1.62)
    np.testing.assert_allclose(m.weights, [0.95 + 1.355, -1.9 - 0.81], rtol=1e-6)


def test_paper_step_with_gating_switched_off():
    m = GlobalModel(lr=1.0, step="paper", gate=False)
    m.init([0])
    m.apply(upd(0, 1, 5 * R1, [2 * ONE]))  # g_a = 2, w = 2
    assert m.apply(upd(0, 1, R1, [0])) is Outcome.ACCEPTED  # lower reward applied anyway: g_a = 1, w = 3
    assert m.ack_weights() == (3 * ONE,)


# -- the real PS over UDP -------------------------------------------------------------------


def poll(cond, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while time.monotonic() < deadline:
        if cond():
            return True
        tick.wait(0.01)
    return cond()


def test_sync_ps_over_udp_waits_for_every_worker_then_acks_each_cluster(tmp_path):
    ip = loopback_net()
    cfg = PsConfig(bind_ip=ip(100), lr=1.0, step="sgd", modes=ModeParams(mode="sync", sync_workers=2),
                   out_dir=tmp_path, flush_s=0)
    stop = threading.Event()
    ps = ParameterServer(cfg, stop)
    w1, w2 = AckReceiver(ip(1)), AckReceiver(ip(2))
    try:
        with running(ps.run):
            w1.send_to(encode_update(upd(0, 1, 0, [ONE]), init=True), (ip(100), UPDATE_PORT))
            assert w1.next().weights == (ONE,)  # INITs are answered at once
            w2.send_to(encode_update(upd(1, 1, 0, [5 * ONE]), init=True), (ip(100), UPDATE_PORT))
            assert w2.next().weights == (ONE,)  # the first INIT initialised the model
            w1.send_to(encode_update(upd(0, 1, 3 * R1, [2 * ONE])), (ip(100), UPDATE_PORT))
            w2.send_to(encode_update(upd(1, 1, R1, [4 * ONE], seq=7)), (ip(100), UPDATE_PORT))
            a1, a2 = w1.next(), w2.next()
            # the round waited for worker 2: worker 1's first ACK since its INIT's is the aggregate's,
            # one aggregate: mean direction (2 + 4) / 2 = 3, w = 1 + 3; mean reward 2
            assert a1.weights == a2.weights == (4 * ONE,)
            assert (a1.cluster_id, a1.seq, a2.cluster_id, a2.seq) == (0, 1, 1, 7)
            assert a1.global_reward == 2 * R1
            stop.set()
    finally:
        w1.close()
        w2.close()
    s = ps.summary(0, 1, "signal")
    assert (s["flushes"], s["accepted"], s["updates"], s["mode"]) == (1, 1, 2, "sync")
    assert s["acks_sent"] == 4  # two INITs, then one per cluster at the round's end


def test_periodic_ps_over_udp_flushes_by_time(tmp_path):
    ip = loopback_net()
    cfg = PsConfig(bind_ip=ip(100), lr=1.0, step="sgd",
                   modes=ModeParams(mode="async_with_aggr", aggr_k=100, aggr_t_ms=150), out_dir=tmp_path, flush_s=0)
    stop = threading.Event()
    ps = ParameterServer(cfg, stop)
    w1 = AckReceiver(ip(1))
    try:
        with running(ps.run):
            w1.send_to(encode_update(upd(0, 1, 0, [0]), init=True), (ip(100), UPDATE_PORT))
            assert w1.next().global_reward == INT32_MIN
            t = time.monotonic()
            w1.send_to(encode_update(upd(0, 1, R1, [ONE])), (ip(100), UPDATE_PORT))
            a = w1.next()  # K = 100 never fills: the 150 ms timer flushes the window
            assert time.monotonic() - t >= 0.14 and a.weights == (ONE,)
            stop.set()
    finally:
        w1.close()
    assert poll(lambda: (tmp_path / "ps.jsonl").exists() and '"by":"time"' in (tmp_path / "ps.jsonl").read_text(), 5)

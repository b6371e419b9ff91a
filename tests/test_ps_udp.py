"""The PS over real UDP on loopback: INIT handling, reward gating, ACK content, malformed datagrams."""

import json
import time

import pytest
from hostnet import AckReceiver, loopback_net, running

from olaf.fixedpoint import INT32_MIN
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.update import Update
from olaf.wire import UPDATE_PORT, OlafAck, OlafUpdate, encode_update

ONE = 1 << 24
R1 = 1 << 16


@pytest.fixture
def ps_and_worker(tmp_path):
    ip = loopback_net()
    ps = ParameterServer(PsConfig(bind_ip=ip(100), out_dir=tmp_path, flush_s=0))
    rx = AckReceiver(ip(1))
    with running(ps.run) as out:
        assert ps.ready.wait(5)
        yield ps, rx, (ip(100), UPDATE_PORT), out
        ps.stop.set()
    rx.close()


T0 = time.time_ns()  # a real CLOCK_REALTIME gen_ts: the PS rejects ones far from its lifetime


@pytest.fixture(autouse=True)
def _fresh_t0():
    """T0 near each test's PS start: taken at import, it is minutes old when the whole suite runs
    (the PS's 60 s gen_ts slack, olaf/hosts/trust.py, then rejects every update)."""
    global T0
    T0 = time.time_ns()


def u(seq, reward_sum=0, grads=(0, 0), count=1, cluster_id=3, worker_id=7):
    return Update(cluster_id=cluster_id, worker_id=worker_id, seq=seq, count=count, reward_sum=reward_sum,
                  gen_ts=T0 + seq, grads=tuple(grads))


def test_ps_session(ps_and_worker, tmp_path):
    ps, rx, ps_addr, out = ps_and_worker

    # an update before any INIT: refused (no_model), without weights, global reward -inf, fields echoed
    rx.send_to(encode_update(u(1, 5 * R1, (ONE, ONE))), ps_addr)
    a = rx.next()
    assert (a.cluster_id, a.worker_id, a.seq, a.count, a.gen_ts) == (3, 7, 1, 1, T0 + 1)
    assert a.weights == () and a.global_reward == INT32_MIN and a.status is None and a.refusal == "no_model"

    # the first INIT initialises w, a second one is ACKed but ignored
    rx.send_to(encode_update(u(0, 0, (ONE, 0)), init=True), ps_addr)
    assert rx.next().weights == (ONE, 0)
    rx.send_to(encode_update(u(0, 0, (9, 9), worker_id=8), init=True), ps_addr)
    a = rx.next()
    assert a.weights == (ONE, 0) and a.worker_id == 8

    # reward-gated averaged gradient (same numbers as tests/test_global_model.py)
    rx.send_to(encode_update(u(2, 2 * R1, (2 * ONE, -ONE))), ps_addr)
    a = rx.next()
    assert a.weights == (round(1.002 * ONE), round(-0.001 * ONE)) and a.global_reward == 2 * R1
    rx.send_to(encode_update(u(3, 9 * R1, (4 * ONE, 8 * ONE), count=4)), ps_addr)
    a = rx.next()
    assert a.count == 4 and a.weights == (round(1.0035 * ONE), round(-0.0005 * ONE))
    rx.send_to(encode_update(u(4, 2 * R1, (ONE, ONE))), ps_addr)  # worse reward: rejected
    a = rx.next()
    assert a.seq == 4 and a.weights == (round(1.0035 * ONE), round(-0.0005 * ONE)) and a.global_reward == 9 * R1 // 4

    # malformed datagrams: counted, dropped, never answered; a wrong-size update: refused
    # (docs/protocol.md "Refusal"), never applied; then the ACK of the valid update sent after them
    good = encode_update(u(5, 0))
    bad = {
        "short": good[:10],
        "length": good + b"\0",
        "version": bytes(OlafUpdate(version=1, grads=[0, 0])),
        "chunk": bytes(OlafUpdate(chunk=2, num_chunks=2, grads=[0, 0])),
        "type": bytes(OlafAck(weights=[1, 2])),
        "count": bytes(OlafUpdate(count=0, grads=[0, 0])),
    }
    for data in bad.values():
        rx.send_to(data, ps_addr)
    rx.send_to(encode_update(u(6, 0, (1, 2, 3))), ps_addr)
    rx.send_to(good, ps_addr)
    r = rx.next()
    assert (r.seq, r.refusal, r.weights, r.global_reward) == (6, "num_grads", (), INT32_MIN)
    assert rx.next().seq == 5

    ps.stop.set()
    assert out["done"].wait(5)  # the summary is written when run() returns
    s = out["result"]
    assert (s["malformed"], s["wrong_size"], s["inits"], s["updates"]) == (6, 1, 2, 6)
    assert s["wrong_size_reasons"] == {"num_grads": 1}
    assert s["refusal_reasons"] == {"no_model": 1, "num_grads": 1} and s["refusals_sent"] == 2
    assert (s["initialised"], s["init_ignored"], s["before_init"], s["accepted"], s["rejected"]) == (1, 1, 1, 2, 2)
    assert s["acks_sent"] == 6 and s["per_cluster"]["3"]["worker_updates"] == 9
    assert set(s["malformed_reasons"]) == {
        "update too short", "update length mismatch", "update has unknown version N (this receiver speaks N)",
        "update has msg_type N (ack), expected N", "update has count N (a worker sends count N)",
        "update has chunk N of num_chunks N (need chunk < num_chunks)"}
    assert json.loads((tmp_path / "ps.summary.json").read_text()) == s

    log = [json.loads(line) for line in (tmp_path / "ps.jsonl").read_text().splitlines()]
    assert log[0]["ev"] == "start" and log[0]["role"] == "ps" and log[-1]["ev"] == "stop"
    ups = [r for r in log if r["ev"] == "update"]
    assert [r["outcome"] for r in ups] == ["before_init", "initialised", "init_ignored", "accepted", "accepted",
                                           "rejected", "wrong_size", "rejected"]
    r = ups[4]
    assert (r["cluster_id"], r["worker_id"], r["seq"], r["count"], r["gen_ts"], r["reward"], r["global_reward"],
            r["src"]) == (3, 7, 3, 4, T0 + 3, 2.25, 2.25, rx.ip)
    assert all(r["t_ns"] > 1.5e18 for r in ups)  # CLOCK_REALTIME ns
    assert sum(r["ev"] == "malformed" for r in log) == 6
    assert [r.get("reason") for r in ups if r["outcome"] == "wrong_size"] == ["num_grads"]

"""The PS's trust checks over real UDP on loopback (olaf/hosts/trust.py, docs/reliability.md), and the
workers' check of the ACK's source."""

import json
import select
import socket
import time

import pytest
from hostnet import AckReceiver, loopback_net, running
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olaf.hosts.argv import ps_argv
from olaf.hosts.commands import ps_cmd, ps_config
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.trust import Reject, TrustPolicy
from olaf.hosts.worker import Worker, WorkerConfig
from olaf.update import Update
from olaf.wire import UPDATE_PORT, encode_ack, encode_update

ONE = 1 << 24
R1 = 1 << 16


def upd(seq, reward_sum=R1, gen_ts=None, grads=(ONE, 0)):
    return Update(cluster_id=0, worker_id=1, seq=seq, count=1, reward_sum=reward_sum,
                  gen_ts=time.time_ns() if gen_ts is None else gen_ts, grads=tuple(grads))


@pytest.fixture
def deployment(tmp_path):
    """A PS trusting workers .1 and .2 (INIT from .1) and three senders: .1, .2 and an outsider .9."""
    ip = loopback_net()
    trust = TrustPolicy(allowed_sources=frozenset({ip(1), ip(2)}), init_from=ip(1))
    ps = ParameterServer(PsConfig(bind_ip=ip(100), out_dir=tmp_path, flush_s=0, trust=trust))
    hosts = {n: AckReceiver(ip(n)) for n in (1, 2, 9)}
    for h in hosts.values():
        h.sock.settimeout(2.0)
    with running(ps.run):
        assert ps.ready.wait(5)
        yield ps, hosts, (ip(100), UPDATE_PORT)
        ps.stop.set()
    for h in hosts.values():
        h.close()


def wait_datagrams(ps, n, timeout=5.0):
    deadline = time.monotonic() + timeout
    while ps.counters["datagrams"] < n:
        assert time.monotonic() < deadline, f"PS saw {ps.counters['datagrams']} of {n} datagrams"
        time.sleep(0.01)


def final_summary(ps, out_dir, timeout=5.0) -> dict:
    """Stop the PS and return its summary (written when its loop has ended: every counter is final)."""
    ps.stop.set()
    deadline = time.monotonic() + timeout
    while not (out_dir / "ps.summary.json").exists():
        assert time.monotonic() < deadline, "the PS wrote no summary"
        time.sleep(0.01)
    return json.loads((out_dir / "ps.summary.json").read_text())


def nothing_received(host) -> bool:
    """No datagram waits at ``host`` (checked without waiting)."""
    readable, _, _ = select.select([host.sock], [], [], 0)
    return not readable


def test_only_the_configured_worker_initialises_and_outsiders_are_ignored(deployment, tmp_path):
    """The PS handles datagrams one at a time in arrival order, so the ACK of a later datagram
    shows an earlier one was handled; its final counters show which were answered."""
    ps, h, addr = deployment
    h[9].send_to(encode_update(upd(1, grads=(5 * ONE, 5 * ONE)), init=True), addr)   # forged INIT
    h[2].send_to(encode_update(upd(1, grads=(7 * ONE, 7 * ONE)), init=True), addr)   # a worker, not the first
    r = h[2].next()
    assert (r.weights, r.refusal) == ((), "init_source")                               # refused, weights unset
    h[1].send_to(encode_update(upd(1, grads=(ONE, 2 * ONE)), init=True), addr)
    assert h[1].next().weights == (ONE, 2 * ONE)
    h[9].send_to(encode_update(upd(2)), addr)                                           # outsider's update
    h[2].send_to(encode_update(upd(2, grads=(7 * ONE, 7 * ONE)), init=True), addr)   # a late INIT, answered
    assert h[2].next().weights == (ONE, 2 * ONE)
    s = final_summary(ps, tmp_path)
    assert s["datagrams"] == 5 and s["acks_sent"] == 2 and s["refusals_sent"] == 1, s  # the outsider got none
    assert s["refusal_reasons"] == {"init_source": 1}
    assert nothing_received(h[9])
    assert s["weights"] == [1.0, 2.0]
    assert s["untrusted"] == 2 and s["untrusted_reasons"] == {Reject.SOURCE.value: 2}
    assert s["init_source"] == 1 and s["initialised"] == 1


def test_extreme_reward_and_gen_ts_are_rejected_and_learning_goes_on(deployment, tmp_path):
    ps, h, addr = deployment
    h[1].send_to(encode_update(upd(1, grads=(0, 0)), init=True), addr)
    h[1].next()
    for u in (upd(2, reward_sum=0x7FFFFFFF), upd(3, gen_ts=(1 << 64) - 1),
              upd(4, gen_ts=time.time_ns() + 3600 * 10**9), upd(5, gen_ts=1)):
        h[1].send_to(encode_update(u), addr)
    h[2].send_to(encode_update(upd(6, reward_sum=3 * R1)), addr)
    a = h[2].next()
    # accepted: none of the four before it was applied (a reward of 32768 would gate 3.0 out)
    assert a.seq == 6 and ps.model.global_reward() == 3.0 and ps.counters["accepted"] == 1
    h[1].send_to(encode_update(upd(7, reward_sum=4 * R1)), addr)
    # 2-5 were refused, each named, in order; then the ACK of 7
    assert [(r.seq, r.refusal, r.weights) for r in (h[1].next() for _ in range(4))] == [
        (2, "reward", ()), (3, "gen_ts", ()), (4, "gen_ts", ()), (5, "gen_ts", ())]
    assert h[1].next().seq == 7
    s = final_summary(ps, tmp_path)
    assert s["untrusted_reasons"] == s["refusal_reasons"] == {"reward": 1, "gen_ts": 3}
    assert s["datagrams"] == 7 and s["acks_sent"] == 3 and s["refusals_sent"] == 4 and s["accepted"] == 2, s


def test_untrusted_and_malformed_logging_is_bounded(deployment, tmp_path):
    ps, h, addr = deployment
    for i in range(150):
        h[9].send_to(encode_update(upd(i)), addr)
        h[9].send_to(b"junk", addr)
    wait_datagrams(ps, 300)
    s = final_summary(ps, tmp_path)
    evs = [json.loads(line)["ev"] for line in (tmp_path / "ps.jsonl").read_text().splitlines()]
    assert evs.count("untrusted") == 100 and evs.count("malformed") == 100
    assert s["untrusted"] == 150 and s["malformed"] == 150 and s["untrusted_reasons"] == {"source": 150}


datagram = st.one_of(
    st.binary(max_size=64),                                                            # junk
    st.builds(lambda seq, r, init: encode_update(upd(seq, reward_sum=r), init=init),  # fine or extreme rewards
              st.integers(0, 0xFFFFFFFF), st.sampled_from([R1, -R1, 0x7FFFFFFF, -(1 << 31)]), st.booleans()),
    st.builds(lambda seq, ts: encode_update(upd(seq, gen_ts=ts)), st.integers(0, 0xFFFFFFFF),
              st.sampled_from([0, 1, (1 << 64) - 1])),
    st.builds(lambda seq: encode_update(upd(seq, grads=(1, 2, 3))), st.integers(0, 0xFFFFFFFF)),  # wrong size
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from([1, 2, 9]), datagram), min_size=1, max_size=30))
def test_every_datagram_is_acked_or_counted(deployment, sends):
    """Async PS: datagrams in = ACKs + malformed + untrusted + wrong_size + refused before any model,
    exactly; and every refusal sent answers an untrusted (not by source), wrong-size or early datagram."""
    ps, h, addr = deployment
    keys = ("datagrams", "acks_sent", "malformed", "untrusted", "ack_errors", "refusals_sent")
    reasons = ("reward", "gen_ts")  # refusals of untrusted datagrams: counted in untrusted as well
    before = dict(ps.counters)
    before_reasons = dict(ps.refusal_reasons)

    def delta():
        d = {k: ps.counters[k] - before.get(k, 0) for k in keys}
        d["refused_untrusted"] = sum(ps.refusal_reasons[r] - before_reasons.get(r, 0) for r in reasons)
        return d

    def accounted(d):
        return (d["acks_sent"] + d["refusals_sent"] - d["refused_untrusted"] + d["ack_errors"] + d["malformed"]
                + d["untrusted"])

    for host, data in sends:
        h[host].send_to(data, addr)
    # The PS counts a datagram on receipt and its outcome once handled: wait for the outcomes
    # (the deadline only guards against a hang), then check that nothing was counted twice or lost.
    deadline = time.monotonic() + 5.0
    while accounted(delta()) < len(sends) and time.monotonic() < deadline:
        time.sleep(0.01)
    d = delta()
    assert d["datagrams"] == len(sends) == accounted(d), d
    assert d["refused_untrusted"] <= d["untrusted"]


def test_trust_options_round_trip_through_the_command_line():
    cfg = PsConfig(bind_ip="10.0.0.100", trust=TrustPolicy(allowed_sources=frozenset({"10.0.1.2", "10.0.1.3"}),
                                                           init_from="10.0.1.2", max_abs_reward=500.0,
                                                           gen_ts_slack_s=5.0),
                   lr_final=0.05, lr_decay_updates=6000, checkpoint_s=5.0)
    ctx = ps_cmd.make_context("ps", ps_argv(cfg))
    assert ps_config(ctx.params) == cfg


def test_a_worker_ignores_acks_that_do_not_come_from_the_ps(tmp_path):
    ip = loopback_net()
    ps_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ps_sock.bind((ip(100), UPDATE_PORT))
    forger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    forger.bind((ip(9), UPDATE_PORT))
    w = Worker(WorkerConfig(ps_ip=ip(100), bind_ip=ip(1), schedule=ScheduleSpec(period_ms=50, duration_s=30),
                            out_dir=tmp_path, name="w1", cluster_id=0, worker_id=1))
    with running(w.run):
        ps_sock.settimeout(5)
        data, src = ps_sock.recvfrom(65535)          # the worker's INIT
        forged = encode_ack(cluster_id=0, worker_id=1, seq=0, count=1, global_reward=0, gen_ts=0,
                            weights=(0,) * w.num_weights)
        forger.sendto(forged, src)
        deadline = time.monotonic() + 5
        while w.counters["acks_foreign"] < 1:
            assert time.monotonic() < deadline, "the forged ACK never reached the worker"
            time.sleep(0.01)
        assert w.counters["acks"] == 0 and not w.model_acked
        ps_sock.sendto(forged, src)                  # the same ACK from the PS's address is taken
        while not w.model_acked:
            assert time.monotonic() < deadline, "the PS's ACK was not taken"
            time.sleep(0.01)
        w.stop.set()
    ps_sock.close()
    forger.close()


def test_socket_buffer_drops_are_counted(tmp_path):
    """A real UDP flood into a PS with the smallest receive buffer, while the PS is held (its
    thread has not started reading): the kernel drops datagrams and the next one received
    carries the count (SO_RXQ_OVFL), so the PS's summary has them."""
    ip = loopback_net()
    ps = ParameterServer(PsConfig(bind_ip=ip(100), out_dir=tmp_path, flush_s=0, rcvbuf=4096))
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.bind((ip(1), 0))
    data = encode_update(upd(1, grads=(0,) * 300))
    for _ in range(500):                       # 1.2 kB each into a 4 kB (kernel: 8 kB) buffer nobody reads
        sender.sendto(data, (ip(100), UPDATE_PORT))
    with running(ps.run):
        assert ps.ready.wait(5)
        deadline = time.monotonic() + 5
        while ps.counters["socket_drops"] == 0:
            sender.sendto(data, (ip(100), UPDATE_PORT))   # a datagram that arrives after the drops
            assert time.monotonic() < deadline, "no SO_RXQ_OVFL count arrived"
            time.sleep(0.01)
        ps.stop.set()
    sender.close()
    s = json.loads((tmp_path / "ps.summary.json").read_text())
    assert s["socket_drops"] >= 400 and s["socket_drops"] + s["datagrams"] >= 500, s


def test_a_burst_of_one_update_from_every_worker_fits_the_job_ps_buffer(tmp_path):
    """A job's PS asks for a receive buffer that holds one update of every worker at once
    (``olaf.hosts.jobconfig.ps_config``: 27 workers × K = 28 chunks of Stable-Baselines3's network
    at MTU 1500). The whole burst queues while the PS is held, then every chunk is received: none
    is dropped by the kernel. Where the kernel caps the buffer (``net.core.rmem_max`` without
    ``CAP_NET_ADMIN``) the PS's summary says so and how to lift the cap instead."""
    from olaf.chunks import Chunking
    from olaf.constants import ELEMENT_LEN, UPDATE_HEADER_LEN
    from olaf.udpsock import rcvbuf_for

    ip = loopback_net()
    chunking = Chunking.for_model(9797, 1500)
    workers, k, length = 27, chunking.num_chunks, chunking.chunk_len
    rcvbuf = rcvbuf_for(workers * k, UPDATE_HEADER_LEN + ELEMENT_LEN * length)
    ps = ParameterServer(PsConfig(bind_ip=ip(100), out_dir=tmp_path, flush_s=0, rcvbuf=rcvbuf, num_params=9797))
    if ps.rcvbuf_bytes < 2 * rcvbuf:
        s = ps.summary(0, 0, "signal")
        ps.sock.close()
        assert "net.core.rmem_max" in s["rcvbuf_advice"] and str(rcvbuf) in s["rcvbuf_advice"]
        pytest.skip(f"the kernel caps receive buffers at net.core.rmem_max: {s['rcvbuf_advice']}")
    senders = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(workers)]
    for n, s in enumerate(senders):
        s.bind((ip(n + 1), 0))
        u = upd(1, grads=(0,) * length)
        for chunk in range(k):
            s.sendto(encode_update(u.with_(chunk=chunk, num_chunks=k)), (ip(100), UPDATE_PORT))
    with running(ps.run):
        assert ps.ready.wait(5)
        wait_datagrams(ps, workers * k)
        summary = final_summary(ps, tmp_path)
    for s in senders:
        s.close()
    assert summary["datagrams"] == workers * k and summary["socket_drops"] == 0
    assert summary["rcvbuf_bytes"] >= 2 * rcvbuf and summary["rcvbuf_advice"] is None

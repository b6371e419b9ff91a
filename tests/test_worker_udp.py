"""The worker over real UDP on loopback, fed ACKs with a queue status as an Olaf switch writes them.

The responder below answers every update with an ACK built by olaf.wire, with the
STATUS_VALID queue status (N, Q_max) and cluster/worker ids an Olaf switch would
stamp — what the worker sees behind a switch — so transmission control runs on
real ACKs and real timers.
"""

import json
import socket
import threading
import time

import numpy as np
import pytest
from hostnet import loopback_net, running

from olaf.hosts.runlog import StartFileError
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.task import BanditTask, TaskParams
from olaf.hosts.worker import Worker, WorkerConfig
from olaf.plan.tx import TxParams
from olaf.wire import ACK_PORT, UPDATE_PORT, QueueStatus, ack_layer, parse_update, update_is_init

G = 8
ACK_WEIGHTS = [(i - 4) << 20 for i in range(G)]  # the "global model" the responder hands out


def updates_received(sock: socket.socket, stop: threading.Event):
    """Each datagram ``sock`` receives until ``stop``: ``(bytes, the update it decodes to, source
    address)`` (``sock`` has a timeout, so ``stop`` is polled)."""
    while not stop.is_set():
        try:
            data, (src, _) = sock.recvfrom(65535)
        except socket.timeout:
            continue
        yield data, parse_update(data), src


def respond(sock: socket.socket, stop: threading.Event, status: QueueStatus, worker_ip: str) -> None:
    """Answer each update with an ACK (stamped ids 5/9, ``status``); first send one malformed ACK."""
    sock.sendto(b"\x12\x00garbage", (worker_ip, ACK_PORT))
    for data, u, src in updates_received(sock, stop):
        weights = list(u.grads) if update_is_init(data) else ACK_WEIGHTS
        ack = ack_layer(cluster_id=5, worker_id=9, seq=u.seq, count=u.count, global_reward=u.reward_sum,
                        gen_ts=u.gen_ts, weights=weights, status=status)
        sock.sendto(bytes(ack), (src, ACK_PORT))


def run_worker(tmp_path, status, tx, updates=150, period_ms=4.0):
    """Run a worker for ``updates`` generations against :func:`respond`. The worker waits for the
    ACK of its INIT (and of each sent update) before it generates, so every generation has the
    status (``ack_wait_ms`` only guards against a lost ACK; loopback loses none)."""
    ip = loopback_net()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((ip(100), UPDATE_PORT))
    sock.settimeout(0.05)
    stop = threading.Event()
    cfg = WorkerConfig(ps_ip=ip(100), bind_ip=ip(1), schedule=ScheduleSpec(period_ms=period_ms, max_updates=updates),
                       task=TaskParams(num_weights=G, batch=64), tx=tx, seed=11, linger_ms=50,
                       ack_wait_ms=5000, out_dir=tmp_path, name="w")
    worker = Worker(cfg)
    with running(lambda: respond(sock, stop, status, ip(1))):
        summary = worker.run()
        stop.set()
    sock.close()
    log = [json.loads(line) for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    return summary, log, cfg


CONGESTED = QueueStatus(queue_util=3, active_clusters=12, queue_size=3)  # P_s = Q_max/N = 0.25


def test_congested_worker_sends_with_probability_qmax_over_n(tmp_path):
    s, log, cfg = run_worker(tmp_path, CONGESTED, TxParams(enabled=True, delta_t_ms=60_000, v_per_s=1.0))
    gens = [r for r in log if r["ev"] == "gen"]
    assert s["generated"] == len(gens) == 150 and s["sent"] + s["skipped"] == 150
    draws = [g for g in gens if g["reason"] == "draw"]
    assert len(draws) == 150  # the INIT's ACK brought the status before the first generation
    for g in draws:
        assert g["p_send"] == 0.25 and g["N"] == 12 and g["q_max"] == 3
        assert g["sent"] == (g["draw"] < 0.25)
    assert 15 <= s["sent"] <= 60
    # skipped generations are folded into the next sent update
    sent = [g for g in gens if g["sent"]]
    trailing = len(gens) - 1 - max(i for i, g in enumerate(gens) if g["sent"])
    assert sum(g["folded"] for g in sent) == 150 - trailing
    assert [g["seq"] for g in sent] == list(range(1, len(sent) + 1))
    # ACKs: one malformed counted and dropped; own ACKs teach the switch-stamped ids; the weights are adopted
    assert s["acks_malformed"] == 1 and s["acks_own"] == s["acks"] == s["sent"] + s["init_sent"]
    assert (s["learned_cluster_id"], s["learned_worker_id"]) == (5, 9)
    task = BanditTask(cfg.task, np.random.default_rng(0))
    j_ack = task.expected_reward(np.asarray(ACK_WEIGHTS) / (1 << 24))
    assert gens[-1]["exp_reward"] == pytest.approx(j_ack)
    acks = [r for r in log if r["ev"] == "ack"]
    assert all(a["status"] == [3, 12, 3] and a["own"] for a in acks)


def test_stale_feedback_raises_the_send_probability(tmp_path):
    # f(Δ̂) = v·(Δ̂ − Δ̄_T) with Δ̄_T = 10 ms, v = 20 /s: +0.02 per ms beyond 10 ms without an ACK
    s, log, _ = run_worker(tmp_path, CONGESTED, TxParams(enabled=True, delta_t_ms=10, v_per_s=20))
    draws = [g for g in log if g["ev"] == "gen" and g["reason"] == "draw"]
    for g in draws:
        dh = g["delta_hat_ms"]
        expected = min(0.25 + (0.02 * (dh - 10) if dh > 10 else 0.0), 1.0)
        assert g["p_send"] == pytest.approx(expected)
        assert g["sent"] == (g["draw"] < g["p_send"])
    assert any(g["p_send"] > 0.25 for g in draws)  # skipping makes the feedback stale
    boosted = s["sent"] / s["generated"]
    plain, _, _ = run_worker(tmp_path / "plain", CONGESTED, TxParams(enabled=True, delta_t_ms=60_000, v_per_s=20))
    assert boosted > plain["sent"] / plain["generated"]


@pytest.mark.parametrize("status, tx, reason", [
    (QueueStatus(1, 2, 3), TxParams(enabled=True), "uncongested"),  # N <= Q_max: send at will
    (CONGESTED, TxParams(enabled=False), "tc_off"),
])
def test_uncongested_or_disabled_sends_everything(tmp_path, status, tx, reason):
    s, log, _ = run_worker(tmp_path, status, tx, updates=40)
    assert s["sent"] == s["generated"] == 40 and s["skipped"] == 0
    assert {g["reason"] for g in log if g["ev"] == "gen"} <= {reason, "no_status"}


def test_start_at_and_start_file(tmp_path):
    ip = loopback_net()
    t_req = time.time_ns() + 200_000_000
    sched = ScheduleSpec(period_ms=5, max_updates=3)
    w = Worker(WorkerConfig(ps_ip=ip(100), bind_ip=ip(1), schedule=sched, start_at_ns=t_req, linger_ms=0,
                            out_dir=tmp_path, name="a"))
    s = w.run()
    go = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()][1]
    assert go["ev"] == "go" and go["requested_t0_ns"] == t_req and go["t0_ns"] == t_req <= go["t_ns"]
    assert s["generated"] == 3 and s["t0_ns"] == t_req

    # a start file with garbage: clear error, log and summary still written
    (tmp_path / "go").write_text("soon")
    w = Worker(WorkerConfig(ps_ip=ip(100), bind_ip=ip(2), schedule=sched, start_file=tmp_path / "go",
                            out_dir=tmp_path, name="b"))
    with pytest.raises(StartFileError, match="integer"):
        w.run()
    assert json.loads((tmp_path / "b.summary.json").read_text())["stop_reason"] == "bad_start_file"

    # stopped while waiting for a start file that never comes: clean stop, nothing generated
    stop = threading.Event()
    w = Worker(WorkerConfig(ps_ip=ip(100), bind_ip=ip(3), schedule=sched, start_file=tmp_path / "never",
                            out_dir=tmp_path, name="c"), stop)
    with running(w.run) as out:
        assert poll_file(tmp_path / "c.jsonl")
        stop.set()
    assert out["result"]["stop_reason"] == "signal" and out["result"]["generated"] == 0


def poll_file(path, timeout_s=5.0):
    ev = threading.Event()
    deadline = time.monotonic() + timeout_s
    while not path.exists() and time.monotonic() < deadline:
        ev.wait(0.02)
    return path.exists()


CHUNK_MTU = 20 + 8 + 38 + 4 * 4
"""A chunk holds at most 4 elements: the bandit's 10 weights travel as K = 3 chunks of 4."""
SLICE_1 = (7 << 20,) * 4
"""What the responder below hands out as the global model's slice 1 (0.4375 each)."""


def respond_slice_1(sock: socket.socket, stop: threading.Event, status: QueueStatus, got: list) -> None:
    """Record every chunk; answer every INIT chunk with its own elements (the worker's initial
    weights come back as the global model) and, of an update, chunk 1 only, with :data:`SLICE_1`."""
    for data, u, src in updates_received(sock, stop):
        init = update_is_init(data)
        got.append((init, u))
        if init or u.chunk == 1:
            weights = list(u.grads[:4 if u.chunk < 2 else 2]) if init else SLICE_1
            ack = ack_layer(cluster_id=5, worker_id=9, seq=u.seq, count=u.count, global_reward=u.reward_sum,
                            gen_ts=u.gen_ts, weights=weights, status=status, chunk=u.chunk, num_chunks=u.num_chunks)
            sock.sendto(bytes(ack), (src, ACK_PORT))


def test_a_chunked_worker_sends_all_k_chunks_or_none_and_adopts_slices_between_iterations(tmp_path):
    """K = 3 with transmission control congested (P_s = 1/4): every sent update is 3 datagrams with
    one seq, reward and gen_ts (the last zero-padded), a skipped one none; the first ACK slice of an
    update is its ACK event (one per update); ACK slices are stored and adopted at the start of the
    next iteration only, written over the task's own weights slice by slice. (No ``ack_wait_ms``:
    the answers here are partial, so a wait would always run out; ``linger_ms`` lets the last
    answer in.)"""
    ip = loopback_net()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((ip(100), UPDATE_PORT))
    sock.settimeout(0.05)
    stop, got = threading.Event(), []
    cfg = WorkerConfig(ps_ip=ip(100), bind_ip=ip(1), schedule=ScheduleSpec(period_ms=2.0, max_updates=60),
                       task=TaskParams(num_weights=10, batch=20), tx=TxParams(enabled=True, delta_t_ms=60_000),
                       mtu=CHUNK_MTU, seed=3, linger_ms=2000, ack_wait_ms=0, out_dir=tmp_path, name="w")
    worker = Worker(cfg)
    assert worker.chunking.num_chunks == 3
    initial = worker.initial_weights.copy()
    with running(lambda: respond_slice_1(sock, stop, CONGESTED, got)):
        s = worker.run()
        stop.set()
    sock.close()
    log = [json.loads(line) for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    updates = [u for init, u in got if not init]
    assert 5 <= s["sent"] <= 40 and s["skipped"] == 60 - s["sent"]
    assert s["num_chunks"] == 3 and s["chunks_sent"] == len(updates) == 3 * s["sent"]
    by_seq = {}
    for u in updates:
        by_seq.setdefault(u.seq, []).append(u)
    assert sorted(by_seq) == list(range(1, s["sent"] + 1))
    for parts in by_seq.values():
        assert [p.chunk for p in parts] == [0, 1, 2] and {p.num_chunks for p in parts} == {3}
        assert len({(p.reward_sum, p.gen_ts, p.count) for p in parts}) == 1
        assert parts[2].grads[2:] == (0, 0)  # elements 8, 9 and two of padding
    sent = [g for g in log if g["ev"] == "gen" and g["sent"]]
    assert all(g["chunks"] == 3 for g in sent)
    # one ACK slice per update came back: counted per update; the first slice of each answered
    # update (and of the INIT's answer) is an ACK event, its other slices are not
    assert s["ack_slices"] == {"1": s["sent"]}
    assert s["ack_events"] == s["sent"] + s["init_sent"] and s["acks"] == s["sent"] + 3 * s["init_sent"]
    # slices are adopted at the start of an iteration, whatever arrived before it; the iteration's
    # gen record is written at its end, so a slice that arrived while it computed is logged before
    # it and adopted by the next one: every adopted slice arrived (was logged) before the record of
    # the iteration that adopted it, each arrival is adopted at most once, and adoption happened
    arrived = adopted = 0
    for r in log:
        if r["ev"] == "ack" and r["weights"]:
            arrived += 1
        elif r["ev"] == "gen":
            assert 0 <= r["adopted_slices"] <= 3 and r["adopted"] == (r["adopted_slices"] > 0)
            adopted += r["adopted_slices"]
            assert adopted <= arrived, (adopted, arrived)
    assert adopted > 0
    w = worker.task.weights  # slice 1 is the global one, slices 0 and 2 the INIT's (own initial weights)
    np.testing.assert_allclose(w[4:8], 0.4375)
    np.testing.assert_allclose(np.r_[w[:4], w[8:]], np.r_[initial[:4], initial[8:]], atol=2 ** -24)


def test_acks_of_another_model_size_are_counted_not_adopted(tmp_path):
    """A K = 1 ACK reaching a K = 3 worker (another deployment): counted in acks_wrong_size, never an
    ACK event nor weights; the worker keeps sending its INIT since no slice of its model arrived."""
    ip = loopback_net()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((ip(100), UPDATE_PORT))
    stop = threading.Event()
    cfg = WorkerConfig(ps_ip=ip(100), bind_ip=ip(1), schedule=ScheduleSpec(period_ms=1.0, max_updates=3),
                       task=TaskParams(num_weights=10, batch=20), mtu=CHUNK_MTU, linger_ms=0, out_dir=tmp_path,
                       name="w", ack_wait_ms=0)

    def answer_whole() -> None:
        sock.settimeout(0.05)
        for _data, u, src in updates_received(sock, stop):
            sock.sendto(bytes(ack_layer(cluster_id=0, worker_id=0, seq=u.seq, count=1, global_reward=0, gen_ts=u.gen_ts,
                                        weights=[0] * 10)), (src, ACK_PORT))

    with running(answer_whole):
        s = Worker(cfg).run()
        stop.set()
    sock.close()
    assert s["acks_wrong_size"] == s["acks"] >= 1 and s["ack_events"] == 0 and not s["model_acked"]


def test_ack_wait_ends_on_the_whole_answer_so_iterations_start_from_every_slice(tmp_path):
    """K = 3, every chunk answered with its slice: with ``ack_wait_ms`` the worker waits after each
    sent update until all 3 slices of an answer are in (the wait only guards against loss), so every
    iteration after a sent update adopts all 3 slices, never a mix of new and old ones."""
    ip = loopback_net()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((ip(100), UPDATE_PORT))
    sock.settimeout(0.05)
    stop = threading.Event()

    def answer_every_chunk() -> None:
        for _data, u, src in updates_received(sock, stop):
            n = 4 if u.chunk < 2 else 2
            sock.sendto(bytes(ack_layer(cluster_id=5, worker_id=9, seq=u.seq, count=u.count, global_reward=0,
                                        gen_ts=u.gen_ts, weights=SLICE_1[:n], chunk=u.chunk,
                                        num_chunks=u.num_chunks)), (src, ACK_PORT))

    cfg = WorkerConfig(ps_ip=ip(100), bind_ip=ip(1), schedule=ScheduleSpec(period_ms=2.0, max_updates=20),
                       task=TaskParams(num_weights=10, batch=20), mtu=CHUNK_MTU, seed=4, linger_ms=0,
                       ack_wait_ms=30_000, out_dir=tmp_path, name="w")
    with running(answer_every_chunk):
        s = Worker(cfg).run()
        stop.set()
    sock.close()
    gens = [json.loads(line) for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    gens = [g for g in gens if g["ev"] == "gen"]
    assert s["sent"] == 20 and s["ack_slices"] == {"3": 20}
    after_send = [b for a, b in zip(gens, gens[1:]) if a["sent"]]
    assert len(after_send) == 19 and all(g["adopted_slices"] == 3 for g in after_send)

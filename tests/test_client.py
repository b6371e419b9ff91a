"""olaf.client against a real PS (olaf.hosts.ps in a thread) over loopback UDP: INIT and the global
model in K = 3 chunks, push, the whole answer, adoption, saturation, AoM; skipped pushes folded into
the next sent one under a congested queue status; forged datagrams; bad arguments; torch inputs.

The congested status comes from :class:`StatusWriter`, which stands where an Olaf switch stands
(between the client and the PS) and does the one thing of a switch these tests need: it writes a
queue status into every ACK. The PS behind it is the real one."""

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hostnet import loopback_net, running

from olaf.chunks import ChunkingError
from olaf.client import OlafClient, as_vector
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.plan.tx import TxParams
from olaf.wire import ACK_PORT, UPDATE_PORT, QueueStatus, encode_ack, parse_ack, parse_update

P = 10
MTU = 20 + 8 + 38 + 4 * 4
"""A chunk holds at most 4 elements: P = 10 travels as K = 3 chunks of 4."""
LR = 0.5
Q = 2.0 ** -24
"""One Q7.24 step."""
HANG_S = 10.0
"""Waits end on their condition; this only guards against a hang."""
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def ps(tmp_path):
    """A real PS for P = 10 in 3 chunks (``w ← w + 0.5·g``, no reward gate) on ``ip(100)``; yields
    ``(ip, address, result)``; ``result["result"]`` is its summary once the test's block ended."""
    ip = loopback_net()
    server = ParameterServer(PsConfig(bind_ip=ip(100), out_dir=tmp_path, flush_s=0, num_params=P, mtu=MTU, lr=LR,
                                      step="sgd"))
    with running(server.run) as out:
        assert server.ready.wait(HANG_S)
        yield ip, (ip(100), UPDATE_PORT), out
        server.stop.set()


def test_init_push_answer_and_adoption_in_three_chunks(ps, tmp_path):
    ip, ps_addr, _ = ps
    w0 = np.linspace(-1, 1, P)
    seen = []
    with OlafClient(ps_addr, num_params=P, bind=(ip(1), ACK_PORT), mtu=MTU, on_weights=seen.append) as c:
        assert c.chunking.num_chunks == 3 and c.latest_weights() is None and c.stats().aom_ms is None
        assert c.init(w0, wait_s=HANG_S)
        np.testing.assert_allclose(c.latest_weights(np.float64), w0, atol=Q)
        a = c.adopt(np.zeros(P))
        assert a.slices == 3
        np.testing.assert_allclose(a.weights, w0, atol=Q)
        assert c.adopt(np.zeros(P)).weights is None  # nothing arrived since

        r = c.push(np.full(P, 0.25, dtype=np.float32), 1.5)
        assert (r.sent, r.reason, r.seq, r.chunks, r.folded, r.saturated, r.reward) == (True, "tc_off", 1, 3, 1, 0, 1.5)
        assert c.wait_for_answer(HANG_S)
        a = c.adopt(np.zeros(P, dtype=np.float32))
        assert a.slices == 3 and a.weights.dtype == np.float32
        np.testing.assert_allclose(a.weights, w0 + LR * 0.25, atol=1e-6)
        deadline = time.monotonic() + HANG_S  # on_weights runs in the receive thread, maybe after the wait ended
        while not (seen and np.allclose(seen[-1], w0 + LR * 0.25, atol=1e-6)):
            assert time.monotonic() < deadline, f"on_weights never had the answer: {seen}"
            time.sleep(0.01)
        st = c.stats()
        age_bound_ms = (time.time_ns() - r.gen_ts) / 1e6
        assert 0 <= st.aom_ms <= age_bound_ms  # every slice reflects the update generated at r.gen_ts

        # elements outside Q7.24's range are clamped and counted, never wrapped
        big = np.zeros(P)
        big[[0, 9]] = 1000.0, -np.inf
        r2 = c.push(big, 2.0)
        assert r2.sent and r2.saturated == 2 and r2.seq == 2
        assert c.wait_for_answer(HANG_S)
        st = c.stats()
    n_init = st.init_sent
    assert (st.pushes, st.sent, st.skipped, st.chunks_sent) == (2, 2, 0, 6)
    assert (st.saturated_elements, st.saturated_updates) == (2, 1)
    assert st.acks == st.acks_own == 3 * n_init + 6 and st.acks_others == 0
    assert st.ack_events == 1 + 2 and st.ack_slices == {"3": 2}  # INIT repetitions are one update (same gen_ts)
    assert (st.acks_foreign, st.acks_malformed, st.acks_wrong_size) == (0, 0, 0)
    assert st.model_acked and st.last_seq == 2 and st.last_global_reward == 2.0


class StatusWriter:
    """Between a client and the real PS, where an Olaf switch would be: forwards each update to the
    PS and each of its ACKs to the client, writing ``status`` (STATUS_VALID) into the ACK. The client
    sees it as the PS (``front`` is ``(ip, 50100)``); the PS answers its address on port 50101."""

    def __init__(self, ip: str, ps_addr: tuple[str, int], client_ip: str, status: QueueStatus) -> None:
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind((ip, UPDATE_PORT))
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.bind((ip, ACK_PORT))
        for s in (self.front, self.back):
            s.settimeout(0.05)
        self.ps_addr, self.client, self.status = ps_addr, (client_ip, ACK_PORT), status
        self.stop = threading.Event()

    def _datagrams(self, sock: socket.socket):
        while not self.stop.is_set():
            try:
                yield sock.recvfrom(65535)[0]
            except socket.timeout:
                continue

    def forward_updates(self) -> None:
        for data in self._datagrams(self.front):
            self.back.sendto(data, self.ps_addr)

    def forward_acks(self) -> None:
        for data in self._datagrams(self.back):
            a = parse_ack(data)
            self.front.sendto(encode_ack(cluster_id=a.cluster_id, worker_id=a.worker_id, seq=a.seq, count=a.count,
                                         global_reward=a.global_reward, gen_ts=a.gen_ts, weights=a.weights,
                                         status=self.status, chunk=a.chunk, num_chunks=a.num_chunks), self.client)

    def close(self) -> None:
        self.front.close()
        self.back.close()


def test_skipped_pushes_are_folded_into_the_next_sent_update(ps, tmp_path):
    """N = 12 clusters for Q_max = 3 (P_s = 1/4, no staleness boost): transmission control skips
    most pushes; each sent update carries the episode-weighted mean reward and the sample-weighted
    mean direction of every push since the previous one, and the PS applies exactly those."""
    ip, ps_addr, out = ps
    relay = StatusWriter(ip(50), ps_addr, ip(1), QueueStatus(queue_util=3, active_clusters=12, queue_size=3))
    pushes, sent, folds = [], [], []
    with running(relay.forward_updates), running(relay.forward_acks):
        with OlafClient((ip(50), UPDATE_PORT), num_params=P, bind=(ip(1), ACK_PORT), mtu=MTU, rng=7,
                        tx=TxParams(enabled=True, delta_t_ms=60_000, v_per_s=1.0)) as c:
            assert c.init(np.zeros(P), wait_s=HANG_S)  # its ACK brings the status
            for i in range(30):
                d, reward, samples, episodes = np.full(P, 0.01 * (i + 1)), float(i), i + 1, 1 + i % 3
                r = c.push(d, reward, samples=samples, episodes=episodes)
                assert r.reason == "draw" and r.decision.p_send == 0.25
                pushes.append((d, reward, samples, episodes))
                if r.sent:
                    ds, rs, ss, es = zip(*pushes)
                    assert r.folded == len(pushes)
                    folds.append(r.folded)
                    assert r.reward == pytest.approx(np.dot(rs, es) / sum(es))
                    sent.append(sum(di * si for di, si in zip(ds, ss)) / sum(ss))
                    pushes = []
                    assert c.wait_for_answer(HANG_S)
            st = c.stats()
            # the global model (the PS's, in its last answer) is the initial zeros plus LR x each folded direction
            np.testing.assert_allclose(c.latest_weights(np.float64), LR * np.sum(sent, axis=0), atol=len(sent) * Q)
        relay.stop.set()
    relay.close()
    assert 3 <= st.sent <= 20 and st.skipped == 30 - st.sent == st.skipped_by_reason["draw"]
    assert st.chunks_sent == 3 * st.sent and st.ack_slices == {"3": st.sent}
    assert max(folds) > 1  # some sent update carried skipped pushes
    log = [json.loads(line) for line in (tmp_path / "ps.jsonl").read_text().splitlines()]
    got = [r for r in log if r["ev"] == "update" and not r["init"]]
    assert len(got) == 3 * st.sent and {r["outcome"] for r in got} == {"accepted"}


def test_datagrams_not_from_the_ps_are_counted_and_dropped(ps):
    ip, ps_addr, _ = ps
    forger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    forger.bind((ip(9), UPDATE_PORT))  # the PS's port, another address
    with OlafClient(ps_addr, num_params=P, bind=(ip(1), ACK_PORT), mtu=MTU) as c:
        assert c.init(np.zeros(P), wait_s=HANG_S)
        c.adopt(np.zeros(P))
        before = c.stats()
        forged = encode_ack(cluster_id=0, worker_id=0, seq=1, count=1, global_reward=0, gen_ts=time.time_ns(),
                            weights=(5 << 24,) * 4, chunk=0, num_chunks=3)
        forger.sendto(forged, (ip(1), ACK_PORT))
        forger.sendto(b"\x22garbage", (ip(1), ACK_PORT))
        deadline = time.monotonic() + HANG_S
        while c.stats().acks_foreign < 2:
            assert time.monotonic() < deadline, "the forged datagrams never reached the client"
            c.poll(0.01)
        after = c.stats()
        assert (after.acks, after.acks_malformed, after.ack_events) == (before.acks, 0, before.ack_events)
        assert c.adopt(np.zeros(P)).weights is None
        np.testing.assert_array_equal(c.latest_weights(), np.zeros(P, dtype=np.float32))
    forger.close()


def test_bad_arguments_name_the_field_and_the_fix():
    ip = loopback_net()
    ps_addr = (ip(100), UPDATE_PORT)
    for kwargs, match in [
        ({"num_params": 0}, "num_params=0 must be a positive integer"),
        ({"num_params": 4, "mtu": 60}, "mtu=60 B leaves no room"),
        ({"num_params": 10**9}, "needs K = .* chunks .* allows K <= 65535"),
        ({"num_params": 4, "init_retry_s": 0}, "init_retry_s=0 must be > 0"),
        ({"num_params": 4, "init_retry_s": 2.0, "init_retry_max_s": 1.0}, "init_retry_max_s=1.0 must be finite and >= "
         "init_retry_s"),
        ({"num_params": 4, "init_retry_max_s": float("inf")}, "init_retry_max_s=inf must be finite"),
        ({"num_params": 4, "worker_id": 70_000}, "worker_id=70000 must be None or an integer in 0..65535"),
        ({"num_params": 4, "tx": {"enabled": True}}, "tx=.* must be an olaf.plan.tx.TxParams"),
        ({"num_params": 4, "bind": (ip(1), 70_000)}, "bind=.*port must be an integer in 1..65535"),
    ]:
        with pytest.raises(ValueError, match=match):
            OlafClient(ps_addr, **kwargs)
    with pytest.raises(ChunkingError):  # a ValueError, and still the chunking's own error
        OlafClient(ps_addr, num_params=10**9)
    with pytest.raises(ValueError, match=r"ps=\('1.2.3.4',\) must be an \(ip, port\) pair"):
        OlafClient(("1.2.3.4",), num_params=4)
    with pytest.raises(ValueError, match="ps='1.2.3.4:x': the port must be an integer"):
        OlafClient("1.2.3.4:x", num_params=4)

    c = OlafClient(f"{ip(100)}:{UPDATE_PORT}", num_params=4, bind=ip(1), mtu=None)
    try:
        for call, match in [
            (lambda: c.push(np.zeros(5), 1.0), "direction has 5 elements, the model has P=4"),
            (lambda: c.push(np.zeros((2, 2)), 1.0), r"direction must be a flat vector of P=4 elements, got shape \(2, 2\)"),
            (lambda: c.push([0, 0, np.nan, 0], 1.0), "direction has 1 NaN element.*index 2"),
            (lambda: c.push(np.zeros(4), float("nan")), "mean_reward=nan must be finite"),
            (lambda: c.push(np.zeros(4), None, episodes=3), "episodes=3 with mean_reward=None"),
            (lambda: c.push(np.zeros(4), 1.0, samples=0), "samples=0 must be a positive integer"),
            (lambda: c.init(np.zeros(3)), "weights has 3 elements, the model has P=4"),
            (lambda: c.wait_until(0, "forever"), "condition='forever' must be None, 'model' or 'answer'"),
        ]:
            with pytest.raises(ValueError, match=match):
                call()
        assert c.stats().pushes == 0  # a refused push folds nothing
        c.init(np.zeros(4))
        with pytest.raises(RuntimeError, match="already called"):
            c.init(np.zeros(4))
    finally:
        c.close()
    with pytest.raises(RuntimeError, match="closed"):
        c.push(np.zeros(4), 1.0)


def test_a_push_with_no_episode_is_folded_until_one_ends(ps):
    ip, ps_addr, _ = ps
    with OlafClient(ps_addr, num_params=P, bind=(ip(1), ACK_PORT), mtu=MTU) as c:
        r = c.push(np.ones(P), None)
        assert not r.sent and r.reason == "no_episode"
        r = c.push(np.zeros(P), 4.0, samples=3)
        assert r.sent and r.folded == 2 and r.reward == 4.0
        assert c.stats().skipped_by_reason == {"no_episode": 1}


def test_torch_modules_tensors_and_parameters_are_flattened_in_parameters_order():
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    flat = torch.nn.utils.parameters_to_vector(net.parameters()).detach().double().numpy()
    n = flat.size
    for x in (net, net.parameters(), list(net.parameters()), torch.nn.utils.parameters_to_vector(net.parameters())):
        np.testing.assert_array_equal(as_vector(x, n, "direction"), flat)
    with pytest.raises(ValueError, match=f"direction has {n} elements, the model has P={n + 1}"):
        as_vector(net, n + 1, "direction")


def test_the_library_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import olaf.client, olaf.hosts.worker\n"
            "print(olaf.client.as_vector([1, 2], 2, 'direction').tolist())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[1.0, 2.0]", r.stderr


@pytest.mark.parametrize("name", ["sb3_client.py", "sb3_callback.py"])
def test_the_guide_shows_the_example_files_verbatim(name):
    """docs/client.md's examples are examples/sb3_client.py and sb3_callback.py (tests/test_client_example.py
    and tests/test_integrations_sb3.py run the files)."""
    doc = (ROOT / "docs" / "client.md").read_text()
    example = (ROOT / "examples" / name).read_text()
    assert f"```python\n{example}```" in doc, f"docs/client.md's example drifted from examples/{name}: paste it again"


def test_acks_the_kernel_drops_for_a_full_receive_buffer_are_counted():
    """A client that does not read while answers arrive loses what its receive buffer cannot hold;
    the kernel's count (SO_RXQ_OVFL) reaches ``stats().socket_drops`` with the next datagram queued
    after the drops. Every datagram sent is either read (here counted as foreign: not the PS's) or
    counted as dropped."""
    from olaf.client import OlafClient

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.7", 0))
    port = probe.getsockname()[1]
    probe.close()
    with OlafClient(("127.0.0.1", 9), bind=("127.0.0.7", port), num_params=4, background=False) as c:
        c._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # the kernel's minimum: a few datagrams
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(200):
            tx.sendto(b"x" * 1000, ("127.0.0.7", port))
        c.poll(0.0)                      # takes what the buffer kept
        # the kernel stamps its drop count on a datagram as it queues it: the next one tells
        tx.sendto(b"x" * 1000, ("127.0.0.7", port))
        tx.close()
        deadline = time.monotonic() + 10   # a hang guard: loopback has queued it already
        while c.stats().acks_foreign + c.stats().socket_drops < 201 and time.monotonic() < deadline:
            c.poll(0.05)
        st = c.stats()
        assert st.socket_drops > 0 and st.acks_foreign > 1 and st.socket_drops + st.acks_foreign == 201


@pytest.mark.parametrize(("n", "want"), [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.5), (50, 0.5), (5000, 0.5)])
def test_init_repetitions_back_off_exponentially_to_the_cap(n, want):
    from olaf.client import init_retry_interval_s

    assert init_retry_interval_s(n, 0.1, 0.5) == pytest.approx(want)


def test_init_repetition_numbers_start_at_one():
    from olaf.client import init_retry_delay_s, init_retry_interval_s

    with pytest.raises(ValueError, match="numbered from 1"):
        init_retry_interval_s(0)
    with pytest.raises(ValueError, match="numbered from 1"):
        init_retry_delay_s(0, 0.5)


@pytest.mark.parametrize(("n", "u", "want"), [(1, 0.0, 0.1), (1, 0.5, 0.125), (3, 0.5, 0.5), (9, 0.0, 0.5),
                                              (9, 0.999, 0.74975)])
def test_init_repetition_delays_are_the_back_off_times_a_random_factor_below_one_and_a_half(n, u, want):
    from olaf.client import INIT_RETRY_RANDOM_FACTOR, init_retry_delay_s

    assert INIT_RETRY_RANDOM_FACTOR == 1.5
    assert init_retry_delay_s(n, u, 0.1, 0.5) == pytest.approx(want)


@pytest.mark.parametrize("u", [-0.1, 1.0, float("nan")])
def test_init_repetition_draws_outside_the_unit_interval_are_refused(u):
    from olaf.client import init_retry_delay_s

    with pytest.raises(ValueError, match=r"must be in \[0, 1\)"):
        init_retry_delay_s(1, u)


def test_init_repeats_only_the_chunks_whose_slices_have_not_come_back():
    """A peer at the PS's address answers the INIT's slices one at a time: the repetitions after an
    answer carry only the chunks still unanswered, each starting at another of them (behind a
    tail-drop queue the end of a burst is what is lost), and the INIT stops once every slice has
    come back.

    On loopback a datagram is in the peer's socket queue when ``sendto`` returns, and the client
    sends INITs and takes ACKs under one lock: once its counters show an answer taken, every INIT
    sent before is already queued at the peer (drained), and every later one is a repetition sent
    after the answer."""
    ip = loopback_net()
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind((ip(100), UPDATE_PORT))
    peer.settimeout(HANG_S)

    def next_chunk() -> tuple[int, int]:
        u = parse_update(peer.recvfrom(65535)[0])
        assert u.seq == 0  # an INIT
        return u.chunk, u.gen_ts

    def drain() -> list[int]:
        peer.setblocking(False)
        out = []
        try:
            while True:
                out.append(parse_update(peer.recvfrom(65535)[0]).chunk)
        except BlockingIOError:
            return out
        finally:
            peer.settimeout(HANG_S)

    def answer(c: OlafClient, chunk: int, gen_ts: int, acks: int) -> None:
        n = min(4, P - 4 * chunk)
        peer.sendto(encode_ack(cluster_id=0, worker_id=0, seq=0, count=1, global_reward=0, gen_ts=gen_ts,
                               weights=[chunk] * n, chunk=chunk, num_chunks=3), (ip(1), ACK_PORT))
        deadline = time.monotonic() + HANG_S
        while c.stats().acks < acks:
            assert time.monotonic() < deadline, "the client never took the answer"
            time.sleep(0.001)
        drain()

    try:
        with OlafClient((ip(100), UPDATE_PORT), num_params=P, bind=(ip(1), ACK_PORT), mtu=MTU,
                        init_retry_s=0.02, init_retry_max_s=0.05) as c:
            c.init(np.zeros(P))
            first = [next_chunk() for _ in range(3)]
            assert sorted(ch for ch, _ in first) == [0, 1, 2]
            gen_ts = first[0][1]
            answer(c, 1, gen_ts, acks=1)
            later = [next_chunk()[0] for _ in range(4)]  # two repetitions after the answer
            assert sorted(set(later)) == [0, 2] and later.count(0) == later.count(2) == 2
            assert later[0] != later[2]  # each repetition starts at another missing chunk
            answer(c, 0, gen_ts, acks=2)
            assert [next_chunk()[0] for _ in range(2)] == [2, 2]
            answer(c, 2, gen_ts, acks=3)
            assert c.wait_for_model(HANG_S)
            rounds = c.stats().init_sent
            r = c.push(np.ones(P), 1.0)
            assert r.sent
            u = parse_update(peer.recvfrom(65535)[0])  # the next datagram is the update: no INIT since
            assert (u.seq, u.gen_ts) == (r.seq, r.gen_ts)
            st = c.stats()
    finally:
        peer.close()
    assert st.init_sent == rounds
    assert 3 + 2 * 2 + 2 <= st.init_chunks_sent < 3 * st.init_sent  # the repetitions were partial


def _busy(until: threading.Event, guard_s: float) -> int:
    """Pure-Python work (the GIL held but for the interpreter's switch interval) until ``until``
    is set, as a training iteration that never calls the client; returns the rounds done."""
    deadline = time.monotonic() + guard_s
    rounds = 0
    while not until.is_set():
        assert time.monotonic() < deadline, "the sender never finished: the busy caller's socket was not drained"
        sum(i * i for i in range(2000))
        rounds += 1
    return rounds


def test_a_busy_caller_loses_no_answer_and_keeps_the_newest_slice_per_chunk(ps):
    """While the caller computes without calling the client (an iteration), the real PS answers 300
    updates (900 ACK slices) into a receive buffer that holds a few: the receive thread takes them
    all off the socket (no kernel drop), keeps only the newest slice of each chunk (the other 897
    counted as superseded, apart from drops) and hands the PS's final weights over at adoption.

    Deterministic: the updates (sent from the client's address, so the PS answers the client) go
    out one at a time, each after the client holds every slice of the previous answer; the socket
    never queues more than one answer, and the sender stalls (the test fails on its guard) unless
    the thread drains the socket during the busy loop."""
    from olaf.update import Update
    from olaf.wire import encode_update

    ip, ps_addr, out = ps
    n_updates, k = 300, 3
    with OlafClient(ps_addr, num_params=P, bind=(ip(1), ACK_PORT), mtu=MTU, rcvbuf=4096) as c:
        assert c.init(np.zeros(P), wait_s=HANG_S)
        assert c.adopt(np.zeros(P)).slices == k
        assert c.stats().rcvbuf_bytes < 64 * 1024   # a few small datagrams (Linux's minimum is ~4.6 kB)
        sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sender.bind((ip(1), 0))                     # the client's address: the PS answers to its ACK port
        done = threading.Event()
        base = c.stats().acks

        def send_all() -> None:
            try:
                for i in range(1, n_updates + 1):
                    u = Update(cluster_id=0, worker_id=7, seq=i, count=1, reward_sum=0, gen_ts=time.time_ns())
                    for chunk, part in enumerate(c.chunking.split([1 << 16] * P)):  # +2⁻⁸ per element and update
                        sender.sendto(encode_update(u.with_(grads=part, chunk=chunk, num_chunks=k)), ps_addr)
                    deadline = time.monotonic() + HANG_S
                    while c.stats().acks < base + k * i:   # the whole answer is off the socket
                        assert time.monotonic() < deadline
                        time.sleep(0.0002)
            finally:
                done.set()

        t = threading.Thread(target=send_all)
        t.start()
        _busy(done, guard_s=6 * HANG_S)
        t.join()
        sender.close()
        st = c.stats()
        assert st.acks == base + k * n_updates and st.socket_drops == 0
        assert st.slices_superseded == k * n_updates - k   # one slice per chunk kept for adoption
        a = c.adopt(np.zeros(P))
        assert a.slices == k
        np.testing.assert_allclose(a.weights, np.full(P, LR * n_updates * 2.0 ** -8), atol=1e-6)


def test_a_bind_that_fails_names_the_address_and_the_cause(tmp_path):
    """A port in use, and an address this host does not have: an OSError with the kernel's errno
    whose message says which address, why and what to do (the PS's bind says so too)."""
    import errno

    ip = loopback_net()
    with OlafClient((ip(100), UPDATE_PORT), num_params=8, bind=(ip(1), ACK_PORT)):
        with pytest.raises(OSError, match=rf"Olaf client cannot bind UDP {ip(1)}:{ACK_PORT}: .*another socket is "
                                          r"bound to it") as e:
            OlafClient((ip(100), UPDATE_PORT), num_params=8, bind=(ip(1), ACK_PORT))
        assert e.value.errno == errno.EADDRINUSE
    with pytest.raises(OSError, match=r"cannot bind UDP 192\.0\.2\.1:.*not an address of this host") as e:
        OlafClient((ip(100), UPDATE_PORT), num_params=8, bind=("192.0.2.1", ACK_PORT))
    assert e.value.errno == errno.EADDRNOTAVAIL
    with OlafClient((ip(100), UPDATE_PORT), num_params=8, bind=(ip(100), UPDATE_PORT)):
        with pytest.raises(OSError, match=rf"the PS cannot bind UDP {ip(100)}:{UPDATE_PORT}"):
            ParameterServer(PsConfig(bind_ip=ip(100), port=UPDATE_PORT, num_params=8, out_dir=tmp_path))


def test_init_that_gets_no_model_back_raises_naming_the_ps_the_size_and_what_to_check(ps):
    """No PS at the address, and a PS of another model size (which answers nothing): init(wait_s)
    raises ModelTimeout (an OlafError and a TimeoutError) with what came back and what to check;
    lenient=True returns False instead; without wait_s nothing waits and nothing raises."""
    from olaf.client import ModelTimeout, OlafError

    ip, ps_addr, out = ps
    with OlafClient((ip(77), UPDATE_PORT), num_params=P, bind=(ip(1), ACK_PORT), mtu=MTU) as c:
        with pytest.raises(ModelTimeout, match=rf"no global model from the PS at {ip(77)}:{UPDATE_PORT} within 0.3 s "
                                               rf"\(P = {P} parameters in K = 3 chunks of at most 4\): 0 of 3 slices "
                                               r"came back\. Check that `olaf ps` runs .*--num-params 10 --mtu MTU") as e:
            c.init(np.zeros(P), wait_s=0.3)
        assert isinstance(e.value, OlafError) and isinstance(e.value, TimeoutError)
    with OlafClient((ip(77), UPDATE_PORT), num_params=P, bind=(ip(1), ACK_PORT), mtu=MTU) as c:
        assert c.init(np.zeros(P), wait_s=0.2, lenient=True) is False
    with OlafClient((ip(77), UPDATE_PORT), num_params=P, bind=(ip(1), ACK_PORT), mtu=MTU) as c:
        assert c.init(np.zeros(P)) is False  # no wait: the INIT repeats in the background


def test_an_init_of_another_model_size_is_refused_at_once_naming_the_fix(ps, caplog):
    """A PS of another model size refuses the INIT (docs/protocol.md "Refusal"): init(wait_s) raises
    ModelRefused long before wait_s, even lenient, naming the reason and `olaf ps --num-params`;
    the refusal is counted, never adopted, and logged once."""
    from olaf.client import ModelRefused, OlafError

    ip, ps_addr, out = ps
    for params, mtu, reason in ((P + 6, MTU, "num_chunks"), (P, None, "num_chunks"), (P - 1, MTU, "num_grads")):
        with OlafClient(ps_addr, num_params=params, bind=(ip(2), ACK_PORT), mtu=mtu) as c:
            t0 = time.monotonic()
            with pytest.raises(ModelRefused, match=rf"refused this client's INIT \({reason}\): .*--num-params") as e:
                c.init(np.zeros(params), wait_s=60, lenient=True)
            assert time.monotonic() - t0 < 30 and isinstance(e.value, OlafError) and e.value.reason == reason
            st = c.stats()
            assert st.refusals == {reason: st.refusals_own} and st.refusals_own >= 1 and not st.model_acked
            assert c.latest_weights() is None
    assert "refused this client's INIT (num_chunks)" in caplog.text


def test_an_update_the_ps_refuses_is_warned_about_reported_and_never_restarts_the_timer(ps, caplog):
    """A mean reward beyond the PS's bound (1e6; its default bound is far below): the PS refuses it
    (docs/protocol.md "Refusal"), the client warns once naming --max-abs-reward, the answer wait ends
    on the refusal, the next push reports it, and the global model is unchanged."""
    ip, ps_addr, out = ps
    w0 = np.linspace(-1, 1, P)
    with OlafClient(ps_addr, num_params=P, bind=(ip(3), ACK_PORT), mtu=MTU) as c:
        assert c.init(w0, wait_s=HANG_S)
        c.adopt(np.zeros(P))
        events = c.stats().ack_events
        r = c.push(np.full(P, 0.25), 1e6)
        assert r.sent and r.refused == ()
        assert c.wait_for_answer(HANG_S)                  # the answer is the refusal (3 chunks: 3 refusals)
        deadline = time.monotonic() + HANG_S
        while c.stats().refusals_own < 3:
            assert time.monotonic() < deadline, c.stats()
            time.sleep(0.01)
        st = c.stats()
        assert st.refusals == {"reward": 3} and st.ack_events == events  # no answer with the model
        assert c.adopt(np.zeros(P)).weights is None       # nothing to adopt: the PS applied nothing
        np.testing.assert_allclose(c.latest_weights(np.float64), w0, atol=Q)
        r2 = c.push(np.zeros(P), 1.0)
        assert r2.refused == ("reward",) * 3
        assert c.wait_for_answer(HANG_S)                  # a trusted update is applied and answered
    warned = [m for m in caplog.messages if "refused update 1 (reward)" in m]
    assert len(warned) == 1 and "--max-abs-reward" in warned[0]


def test_an_event_hook_that_raises_never_leaves_the_client_deaf(ps, caplog):
    """The first ACK's hook raises (a caller's bug, or a hook called before its owner is built):
    the client logs and counts it, and its receive thread takes every later ACK (the model, the
    answer to a push)."""
    from olaf.client import ClientEvents

    class FirstAckRaises(ClientEvents):
        def __init__(self) -> None:
            self.acks = 0

        def ack(self, t_ns, ack, own) -> None:
            self.acks += 1
            if self.acks == 1:
                raise AttributeError("'Worker' object has no attribute 'chunking'")

    ip, ps_addr, _ = ps
    events = FirstAckRaises()
    with OlafClient(ps_addr, num_params=P, bind=(ip(1), ACK_PORT), mtu=MTU, events=events) as c:
        assert c.init(np.zeros(P), wait_s=HANG_S)
        assert c.push(np.full(P, 0.25, dtype=np.float32), 1.5).sent and c.wait_for_answer(HANG_S)
        st = c.stats()
    assert st.callback_errors == 1 and st.handling_errors == 0 and events.acks >= 4 and st.acks == events.acks
    assert "events.ack hook failed" in caplog.text


def test_a_clamped_update_is_said_on_the_log_not_only_counted(caplog):
    """An element outside Q7.24's range is clamped and applied; the client says so (a warning naming
    how many and the largest) besides counting it."""
    import logging

    from hostnet import loopback_net

    from olaf.ps import serve

    ip = loopback_net()
    with serve(ip(100), num_params=4, step="sgd", lr=1.0, gate=False) as ps:
        with OlafClient(ps.address, num_params=4, bind=ip(1), mtu=None) as client:
            client.init(np.zeros(4), wait_s=30)
            with caplog.at_level(logging.WARNING, logger="olaf.client.core"):
                r = client.push(np.array([1e6, 0.0, -np.inf, 1.0]), 1.0)
            assert r.sent and r.saturated == 2 and client.stats().saturated_elements == 2
    assert any("2 of its 4 elements were outside Q7.24" in m and "largest |x| inf" in m for m in caplog.messages)

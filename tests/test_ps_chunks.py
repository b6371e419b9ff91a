"""A model in K chunks at the PS (docs/hosts.md "Chunks at the PS"): every piece of state is per
slice (the reward gate, g_a, Adam's moments, the schedule), each chunk is applied to its slice and
answered with that slice's unpadded weights, a chunk of another model size is refused by field, the
per-(cluster, chunk) accounting balances, and a checkpoint keeps (and a resumed PS continues from)
the per-slice state — in the model and over real UDP on loopback, through `olaf ps` and SIGTERM."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hostnet import AckReceiver, loopback_net, running

from olaf.chunks import Chunking
from olaf.hosts.checkpoint import CheckpointError, read_checkpoint, write_checkpoint
from olaf.hosts.global_model import GlobalModel, ModelMismatch, Outcome
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.update import Update
from olaf.wire import UPDATE_PORT, encode_update

ONE = 1 << 24  # 1.0 in Q7.24
R1 = 1 << 16  # 1.0 in Q15.16
P = 10
MTU = 20 + 8 + 38 + 4 * 4
"""An MTU whose chunk holds at most 4 elements: P = 10 travels as K = 3 chunks of L = 4 (2 padding)."""
CH = Chunking.for_model(P, MTU)


def test_the_chunking_of_the_tests():
    assert (CH.num_chunks, CH.chunk_len, CH.padding) == (3, 4, 2)


def chunks(seq, vector, reward_sum=R1, count=1, worker_id=1, cluster_id=0, gen_ts=None):
    """The K chunks of one update of the P-element Q7.24 ``vector``."""
    ts = time.time_ns() if gen_ts is None else gen_ts
    return [Update(cluster_id=cluster_id, worker_id=worker_id, seq=seq, count=count, reward_sum=reward_sum,
                   gen_ts=ts, grads=part, chunk=i, num_chunks=CH.num_chunks) for i, part in enumerate(CH.split(vector))]


def initialised(step="paper", **kw):
    m = GlobalModel(lr=0.5, step=step, chunking=CH, **kw)
    for c in chunks(0, [ONE] * P):
        assert not m.initialised
        assert m.init(c.grads, c.chunk) is Outcome.INITIALISED
    assert m.initialised and m.weights.tolist() == [1.0] * P
    return m


def test_each_slice_has_its_own_gate_so_every_chunk_of_one_update_is_applied():
    """A strict r > r_g with one global r_g would reject chunks 2..K of the update whose chunk 1
    raised it; per slice, all K chunks of an update are applied, and a worse update is refused by
    every slice."""
    m = initialised()
    assert [m.apply(c) for c in chunks(1, [ONE] * P, reward_sum=2 * R1)] == [Outcome.ACCEPTED] * 3
    # paper step, first update of each slice: g_a = g = 1, w = 1 + 0.5
    assert m.weights.tolist() == [1.5] * P and m.global_rewards() == [2.0] * 3
    assert [m.apply(c) for c in chunks(2, [ONE] * P, reward_sum=R1)] == [Outcome.REJECTED] * 3
    # only slice 1 gets a better update: its r_g and g_a move, the others' do not
    better = chunks(3, [-ONE] * P, reward_sum=3 * R1)
    assert m.apply(better[1]) is Outcome.ACCEPTED
    assert m.global_rewards() == [2.0, 3.0, 2.0]
    assert m.weights.tolist() == [1.5] * 4 + [1.5 + 0.5 * (1 - 1) / 2] * 4 + [1.5] * 2
    assert [m.apply(c) for c in chunks(4, [ONE] * P, reward_sum=round(2.5 * R1))] == [
        Outcome.ACCEPTED, Outcome.REJECTED, Outcome.ACCEPTED]
    assert m.accepted_per_slice() == [2, 2, 2] and m.accepted == 6
    # the last chunk's padding is ignored, the ACK slices are unpadded
    assert [len(m.ack_weights(i)) for i in range(3)] == [4, 4, 2]


def test_the_schedule_and_adam_run_per_slice():
    """γ_k and Adam's bias correction count each slice's own applied updates."""
    m = initialised("sgd", gate=False, lr_final=0.25, decay_updates=2)
    c = chunks(1, [ONE] * P)
    m.apply(c[0])
    m.apply(c[0])
    assert (m.step_size(0), m.step_size(1)) == (0.25, 0.5) and m.applied_per_slice() == [2, 0, 0]
    a = initialised("adam", gate=False)
    for u in chunks(1, [ONE] * P)[:2]:
        a.apply(u)
    # Adam's first step moves each element by lr·m̂/(√v̂ + ε) ≈ lr, in the slices updated only
    np.testing.assert_allclose(a.weights, [1.5] * 8 + [1.0] * 2, atol=1e-6)


def test_a_chunk_of_another_model_size_is_named_by_field_and_init_fills_slices_one_by_one():
    m = GlobalModel(chunking=CH)
    assert m.mismatch(2, 4) is ModelMismatch.NUM_CHUNKS and m.mismatch(3, 5) is ModelMismatch.NUM_GRADS
    assert m.mismatch(3, 4) is None
    assert m.init(chunks(0, [ONE] * P)[2].grads, 2) is Outcome.INITIALISED
    assert not m.initialised and m.ack_weights(2) == (ONE, ONE) and m.ack_weights(0) == ()
    assert m.apply(chunks(1, [ONE] * P)[0]) is Outcome.BEFORE_INIT
    assert m.apply(chunks(1, [ONE] * P)[2]) is Outcome.ACCEPTED
    unknown = GlobalModel()  # no chunking configured: K = 1, a chunked update is not its model
    assert unknown.mismatch(3, 4) is ModelMismatch.NUM_CHUNKS and unknown.mismatch(1, 7) is None


@pytest.mark.parametrize("step", ["paper", "sgd", "adam", "nesterov"])
def test_a_checkpoint_keeps_the_per_slice_state_and_the_model_continues_exactly(tmp_path, step):
    a = initialised(step, lr_final=0.1, decay_updates=5)
    a.apply(chunks(1, [ONE] * P, reward_sum=2 * R1)[1])
    for c in chunks(2, [2 * ONE] * P, reward_sum=3 * R1)[::2]:
        a.apply(c)
    write_checkpoint(tmp_path / "c.npz", a.state(), t_ns=5, updates=1, worker_updates=1)
    st = read_checkpoint(tmp_path / "c.npz").state
    assert st["reward"].shape == (3, 2) and st["accepted"].tolist() == a.accepted_per_slice()
    b = GlobalModel(lr=0.5, step=step, chunking=CH, lr_final=0.1, decay_updates=5)
    b.load_state(st)
    assert b.global_rewards() == a.global_rewards() and b.applied_per_slice() == a.applied_per_slice()
    for m in (a, b):
        assert [m.apply(c).value for c in chunks(3, [-ONE] * P, reward_sum=4 * R1)] == ["accepted"] * 3
    np.testing.assert_array_equal(a.weights, b.weights)  # same g_a / moments / schedule per slice
    assert [a.ack_weights(i) for i in range(3)] == [b.ack_weights(i) for i in range(3)]
    other = GlobalModel(chunking=Chunking.for_model(P, 1500))  # K = 1: another deployment
    with pytest.raises(ValueError, match=r"10 parameters in 3 chunks of 4, this PS's 10 in 1 of 10 \(--num-params, --mtu\)"):
        other.load_state(st)


def test_a_whole_model_checkpoint_of_format_1_is_read_as_one_slice(tmp_path):
    """A checkpoint written before chunks (one r_g, scalar counts, format 1) resumes as K = 1."""
    import io

    from olaf.rundir.atomic import write_bytes_atomic

    buf = io.BytesIO()
    np.savez(buf, format=np.array(1), t_ns=np.array(1), updates=np.array(2), worker_updates=np.array(2),
             weights=np.array([1.0, 2.0]), avg_grad=np.array([0.5, 0.5]), adam_m=np.zeros(0), adam_v=np.zeros(0),
             reward=np.array([3 * R1, 1]), accepted=np.array(2), applied=np.array(2))
    write_bytes_atomic(tmp_path / "old.npz", buf.getvalue())
    m = GlobalModel(lr=1.0)
    m.load_state(read_checkpoint(tmp_path / "old.npz").state)
    assert m.num_chunks == 1 and m.global_reward() == 3.0 and m.accepted == 2 and m.applied == 2
    assert m.apply(Update(0, 1, 3, 1, 4 * R1, 0, (ONE, ONE))) is Outcome.ACCEPTED
    assert m.weights.tolist() == [1.75, 2.75]  # g_a = (0.5 + 1) / 2


def _ps(tmp_path, ip, **kw):
    return ParameterServer(PsConfig(bind_ip=ip(100), out_dir=tmp_path, flush_s=0, lr=0.5, num_params=P, mtu=MTU,
                                    **kw))


def test_the_ps_applies_and_acks_each_chunk_and_accounts_per_cluster_and_chunk(tmp_path):
    ip = loopback_net()
    ps = _ps(tmp_path, ip)
    rx = AckReceiver(ip(1))
    addr = (ip(100), UPDATE_PORT)
    with running(ps.run) as out:
        assert ps.ready.wait(5)
        for c in chunks(0, list(range(P))):
            rx.send_to(encode_update(c, init=True), addr)
        acks = [rx.next() for _ in range(3)]
        assert [(a.chunk, a.num_chunks, len(a.weights)) for a in acks] == [(0, 3, 4), (1, 3, 4), (2, 3, 2)]
        assert sum((a.weights for a in acks), ()) == tuple(range(P))
        # a whole update, chunk by chunk: each is applied to its slice and ACKed with it
        for c in chunks(1, [2 * ONE] * P, reward_sum=5 * R1, cluster_id=4):
            rx.send_to(encode_update(c), addr)
            a = rx.next()
            lo, hi = CH.bounds(c.chunk)
            assert (a.chunk, a.seq, a.cluster_id, a.global_reward) == (c.chunk, 1, 4, 5 * R1)
            assert a.weights == tuple(i + ONE for i in range(lo, hi))  # w + 0.5·2
        # chunks of another model (K = 2; L = 5) are refused by field, never applied: the refusal names it
        other = Chunking(P, 5, 2)
        for part in other.split([ONE] * P):
            rx.send_to(encode_update(Update(4, 1, 2, 1, 9 * R1, time.time_ns(), part, chunk=0, num_chunks=2)), addr)
        rx.send_to(encode_update(Update(4, 1, 2, 1, 9 * R1, time.time_ns(), (ONE,) * 5, chunk=1, num_chunks=3)), addr)
        refusals = [rx.next() for _ in range(3)]
        assert [(r.refusal, r.chunk, r.num_chunks, r.weights) for r in refusals] == [
            ("num_chunks", 0, 2, ()), ("num_chunks", 0, 2, ()), ("num_grads", 1, 3, ())]
        rx.send_to(encode_update(chunks(3, [0] * P, reward_sum=R1, cluster_id=4)[2]), addr)  # worse: rejected
        a = rx.next()
        assert (a.seq, a.chunk, len(a.weights)) == (3, 2, 2)
        ps.stop.set()
        assert out["done"].wait(10)
    rx.close()
    s = out["result"]
    assert (s["num_chunks"], s["chunk_len"], s["inits"], s["initialised"]) == (3, 4, 3, 3)
    assert s["wrong_size"] == 3 and s["wrong_size_reasons"] == {"num_chunks": 2, "num_grads": 1}
    assert s["per_chunk"]["4"] == {"0": {"chunks": 1, "worker_updates": 1, "accepted": 1, "acked": 1},
                                   "1": {"chunks": 1, "worker_updates": 1, "accepted": 1, "acked": 1},
                                   "2": {"chunks": 2, "worker_updates": 2, "accepted": 1, "rejected": 1, "acked": 2}}
    # every datagram is accounted for: ACKed, or refused (by field) or malformed
    assert s["datagrams"] == s["acks_sent"] + s["wrong_size"] + s["malformed"] + s["untrusted"]
    assert s["refusals_sent"] == s["wrong_size"] and s["refusal_reasons"] == s["wrong_size_reasons"]
    assert sum(k["chunks"] for k in s["per_chunk"]["4"].values()) == s["updates"] - s["wrong_size"]
    assert s["global_rewards"] == [5.0, 5.0, 5.0] and s["global_reward"] == 5.0
    log = [json.loads(line) for line in (tmp_path / "ps.jsonl").read_text().splitlines()]
    refused = [r for r in log if r.get("outcome") == "wrong_size"]
    assert [r["reason"] for r in refused] == ["num_chunks", "num_chunks", "num_grads"]
    ck = read_checkpoint(tmp_path / "ps.checkpoint.npz")  # written when the PS stopped
    assert ck.state["reward"][:, 0].tolist() == [5 * R1, 5 * R1, 5 * R1]
    assert (ck.updates, ck.worker_updates) == (1, 1)  # chunk 0's messages stand for the updates


def test_aggregating_modes_flush_per_chunk(tmp_path):
    """async_with_aggr with K = 2 worker updates per window: each chunk has its own window, flushed
    when it holds 2 worker updates, applied to its slice and ACKed with it."""
    from olaf.hosts.modes import ModeParams

    ip = loopback_net()
    ps = _ps(tmp_path, ip, step="sgd", gate=False, modes=ModeParams(mode="async_with_aggr", aggr_k=2, aggr_t_ms=60_000))
    rx = AckReceiver(ip(1))
    addr = (ip(100), UPDATE_PORT)
    with running(ps.run) as out:
        assert ps.ready.wait(5)
        for c in chunks(0, [0] * P):
            rx.send_to(encode_update(c, init=True), addr)
        assert [rx.next().chunk for _ in range(3)] == [0, 1, 2]
        first, second = chunks(1, [ONE] * P), chunks(2, [3 * ONE] * P)
        rx.send_to(encode_update(first[0]), addr)
        rx.send_to(encode_update(first[2]), addr)
        rx.send_to(encode_update(second[2]), addr)  # chunk 2's window is full: flushed alone
        a = rx.next()
        assert (a.chunk, a.weights) == (2, (ONE, ONE))  # 0 + 0.5 · (1 + 3) / 2
        rx.send_to(encode_update(second[0]), addr)
        a = rx.next()
        assert (a.chunk, a.weights) == (0, (ONE,) * 4)
        ps.stop.set()
        assert out["done"].wait(10)
    rx.close()
    s = out["result"]
    assert s["flushes"] == 2 and s["buffered"] == 4 and s["accepted"] == 2


def test_olaf_ps_resumes_chunked_state_and_writes_it_on_sigterm(tmp_path):
    """`olaf ps --num-params --mtu`: stopped by SIGTERM it writes its per-slice checkpoint; a second
    `olaf ps --resume` answers INIT chunks with the checkpointed slices; a checkpoint of another
    model size is refused naming --resume."""
    ip = loopback_net()
    rx = AckReceiver(ip(1))
    addr = (ip(100), UPDATE_PORT)

    def start(out_dir, *extra):
        return subprocess.Popen([sys.executable, "-m", "olaf.cli", "ps", "--bind", ip(100), "--out-dir", str(out_dir),
                                 "--lr", "0.5", "--step", "sgd", "--num-params", str(P), "--mtu", str(MTU),
                                 "--flush-ms", "0", *extra], stderr=subprocess.PIPE, text=True)

    def wait_log(path):
        deadline = time.monotonic() + 60  # guards a hang only: the PS writes its start record once bound
        while not (path.exists() and path.read_text().strip()):
            assert time.monotonic() < deadline, f"no {path}"
            time.sleep(0.05)

    p = start(tmp_path / "a")
    try:
        wait_log(tmp_path / "a" / "ps.jsonl")
        for c in chunks(0, [ONE] * P):
            rx.send_to(encode_update(c, init=True), addr)
        [rx.next() for _ in range(3)]
        for c in chunks(1, [ONE] * P, reward_sum=2 * R1)[1:]:
            rx.send_to(encode_update(c), addr)
            rx.next()
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(60) == 0, p.stderr.read()
    ck = tmp_path / "a" / "ps.checkpoint.npz"
    st = read_checkpoint(ck).state
    assert st["num_chunks"] == 3 and st["accepted"].tolist() == [0, 1, 1]
    assert st["weights"].tolist() == [1.0] * 4 + [1.5] * 6
    q = start(tmp_path / "b", "--resume", str(ck))
    try:
        wait_log(tmp_path / "b" / "ps.jsonl")
        for c in chunks(0, [0] * P):
            rx.send_to(encode_update(c, init=True), addr)
        got = {a.chunk: a for a in (rx.next() for _ in range(3))}
        assert got[0].weights == (ONE,) * 4 and got[2].weights == (round(1.5 * ONE),) * 2
        assert got[1].global_reward == 2 * R1 and got[0].global_reward < 0  # slice 0's r_g is still −∞
    finally:
        q.send_signal(signal.SIGTERM)
        assert q.wait(60) == 0
    rx.close()
    r = subprocess.run([sys.executable, "-m", "olaf.cli", "ps", "--bind", ip(100), "--out-dir", str(tmp_path / "c"),
                        "--num-params", str(P + 1), "--mtu", str(MTU), "--resume", str(ck)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--resume" in r.stderr and "10 parameters in 3 chunks of 4" in r.stderr, r.stderr
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        read_checkpoint(tmp_path / "none.npz")

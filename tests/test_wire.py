"""Wire format: round trips, exact offsets from docs/protocol.md, strict rejection."""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from olaf import wire
from olaf.fixedpoint import INT32_MAX, INT32_MIN
from olaf.update import Update
from olaf.wire import (
    ACK_PORT,
    UPDATE_PORT,
    Ack,
    MalformedOlafPacket,
    OlafAck,
    OlafUpdate,
    QueueStatus,
    ack_layer,
    encode_ack,
    encode_update,
    parse_ack,
    parse_update,
)

updates = st.builds(
    Update,
    cluster_id=st.integers(0, 0xFFFF),
    worker_id=st.integers(0, 0xFFFF),
    seq=st.integers(0, 2**32 - 1),
    count=st.integers(1, 0xFFFF),
    reward_sum=st.integers(INT32_MIN, INT32_MAX),
    gen_ts=st.integers(0, 2**64 - 1),
    grads=st.lists(st.integers(INT32_MIN, INT32_MAX), max_size=40).map(tuple),
)


@given(updates)
def test_update_round_trip(u):
    assert parse_update(encode_update(u)) == u


@given(updates)
def test_update_round_trip_through_a_frame(u):
    frame = Ether() / IP(src="10.0.0.1", dst="10.0.0.100") / UDP(sport=1234, dport=UPDATE_PORT) / wire.update_layer(u)
    raw = bytes(frame)
    assert len(raw) == wire.update_frame_len(len(u.grads))
    parsed = Ether(raw)
    assert OlafUpdate in parsed
    assert parse_update(bytes(parsed[UDP].payload)) == u


def test_update_byte_layout_matches_protocol_doc():
    u = Update(cluster_id=0x0102, worker_id=0x0304, seq=0x05060708, count=0x090A,
               reward_sum=-2, gen_ts=0x1112131415161718, grads=(1, -1), chunk=0x0B0C, num_chunks=0x0D0E)
    b = encode_update(u)
    assert b[0] == 0x21  # version 2, msg_type 1
    assert b[1] == 0  # flags
    assert b[2:4] == b"\x00\x02"
    assert b[4:6] == b"\x0b\x0c" and b[6:8] == b"\x0d\x0e"  # chunk, num_chunks
    assert b[8:10] == b"\x01\x02" and b[10:12] == b"\x03\x04"
    assert b[12:16] == b"\x05\x06\x07\x08"
    assert b[16:18] == b"\x09\x0a"
    assert b[18:22] == b"\xff\xff\xff\xfe"
    assert b[22:30] == bytes.fromhex("1112131415161718")
    assert b[30:34] == b"\x00\x00\x00\x01" and b[34:38] == b"\xff\xff\xff\xff"
    # chunk in the first 64-byte beat (frame offset 46); first gradient at 14 + 20 + 8 + 30 = 72, 4-byte aligned
    frame = bytes(Ether() / IP() / UDP(dport=UPDATE_PORT) / wire.update_layer(u))
    assert frame[46:48] == b"\x0b\x0c" and 46 + 2 <= 64
    assert frame[72:76] == b"\x00\x00\x00\x01" and 72 % 4 == 0


def test_ack_round_trip_and_layout():
    st_ = QueueStatus(queue_util=0x010203, active_clusters=0x0405, queue_size=0x060708)
    layer = wire.ack_layer(cluster_id=3, worker_id=4, seq=5, count=6, global_reward=-7,
                           gen_ts=8, weights=[9, -10, INT32_MAX], status=st_)
    b = bytes(layer)
    assert len(b) == wire.ACK_HEADER_LEN + 12
    assert b[0] == 0x22 and b[1] == wire.ACK_FLAG_STATUS_VALID
    assert b[4:8] == b"\x00\x00\x00\x01"  # chunk 0 of 1
    assert b[30:33] == b"\x01\x02\x03" and b[33:35] == b"\x04\x05" and b[35:38] == b"\x06\x07\x08"
    assert b == wire.encode_ack(cluster_id=3, worker_id=4, seq=5, count=6, global_reward=-7, gen_ts=8,
                                weights=[9, -10, INT32_MAX], status=st_)
    a = parse_ack(b)
    assert a.status == st_
    assert (a.cluster_id, a.worker_id, a.seq, a.count, a.global_reward, a.gen_ts) == (3, 4, 5, 6, -7, 8)
    assert a.weights == (9, -10, INT32_MAX)
    frame = bytes(Ether() / IP() / UDP(dport=ACK_PORT) / layer)
    assert 42 + wire.ACK_HEADER_LEN == 80
    assert Ether(frame)[OlafAck].num_weights == 3


def test_ack_without_switch_has_no_status():
    b = bytes(wire.ack_layer(cluster_id=1, worker_id=0, seq=0, count=1, global_reward=0,
                             gen_ts=0, weights=[]))
    assert parse_ack(b).status is None


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda b: b[:10], "too short"),
        (lambda b: b[:-1], "length mismatch"),
        (lambda b: b + b"\x00\x00\x00\x00", "length mismatch"),
        (lambda b: bytes([0x11]) + b[1:], "unknown version 1"),
        (lambda b: bytes([0x22]) + b[1:], "msg_type 2"),
        (lambda b: b[:16] + b"\x00\x00" + b[18:], "count 0"),
        (lambda b: b[:4] + b"\x00\x03\x00\x03" + b[8:], "chunk 3 of num_chunks 3"),
        (lambda b: b[:4] + b"\x00\x00\x00\x00" + b[8:], "chunk 0 of num_chunks 0"),
    ],
)
def test_malformed_updates_are_rejected_with_reason(mutate, message):
    good = encode_update(Update(cluster_id=1, worker_id=2, grads=(1, 2, 3)))
    with pytest.raises(MalformedOlafPacket, match=message):
        parse_update(mutate(good))


def test_malformed_ack_rejected():
    good = bytes(wire.ack_layer(cluster_id=1, worker_id=0, seq=0, count=1, global_reward=0,
                                gen_ts=0, weights=[1]))
    with pytest.raises(MalformedOlafPacket, match="too short"):
        parse_ack(good[:20])
    with pytest.raises(MalformedOlafPacket, match="expected 2"):
        parse_ack(bytes([0x21]) + good[1:])
    with pytest.raises(MalformedOlafPacket, match="chunk 1 of num_chunks 1"):
        parse_ack(good[:4] + b"\x00\x01" + good[6:])
    with pytest.raises(MalformedOlafPacket, match="length mismatch"):
        parse_ack(good + b"\x00")


def test_update_field_ranges_are_checked():
    with pytest.raises(ValueError, match="count=0"):
        Update(cluster_id=0, worker_id=0, count=0)
    with pytest.raises(ValueError, match=r"grads\[1\]"):
        Update(cluster_id=0, worker_id=0, grads=(0, 2**31))
    with pytest.raises(ValueError, match="missing"):
        Update.from_json({"cluster_id": 1})


def test_init_flag():
    u = Update(cluster_id=0, worker_id=0, grads=(1,))
    assert wire.update_is_init(encode_update(u, init=True))
    assert not wire.update_is_init(encode_update(u))
    assert parse_update(encode_update(u, init=True)) == u


@pytest.mark.parametrize("n", [101, 360, 2235])
def test_long_models_decode(n):
    # the full 1500 B (360) and 9000 B (2235) MTU updates, beyond scapy's default list limit of 100
    u = Update(cluster_id=1, worker_id=2, seq=3, grads=tuple(range(-n // 2, n - n // 2)))
    assert parse_update(encode_update(u)) == u
    ack = parse_ack(bytes(ack_layer(cluster_id=1, worker_id=2, seq=3, count=1, global_reward=0,
                                    gen_ts=5, weights=list(range(n)))))
    assert ack.weights == tuple(range(n))


# --- the struct codec (hosts, per packet) and the scapy layers (frames, PTF) agree byte for byte ---

statuses = st.one_of(st.none(), st.builds(QueueStatus, st.integers(0, 2**24 - 1), st.integers(0, 2**16 - 1),
                                          st.integers(0, 2**24 - 1)))


@given(updates, st.booleans())
def test_update_codecs_agree(u, init):
    b = encode_update(u, init=init)
    assert b == bytes(wire.update_layer(u, init=init))
    layer = OlafUpdate(b)
    assert (layer.cluster_id, layer.worker_id, layer.seq, layer.count, layer.reward_sum, layer.gen_ts,
            tuple(layer.grads), int(layer.flags)) == (u.cluster_id, u.worker_id, u.seq, u.count, u.reward_sum,
                                                      u.gen_ts, u.grads, int(init))


@given(updates, statuses)
def test_ack_codecs_agree(u, status):
    kw = dict(cluster_id=u.cluster_id, worker_id=u.worker_id, seq=u.seq, count=u.count,
              global_reward=u.reward_sum, gen_ts=u.gen_ts, weights=list(u.grads), status=status)
    b = wire.encode_ack(**kw)
    assert b == bytes(ack_layer(**kw))
    a = parse_ack(b)
    assert a.status == status and a.weights == u.grads and a.global_reward == u.reward_sum
    layer = OlafAck(b)
    assert (layer.queue_util, layer.active_clusters, layer.queue_size) == (
        (0, 0, 0) if status is None else (status.queue_util, status.active_clusters, status.queue_size))


def test_encode_ack_range_errors():
    with pytest.raises(ValueError, match="out of range"):
        wire.encode_ack(cluster_id=1 << 16, worker_id=0, seq=0, count=1, global_reward=0, gen_ts=0, weights=[])
    with pytest.raises(ValueError, match="out of range"):
        wire.encode_ack(cluster_id=0, worker_id=0, seq=0, count=1, global_reward=0, gen_ts=0, weights=[2**31])
    with pytest.raises(ValueError, match="out of range"):
        wire.encode_ack(cluster_id=0, worker_id=0, seq=0, count=1, global_reward=0, gen_ts=0, weights=[],
                        status=QueueStatus(1 << 24, 0, 0))


@given(st.binary(max_size=200) | st.builds(lambda u, cut, junk: encode_update(u)[:cut] + junk, updates,
                                         st.integers(0, 120), st.binary(max_size=8)))
def test_parsers_raise_only_the_documented_exception(data):
    """Any bytes: parse_update / parse_ack return a message or raise MalformedOlafPacket, nothing else."""
    for parse in (parse_update, parse_ack):
        try:
            parse(data)
        except MalformedOlafPacket:
            pass


def test_chunk_fields_round_trip_and_ack_chunk_range():
    u = Update(cluster_id=1, worker_id=2, seq=3, grads=(4, 5), chunk=27, num_chunks=28)
    assert parse_update(encode_update(u)) == u
    assert bytes(wire.update_layer(u)) == encode_update(u)
    a = parse_ack(wire.encode_ack(cluster_id=1, worker_id=2, seq=3, count=1, global_reward=0, gen_ts=0,
                                  weights=[7], chunk=4, num_chunks=5))
    assert (a.chunk, a.num_chunks, a.weights) == (4, 5, (7,))
    with pytest.raises(ValueError, match="chunk=5"):
        wire.encode_ack(cluster_id=1, worker_id=2, seq=3, count=1, global_reward=0, gen_ts=0,
                        weights=[], chunk=5, num_chunks=5)
    with pytest.raises(ValueError, match="chunk=28"):
        Update(cluster_id=1, worker_id=2, chunk=28, num_chunks=28)


def test_a_decoded_update_is_the_update_the_constructor_checks_and_its_elements_array_matches():
    """parse_update builds its Update without walking the P elements again (struct's "i" yields int32
    only); the result equals the constructor's, a bad header field is still refused, and
    update_elements gives the same elements as an array."""
    import numpy as np

    from olaf.update import Update
    from olaf.wire import encode_update, parse_update, update_elements

    u = Update(cluster_id=3, worker_id=7, seq=9, count=2, reward_sum=-5, gen_ts=123, grads=(1, -2, 2**31 - 1, -(2**31)),
               chunk=1, num_chunks=4)
    data = encode_update(u)
    back = parse_update(data)
    assert back == u and type(back.grads) is tuple
    assert update_elements(data).tolist() == list(u.grads) and update_elements(data).dtype == np.int64
    with pytest.raises(ValueError, match="chunk"):
        Update.decoded(cluster_id=0, worker_id=0, seq=0, count=1, reward_sum=0, gen_ts=0, grads=(), chunk=4,
                       num_chunks=4)


def test_an_ack_of_weight_bytes_is_the_ack_of_the_weights():
    """The PS hands encode_ack its slice's elements as the bytes an ACK carries (computed once per
    change of the slice): the same datagram as from the elements."""
    import numpy as np

    from olaf.wire import encode_ack, parse_ack

    w = (5, -7, 2**31 - 1, -(2**31))
    kw = dict(cluster_id=1, worker_id=2, seq=3, count=1, global_reward=4, gen_ts=5, chunk=0, num_chunks=2)
    as_bytes = encode_ack(weights=np.array(w, dtype=">i4").tobytes(), **kw)
    assert as_bytes == encode_ack(weights=w, **kw) and parse_ack(as_bytes).weights == w
    with pytest.raises(ValueError, match="whole number of 4-byte elements"):
        encode_ack(weights=b"\x00\x01\x02", **kw)


ACK_VECTORS = json.loads((Path(__file__).parent / "wire_vectors" / "acks.json").read_text())


@pytest.mark.parametrize("v", ACK_VECTORS["acks"], ids=lambda v: v["name"])
def test_ack_vectors_decode_and_encode_to_the_same_bytes(v):
    """tests/wire_vectors/acks.json, laid out by hand from docs/protocol.md: parse_ack reads each as
    expected and encode_ack (and the scapy layer) writes the same bytes back."""
    data, e = bytes.fromhex(v["hex"]), v["expect"]
    a = parse_ack(data)
    status = None if e["status"] is None else QueueStatus(*e["status"])
    assert a == Ack(cluster_id=e["cluster_id"], worker_id=e["worker_id"], seq=e["seq"], count=e["count"],
                    global_reward=e["global_reward"], gen_ts=e["gen_ts"], weights=tuple(e["weights"]), status=status,
                    chunk=e["chunk"], num_chunks=e["num_chunks"], refusal=e["refusal"])
    kw = dict(cluster_id=a.cluster_id, worker_id=a.worker_id, seq=a.seq, count=a.count, global_reward=a.global_reward,
              gen_ts=a.gen_ts, weights=list(a.weights), status=status, chunk=a.chunk, num_chunks=a.num_chunks,
              refusal=a.refusal)
    assert encode_ack(**kw) == data == bytes(ack_layer(**kw))


@pytest.mark.parametrize("v", ACK_VECTORS["malformed"], ids=lambda v: v["name"])
def test_malformed_ack_vectors_are_refused_with_their_reason(v):
    with pytest.raises(MalformedOlafPacket, match=v["reason"]):
        parse_ack(bytes.fromhex(v["hex"]))

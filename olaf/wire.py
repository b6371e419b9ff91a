"""The Olaf wire format: scapy layers for the model update and the ACK.

The normative specification is ``docs/protocol.md``; this module is its only
implementation in Python and is what hosts, PTF tests, the vector tools and the
RTL testbench import. Both messages ride on UDP/IPv4:

* **update** (worker → PS): UDP destination port :data:`UPDATE_PORT`,
  30-byte header followed by ``num_grads`` Q7.24 int32 gradient elements;
* **ACK** (PS → cluster): UDP destination port :data:`ACK_PORT`, 38-byte
  header (including the queue status written by the switch) followed by
  ``num_weights`` Q7.24 int32 global-weight elements.

Both carry one *chunk* of the model: ``chunk`` (its index) and ``num_chunks`` (K) at
offset 4 (:mod:`olaf.chunks`; a model that fits one frame is chunk 0 of 1).

All multi-byte fields are big-endian (network byte order). With Ethernet
(14 B) + IPv4 without options (20 B) + UDP (8 B) in front, the first gradient
element sits at frame offset 72 and the first weight at 80: both are 4-byte
aligned, so a 512-bit datapath adds whole 32-bit lanes; ``chunk`` is at frame offset
46, in the first 64-byte beat.

:func:`parse_update` / :func:`parse_ack` are the strict decoders: they raise
:class:`MalformedOlafPacket` naming what is wrong (short, bad length, unknown
version, wrong message type). Scapy's own dissection stays lenient so that
malformed packets can still be built and displayed in tests.

Two codecs, one format: the scapy layers (:class:`OlafUpdate`, :class:`OlafAck`,
:func:`update_layer`, :func:`ack_layer`) build and show whole frames for tests
and PTF; the byte functions the hosts use per packet (:func:`encode_update`,
:func:`encode_ack`, :func:`parse_update`, :func:`parse_ack`) pack and unpack with
:mod:`struct`, about ten times faster than a scapy build or dissection (a PS
must keep up with thousands of updates per second). ``tests/test_wire.py``
checks that both produce and read the same bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scapy.fields import (
    BitEnumField,
    BitField,
    FieldLenField,
    FieldListField,
    FlagsField,
    IntField,
    LongField,
    ShortField,
    SignedIntField,
    ThreeBytesField,
)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from olaf.constants import (  # noqa: F401  (re-exported: the protocol's names)
    ACK_FLAG_STATUS_VALID,
    ACK_HEADER_LEN,
    ACK_PORT,
    ACK_REFUSAL_FLAGS,
    CHUNK_OFFSET,
    ELEMENT_LEN,
    ETH_HEADER_LEN,
    IPV4_HEADER_LEN,
    MAX_ELEMENTS,
    MSG_ACK,
    MSG_UPDATE,
    PROTOCOL_VERSION,
    UDP_HEADER_LEN,
    UPDATE_FLAG_INIT,
    UPDATE_HEADER_LEN,
    UPDATE_PORT,
)
from olaf.update import Update

MSG_TYPES = {MSG_UPDATE: "update", MSG_ACK: "ack"}

REFUSALS = tuple(sorted(ACK_REFUSAL_FLAGS, key=ACK_REFUSAL_FLAGS.__getitem__))
"""The reasons of a refusal, in flag-bit order (:data:`olaf.constants.ACK_REFUSAL_FLAGS`)."""
REFUSED_FLAG_NAMES = tuple(f"refused_{r}" for r in REFUSALS)
"""The ACK's flag bits 1.. as the scapy layer and the Wireshark dissector name them."""
assert [ACK_REFUSAL_FLAGS[r] for r in REFUSALS] == [1 << i for i in range(1, len(REFUSALS) + 1)]
_REFUSAL_MASK = sum(ACK_REFUSAL_FLAGS.values())

_UPDATE_HDR = struct.Struct("!BBHHHHHIHiQ")
"""version/msg_type, flags, num_grads, chunk, num_chunks, cluster_id, worker_id, seq, count, reward_sum,
gen_ts (30 bytes)."""

_ACK_HDR = struct.Struct("!BBHHHHHIHiQ3sH3s")
"""version/msg_type, flags, num_weights, chunk, num_chunks, cluster_id, worker_id, seq, count,
global_reward, gen_ts, queue_util, active_clusters, queue_size (38 bytes)."""


class MalformedOlafPacket(ValueError):
    """An Olaf message that a receiver must drop; the message says why."""


def _common_header(msg_type: int, flag_names: Sequence[str], elements: str, count_default: int,
                   reward: str) -> list:
    """The first 30 bytes, shared by the update and the ACK (docs/protocol.md): version,
    msg_type, flags, element count, chunk, num_chunks, cluster_id, worker_id, seq, count, a
    reward, gen_ts."""
    return [
        BitField("version", PROTOCOL_VERSION, 4),
        BitEnumField("msg_type", msg_type, 4, MSG_TYPES),
        FlagsField("flags", 0, 8, list(flag_names) + [f"r{i}" for i in range(len(flag_names), 8)]),
        FieldLenField(f"num_{elements}", None, count_of=elements, fmt="!H"),
        ShortField("chunk", 0),
        ShortField("num_chunks", 1),
        ShortField("cluster_id", 0),
        ShortField("worker_id", 0),
        IntField("seq", 0),
        ShortField("count", count_default),
        SignedIntField(reward, 0),
        LongField("gen_ts", 0),
    ]


def _elements_field(elements: str) -> FieldListField:
    """The trailing int32 elements, as many as the header's ``num_<elements>`` says."""
    return FieldListField(elements, [], SignedIntField("", 0),
                          count_from=lambda p: getattr(p, f"num_{elements}"), max_count=MAX_ELEMENTS)


class OlafUpdate(Packet):
    """Model update, worker → PS (``docs/protocol.md`` §Update)."""

    name = "OlafUpdate"
    fields_desc = _common_header(MSG_UPDATE, ["init"], "grads", 1, "reward_sum") + [_elements_field("grads")]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class OlafAck(Packet):
    """ACK with global weights and queue status, PS → cluster (``docs/protocol.md`` §ACK)."""

    name = "OlafAck"
    fields_desc = _common_header(MSG_ACK, ["status_valid", *REFUSED_FLAG_NAMES], "weights", 0, "global_reward") + [
        ThreeBytesField("queue_util", 0),
        ShortField("active_clusters", 0),
        ThreeBytesField("queue_size", 0),
        _elements_field("weights"),
    ]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


bind_layers(UDP, OlafUpdate, dport=UPDATE_PORT)
bind_layers(UDP, OlafAck, dport=ACK_PORT)


@dataclass(frozen=True)
class QueueStatus:
    """Queue status embedded in ACKs by the switch (paper §5 "Reverse-path Signaling").

    Attributes:
        queue_util: occupied segments Q_n (24 bit).
        active_clusters: clusters with an update seen within the activity window, N (16 bit).
        queue_size: queue size Q_max in segments (24 bit).
    """

    queue_util: int
    active_clusters: int
    queue_size: int


@dataclass(frozen=True)
class Ack:
    """Decoded ACK: the update it answers, the PS's global state and the queue status.

    ``status`` is None when no Olaf switch wrote it (flag STATUS_VALID clear). ``weights``
    is the model slice of ``chunk`` (of ``num_chunks``; :mod:`olaf.chunks`). ``refusal`` is the
    reason (one of :data:`REFUSALS`) when the PS refused the update this ACK answers (then
    ``weights`` is empty), else None.
    """

    cluster_id: int
    worker_id: int
    seq: int
    count: int
    global_reward: int
    gen_ts: int
    weights: tuple[int, ...]
    status: QueueStatus | None
    chunk: int = 0
    num_chunks: int = 1
    refusal: str | None = None


def _refusal_flag(refusal: str | None, weights: Sequence[int] | bytes) -> int:
    """The flag bit of ``refusal`` (0 for None).

    Raises:
        ValueError: an unknown reason, or a refusal that carries weights.
    """
    if refusal is None:
        return 0
    if refusal not in ACK_REFUSAL_FLAGS:
        raise ValueError(f"refusal={refusal!r} must be one of {', '.join(REFUSALS)}")
    if len(weights):
        raise ValueError("a refusal carries no weights (num_weights = 0, docs/protocol.md \"Refusal\")")
    return ACK_REFUSAL_FLAGS[refusal]


def update_layer(u: Update, *, version: int = PROTOCOL_VERSION, init: bool = False) -> OlafUpdate:
    """Build the scapy layer for an :class:`~olaf.update.Update` (``init``: set the INIT flag)."""
    return OlafUpdate(
        version=version,
        flags=UPDATE_FLAG_INIT if init else 0,
        chunk=u.chunk,
        num_chunks=u.num_chunks,
        cluster_id=u.cluster_id,
        worker_id=u.worker_id,
        seq=u.seq,
        count=u.count,
        reward_sum=u.reward_sum,
        gen_ts=u.gen_ts,
        grads=list(u.grads),
    )


def _elements(values: Sequence[int]) -> bytes:
    return struct.pack(f"!{len(values)}i", *values)


def encode_update(u: Update, *, init: bool = False) -> bytes:
    """Olaf update bytes (UDP payload) for ``u`` (``init``: initial weights, flag INIT).

    The same bytes as ``bytes(update_layer(u, init=init))``; ``u``'s fields are
    already range-checked by :class:`~olaf.update.Update`.
    """
    hdr = _UPDATE_HDR.pack(PROTOCOL_VERSION << 4 | MSG_UPDATE, UPDATE_FLAG_INIT if init else 0, len(u.grads),
                           u.chunk, u.num_chunks, u.cluster_id, u.worker_id, u.seq, u.count, u.reward_sum, u.gen_ts)
    return hdr + _elements(u.grads)


def update_is_init(data: bytes) -> bool:
    """True if Olaf update bytes carry the INIT flag (call after :func:`parse_update`)."""
    return bool(data[1] & UPDATE_FLAG_INIT)


def ack_layer(
    *,
    cluster_id: int,
    worker_id: int,
    seq: int,
    count: int,
    global_reward: int,
    gen_ts: int,
    weights: Sequence[int],
    status: QueueStatus | None = None,
    chunk: int = 0,
    num_chunks: int = 1,
    refusal: str | None = None,
) -> OlafAck:
    """Build an ACK layer; the PS leaves ``status`` None, the switch fills it; ``refusal``: a
    refusal's reason (:data:`REFUSALS`, no weights).

    Raises:
        ValueError: an unknown ``refusal``, or one with weights.
    """
    ack = OlafAck(
        flags=_refusal_flag(refusal, weights),
        chunk=chunk,
        num_chunks=num_chunks,
        cluster_id=cluster_id,
        worker_id=worker_id,
        seq=seq,
        count=count,
        global_reward=global_reward,
        gen_ts=gen_ts,
        weights=list(weights),
    )
    if status is not None:
        ack.flags = int(ack.flags) | ACK_FLAG_STATUS_VALID
        ack.queue_util = status.queue_util
        ack.active_clusters = status.active_clusters
        ack.queue_size = status.queue_size
    return ack


def encode_ack(
    *,
    cluster_id: int,
    worker_id: int,
    seq: int,
    count: int,
    global_reward: int,
    gen_ts: int,
    weights: Sequence[int] | bytes,
    status: QueueStatus | None = None,
    chunk: int = 0,
    num_chunks: int = 1,
    refusal: str | None = None,
) -> bytes:
    """Olaf ACK bytes (UDP payload); the same bytes as ``bytes(ack_layer(...))``. ``refusal``: the
    PS refuses the answered update for this reason (:data:`REFUSALS`; ``weights`` must be empty).

    Raises:
        ValueError: a field outside its wire range (uint16 ids, count, chunk and num_chunks,
            uint32 seq, int32 reward and weights, uint64 gen_ts, 24/16-bit status),
            ``chunk`` not below ``num_chunks``, an unknown ``refusal`` or one with weights.
    """
    if not 0 <= chunk < num_chunks:
        raise ValueError(f"ACK chunk={chunk} must be in 0..num_chunks-1 (num_chunks={num_chunks})")
    if isinstance(weights, (bytes, bytearray)) and len(weights) % ELEMENT_LEN:
        raise ValueError(f"ACK weights of {len(weights)} bytes: a whole number of {ELEMENT_LEN}-byte elements")
    n = len(weights) // ELEMENT_LEN if isinstance(weights, (bytes, bytearray)) else len(weights)
    flags, util, active, size = _refusal_flag(refusal, weights), 0, 0, 0
    if status is not None:
        flags, util, active, size = (flags | ACK_FLAG_STATUS_VALID, status.queue_util, status.active_clusters,
                                     status.queue_size)
    try:
        hdr = _ACK_HDR.pack(PROTOCOL_VERSION << 4 | MSG_ACK, flags, n, chunk, num_chunks,
                            cluster_id, worker_id, seq,
                            count, global_reward, gen_ts, util.to_bytes(3, "big"), active,
                            size.to_bytes(3, "big"))
        return hdr + (bytes(weights) if isinstance(weights, (bytes, bytearray)) else _elements(weights))
    except (struct.error, OverflowError) as e:
        raise ValueError(f"ACK field out of range: {e}") from None


def _check_common(data: bytes, header_len: int, msg_type: int, what: str) -> int:
    """Validate version/type/length of an Olaf message; return its element count."""
    if len(data) < header_len:
        raise MalformedOlafPacket(
            f"{what} too short: {len(data)} bytes, the header alone is {header_len}"
        )
    version, mtype = data[0] >> 4, data[0] & 0x0F
    if version != PROTOCOL_VERSION:
        raise MalformedOlafPacket(
            f"{what} has unknown version {version} (this receiver speaks {PROTOCOL_VERSION})"
        )
    if mtype != msg_type:
        raise MalformedOlafPacket(
            f"{what} has msg_type {mtype} ({MSG_TYPES.get(mtype, 'unknown')}), expected {msg_type}"
        )
    n = int.from_bytes(data[2:4], "big")
    expected = header_len + ELEMENT_LEN * n
    if len(data) != expected:
        raise MalformedOlafPacket(
            f"{what} length mismatch: {n} elements need {expected} bytes, got {len(data)}"
        )
    chunk, num_chunks = struct.unpack_from("!HH", data, CHUNK_OFFSET)
    if num_chunks == 0 or chunk >= num_chunks:
        raise MalformedOlafPacket(f"{what} has chunk {chunk} of num_chunks {num_chunks} (need chunk < num_chunks)")
    return n


def parse_update(data: bytes) -> Update:
    """Strictly decode Olaf update bytes (the UDP payload) into an :class:`Update`.

    Raises:
        MalformedOlafPacket: short, length not matching ``num_grads``, unknown
            version, not an update, ``chunk`` not below ``num_chunks``, or ``count`` of zero.
    """
    n = _check_common(data, UPDATE_HEADER_LEN, MSG_UPDATE, "update")
    _, _, _, chunk, num_chunks, cluster_id, worker_id, seq, count, reward_sum, gen_ts = _UPDATE_HDR.unpack_from(data)
    if count == 0:
        raise MalformedOlafPacket("update has count 0 (a worker sends count 1)")
    return Update.decoded(  # struct's "i" yields int32 only: the elements need no second check
        cluster_id=cluster_id,
        worker_id=worker_id,
        seq=seq,
        count=count,
        reward_sum=reward_sum,
        gen_ts=gen_ts,
        grads=struct.unpack_from(f"!{n}i", data, UPDATE_HEADER_LEN),
        chunk=chunk,
        num_chunks=num_chunks,
    )


def update_elements(data: bytes) -> np.ndarray:
    """The Q7.24 elements of update bytes that :func:`parse_update` accepted, as an int64 array of
    shape ``(num_grads,)`` (one vectorised conversion instead of P Python ints: the PS's step)."""
    n = int.from_bytes(data[2:4], "big")
    return np.frombuffer(data, dtype=">i4", count=n, offset=UPDATE_HEADER_LEN).astype(np.int64)


def parse_ack(data: bytes) -> Ack:
    """Strictly decode Olaf ACK bytes (the UDP payload).

    Raises:
        MalformedOlafPacket: short, length not matching ``num_weights``,
            unknown version, not an ACK, ``chunk`` not below ``num_chunks``, or a refusal
            that names more than one reason or carries weights.
    """
    n = _check_common(data, ACK_HEADER_LEN, MSG_ACK, "ack")
    (_, flags, _, chunk, num_chunks, cluster_id, worker_id, seq, count, global_reward, gen_ts, util, active,
     size) = _ACK_HDR.unpack_from(data)
    refused = [r for r in REFUSALS if flags & ACK_REFUSAL_FLAGS[r]] if flags & _REFUSAL_MASK else []
    if len(refused) > 1:
        raise MalformedOlafPacket(f"ack refusal names {len(refused)} reasons ({', '.join(refused)}); one at most")
    if refused and n:
        raise MalformedOlafPacket(f"ack refusal ({refused[0]}) carries {n} weights; a refusal carries none")
    status = None
    if flags & ACK_FLAG_STATUS_VALID:
        status = QueueStatus(int.from_bytes(util, "big"), active, int.from_bytes(size, "big"))
    return Ack(
        cluster_id=cluster_id,
        worker_id=worker_id,
        seq=seq,
        count=count,
        global_reward=global_reward,
        gen_ts=gen_ts,
        weights=struct.unpack_from(f"!{n}i", data, ACK_HEADER_LEN),
        status=status,
        chunk=chunk,
        num_chunks=num_chunks,
        refusal=refused[0] if refused else None,
    )


def update_frame_len(num_grads: int) -> int:
    """Ethernet frame length in bytes (no FCS) of an update with ``num_grads`` elements."""
    return ETH_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN + UPDATE_HEADER_LEN + ELEMENT_LEN * num_grads

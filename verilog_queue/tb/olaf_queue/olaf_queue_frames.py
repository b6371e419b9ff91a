"""Frames and tuser metadata as the OlafQueue RTL sees them.

An update travels as an Ethernet/IPv4/UDP frame built by scapy from
:mod:`olaf.wire` (the one implementation of the wire format); the ingress P4
block hands its metadata over on ``s_axis_tuser`` in the layout documented in
``verilog_queue/rtl/olaf_queue.v``. This module builds both, and the frame the
queue must send for a departing update.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from olaf.update import Update
from olaf.wire import UPDATE_PORT, update_layer

USER_WIDTH = 145
"""Width of s_axis_tuser / m_axis_tuser."""

_FIELDS = (  # (name, lsb, width) of the tuser layout
    ("update_valid", 0, 1),
    ("cluster_id", 1, 16),
    ("worker_id", 17, 16),
    ("count", 33, 16),
    ("reward_sum", 49, 32),
    ("gen_ts", 81, 64),
)

PS_MAC = "02:00:00:ff:ff:01"
PS_IP = "10.255.0.1"


@dataclass(frozen=True)
class TUser:
    """Decoded tuser metadata (reward_sum as a signed int)."""

    update_valid: int
    cluster_id: int
    worker_id: int
    count: int
    reward_sum: int
    gen_ts: int


def pack_tuser(u: Update, update_valid: bool = True) -> int:
    """tuser value for update ``u`` as the ingress P4 block would hand it over."""
    values = {
        "update_valid": int(update_valid),
        "cluster_id": u.cluster_id,
        "worker_id": u.worker_id,
        "count": u.count,
        "reward_sum": u.reward_sum & 0xFFFF_FFFF,
        "gen_ts": u.gen_ts,
    }
    word = 0
    for name, lsb, width in _FIELDS:
        v = values[name]
        if not 0 <= v < (1 << width):
            raise ValueError(f"tuser field {name}={v} does not fit {width} bits")
        word |= v << lsb
    return word


def unpack_tuser(word: int) -> TUser:
    """Inverse of :func:`pack_tuser`."""
    v = {name: (word >> lsb) & ((1 << width) - 1) for name, lsb, width in _FIELDS}
    if v["reward_sum"] & 0x8000_0000:
        v["reward_sum"] -= 1 << 32
    return TUser(**v)


def worker_mac(cluster_id: int, worker_id: int) -> str:
    return f"02:00:{cluster_id >> 8:02x}:{cluster_id & 255:02x}:{worker_id >> 8:02x}:{worker_id & 255:02x}"


def worker_ip(cluster_id: int, worker_id: int) -> str:
    return f"10.{cluster_id & 255}.{worker_id >> 8}.{worker_id & 255}"


def update_packet(u: Update, udp_checksum: Optional[int] = None) -> Ether:
    """The Ethernet frame of update ``u``, with addresses derived from its worker
    (cluster, worker and seq determine every header byte). The UDP checksum is
    computed by scapy unless ``udp_checksum`` is given."""
    return (
        Ether(src=worker_mac(u.cluster_id, u.worker_id), dst=PS_MAC)
        / IP(src=worker_ip(u.cluster_id, u.worker_id), dst=PS_IP, id=u.seq & 0xFFFF)
        / UDP(sport=40000 + (u.worker_id % 20000), dport=UPDATE_PORT, chksum=udp_checksum)
        / update_layer(u)
    )


def update_frame(u: Update) -> bytes:
    """Frame bytes (no FCS) of update ``u``; the UDP checksum is computed by scapy."""
    return bytes(update_packet(u))


def departing_frame(owner: Update, content: Update, merged: bool) -> bytes:
    """The frame the queue must send for a segment.

    ``owner`` is the update whose frame opened the segment (its APPEND) or
    last replaced it; ``content`` the update the segment holds now. The frame
    is the owner's frame (:func:`update_frame`) with the Olaf fields that
    aggregation changes (count, reward_sum, gen_ts, grads) taken from
    ``content``. If an update was aggregated into the segment its UDP checksum
    is 0 (docs/protocol.md: a switch that rewrites an Olaf message sets it to
    0); otherwise the segment holds the owner's frame unchanged.

    Raises ValueError if ``content`` is not the owner's update (cluster,
    worker, seq, chunk or num_chunks differ) or has a different number of gradients.
    """
    ident = ("cluster_id", "worker_id", "seq", "chunk", "num_chunks")
    if tuple(getattr(owner, f) for f in ident) != tuple(getattr(content, f) for f in ident):
        raise ValueError(
            f"segment owner is {[getattr(owner, f) for f in ident]} ({', '.join(ident)}), "
            f"but the departing update names {[getattr(content, f) for f in ident]}"
        )
    if len(owner.grads) != len(content.grads):
        raise ValueError(f"owner has {len(owner.grads)} grads, content {len(content.grads)}")
    if not merged:
        if content != owner:
            raise ValueError(f"segment of {owner} holds {content} although nothing was aggregated into it")
        return update_frame(owner)
    return bytes(update_packet(content, udp_checksum=0))


def beats(frame_len: int, data_width: int = 512) -> int:
    """AXI4-Stream beats of a frame of ``frame_len`` bytes."""
    lanes = data_width // 8
    return (frame_len + lanes - 1) // lanes

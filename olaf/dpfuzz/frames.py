"""Frames for fuzzing the Olaf data plane: scapy's ``fuzz()`` and hand-made mutations of
valid updates and ACKs (docs/reliability.md lists the families).

Every generator returns ``(ingress port, frame bytes)``. The port map is the PTF one
(olaf/ptf_runner.py): port 0 the PS, 1..4 the workers ``w1..w4`` at 10.0.1.k (w1, w2 in
cluster 0; w3, w4 in cluster 1), 5 an unknown host. Frames are at least an Ethernet header
long (14 bytes): shorter ones never reach a switch.
"""

from __future__ import annotations

import random
from typing import Callable

from scapy.layers.inet import IP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, fuzz

from olaf import wire
from olaf.constants import ACK_PORT, UPDATE_PORT
from olaf.update import Update

PS_PORT = 0
PS_IP = "10.0.0.100"
PS_MAC = "00:00:0a:00:00:64"
SW_MAC = "00:00:00:00:01:00"
WORKERS = {1: 0, 2: 0, 3: 1, 4: 1}   # worker k (port k) -> cluster
UNKNOWN_PORT = 5
NUM_GRADS = 4

Frame = tuple[int, bytes]


def worker_ip(k: int) -> str:
    return f"10.0.1.{k}"


def worker_mac(k: int) -> str:
    return f"00:00:0a:00:01:{k:02x}"


def update_pkt(k: int, u: Update, *, init: bool = False, **ip) -> Packet:
    """A valid update as worker ``k`` sends it (UDP checksum 0)."""
    return (Ether(src=worker_mac(k), dst=SW_MAC) / IP(src=worker_ip(k), dst=PS_IP, **ip)
            / UDP(sport=ACK_PORT, dport=UPDATE_PORT, chksum=0) / wire.update_layer(u, init=init))


def ack_pkt(cluster_id: int, *, src: str = PS_IP, status: wire.QueueStatus | None = None) -> Packet:
    """A valid ACK as the PS sends it toward worker 1's address."""
    layer = wire.ack_layer(cluster_id=cluster_id, worker_id=1, seq=1, count=1, global_reward=0, gen_ts=1,
                           weights=[0] * NUM_GRADS, status=status)
    return (Ether(src=PS_MAC, dst=SW_MAC) / IP(src=src, dst=worker_ip(1))
            / UDP(sport=UPDATE_PORT, dport=ACK_PORT) / layer)


def _upd(rng: random.Random, seq: int) -> Update:
    return Update(cluster_id=0, worker_id=0, seq=seq, count=1, reward_sum=rng.randrange(-1 << 20, 1 << 20),
                  gen_ts=rng.randrange(1 << 40), grads=tuple(rng.randrange(-1 << 24, 1 << 24) for _ in range(NUM_GRADS)))


def _worker(rng: random.Random) -> int:
    return rng.choice(list(WORKERS))


def _valid(rng, seq) -> Frame:
    k = _worker(rng)
    return k, bytes(update_pkt(k, _upd(rng, seq)))


def _scapy_fuzz(rng, seq) -> Frame:
    """scapy's fuzz() over Ether/IPv4/UDP/Olaf, with the EtherType kept IPv4 most of the time."""
    layer = fuzz(wire.OlafUpdate()) if rng.random() < 0.5 else fuzz(wire.OlafAck())
    dport = UPDATE_PORT if isinstance(layer, wire.OlafUpdate) else ACK_PORT
    pkt = Ether(src=worker_mac(1), dst=SW_MAC) / fuzz(IP(src=worker_ip(rng.randint(1, 5)), dst=PS_IP)) \
        / fuzz(UDP(dport=dport)) / layer
    if rng.random() < 0.2:
        pkt = fuzz(pkt)
    return rng.choice([PS_PORT, 1, 2, 3, 4, UNKNOWN_PORT]), bytes(pkt)[:1500]


def _header_field(rng, seq) -> Frame:
    """One Olaf header field set to an edge value (version, msg_type, num_grads, chunk, num_chunks, count,
    reward, gen_ts); the deployment has K = 1, so every chunk value but 0 and num_chunks but 1 is malformed."""
    k = _worker(rng)
    u = _upd(rng, seq)
    field, values = rng.choice([
        ("version", [0, 1, 2, 15]), ("msg_type", [0, 2, 3, 15]), ("num_grads", [0, 3, 5, 361, 65535]),
        ("chunk", [0, 1, 63, 65535]), ("num_chunks", [0, 1, 2, 64, 65535]),
        ("count", [0, 1, 2, 65535]), ("reward_sum", [-(1 << 31), (1 << 31) - 1, 0]),
        ("gen_ts", [0, (1 << 64) - 1, 1 << 63]), ("flags", [1, 2, 255]), ("cluster_id", [1, 1023, 1024, 65535]),
    ])
    pkt = update_pkt(k, u)
    setattr(pkt[wire.OlafUpdate], field, rng.choice(values))
    if field == "num_grads":  # keep the element list as is: the count now lies
        pkt[wire.OlafUpdate].grads = list(u.grads)
    return k, bytes(pkt)


def _lengths(rng, seq) -> Frame:
    """IPv4 total length, UDP length or the frame itself disagreeing with the header."""
    k = _worker(rng)
    raw = bytearray(bytes(update_pkt(k, _upd(rng, seq))))
    how = rng.randrange(4)
    if how == 0:
        raw[16:18] = rng.randrange(1 << 16).to_bytes(2, "big")            # IPv4 total length
    elif how == 1:
        raw[38:40] = rng.randrange(1 << 16).to_bytes(2, "big")            # UDP length
    elif how == 2:
        raw = raw[: rng.randrange(14, len(raw))]                            # truncated frame
    else:
        raw += bytes(rng.randrange(1, 64))                                  # trailing bytes
    return k, bytes(raw)


def _ip_layer(rng, seq) -> Frame:
    """IPv4 oddities: options, fragments, TTL 0/1, bad header checksum, IHL < 5, not UDP, no route."""
    k = _worker(rng)
    u = _upd(rng, seq)
    how = rng.randrange(7)
    if how == 6:
        return k, bytes(Ether(src=worker_mac(k), dst=SW_MAC) / IP(src=worker_ip(k), dst=f"192.0.2.{rng.randrange(256)}")
                        / UDP(sport=1, dport=9) / b"no route")
    if how == 0:
        return k, bytes(update_pkt(k, u, options=[IPOption_NOP(), IPOption_RR(routers=["0.0.0.0"])]))
    if how == 1:
        return k, bytes(update_pkt(k, u, flags="MF") if rng.random() < 0.5 else update_pkt(k, u, frag=rng.randint(1, 100)))
    if how == 2:
        return k, bytes(update_pkt(k, u, ttl=rng.choice([0, 1])))
    raw = bytearray(bytes(update_pkt(k, u)))
    if how == 3:
        raw[24] ^= 0xFF                                                    # IPv4 header checksum
    elif how == 4:
        raw[14] = 0x40 | rng.randrange(5)                                  # IHL 0..4
    else:
        raw[23] = rng.choice([6, 1, 47])                                   # TCP / ICMP / GRE
    return k, bytes(raw)


def _l2(rng, seq) -> Frame:
    """A VLAN tag in front of a valid update, or a non-IPv4 EtherType."""
    k = _worker(rng)
    p = update_pkt(k, _upd(rng, seq))
    if rng.random() < 0.5:
        p = Ether(src=worker_mac(k), dst=SW_MAC) / Dot1Q(vlan=rng.randrange(4096)) / p[IP]
    else:
        p[Ether].type = rng.choice([0x86DD, 0x0806, 0x88CC, 0x1234])
    return k, bytes(p)


def _identity(rng, seq) -> Frame:
    """Spoofed sources (a worker's address on another port), unknown sources, wrong destinations."""
    k = _worker(rng)
    u = _upd(rng, seq)
    how = rng.randrange(4)
    if how == 0:
        other = rng.choice([p for p in (1, 2, 3, 4, UNKNOWN_PORT) if p != k])
        return other, bytes(update_pkt(k, u))
    if how == 1:
        p = update_pkt(k, u)
        p[IP].src = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        return UNKNOWN_PORT, bytes(p)
    if how == 2:
        p = update_pkt(k, u)
        p[IP].dst = rng.choice([worker_ip(rng.randint(1, 4)), "192.0.2.1", "10.0.0.99"])
        return k, bytes(p)
    return k, bytes(update_pkt(k, u, init=True))


def _acks(rng, seq) -> Frame:
    """ACKs from the PS, forged ACKs (another source or port), ACKs with a status set."""
    c = rng.choice([0, 1, 7])
    status = wire.QueueStatus(rng.randrange(1 << 24), rng.randrange(1 << 16), rng.randrange(1 << 24)) \
        if rng.random() < 0.5 else None
    how = rng.randrange(3)
    if how == 0:
        return PS_PORT, bytes(ack_pkt(c, status=status))
    if how == 1:
        return _worker(rng), bytes(ack_pkt(c, status=status))
    return PS_PORT, bytes(ack_pkt(c, src=worker_ip(2), status=status))


def _random_bytes(rng, seq) -> Frame:
    """Random bytes behind a valid Ethernet+IPv4+UDP header to an Olaf port."""
    k = _worker(rng)
    body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80)))
    p = Ether(src=worker_mac(k), dst=SW_MAC) / IP(src=worker_ip(k), dst=PS_IP) \
        / UDP(sport=ACK_PORT, dport=rng.choice([UPDATE_PORT, ACK_PORT]), chksum=0) / body
    return k, bytes(p)


FAMILIES: dict[str, Callable[[random.Random, int], Frame]] = {
    "valid": _valid, "scapy_fuzz": _scapy_fuzz, "header_field": _header_field, "lengths": _lengths,
    "ip_layer": _ip_layer, "l2": _l2, "identity": _identity, "acks": _acks, "random_bytes": _random_bytes,
}


def mixed(rng: random.Random, n: int, first_seq: int, families: list[str] | None = None) -> list[tuple[str, Frame]]:
    """``n`` frames drawn from ``families`` (default: every family)."""
    names = families or list(FAMILIES)
    return [(name, FAMILIES[name](rng, first_seq + i)) for i, name in ((i, rng.choice(names)) for i in range(n))]

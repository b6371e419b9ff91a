"""Checksums of frames a switch emits: the IPv4 header checksum must be right, the UDP
checksum 0 (RFC 768: none) or right. Used by the PTF suite on every frame it receives and
by the data-plane fuzzer on every frame the switch sends."""

from __future__ import annotations

import socket
from typing import Optional

from scapy.layers.inet import IP, UDP, in4_chksum
from scapy.layers.l2 import Ether
from scapy.utils import checksum


def checksum_problem(frame: bytes) -> Optional[str]:
    """Why ``frame``'s checksums are wrong, None if they are fine (or it is not IPv4)."""
    pkt = Ether(frame)
    if IP not in pkt:
        return None
    ip = pkt[IP]
    hdr = bytes(ip)[: ip.ihl * 4]
    if len(hdr) < 20 or checksum(hdr) != 0:
        return f"bad IPv4 header checksum 0x{ip.chksum:04x}"
    if UDP in pkt and pkt[UDP].chksum != 0 and ip.frag == 0 and not ip.flags.MF:
        udp = bytes(pkt[UDP])[: pkt[UDP].len]
        if in4_chksum(socket.IPPROTO_UDP, ip, udp) != 0:
            return f"bad UDP checksum 0x{pkt[UDP].chksum:04x}"
    return None

"""The values of the switch tables the controller writes, as plain data (no P4Runtime import):
what :func:`olaf.controller.state.desired_state` computes and what every implementation of the
Olaf switch is programmed with — BMv2 through P4Runtime (:mod:`olaf.controller.forwarding`,
:mod:`olaf.controller.ack_multicast`, :mod:`olaf.controller.p4rt`), the ns-3 switch directly
(:mod:`olaf.sim.backend`).
"""

from __future__ import annotations

from dataclasses import dataclass

from olaf.constants import ACK_PORT


@dataclass(frozen=True)
class Route:
    """One /32 ``ipv4_lpm`` entry: out of ``port`` with these Ethernet addresses."""

    prefix: str
    port: int
    src_mac: str
    dst_mac: str


@dataclass(frozen=True)
class Rewrite:
    """``ack_rewrite`` entry of a worker replica (key egress_rid = worker_id): the replica's
    Ethernet addresses, the worker's IPv4 address and its own UDP port (the ACK port by
    default; workers sharing an address each have their own)."""

    src_mac: str
    dst_mac: str
    dst_ip: str
    dst_port: int = ACK_PORT


@dataclass(frozen=True)
class Replica:
    """One PRE replica: egress port and egress_rid (P4Runtime ``Replica``)."""

    port: int
    rid: int


def group_id(cluster_id: int) -> int:
    """PRE multicast group of a cluster (P4Runtime group ids start at 1)."""
    return cluster_id + 1

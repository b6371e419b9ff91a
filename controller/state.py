"""Desired state of each switch's tables, computed from a network: the one derivation of the
Olaf switch tables.

Pure functions (no switch, no P4Runtime import): the controller diffs this against what a BMv2
switch holds and writes only the difference (INSERT / MODIFY / DELETE), which is how clusters
are regrouped at runtime without touching the queue; the ns-3 backend programs its switches
with the same state (:mod:`olaf.sim.backend`). The network is any object of the shape of
:class:`olaf.controller.config.Deployment` (:class:`Network`), e.g. the shared layout of a run
plan (:class:`olaf.plan.topology.Layout`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Protocol

from olaf.controller.entries import Replica, Rewrite, Route, group_id  # noqa: F401  (group_id re-exported)
from olaf.controller.routing import Host, next_hops
from olaf.controller.routing import Network as RoutedNetwork
from olaf.controller.update_identifier import WorkerEntry, WorkerKey, worker_key


class _Host(Host, Protocol):
    @property
    def ip(self) -> str: ...
    @property
    def worker_id(self) -> Optional[int]: ...
    @property
    def udp_port(self) -> int: ...


class Network(RoutedNetwork, Protocol):
    """What the desired state is computed from: switches, hosts, links (:mod:`.routing`), the
    clusters (id → worker host names) and the worker identity (``address_port`` | ``five_tuple``)."""

    @property
    def hosts(self) -> Mapping[str, _Host]: ...
    @property
    def clusters(self) -> Mapping[int, tuple[str, ...]]: ...
    @property
    def identity(self) -> str: ...


@dataclass
class SwitchState:
    """What one switch should hold.

    Attributes:
        routes: host IPv4 → Route (ipv4_lpm, /32; hosts sharing an address share its route).
        workers: :data:`~olaf.controller.update_identifier.WorkerKey` (address, UDP port or 0 for
            any) → its worker_table entry (ids, ingress port).
        groups: cluster_id → replicas (PRE group ``group_id(c)`` + cluster_mcast entry).
        rewrites: worker_id → Rewrite (ack_rewrite), for workers attached to this switch.
    """

    routes: dict[str, Route] = field(default_factory=dict)
    workers: dict[WorkerKey, WorkerEntry] = field(default_factory=dict)
    groups: dict[int, tuple[Replica, ...]] = field(default_factory=dict)
    rewrites: dict[int, Rewrite] = field(default_factory=dict)


def desired_state(d: Network, switch: str) -> SwitchState:
    """The full desired state of ``switch`` in network ``d`` (a deployment or a layout)."""
    sw = d.switches[switch]
    hops = next_hops(d, switch)
    st = SwitchState()
    for name, h in d.hosts.items():
        hop = hops[name]
        st.routes[h.ip] = Route(h.ip, hop.port, sw.mac, hop.dst_mac)
    for cid, members in d.clusters.items():
        replicas: list[Replica] = []
        for w in members:
            h = d.hosts[w]
            hop = hops[w]
            st.workers[worker_key(h.ip, h.udp_port, d.identity)] = WorkerEntry(h.worker_id, cid,  # type: ignore[arg-type]
                                                                               hop.port)
            if hop.direct:
                replicas.append(Replica(hop.port, h.worker_id))  # type: ignore[arg-type]
                st.rewrites[h.worker_id] = Rewrite(sw.mac, h.mac, h.ip, h.udp_port)  # type: ignore[index]
            elif Replica(hop.port, 0) not in replicas:
                replicas.append(Replica(hop.port, 0))
        st.groups[cid] = tuple(sorted(replicas, key=lambda r: (r.port, r.rid)))
    # Rewrites for attached workers outside any cluster are harmless; keep only members'.
    return st

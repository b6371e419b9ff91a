"""Desired P4Runtime state of each switch, computed from a :class:`Deployment`.

Pure functions (no switch needed): the controller diffs this against what the
switch holds and writes only the difference (INSERT / MODIFY / DELETE), which
is how clusters are regrouped at runtime without touching the queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from olaf.controller.ack_multicast import Rewrite, group_id  # noqa: F401  (group_id re-exported)
from olaf.controller.config import Deployment
from olaf.controller.forwarding import Route
from olaf.controller.p4rt import Replica
from olaf.controller.routing import next_hops
from olaf.controller.update_identifier import WorkerEntry


@dataclass
class SwitchState:
    """What one switch should hold.

    Attributes:
        routes: host IPv4 → Route (ipv4_lpm, /32).
        workers: worker IPv4 → its worker_table entry (ids, ingress port, UDP source port binding).
        groups: cluster_id → replicas (PRE group ``group_id(c)`` + cluster_mcast entry).
        rewrites: worker_id → Rewrite (ack_rewrite), for workers attached to this switch.
    """

    routes: dict[str, Route] = field(default_factory=dict)
    workers: dict[str, WorkerEntry] = field(default_factory=dict)
    groups: dict[int, tuple[Replica, ...]] = field(default_factory=dict)
    rewrites: dict[int, Rewrite] = field(default_factory=dict)


def desired_state(d: Deployment, switch: str) -> SwitchState:
    """The full desired state of ``switch`` for deployment ``d``."""
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
            st.workers[h.ip] = WorkerEntry.bound(h.worker_id, cid, hop.port, d.identity)  # type: ignore[arg-type]
            if hop.direct:
                replicas.append(Replica(hop.port, h.worker_id))  # type: ignore[arg-type]
                st.rewrites[h.worker_id] = Rewrite(sw.mac, h.mac, h.ip)  # type: ignore[index]
            elif Replica(hop.port, 0) not in replicas:
                replicas.append(Replica(hop.port, 0))
        st.groups[cid] = tuple(sorted(replicas, key=lambda r: (r.port, r.rid)))
    # Rewrites for attached workers outside any cluster are harmless; keep only members'.
    return st

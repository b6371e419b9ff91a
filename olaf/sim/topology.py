"""The network of a :class:`~olaf.plan.plan.RunPlan`: hosts, switches, links and the
switch tables, computed in Python (the controller's role) and written into the C++
simulation (:mod:`olaf.sim.backend`).

Addressing and ids follow the Mininet topologies (``topologies/build.py``): the PS at
10.0.0.100, worker ``w<i>`` (i = 1..N, also its worker_id) at
10.0.<i // 250 + 1>.<i % 250 + 1>; clusters are numbered 0.. in group order.

Tables, as ``controller/state.py`` derives them for BMv2: every switch knows every
worker (worker_table), has a /32 route to every host, and per cluster a multicast
group with one replica per attached worker (rewritten to the worker's address) and
one unchanged replica toward each next-hop switch that leads to other members.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from olaf.plan.plan import RunPlan
from olaf.plan.topology import PARENT
from olaf.topologies.build import PS_IP, worker_ip  # noqa: F401  (PS_IP re-exported)


def ip_int(ip: str) -> int:
    return int(ipaddress.IPv4Address(ip))


@dataclass(frozen=True)
class WorkerHost:
    """One worker: name ``w<i>``, worker_id ``i``, its cluster and group."""

    name: str
    worker_id: int
    ip: str
    cluster_id: int
    group: int
    switch: str


@dataclass
class Network:
    """Hosts and switch graph of a scenario.

    ``parent[s]``: the next switch from ``s`` toward the PS (None: ``s`` connects the PS).
    """

    workers: list[WorkerHost]
    switches: tuple[str, ...]
    parent: dict[str, str | None]
    clusters: dict[int, list[WorkerHost]] = field(default_factory=dict)

    def path_to_ps(self, switch: str) -> list[str]:
        """Switches from ``switch`` up to the one attached to the PS."""
        out = [switch]
        while (nxt := self.parent[out[-1]]) is not None:
            out.append(nxt)
        return out


def network(s: RunPlan) -> Network:
    """Hosts and switch graph of ``s`` (clusters numbered in group order, workers from 1)."""
    parent: dict[str, str | None] = dict(PARENT[s.topology])
    workers: list[WorkerHost] = []
    clusters: dict[int, list[WorkerHost]] = {}
    cid = 0
    for gi, g in enumerate(s.groups):
        for _ in range(g.clusters):
            for _ in range(g.workers_per_cluster):
                i = len(workers) + 1
                w = WorkerHost(f"w{i}", i, worker_ip(i), cid, gi, g.switch)
                workers.append(w)
                clusters.setdefault(cid, []).append(w)
            cid += 1
    return Network(workers, s.switches, parent, clusters)

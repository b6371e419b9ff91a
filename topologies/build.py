"""Topology builders: a :class:`~olaf.controller.config.Deployment` for each shape.

* :func:`tor` — one ToR switch ``s1``, the PS and ``clusters × workers_per_cluster``
  workers (paper §8 testbed: 9 clusters × 3 workers).
* :func:`multihop` — paper Fig. 9: clusters split over edge switches ``s1`` and
  ``s2``, both uplinked to ``s3``, which connects the PS (queue 5 on s1/s2 and
  8 on s3 in the paper, §8.3).
* :func:`deployment` — either shape with any cluster groups (:class:`~olaf.plan.topology.Placement`:
  clusters and workers per cluster behind an edge switch) and per-switch queues and rates; the
  two above are its common cases.

Hosts, addresses, ports, links and clusters are the shared layout
(:func:`olaf.plan.topology.layout`); a deployment adds the P4 switches' configuration (switch
``s<k>`` has P4Runtime port 50000 + k, Thrift port 9090 + k and device id k) and the limits
of an emulated network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from olaf.constants import DEFAULT_ACTIVITY_WINDOW_NS
from olaf.controller.config import Deployment, SwitchConf, validate
from olaf.controller.olaf_params import QueueParams
from olaf.plan.topology import (
    DEFAULT_CLUSTERS,
    DEFAULT_WORKERS_PER_CLUSTER,
    EDGE_SWITCHES,
    MAX_CLUSTERS_PER_SWITCH,
    MAX_WORKERS_PER_CLUSTER,
    SWITCHES,
    Placement,
    layout,
    switch_mac,
)


@dataclass(frozen=True)
class QueueSetup:
    """Per-switch queue and bottleneck settings.

    Attributes:
        size: Q_max, updates (``deployment`` gives the switch Q_max · K segments).
        rate_pps: egress rate toward the PS, packets/s (0 = unlimited).
        depth: traffic-manager queue depth toward the PS, packets.
    """

    size: int = 8
    rate_pps: int = 0
    depth: int = 64


def _switch(k: int, q: QueueSetup, num_grads: int, num_chunks: int, discipline: str, reward_threshold: Optional[int],
            activity_window_ns: int, port_base: int) -> SwitchConf:
    segments = q.size * num_chunks
    return SwitchConf(
        name=f"s{k}", grpc=f"127.0.0.1:{port_base + k}", device_id=k, thrift_port=9090 + k,
        mac=switch_mac(k),
        queue=QueueParams(queue_size=segments, num_grads=num_grads, reward_threshold=reward_threshold,
                          activity_window_ns=activity_window_ns, discipline=discipline),
        rate_pps=q.rate_pps, depth=max(q.depth, segments))


def deployment(topo: str, groups: Sequence[Placement], queues: Mapping[str, QueueSetup], *, num_grads: int = 16,
               num_chunks: int = 1, discipline: str = "olaf", reward_threshold: Optional[int] = None,
               activity_window_ns: int = DEFAULT_ACTIVITY_WINDOW_NS, grpc_port_base: int = 50000) -> Deployment:
    """The deployment of ``topo`` (``tor`` or ``multihop``) with cluster groups ``groups`` and
    each switch's queue and bottleneck ``queues`` (a switch not in it gets ``QueueSetup()``).
    Updates of ``num_grads`` elements travel in ``num_chunks`` chunks (K, :mod:`olaf.chunks`): a
    queue of Q_max updates gets Q_max · K segments and a traffic-manager depth of at least that
    (:func:`olaf.controller.config.validate` writes K into every switch's queue parameters).

    Clusters are numbered 0.. and workers ``w1``.. in group order (as the simulation,
    :mod:`olaf.sim.topology`, numbers them). Ports: the workers of an edge switch on
    1, 2, …, then its uplink (multihop) or the PS (tor); ``s3`` has ``s1`` on 1, ``s2``
    on 2 and the PS on 3.

    Raises:
        ValueError: an unknown shape or edge switch, or more than 250 clusters on one
            edge switch / 16 workers per cluster (the message names the limit).
    """
    per_edge: dict[str, int] = dict.fromkeys(EDGE_SWITCHES.get(topo, ()), 0)
    for g in groups:
        if not 1 <= g.workers_per_cluster <= MAX_WORKERS_PER_CLUSTER:
            raise ValueError(f"workers_per_cluster={g.workers_per_cluster} must be in 1..{MAX_WORKERS_PER_CLUSTER}")
        if g.clusters < 1:
            raise ValueError(f"clusters={g.clusters} must be >= 1")
        if g.switch in per_edge:
            per_edge[g.switch] += g.clusters
    for sw, n in per_edge.items():
        if n > MAX_CLUSTERS_PER_SWITCH:
            raise ValueError(f"clusters={n} behind {sw} must be in 1..{MAX_CLUSTERS_PER_SWITCH}")
    lay = layout(topo, groups)
    hosts, links, clusters = dict(lay.hosts), lay.links, dict(lay.clusters)
    switches = {name: _switch(int(name[1:]), queues.get(name, QueueSetup()), num_grads, num_chunks, discipline,
                              reward_threshold, activity_window_ns, grpc_port_base) for name in SWITCHES[topo]}
    return validate(Deployment(num_grads=num_grads, num_chunks=num_chunks, ps=lay.ps, switches=switches, hosts=hosts, links=links,
                               clusters=clusters, identity=lay.identity))


def tor(clusters: int = DEFAULT_CLUSTERS, workers_per_cluster: int = DEFAULT_WORKERS_PER_CLUSTER, *,
        queue: QueueSetup = QueueSetup(), num_grads: int = 16, discipline: str = "olaf", reward_threshold: Optional[int] = None,
        activity_window_ns: int = DEFAULT_ACTIVITY_WINDOW_NS, grpc_port_base: int = 50000) -> Deployment:
    """ToR star. Raises ValueError for sizes outside 1..250 clusters / 1..16 workers per cluster."""
    if not 1 <= clusters <= MAX_CLUSTERS_PER_SWITCH:
        raise ValueError(f"clusters={clusters} must be in 1..{MAX_CLUSTERS_PER_SWITCH}")
    return deployment("tor", [Placement("s1", clusters, workers_per_cluster)], {"s1": queue}, num_grads=num_grads,
                      discipline=discipline, reward_threshold=reward_threshold, activity_window_ns=activity_window_ns,
                      grpc_port_base=grpc_port_base)


def multihop(clusters_per_edge: int = 5, workers_per_cluster: int = 2, *,
             edge_queue: QueueSetup = QueueSetup(size=5), core_queue: QueueSetup = QueueSetup(size=8),
             num_grads: int = 16, discipline: str = "olaf", reward_threshold: Optional[int] = None,
             activity_window_ns: int = DEFAULT_ACTIVITY_WINDOW_NS, grpc_port_base: int = 50000) -> Deployment:
    """Paper Fig. 9: s1, s2 (edge, clusters) → s3 (core) → PS.

    Clusters 0..k-1 hang off s1 (group S1), k..2k-1 off s2 (group S2).
    """
    if not 1 <= clusters_per_edge <= 100:
        raise ValueError(f"clusters_per_edge={clusters_per_edge} must be in 1..100")
    groups = [Placement("s1", clusters_per_edge, workers_per_cluster), Placement("s2", clusters_per_edge,
                                                                                  workers_per_cluster)]
    return deployment("multihop", groups, {"s1": edge_queue, "s2": edge_queue, "s3": core_queue}, num_grads=num_grads,
                      discipline=discipline, reward_threshold=reward_threshold, activity_window_ns=activity_window_ns,
                      grpc_port_base=grpc_port_base)

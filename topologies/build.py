"""Topology builders: a :class:`~olaf.controller.config.Deployment` for each shape.

* :func:`tor` — one ToR switch ``s1``, the PS and ``clusters × workers_per_cluster``
  workers (paper §8 testbed: 9 clusters × 3 workers).
* :func:`multihop` — paper Fig. 9: clusters split over edge switches ``s1`` and
  ``s2``, both uplinked to ``s3``, which connects the PS (queue 5 on s1/s2 and
  8 on s3 in the paper, §8.3).

Addressing: PS 10.0.0.100; worker ``w<i>`` (i = 1..N, also its worker_id) at
10.0.<i // 250 + 1>.<i % 250 + 1>; MACs derived from the IPs; switch ``s<k>``
has P4Runtime port 50000 + k, Thrift port 9090 + k and device id k. Worker
ports on a switch are 1, 2, …; uplinks and the PS port follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from olaf.controller.config import Deployment, HostConf, LinkConf, SwitchConf, validate
from olaf.controller.olaf_params import QueueParams

PS_IP = "10.0.0.100"


@dataclass(frozen=True)
class QueueSetup:
    """Per-switch queue and bottleneck settings.

    Attributes:
        size: Q_max, segments.
        rate_pps: egress rate toward the PS, packets/s (0 = unlimited).
        depth: traffic-manager queue depth toward the PS, packets.
    """

    size: int = 8
    rate_pps: int = 0
    depth: int = 64


def mac_of(ip: str) -> str:
    a, b, c, d = (int(x) for x in ip.split("."))
    return f"00:00:{a:02x}:{b:02x}:{c:02x}:{d:02x}"


def worker_ip(i: int) -> str:
    return f"10.0.{i // 250 + 1}.{i % 250 + 1}"


def _switch(k: int, q: QueueSetup, num_grads: int, discipline: str, reward_threshold: Optional[int],
            activity_window_ns: int, port_base: int) -> SwitchConf:
    return SwitchConf(
        name=f"s{k}", grpc=f"127.0.0.1:{port_base + k}", device_id=k, thrift_port=9090 + k,
        mac=f"00:00:00:00:{k:02x}:00",
        queue=QueueParams(queue_size=q.size, num_grads=num_grads, reward_threshold=reward_threshold,
                          activity_window_ns=activity_window_ns, discipline=discipline),
        rate_pps=q.rate_pps, depth=q.depth)


def _workers(first: int, n: int, switch: str, first_port: int) -> dict[str, HostConf]:
    out = {}
    for j in range(n):
        i = first + j
        ip = worker_ip(i)
        out[f"w{i}"] = HostConf(f"w{i}", ip, mac_of(ip), switch, first_port + j, worker_id=i)
    return out


def tor(clusters: int = 9, workers_per_cluster: int = 3, *, queue: QueueSetup = QueueSetup(),
        num_grads: int = 16, discipline: str = "olaf", reward_threshold: Optional[int] = None,
        activity_window_ns: int = 1_000_000_000, grpc_port_base: int = 50000) -> Deployment:
    """ToR star. Raises ValueError for sizes outside 1..250 clusters / 1..16 workers per cluster."""
    if not 1 <= clusters <= 250:
        raise ValueError(f"clusters={clusters} must be in 1..250")
    if not 1 <= workers_per_cluster <= 16:
        raise ValueError(f"workers_per_cluster={workers_per_cluster} must be in 1..16")
    n = clusters * workers_per_cluster
    hosts = _workers(1, n, "s1", 1)
    hosts["ps"] = HostConf("ps", PS_IP, mac_of(PS_IP), "s1", n + 1)
    sw = _switch(1, queue, num_grads, discipline, reward_threshold, activity_window_ns, grpc_port_base)
    cl = {c: tuple(f"w{c * workers_per_cluster + j + 1}" for j in range(workers_per_cluster))
          for c in range(clusters)}
    return validate(Deployment(num_grads=num_grads, ps="ps", switches={"s1": sw}, hosts=hosts,
                               links=(), clusters=cl))


def multihop(clusters_per_edge: int = 5, workers_per_cluster: int = 2, *,
             edge_queue: QueueSetup = QueueSetup(size=5), core_queue: QueueSetup = QueueSetup(size=8),
             num_grads: int = 16, discipline: str = "olaf", reward_threshold: Optional[int] = None,
             activity_window_ns: int = 1_000_000_000, grpc_port_base: int = 50000) -> Deployment:
    """Paper Fig. 9: s1, s2 (edge, clusters) → s3 (core) → PS.

    Clusters 0..k-1 hang off s1 (group S1), k..2k-1 off s2 (group S2).
    """
    if not 1 <= clusters_per_edge <= 100:
        raise ValueError(f"clusters_per_edge={clusters_per_edge} must be in 1..100")
    if not 1 <= workers_per_cluster <= 16:
        raise ValueError(f"workers_per_cluster={workers_per_cluster} must be in 1..16")
    per_edge = clusters_per_edge * workers_per_cluster
    hosts = {**_workers(1, per_edge, "s1", 1), **_workers(per_edge + 1, per_edge, "s2", 1)}
    up = per_edge + 1  # uplink port on s1/s2
    hosts["ps"] = HostConf("ps", PS_IP, mac_of(PS_IP), "s3", 3)
    switches = {
        "s1": _switch(1, edge_queue, num_grads, discipline, reward_threshold, activity_window_ns, grpc_port_base),
        "s2": _switch(2, edge_queue, num_grads, discipline, reward_threshold, activity_window_ns, grpc_port_base),
        "s3": _switch(3, core_queue, num_grads, discipline, reward_threshold, activity_window_ns, grpc_port_base),
    }
    links = (LinkConf("s1", up, "s3", 1), LinkConf("s2", up, "s3", 2))
    cl = {c: tuple(f"w{c * workers_per_cluster + j + 1}" for j in range(workers_per_cluster))
          for c in range(2 * clusters_per_edge)}
    return validate(Deployment(num_grads=num_grads, ps="ps", switches=switches, hosts=hosts,
                               links=links, clusters=cl))

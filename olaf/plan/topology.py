"""The topologies a run plan names (paper §8): their switches, edges and the path toward the PS.

* ``tor`` — every cluster behind one switch ``s1`` attached to the PS (the §8.1 testbed);
* ``multihop`` — paper Fig. 9: edge switches ``s1`` and ``s2``, both uplinked to the core
  ``s3``, which connects the PS.

The one definition of these shapes and of their layout (:func:`layout`: hosts, addresses,
ports, links, clusters): the run plan validates against it, the Mininet builders
(:mod:`olaf.topologies.build`) add the P4 switches' configuration to it, and the simulation
(:mod:`olaf.sim.topology`) builds it in ns-3 and asks the controller's
:func:`~olaf.controller.state.desired_state` for its switch tables.

Addressing: PS 10.0.0.100; worker ``w<i>`` (i = 1..N, also its worker_id) at
10.0.<i // 250 + 1>.<i % 250 + 1>; MACs derived from the IPs; switch ``s<k>``'s MAC
00:00:00:00:<k>:00. Clusters are numbered 0.. and workers ``w1``.. in group order. Ports: the
workers of an edge switch on 1, 2, …, then its uplink (multihop) or the PS (tor); ``s3`` has
``s1`` on 1, ``s2`` on 2 and the PS on 3.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from olaf.constants import ACK_PORT
from olaf.constants import DEFAULT_QUEUE_SIZE as QUEUE_SIZE

TOPOLOGIES = ("tor", "multihop")
SWITCHES = {"tor": ("s1",), "multihop": ("s1", "s2", "s3")}
EDGE_SWITCHES = {"tor": ("s1",), "multihop": ("s1", "s2")}
PARENT: dict[str, dict[str, Optional[str]]] = {"tor": {"s1": None}, "multihop": {"s1": "s3", "s2": "s3", "s3": None}}
"""The next switch toward the PS (None: the switch attached to the PS)."""
EDGE_QUEUE_SIZE = 5
"""Q_max of the multihop edge switches s1, s2 (paper §8.3), segments."""
DEFAULT_QUEUE_SIZES = {"tor": {"s1": QUEUE_SIZE},
                       "multihop": {"s1": EDGE_QUEUE_SIZE, "s2": EDGE_QUEUE_SIZE, "s3": QUEUE_SIZE}}
"""Q_max of every switch by topology, segments: paper §8.1 (8, :data:`olaf.constants.DEFAULT_QUEUE_SIZE`)
and §8.3 (SW1/SW2 5, SW3 8)."""
QUEUES = ("olaf", "fifo")
"""The switches' queue disciplines a command offers: the OlafQueue and the tail-drop FIFO baseline of the
same size (a plan's ``queue`` also takes ``olaf_tc``: the OlafQueue with transmission control)."""
DEFAULT_CLUSTERS = 9
DEFAULT_WORKERS_PER_CLUSTER = 3
"""The default network of ``olaf run``, ``olaf train``, ``make run`` and ``make train``: 9 clusters ×
3 workers behind one ToR switch (paper §8.1)."""
MAX_CLUSTERS_PER_SWITCH = 250
"""Clusters behind one edge switch of an emulated network (worker addressing 10.0.x.y)."""
MAX_WORKERS_PER_CLUSTER = 16
"""Workers of one cluster in an emulated network (the ACK multicast group's replicas)."""

PS_IP = "10.0.0.100"
PS_NAME = "ps"


def worker_ip(i: int) -> str:
    """IPv4 address of worker ``w<i>``."""
    return f"10.0.{i // 250 + 1}.{i % 250 + 1}"


def mac_of(ip: str) -> str:
    """The MAC of the host with IPv4 address ``ip`` (00:00 then the address's four bytes)."""
    a, b, c, d = (int(x) for x in ip.split("."))
    return f"00:00:{a:02x}:{b:02x}:{c:02x}:{d:02x}"


def switch_mac(k: int) -> str:
    """The MAC of switch ``s<k>`` (source of the frames it sends)."""
    return f"00:00:00:00:{k:02x}:00"


SEED_CACHE = 1 << 17
"""Worker seeds and start phases remembered per process (a run of the simulation asks for each
worker's several times; 62,500 workers is a deployment's maximum)."""


@functools.lru_cache(maxsize=SEED_CACHE)
def worker_seed(run_seed: int, worker_id: int) -> int:
    """The seed of worker ``worker_id``'s own draws (jitter, transmission control) in a run
    seeded ``run_seed``, on every backend: NumPy's ``SeedSequence([run_seed, worker_id])`` (32 bits),
    so the workers of runs with different seeds draw independent streams (``run_seed + worker_id``
    would share all but one worker's stream between seeds 1 and 2)."""
    return int(np.random.SeedSequence([run_seed, worker_id]).generate_state(1, np.uint32)[0])


@dataclass(frozen=True)
class Placement:
    """``clusters`` clusters of ``workers_per_cluster`` workers behind edge switch ``switch``
    (one cluster group; paper §8.3's S1 and S2), ``workers_per_host`` of a cluster's workers on
    one host (one address, one switch port, a UDP port each: the five-tuple identity)."""

    switch: str
    clusters: int
    workers_per_cluster: int
    workers_per_host: int = 1


@dataclass(frozen=True)
class LayoutSwitch:
    name: str
    mac: str


@dataclass(frozen=True)
class LayoutHost:
    """A host: its address, the switch port it is attached to, its worker_id (None: the PS) and
    the UDP port a worker sends from and receives its ACKs on (workers sharing an address, with
    identity ``five_tuple``, each have their own)."""

    name: str
    ip: str
    mac: str
    switch: str
    port: int
    worker_id: Optional[int] = None
    udp_port: int = ACK_PORT


@dataclass(frozen=True)
class LayoutLink:
    a: str
    port_a: int
    b: str
    port_b: int


@dataclass(frozen=True)
class Layout:
    """Switches, hosts, links and clusters of a network (the shape :mod:`olaf.controller.routing`
    and :func:`olaf.controller.state.desired_state` read). ``clusters``: cluster id → worker names."""

    switches: Mapping[str, LayoutSwitch]
    hosts: Mapping[str, LayoutHost]
    links: tuple[LayoutLink, ...]
    clusters: Mapping[int, tuple[str, ...]]
    ps: str = PS_NAME
    identity: str = "address_port"


def layout(topo: str, groups: Sequence[Placement]) -> Layout:
    """The layout of ``topo`` with cluster groups ``groups`` (module docstring), without the
    limits of a P4 build (:func:`olaf.topologies.build.deployment` checks those).

    Raises:
        ValueError: an unknown topology, or a group behind a switch that is not an edge switch of it.
    """
    if topo not in EDGE_SWITCHES:
        raise ValueError(f"topology {topo!r}: use one of {', '.join(EDGE_SWITCHES)}")
    hosts: dict[str, LayoutHost] = {}
    clusters: dict[int, tuple[str, ...]] = {}
    next_port = dict.fromkeys(EDGE_SWITCHES[topo], 1)
    for g in groups:
        if g.switch not in next_port:
            raise ValueError(f"switch {g.switch!r} is not an edge switch of {topo} ({', '.join(EDGE_SWITCHES[topo])})")
        if g.workers_per_host < 1:
            raise ValueError(f"workers_per_host={g.workers_per_host} must be >= 1")
        for _ in range(g.clusters):
            first = len(hosts) + 1
            for j in range(g.workers_per_cluster):
                i = first + j
                machine, k = divmod(j, g.workers_per_host)   # the cluster's machine j // H, its k-th worker
                ip = worker_ip(first + machine * g.workers_per_host)
                hosts[f"w{i}"] = LayoutHost(f"w{i}", ip, mac_of(ip), g.switch, next_port[g.switch] + machine,
                                            worker_id=i, udp_port=ACK_PORT + k)
            next_port[g.switch] += -(-g.workers_per_cluster // g.workers_per_host)
            clusters[len(clusters)] = tuple(f"w{first + j}" for j in range(g.workers_per_cluster))
    switches = {name: LayoutSwitch(name, switch_mac(int(name[1:]))) for name in SWITCHES[topo]}
    root = next(sw for sw, up in PARENT[topo].items() if up is None)
    if topo == "tor":
        hosts[PS_NAME] = LayoutHost(PS_NAME, PS_IP, mac_of(PS_IP), root, next_port[root])
        links: tuple[LayoutLink, ...] = ()
    else:
        hosts[PS_NAME] = LayoutHost(PS_NAME, PS_IP, mac_of(PS_IP), root, 3)
        links = (LayoutLink("s1", next_port["s1"], "s3", 1), LayoutLink("s2", next_port["s2"], "s3", 2))
    shared = any(shares_hosts(g) for g in groups)
    return Layout(switches, hosts, links, clusters, identity="five_tuple" if shared else "address_port")


def shares_hosts(group: Any) -> bool:
    """Whether a cluster group (a plan's or a topology's: any object with ``workers_per_host`` and
    ``workers_per_cluster``) puts more than one of a cluster's workers on one host: the deployment
    then identifies workers by five-tuple (address and UDP port)."""
    return bool(group.workers_per_host > 1 and group.workers_per_cluster > 1)

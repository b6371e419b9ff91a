"""The network of a :class:`~olaf.plan.plan.RunPlan` as the simulation builds it: the shared
layout (:func:`olaf.plan.topology.layout`: hosts, addresses, ports, links, clusters — the same
as an emulated run's) with, per worker, its cluster and group, and the switch graph toward the PS.

The switch tables are not derived here: :mod:`olaf.sim.backend` asks the controller's
:func:`~olaf.controller.state.desired_state` for each switch's state on this layout and writes it
into the C++ switch, as the P4Runtime controller writes it into BMv2.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from functools import cache
from typing import Optional

from olaf.hosts.schedule import ScheduleSpec, worker_schedule
from olaf.plan.plan import RunPlan
from olaf.plan.topology import PARENT, PS_IP, Layout, Placement, layout  # noqa: F401  (PS_IP re-exported)


@cache
def ip_int(ip: str) -> int:
    """The IPv4 address ``ip`` as a host-order integer (memoised: the switch tables name each
    worker's address several times)."""
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


def worker_schedule_of(s: RunPlan, w: WorkerHost) -> ScheduleSpec:
    """Worker ``w``'s schedule on the plan's arrival model (:func:`olaf.hosts.schedule.worker_schedule`,
    the one a real worker of the plan gets): its start phase, on/off burst or replayed trace."""
    return worker_schedule(s, w.group, w.worker_id, duration_s=s.duration_s, max_updates=s.updates_per_worker)


def worker_start_ns(s: RunPlan, w: WorkerHost, phase_ns: Optional[int] = None) -> int:
    """Worker ``w``'s start after t0, ns: its group's ``start_ms`` plus its start phase
    (:meth:`~olaf.plan.plan.RunPlan.start_phase_ns`; ``phase_ns`` when the caller has it already,
    e.g. from :func:`worker_schedule_of`)."""
    phase = s.start_phase_ns(w.group, w.worker_id) if phase_ns is None else phase_ns
    return round(s.groups[w.group].start_ms * 1e6) + phase


@dataclass
class Network:
    """Hosts and switch graph of a plan.

    ``parent[s]``: the next switch from ``s`` toward the PS (None: ``s`` connects the PS);
    ``layout``: the shared layout (ports, links) the switch tables are computed on.
    """

    workers: list[WorkerHost]
    switches: tuple[str, ...]
    parent: dict[str, str | None]
    layout: Layout
    clusters: dict[int, list[WorkerHost]] = field(default_factory=dict)

    def path_to_ps(self, switch: str) -> list[str]:
        """Switches from ``switch`` up to the one attached to the PS."""
        out = [switch]
        while (nxt := self.parent[out[-1]]) is not None:
            out.append(nxt)
        return out


def network(s: RunPlan) -> Network:
    """Hosts and switch graph of ``s`` (clusters numbered in group order, workers from 1)."""
    lay = layout(s.topology, [Placement(g.switch, g.clusters, g.workers_per_cluster) for g in s.groups])
    workers: list[WorkerHost] = []
    clusters: dict[int, list[WorkerHost]] = {}
    for gi, ids in enumerate(s.group_clusters()):
        for cid in ids:
            for name in lay.clusters[cid]:
                h = lay.hosts[name]
                assert h.worker_id is not None
                w = WorkerHost(name, h.worker_id, h.ip, cid, gi, h.switch)
                workers.append(w)
                clusters.setdefault(cid, []).append(w)
    return Network(workers, s.switches, dict(PARENT[s.topology]), lay, clusters)

"""Shortest-path next hops over the switch graph of a deployment.

Works on any network with the shape of :class:`olaf.controller.config.Deployment`
(:class:`Network`: switches with a MAC, hosts attached to a switch port, links between
switch ports), so the network model depends on routing and not the other way round."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Mapping, Protocol


class _Switch(Protocol):
    @property
    def mac(self) -> str: ...


class Host(Protocol):
    """What routing reads of a host: its MAC and the switch port it is attached to."""

    @property
    def mac(self) -> str: ...
    @property
    def switch(self) -> str: ...
    @property
    def port(self) -> int: ...


class _Link(Protocol):
    @property
    def a(self) -> str: ...
    @property
    def port_a(self) -> int: ...
    @property
    def b(self) -> str: ...
    @property
    def port_b(self) -> int: ...


class Network(Protocol):
    """What routing reads of a deployment: switches by name, hosts by name, links."""

    @property
    def switches(self) -> Mapping[str, _Switch]: ...
    @property
    def hosts(self) -> Mapping[str, Host]: ...
    @property
    def links(self) -> tuple[_Link, ...]: ...


@dataclass(frozen=True)
class Hop:
    """How a switch reaches a host: egress port, MAC of the next hop, and
    whether the host is attached to this switch."""

    port: int
    dst_mac: str
    direct: bool


def next_hops(d: Network, switch: str) -> dict[str, Hop]:
    """Host name → :class:`Hop` from ``switch`` (BFS, ties broken by link order).

    Hosts without a path are absent from the result.
    """
    adj: dict[str, list[tuple[int, str]]] = {s: [] for s in d.switches}
    for l in d.links:
        adj[l.a].append((l.port_a, l.b))
        adj[l.b].append((l.port_b, l.a))
    first_port: dict[str, tuple[int, str]] = {switch: (-1, switch)}
    q = deque([switch])
    while q:
        s = q.popleft()
        for port, nb in adj[s]:
            if nb not in first_port:
                first_port[nb] = (port, nb) if s == switch else first_port[s]
                q.append(nb)
    out = {}
    for name, h in d.hosts.items():
        if h.switch == switch:
            out[name] = Hop(h.port, h.mac, True)
        elif h.switch in first_port:
            port, nb = first_port[h.switch]
            out[name] = Hop(port, d.switches[nb].mac, False)
    return out


def switch_path(d: Network, host: str, to: str) -> list[str]:
    """The switches a packet from ``host`` to host ``to`` crosses, in order (first: the
    switch ``host`` is attached to). Raises ValueError if there is no path."""
    s = d.hosts[host].switch
    path = [s]
    by_mac = {sw.mac: n for n, sw in d.switches.items()}
    while True:
        hop = next_hops(d, s).get(to)
        if hop is None:
            raise ValueError(f"no path from {host} to {to}")
        if hop.direct:
            return path
        s = by_mac[hop.dst_mac]
        if s in path:
            raise ValueError(f"routing loop from {host} to {to}: {path + [s]}")
        path.append(s)

"""Declarative deployment config: switches, hosts, links, queue, clusters.

YAML or JSON (``docs/controller.md`` shows a full example)::

    num_grads: 16
    ps: ps                      # the PS host
    switches:
      s1: {grpc: "127.0.0.1:50001", device_id: 1, thrift_port: 9091,
           mac: "00:00:00:00:01:00",
           queue: {size: 8, reward_threshold: null, activity_window_ms: 1000, discipline: olaf},
           bottleneck: {rate_pps: 200, depth: 64}}
    hosts:
      ps: {ip: 10.0.0.100, mac: "00:00:0a:00:00:64", switch: s1, port: 28}
      w1: {ip: 10.0.1.1, mac: "00:00:0a:00:01:01", switch: s1, port: 1, worker_id: 1}
    links:                      # switch-to-switch links: [sa, port_a, sb, port_b]
      - [s1, 10, s3, 1]
    clusters:                   # cluster id -> its workers (host names)
      0: [w1, w2, w3]

Every problem raises :class:`ConfigError` naming the field (``clusters.3[1]``)
and what would fix it. The bottleneck is the egress queue toward the PS on
each switch (``rate_pps`` packets/s, 0 = unlimited; ``depth`` packets).
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml

from olaf.controller.params import QueueParams
from olaf.fixedpoint import reward_to_fixed

MAC_RE = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")
MAX_CLUSTER_ID = 1023  # OLAF_MAX_CLUSTERS - 1 of the P4 build


class ConfigError(ValueError):
    """A bad config value; the message starts with the field path."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True)
class SwitchConf:
    name: str
    grpc: str
    device_id: int
    thrift_port: int
    mac: str
    queue: QueueParams
    rate_pps: int = 0
    depth: int = 64


@dataclass(frozen=True)
class HostConf:
    name: str
    ip: str
    mac: str
    switch: str
    port: int
    worker_id: Optional[int] = None


@dataclass(frozen=True)
class LinkConf:
    a: str
    port_a: int
    b: str
    port_b: int


@dataclass(frozen=True)
class Deployment:
    """A validated deployment. ``clusters`` maps cluster id → worker host names."""

    num_grads: int
    ps: str
    switches: Mapping[str, SwitchConf]
    hosts: Mapping[str, HostConf]
    links: tuple[LinkConf, ...]
    clusters: Mapping[int, tuple[str, ...]]

    def worker(self, name: str) -> HostConf:
        h = self.hosts.get(name)
        if h is None or h.worker_id is None:
            workers = sorted(n for n, x in self.hosts.items() if x.worker_id is not None)
            raise ConfigError("worker", f"{name!r} is not a worker host (workers: {', '.join(workers)})")
        return h

    def cluster_of(self, worker: str) -> Optional[int]:
        for c, ws in self.clusters.items():
            if worker in ws:
                return c
        return None

    def with_clusters(self, clusters: Mapping[int, tuple[str, ...]]) -> "Deployment":
        """The same network with other cluster membership (validated)."""
        d = replace(self, clusters={int(c): tuple(ws) for c, ws in clusters.items()})
        _check_clusters(d)
        return d

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_grads": self.num_grads,
            "ps": self.ps,
            "switches": {n: {"grpc": s.grpc, "device_id": s.device_id, "thrift_port": s.thrift_port,
                             "mac": s.mac,
                             "queue": {"size": s.queue.queue_size,
                                       "reward_threshold_raw": s.queue.reward_threshold,
                                       "activity_window_ms": s.queue.activity_window_ns / 1e6,
                                       "discipline": s.queue.discipline},
                             "bottleneck": {"rate_pps": s.rate_pps, "depth": s.depth}}
                         for n, s in self.switches.items()},
            "hosts": {n: {k: v for k, v in {"ip": h.ip, "mac": h.mac, "switch": h.switch,
                                            "port": h.port, "worker_id": h.worker_id}.items()
                          if v is not None}
                      for n, h in self.hosts.items()},
            "links": [[l.a, l.port_a, l.b, l.port_b] for l in self.links],
            "clusters": {c: list(ws) for c, ws in sorted(self.clusters.items())},
        }


def load(path: Path) -> Deployment:
    """Read and validate a YAML/JSON deployment file (ConfigError on any problem)."""
    text = Path(path).read_text()
    try:
        raw = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise ConfigError(str(path), f"not valid {'JSON' if str(path).endswith('.json') else 'YAML'}: {e}") from None
    return parse(raw)


def save(d: Deployment, path: Path) -> None:
    Path(path).write_text(yaml.safe_dump(d.to_dict(), sort_keys=False))


def _req(m: Mapping[str, Any], key: str, path: str) -> Any:
    if not isinstance(m, Mapping):
        raise ConfigError(path, f"must be a mapping, got {type(m).__name__}")
    if key not in m:
        raise ConfigError(f"{path}.{key}" if path else key, "missing (required)")
    return m[key]


def _int(v: Any, path: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(path, f"must be an integer in {lo}..{hi}, got {v!r}")
    if not lo <= v <= hi:
        raise ConfigError(path, f"{v} is outside {lo}..{hi}")
    return v


def _unknown(m: Mapping[str, Any], allowed: set[str], path: str) -> None:
    extra = set(m) - allowed
    if extra:
        raise ConfigError(f"{path}.{sorted(extra)[0]}" if path else sorted(extra)[0],
                          f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _queue(q: Mapping[str, Any], path: str, num_grads: int) -> QueueParams:
    _unknown(q, {"size", "reward_threshold", "reward_threshold_raw", "activity_window_ms", "discipline"}, path)
    thr = q.get("reward_threshold")
    raw = q.get("reward_threshold_raw")
    if thr is not None and raw is not None:
        raise ConfigError(f"{path}.reward_threshold", "give reward_threshold (reward units) or reward_threshold_raw (Q15.16), not both")
    if thr is not None:
        if isinstance(thr, bool) or not isinstance(thr, (int, float)) or thr < 0:
            raise ConfigError(f"{path}.reward_threshold", f"must be a number >= 0 (reward units) or null, got {thr!r}")
        raw = reward_to_fixed(float(thr))
    elif raw is not None:
        raw = _int(raw, f"{path}.reward_threshold_raw", 0, 2**31 - 1)
    win = q.get("activity_window_ms", 1000)
    if isinstance(win, bool) or not isinstance(win, (int, float)) or win < 0:
        raise ConfigError(f"{path}.activity_window_ms", f"must be a number of ms >= 0, got {win!r}")
    disc = q.get("discipline", "olaf")
    if disc not in ("olaf", "fifo"):
        raise ConfigError(f"{path}.discipline", f"must be 'olaf' or 'fifo', got {disc!r}")
    return QueueParams(queue_size=_int(q.get("size", 8), f"{path}.size", 1, 64),
                       num_grads=num_grads, reward_threshold=raw,
                       activity_window_ns=int(win * 1_000_000), discipline=disc)


def parse(raw: Any) -> Deployment:
    """Validate a parsed YAML/JSON document (see the module docstring)."""
    if not isinstance(raw, Mapping):
        raise ConfigError("(top level)", "must be a mapping with switches, hosts, ps, clusters")
    _unknown(raw, {"num_grads", "ps", "switches", "hosts", "links", "clusters"}, "")
    num_grads = _int(raw.get("num_grads", 16), "num_grads", 0, 2236)

    switches: dict[str, SwitchConf] = {}
    sw_raw = _req(raw, "switches", "")
    if not isinstance(sw_raw, Mapping) or not sw_raw:
        raise ConfigError("switches", "must map at least one switch name to its settings")
    for name, s in sw_raw.items():
        p = f"switches.{name}"
        _unknown(s, {"grpc", "device_id", "thrift_port", "mac", "queue", "bottleneck"}, p)
        grpc = _req(s, "grpc", p)
        if not isinstance(grpc, str) or ":" not in grpc:
            raise ConfigError(f"{p}.grpc", f"must be host:port, got {grpc!r}")
        mac = _req(s, "mac", p)
        if not isinstance(mac, str) or not MAC_RE.match(mac):
            raise ConfigError(f"{p}.mac", f"must be a MAC like 00:00:00:00:01:00, got {mac!r}")
        b = s.get("bottleneck", {}) or {}
        _unknown(b, {"rate_pps", "depth"}, f"{p}.bottleneck")
        switches[name] = SwitchConf(
            name=name, grpc=grpc, device_id=_int(s.get("device_id", 0), f"{p}.device_id", 0, 2**32 - 1),
            thrift_port=_int(_req(s, "thrift_port", p), f"{p}.thrift_port", 1, 65535), mac=mac,
            queue=_queue(s.get("queue", {}) or {}, f"{p}.queue", num_grads),
            rate_pps=_int(b.get("rate_pps", 0), f"{p}.bottleneck.rate_pps", 0, 10**9),
            depth=_int(b.get("depth", 64), f"{p}.bottleneck.depth", 1, 1 << 20))

    hosts: dict[str, HostConf] = {}
    seen_ip: dict[str, str] = {}
    seen_wid: dict[int, str] = {}
    seen_port: dict[tuple[str, int], str] = {}
    for name, h in _req(raw, "hosts", "").items():
        p = f"hosts.{name}"
        _unknown(h, {"ip", "mac", "switch", "port", "worker_id"}, p)
        ip = str(_req(h, "ip", p))
        try:
            ipaddress.IPv4Address(ip)
        except ValueError:
            raise ConfigError(f"{p}.ip", f"must be an IPv4 address, got {ip!r}") from None
        if ip in seen_ip:
            raise ConfigError(f"{p}.ip", f"{ip} is already used by host {seen_ip[ip]}")
        seen_ip[ip] = name
        mac = _req(h, "mac", p)
        if not isinstance(mac, str) or not MAC_RE.match(mac):
            raise ConfigError(f"{p}.mac", f"must be a MAC address, got {mac!r}")
        sw = _req(h, "switch", p)
        if sw not in switches:
            raise ConfigError(f"{p}.switch", f"unknown switch {sw!r} (switches: {', '.join(switches)})")
        port = _int(_req(h, "port", p), f"{p}.port", 0, 510)
        if (sw, port) in seen_port:
            raise ConfigError(f"{p}.port", f"{sw} port {port} is already used by {seen_port[(sw, port)]}")
        seen_port[(sw, port)] = name
        wid = h.get("worker_id")
        if wid is not None:
            wid = _int(wid, f"{p}.worker_id", 1, 4095)
            if wid in seen_wid:
                raise ConfigError(f"{p}.worker_id", f"{wid} is already used by {seen_wid[wid]}")
            seen_wid[wid] = name
        hosts[name] = HostConf(name, ip, mac, sw, port, wid)

    links = []
    for i, l in enumerate(raw.get("links", []) or []):
        p = f"links[{i}]"
        if not (isinstance(l, (list, tuple)) and len(l) == 4):
            raise ConfigError(p, "must be [switch_a, port_a, switch_b, port_b]")
        a, pa, b, pb = l
        for s, sp, which in ((a, pa, "a"), (b, pb, "b")):
            if s not in switches:
                raise ConfigError(p, f"unknown switch {s!r}")
            _int(sp, f"{p}.port_{which}", 0, 510)
            if (s, sp) in seen_port:
                raise ConfigError(p, f"{s} port {sp} is already used by {seen_port[(s, sp)]}")
            seen_port[(s, sp)] = f"link {i}"
        links.append(LinkConf(a, pa, b, pb))

    ps = _req(raw, "ps", "")
    if ps not in hosts:
        raise ConfigError("ps", f"unknown host {ps!r}")
    if hosts[ps].worker_id is not None:
        raise ConfigError(f"hosts.{ps}.worker_id", "the PS is not a worker; remove worker_id")

    clusters_raw = raw.get("clusters", {}) or {}
    if not isinstance(clusters_raw, Mapping):
        raise ConfigError("clusters", "must map cluster ids to lists of worker hosts")
    clusters = {}
    for c, ws in clusters_raw.items():
        try:
            cid = int(c)
        except (TypeError, ValueError):
            raise ConfigError(f"clusters.{c}", "cluster ids are integers") from None
        if not isinstance(ws, (list, tuple)):
            raise ConfigError(f"clusters.{c}", "must be a list of worker host names")
        clusters[cid] = tuple(ws)
    return validate(Deployment(num_grads=num_grads, ps=ps, switches=switches, hosts=hosts,
                               links=tuple(links), clusters=clusters))


def validate(d: Deployment) -> Deployment:
    """Cross-field checks (membership, connectivity); returns ``d`` or raises ConfigError."""
    _check_clusters(d)
    _check_connected(d)
    return d


def _check_clusters(d: Deployment) -> None:
    member: dict[str, int] = {}
    for cid, ws in d.clusters.items():
        _int(cid, f"clusters.{cid}", 0, MAX_CLUSTER_ID)
        for i, w in enumerate(ws):
            p = f"clusters.{cid}[{i}]"
            h = d.hosts.get(w)
            if h is None:
                raise ConfigError(p, f"unknown host {w!r}")
            if h.worker_id is None:
                raise ConfigError(p, f"host {w!r} has no worker_id (give it one in hosts.{w})")
            if w in member:
                raise ConfigError(p, f"{w} is already in cluster {member[w]} (a worker is in one cluster)")
            member[w] = cid


def _check_connected(d: Deployment) -> None:
    from olaf.controller.routing import next_hops  # noqa: PLC0415 (cycle-free lazy import)

    for s in d.switches:
        hops = next_hops(d, s)
        missing = [n for n in d.hosts if n not in hops]
        if missing:
            raise ConfigError("links", f"switch {s} has no path to host(s) {', '.join(missing)}")

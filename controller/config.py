"""Declarative deployment config: switches, hosts, links, queue, clusters.

YAML or JSON (``docs/controller.md`` shows a full example)::

    num_grads: 16               # elements per update (per chunk)
    num_chunks: 1               # chunks per update K (optional, default 1; docs/protocol.md "Chunks")
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
    admission:                  # optional: AoM-fairness admission control (paper §6)
      worker_period_ms: 50
      worker_jitter_ms: 10
      delta_t_ms: 400
      v_per_s: 2.5
      epsilon: 0.1

The file is validated by pydantic models (:class:`NetworkFile`; JSON Schema in
``docs/schemas/network.schema.json``), then cross-checked (unique addresses and ports,
membership, connectivity). Every problem raises :class:`~olaf.configfile.ConfigError`
naming the field (``clusters.3[1]``) and what would fix it. The bottleneck is the
egress queue toward the PS on each switch (``rate_pps`` packets/s, 0 = unlimited;
``depth`` packets). A model that travels in ``num_chunks`` = K chunks needs K segments per
update: every switch's ``queue.size`` (segments) must be at least K, and K at most
``MAX_CHUNKS`` of the P4 build; the switch reports ⌊size / K⌋ updates in its ACKs.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Mapping, Optional

import yaml
from pydantic import Field, field_validator

from olaf.configfile import ConfigError, FileModel, read_document
from olaf.configfile import validate as validate_model
from olaf.constants import (
    ACK_PORT,
    DEFAULT_ACTIVITY_WINDOW_MS,
    DEFAULT_JITTER_MS,
    DEFAULT_NUM_CHUNKS,
    DEFAULT_NUM_GRADS,
    DEFAULT_PERIOD_MS,
    DEFAULT_QUEUE_SIZE,
    MAX_CHUNKS,
    MAX_CLUSTERS,
    MAX_G_JUMBO,
    MAX_WORKERS,
    SEGMENTS,
)
from olaf.controller.olaf_params import QueueParams
from olaf.controller.routing import next_hops
from olaf.fixedpoint import reward_to_fixed
from olaf.plan.topology import LayoutHost, LayoutLink
from olaf.plan.tx import DEFAULT_DELTA_T_MS, DEFAULT_V_PER_S, READINGS, ReadingLabel
from olaf.rundir.atomic import write_text_atomic

__all__ = ["Admission", "ConfigError", "Deployment", "LayoutHost", "LayoutLink", "NetworkFile", "SwitchConf", "load",
           "parse", "save", "validate"]

MAC_PATTERN = r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$"
MAX_PORT = 510  # BMv2 port numbers of a deployment (bit<9> egress_spec, 511 = drop port)


# -- the file (pydantic models; JSON Schema in docs/schemas/network.schema.json) ---------------


class QueueFile(FileModel):
    """OlafQueue parameters of one switch (``olaf_params``)."""

    size: int = Field(DEFAULT_QUEUE_SIZE, ge=1, le=SEGMENTS, description="Q_max, segments (at least num_chunks: "
                                                                       "an update of K chunks takes K segments)")
    reward_threshold: Optional[float] = Field(None, ge=0, description="reward filter T in reward units; null: off")
    reward_threshold_raw: Optional[int] = Field(None, ge=0, le=2**31 - 1, description="T in Q15.16 (instead of "
                                                "reward_threshold)")
    activity_window_ms: float = Field(DEFAULT_ACTIVITY_WINDOW_MS, ge=0, description="window for counting active clusters, ms")
    discipline: Literal["olaf", "fifo"] = "olaf"


class BottleneckFile(FileModel):
    """The traffic manager's egress queue toward the PS."""

    rate_pps: int = Field(0, ge=0, le=10**9, description="packets/s, 0 = unlimited")
    depth: int = Field(64, ge=1, le=1 << 20, description="packets")


class SwitchFile(FileModel):
    grpc: str = Field(pattern=r"^[^:]+:\d+$", description="P4Runtime server host:port")
    device_id: int = Field(0, ge=0, le=2**32 - 1)
    thrift_port: int = Field(ge=1, le=65535, description="BMv2 Thrift runtime port")
    mac: str = Field(pattern=MAC_PATTERN, description="source MAC of frames the switch sends")
    queue: QueueFile = QueueFile()
    bottleneck: BottleneckFile = BottleneckFile()


class HostFile(FileModel):
    ip: str = Field(description="IPv4 address")
    mac: str = Field(pattern=MAC_PATTERN)
    switch: str = Field(description="the switch the host is attached to")
    port: int = Field(ge=0, le=MAX_PORT, description="that switch's port")
    worker_id: Optional[int] = Field(None, ge=1, le=MAX_WORKERS - 1, description="set for worker hosts")
    udp_port: Optional[int] = Field(None, ge=1, le=65535, description="a worker's UDP port: it sends from it and "
                                    f"receives its ACKs on it (default {ACK_PORT}); workers that share an address "
                                    "(identity five_tuple) each need their own")

    @field_validator("ip")
    @classmethod
    def _ipv4(cls, v: str) -> str:
        ipaddress.IPv4Address(v)
        return v


class AdmissionFile(FileModel):
    """AoM-fairness admission control of ``olafctl create-cluster`` / ``add-worker`` (paper §6).

    A cluster of k workers that each generate an update every ``worker_period_ms`` is
    modelled for the verifier as one update stream of period ``worker_period_ms / k``.
    The engine is the Olaf queue of ``switch`` (default: the PS's switch): ``Q_max`` is
    its queue size, ``p/C`` its bottleneck's service time ``1000 / rate_pps`` ms.
    """

    enabled: bool = Field(True, description="check create-cluster / add-worker with the verifier")
    switch: Optional[str] = Field(None, description="the switch whose Olaf queue is the engine (default: the PS's)")
    worker_period_ms: float = Field(DEFAULT_PERIOD_MS, gt=0)
    worker_jitter_ms: float = Field(DEFAULT_JITTER_MS, ge=0)
    tc: bool = Field(False, description="workers use transmission control (paper §5)")
    delta_t_ms: float = Field(DEFAULT_DELTA_T_MS, gt=0, description="transmission control Δ̄_T, ms (paper §5)")
    v_per_s: float = Field(DEFAULT_V_PER_S, ge=0, description="slope v of f, 1/s")
    tc_reading: ReadingLabel = Field(READINGS[0], description="the workers' reading of the rule: probabilistic "  # type: ignore[valid-type]
                                     "(paper §5) or backoff (paper §6), olaf.plan.tx.TxParams.reading")
    epsilon: float = Field(0.1, ge=0, description="fairness bound ε")
    epsilon_unit: Literal["period", "ms", "relative"] = "period"
    horizon: int = Field(10, ge=2, le=100, description="updates per cluster the verifier looks at")
    timeout_s: float = Field(60.0, gt=0)


class NetworkFile(FileModel):
    """A deployment file (``network.yaml``)."""

    num_grads: int = Field(DEFAULT_NUM_GRADS, ge=0, le=MAX_G_JUMBO,
                           description="gradient elements per update (per chunk: the chunk length L)")
    num_chunks: int = Field(DEFAULT_NUM_CHUNKS, ge=1, description="chunks per update K (docs/protocol.md \"Chunks\"); "
                            f"at most MAX_CHUNKS = {MAX_CHUNKS} of the P4 build")
    ps: str = Field(description="host name of the parameter server")
    switches: dict[str, SwitchFile] = Field(min_length=1)
    hosts: dict[str, HostFile]
    links: list[tuple[str, int, str, int]] = Field(default_factory=list,
                                                   description="switch-to-switch links: [sa, port_a, sb, port_b]")
    clusters: dict[int, list[str]] = Field(default_factory=dict, description="cluster id -> worker host names")
    identity: Literal["address_port", "five_tuple"] = Field(
        "address_port", description="what binds a worker's updates to it: source address from its switch port, or "
                                    "also its UDP source port (the paper's five-tuple Worker_ID, §7)")
    admission: Optional[AdmissionFile] = None


# -- the validated deployment ------------------------------------------------------------------

Admission = AdmissionFile


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
class Deployment:
    """A validated deployment. ``clusters`` maps cluster id → worker host names; updates of
    ``num_grads`` elements travel in ``num_chunks`` chunks (:func:`validate` writes it into every
    switch's :class:`QueueParams`)."""

    num_grads: int
    ps: str
    switches: Mapping[str, SwitchConf]
    hosts: Mapping[str, LayoutHost]
    links: tuple[LayoutLink, ...]
    clusters: Mapping[int, tuple[str, ...]]
    admission: Optional[Admission] = None
    identity: str = "address_port"
    num_chunks: int = DEFAULT_NUM_CHUNKS

    def worker(self, name: str) -> LayoutHost:
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

    def to_file(self) -> NetworkFile:
        """The deployment as a :class:`NetworkFile` (what :func:`save` writes)."""
        return NetworkFile(
            num_grads=self.num_grads, num_chunks=self.num_chunks, ps=self.ps,
            switches={n: SwitchFile(grpc=s.grpc, device_id=s.device_id, thrift_port=s.thrift_port, mac=s.mac,
                                    queue=QueueFile(size=s.queue.queue_size,
                                                    reward_threshold_raw=s.queue.reward_threshold,
                                                    activity_window_ms=s.queue.activity_window_ns / 1e6,
                                                    discipline=s.queue.discipline),
                                    bottleneck=BottleneckFile(rate_pps=s.rate_pps, depth=s.depth))
                      for n, s in self.switches.items()},
            hosts={n: HostFile(ip=h.ip, mac=h.mac, switch=h.switch, port=h.port, worker_id=h.worker_id,
                               udp_port=None if h.udp_port == ACK_PORT else h.udp_port)
                   for n, h in self.hosts.items()},
            links=[(lk.a, lk.port_a, lk.b, lk.port_b) for lk in self.links],
            clusters={c: list(ws) for c, ws in sorted(self.clusters.items())},
            identity=self.identity, admission=self.admission)

    def to_dict(self) -> dict[str, Any]:
        return self.to_file().model_dump(mode="json", exclude_none=True)


def load(path: Path) -> Deployment:
    """Read and validate a YAML/JSON deployment file (ConfigError on any problem)."""
    return parse(read_document(path))


def save(d: Deployment, path: Path) -> None:
    """Write ``d`` to ``path`` atomically (a temporary file renamed over it), so a reader
    such as ``olafctl`` never sees half a file."""
    write_text_atomic(path, yaml.safe_dump(d.to_dict(), sort_keys=False))


def _queue(q: QueueFile, path: str, num_grads: int) -> QueueParams:
    if q.reward_threshold is not None and q.reward_threshold_raw is not None:
        raise ConfigError(f"{path}.reward_threshold",
                          "give reward_threshold (reward units) or reward_threshold_raw (Q15.16), not both")
    raw = reward_to_fixed(q.reward_threshold) if q.reward_threshold is not None else q.reward_threshold_raw
    return QueueParams(queue_size=q.size, num_grads=num_grads, reward_threshold=raw,
                       activity_window_ns=int(q.activity_window_ms * 1_000_000), discipline=q.discipline)


def parse(raw: Any) -> Deployment:
    """Validate a parsed YAML/JSON document (see the module docstring)."""
    f = validate_model(NetworkFile, raw)
    switches = {n: SwitchConf(name=n, grpc=s.grpc, device_id=s.device_id, thrift_port=s.thrift_port, mac=s.mac,
                              queue=_queue(s.queue, f"switches.{n}.queue", f.num_grads),
                              rate_pps=s.bottleneck.rate_pps, depth=s.bottleneck.depth)
                for n, s in f.switches.items()}
    for n, sw in switches.items():
        if sw.depth < sw.queue.queue_size:
            raise ConfigError(f"switches.{n}.bottleneck.depth",
                              f"{sw.depth} is below the queue size {sw.queue.queue_size}: every queued update "
                              "needs a slot for its token in the traffic manager's queue")
    hosts: dict[str, LayoutHost] = {}
    seen_ip: dict[str, str] = {}
    seen_wid: dict[int, str] = {}
    seen_port: dict[tuple[str, int], str] = {}
    seen_udp: dict[tuple[str, int], str] = {}
    for name, h in f.hosts.items():
        p = f"hosts.{name}"
        udp_port = ACK_PORT if h.udp_port is None else h.udp_port
        if h.switch not in switches:
            raise ConfigError(f"{p}.switch", f"unknown switch {h.switch!r} (switches: {', '.join(switches)})")
        if h.ip in seen_ip:   # workers sharing one address: one machine behind one switch port
            first = f.hosts[seen_ip[h.ip]]
            if h.worker_id is None or first.worker_id is None:
                raise ConfigError(f"{p}.ip", f"{h.ip} is already used by host {seen_ip[h.ip]} (only workers may "
                                  "share an address)")
            if f.identity != "five_tuple":
                raise ConfigError(f"{p}.ip", f"{h.ip} is already used by worker {seen_ip[h.ip]}: workers that share "
                                  "an address are told apart by their UDP port; set identity: five_tuple")
            if (h.mac, h.switch, h.port) != (first.mac, first.switch, first.port):
                raise ConfigError(f"{p}.ip", f"{h.ip} is already used by {seen_ip[h.ip]} with MAC {first.mac} on "
                                  f"{first.switch} port {first.port}: workers sharing an address share those too")
            if (h.ip, udp_port) in seen_udp:
                raise ConfigError(f"{p}.udp_port", f"{h.ip} UDP port {udp_port} is already used by "
                                  f"{seen_udp[(h.ip, udp_port)]}; give each worker at {h.ip} its own udp_port")
        else:
            seen_ip[h.ip] = name
            if (h.switch, h.port) in seen_port:
                raise ConfigError(f"{p}.port", f"{h.switch} port {h.port} is already used by "
                                               f"{seen_port[(h.switch, h.port)]}")
            seen_port[(h.switch, h.port)] = name
        seen_udp[(h.ip, udp_port)] = name
        if h.worker_id is not None:
            if h.worker_id in seen_wid:
                raise ConfigError(f"{p}.worker_id", f"{h.worker_id} is already used by {seen_wid[h.worker_id]}")
            seen_wid[h.worker_id] = name
        hosts[name] = LayoutHost(name, h.ip, h.mac, h.switch, h.port, h.worker_id, udp_port)
    links = []
    for i, (a, pa, b, pb) in enumerate(f.links):
        for s, sp, which in ((a, pa, "a"), (b, pb, "b")):
            if s not in switches:
                raise ConfigError(f"links[{i}]", f"unknown switch {s!r} (switches: {', '.join(switches)})")
            if not 0 <= sp <= MAX_PORT:
                raise ConfigError(f"links[{i}].port_{which}", f"{sp} is outside 0..{MAX_PORT}")
            if (s, sp) in seen_port:
                raise ConfigError(f"links[{i}]", f"{s} port {sp} is already used by {seen_port[(s, sp)]}")
            seen_port[(s, sp)] = f"link {i}"
        links.append(LayoutLink(a, pa, b, pb))
    if f.ps not in hosts:
        raise ConfigError("ps", f"unknown host {f.ps!r} (hosts: {', '.join(hosts)})")
    if hosts[f.ps].worker_id is not None:
        raise ConfigError(f"hosts.{f.ps}.worker_id", "the PS is not a worker; remove worker_id")
    if f.admission is not None and f.admission.switch is not None and f.admission.switch not in switches:
        raise ConfigError("admission.switch", f"unknown switch {f.admission.switch!r}")
    clusters = {c: tuple(ws) for c, ws in f.clusters.items()}
    return validate(Deployment(num_grads=f.num_grads, ps=f.ps, switches=switches, hosts=hosts,
                               links=tuple(links), clusters=clusters, admission=f.admission, identity=f.identity,
                               num_chunks=f.num_chunks))


def validate(d: Deployment) -> Deployment:
    """Cross-field checks (chunks, membership, connectivity); returns ``d`` with the deployment's
    ``num_chunks`` in every switch's queue parameters, or raises ConfigError."""
    d = _with_chunks(d)
    _check_clusters(d)
    _check_connected(d)
    return d


def _with_chunks(d: Deployment) -> Deployment:
    """``d`` with ``d.num_chunks`` written into every switch's :class:`QueueParams` (what the
    controller writes to ``olaf_params``). ConfigError if K is outside 1..MAX_CHUNKS or a
    queue holds fewer than K segments (docs/protocol.md "Chunks")."""
    k = d.num_chunks
    if not 1 <= k <= MAX_CHUNKS:
        raise ConfigError("num_chunks", f"{k} is outside 1..{MAX_CHUNKS} (MAX_CHUNKS of the P4 build): use a larger "
                                        "MTU (longer, fewer chunks) or a smaller model")
    switches = {}
    for n, s in d.switches.items():
        if s.queue.queue_size < k:
            raise ConfigError(f"switches.{n}.queue.size",
                              f"{s.queue.queue_size} segments is below num_chunks={k}: an update of {k} chunks takes "
                              f"{k} segments; give a size of at least {k} (Q_max in updates = size // num_chunks)")
        switches[n] = s if s.queue.num_chunks == k else replace(s, queue=replace(s.queue, num_chunks=k))
    return replace(d, switches=switches)


def _check_clusters(d: Deployment) -> None:
    member: dict[str, int] = {}
    for cid, ws in d.clusters.items():
        if not 0 <= cid < MAX_CLUSTERS:
            raise ConfigError(f"clusters.{cid}", f"cluster ids are 0..{MAX_CLUSTERS - 1} (the P4 build's MAX_CLUSTERS)")
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
    for s in d.switches:
        hops = next_hops(d, s)
        missing = [n for n in d.hosts if n not in hops]
        if missing:
            raise ConfigError("links", f"switch {s} has no path to host(s) {', '.join(missing)}")

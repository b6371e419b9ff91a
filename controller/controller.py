"""The Olaf controller: programs every switch of a deployment and keeps it programmed.

Each switch gets its own :class:`SwitchController` (own P4Runtime connection,
no shared state). :meth:`SwitchController.sync` reads what the switch holds,
diffs it against the desired state (:mod:`olaf.controller.state`) and writes
only the difference, so the same code deploys a fresh switch, regroups
clusters at runtime (MODIFY/DELETE of worker entries and multicast groups,
queue untouched) and reprograms a switch that restarted.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional

from p4.v1 import p4runtime_pb2

from olaf.constants import ACCESS_QUEUE_DEPTH
from olaf.controller import tm as tmmod
from olaf.controller.ack_multicast import AckMulticast
from olaf.controller.config import ConfigError, Deployment, SwitchConf
from olaf.controller.counters import ClusterCounters, OlafCounters
from olaf.controller.forwarding import Ipv4Forwarding
from olaf.controller.olaf_params import OlafParams, PathParams, QueueParams, max_sojourn_ns
from olaf.controller.p4rt import P4RuntimeWriteError, SwitchConnection, SwitchUnavailable
from olaf.controller.routing import next_hops
from olaf.controller.state import SwitchState, desired_state
from olaf.controller.tm import TrafficManager
from olaf.controller.update_identifier import UpdateIdentifier, worker_key

log = logging.getLogger(__name__)


@dataclass
class Changes:
    """Counts of what a sync wrote, for logs and the CLI."""

    inserted: int = 0
    modified: int = 0
    deleted: int = 0

    def __bool__(self) -> bool:
        return bool(self.inserted or self.modified or self.deleted)

    def __str__(self) -> str:
        return f"{self.inserted} inserted, {self.modified} modified, {self.deleted} deleted"


class SwitchController:
    """Programs one switch (see module docstring)."""

    def __init__(self, conf: SwitchConf, p4info: Path, bmv2_json: Path, election_id: tuple[int, int] = (0, 1),
                 rpc_timeout_s: float = 10.0):
        self.conf = conf
        self.p4info = Path(p4info)
        self.bmv2_json = Path(bmv2_json)
        self.sw = SwitchConnection(conf.grpc, device_id=conf.device_id, election_id=election_id,
                                   name=conf.name, rpc_timeout_s=rpc_timeout_s)
        self.fwd = Ipv4Forwarding(self.sw)
        self.workers = UpdateIdentifier(self.sw)
        self.params = OlafParams(self.sw)
        self.acks = AckMulticast(self.sw)
        self.counters = OlafCounters(self.sw)
        self.tm = TrafficManager(conf.thrift_port, name=conf.name)

    # -- session / pipeline ---------------------------------------------------------

    def connect(self, timeout_s: float = 10.0, push_pipeline: bool = False) -> bool:
        """Connect; push the pipeline if asked or if the switch has none (a fresh or
        restarted switch). Returns True if the pipeline was pushed."""
        self.sw.connect(timeout_s)
        if not push_pipeline:
            try:
                self.sw.fetch_pipeline()
                return False
            except SwitchUnavailable:
                pass
        tmmod.push_pipeline(self.sw, self.tm, self.p4info, self.bmv2_json)
        return True

    def close(self) -> None:
        self.sw.close()

    # -- reading the switch -----------------------------------------------------------

    def read_state(self) -> SwitchState:
        """What the switch holds, read table by table by the class that owns each."""
        return SwitchState(routes=self.fwd.read(), workers=self.workers.read(),
                           groups=self.acks.read_groups(), rewrites=self.acks.read_rewrites())

    # -- writing the difference ------------------------------------------------------------

    def sync(self, want: SwitchState) -> Changes:
        """Make the switch hold ``want``; returns what changed.

        Order: routes and rewrites first (so replicas and updates have somewhere
        to go), then groups created/changed, then worker entries, then groups
        and rewrites that are no longer needed.
        """
        have = self.read_state()
        ch = Changes()
        sw = self.sw

        def diff(have_d: Mapping, want_d: Mapping, make: Callable, key_only: Callable):
            ins, mod, dele = [], [], []
            for k, v in want_d.items():
                if k not in have_d:
                    ins.append(sw.update("insert", make(k, v)))
                elif have_d[k] != v:
                    mod.append(sw.update("modify", make(k, v)))
            for k in have_d:
                if k not in want_d:
                    dele.append(sw.update("delete", key_only(k)))
            return ins, mod, dele

        r_ins, r_mod, r_del = diff(have.routes, want.routes,
                                   lambda k, r: self.fwd.entry(k, 32, r.port, r.src_mac, r.dst_mac),
                                   lambda k: self.fwd.entry(k))
        w_ins, w_mod, w_del = diff(have.workers, want.workers,
                                   lambda k, v: self.workers.entry(k, v),
                                   lambda k: self.workers.entry(k))
        x_ins, x_mod, x_del = diff(have.rewrites, want.rewrites,
                                   lambda k, v: self.acks.rewrite_entry(k, v),
                                   lambda k: self.acks.rewrite_entry(k))
        g_new, g_mod, g_del = [], [], []
        for cid, reps in want.groups.items():
            if cid not in have.groups:
                g_new += self.acks.group_updates(cid, reps, "insert")
            elif have.groups[cid] != reps:
                g_mod += self.acks.group_updates(cid, reps, "modify")
        for cid in have.groups:
            if cid not in want.groups:
                g_del += self.acks.group_updates(cid, [], "delete")

        batches = (r_ins + r_mod + x_ins + x_mod, g_new + g_mod, w_ins + w_mod + w_del,
                   g_del + x_del + r_del)
        for batch in batches:
            sw.write(batch)
        for u in (u for b in batches for u in b):
            if u.type == p4runtime_pb2.Update.INSERT:
                ch.inserted += 1
            elif u.type == p4runtime_pb2.Update.MODIFY:
                ch.modified += 1
            else:
                ch.deleted += 1
        return ch

    def set_params(self, q: QueueParams, path: PathParams) -> None:
        self.params.set(q, path)

    def set_access_depth(self) -> None:
        """Every port's egress queue depth to :data:`~olaf.constants.ACCESS_QUEUE_DEPTH` (BMv2
        Thrift); the port toward the PS then gets its own (:meth:`set_bottleneck`)."""
        self.tm.set_queue_depth(ACCESS_QUEUE_DEPTH)

    def set_bottleneck(self, port: int, rate_pps: int, depth: int) -> None:
        """Rate and depth of the egress queue toward the PS (BMv2 Thrift)."""
        self.tm.set_queue_depth(depth, port)
        self.tm.set_queue_rate(rate_pps, port)


class RegroupFailed(RuntimeError):
    """A regroup failed on one switch; the message says which and whether the others were
    rolled back."""


def check_depth(switch: str, queue_size: int, depth: int) -> None:
    """A token per occupied segment must fit the traffic-manager queue toward the PS:
    ValueError if ``depth < queue_size`` (docs/dataplane.md "Tokens")."""
    if depth < queue_size:
        raise ValueError(f"{switch}: traffic-manager depth {depth} is below the queue size {queue_size}; "
                         "every queued update needs a slot for its token (raise --depth or lower --size)")


class OlafController:
    """All switches of a deployment.

    Args:
        deployment: validated config (:func:`olaf.controller.config.load`).
        p4info / bmv2_json: the compiled program (``make build``).
        election_id: P4Runtime election id (high, low). The highest connected client is
            primary and may write; others may read. A long-running controller uses
            (0, 1); ``olafctl`` uses (0, 2) so it can regroup while the run's
            controller stays connected.
        rpc_timeout_s: deadline of every P4Runtime call (s).
    """

    def __init__(self, deployment: Deployment, p4info: Path, bmv2_json: Path,
                 election_id: tuple[int, int] = (0, 1), rpc_timeout_s: float = 10.0):
        self.d = deployment
        self.switches = {n: SwitchController(c, p4info, bmv2_json, election_id, rpc_timeout_s)
                         for n, c in deployment.switches.items()}

    def ps_port(self, switch: str) -> int:
        return next_hops(self.d, switch)[self.d.ps].port

    def deploy(self, push_pipeline: bool = True, timeout_s: float = 10.0) -> dict[str, Changes]:
        """Connect every switch, push pipelines, program tables, queue and bottleneck."""
        out = {}
        for name, sc in self.switches.items():
            sc.connect(timeout_s, push_pipeline=push_pipeline)
            out[name] = self._program(name, sc)
        return out

    def path(self, switch: str, d: Optional[Deployment] = None) -> PathParams:
        """The PS as ``switch`` sees it: address, port toward it, token sojourn bound."""
        d = d or self.d
        c = d.switches[switch]
        return PathParams(d.hosts[d.ps].ip, next_hops(d, switch)[d.ps].port, max_sojourn_ns(c.rate_pps, c.depth))

    def _program(self, name: str, sc: SwitchController) -> Changes:
        conf = self.d.switches[name]
        ch = sc.sync(desired_state(self.d, name))
        sc.set_params(conf.queue, self.path(name))
        sc.set_access_depth()
        sc.set_bottleneck(self.ps_port(name), conf.rate_pps, conf.depth)
        return ch

    def attach(self, timeout_s: float = 10.0) -> list[str]:
        """Connect to running switches (for olafctl); a switch without a pipeline
        (restarted) is fully reprogrammed. Returns the reprogrammed switches."""
        redone = []
        for name, sc in self.switches.items():
            if sc.connect(timeout_s, push_pipeline=False):
                self._program(name, sc)
                redone.append(name)
        return redone

    def ensure(self, timeout_s: float = 10.0) -> list[str]:
        """Reconnect lost sessions; a switch that restarted (no pipeline) is fully
        reprogrammed. Returns the names of switches that were reprogrammed."""
        redone = []
        for name, sc in self.switches.items():
            if sc.sw.connected:
                try:
                    sc.sw.fetch_pipeline()
                    continue
                except SwitchUnavailable:
                    pass
            pushed = sc.connect(timeout_s)
            if pushed:
                self._program(name, sc)
                redone.append(name)
        return redone

    def live_membership(self) -> dict[int, tuple[str, ...]]:
        """The cluster membership as the first switch holds it (its worker_table and cluster_mcast
        groups), as cluster id → worker host names of the deployment, clusters and workers sorted.

        Raises:
            ConfigError: the switch holds a worker the deployment does not describe (field ``workers``).
        """
        name, sc = next(iter(self.switches.items()))
        st = sc.read_state()
        by_key = {worker_key(h.ip, h.udp_port, self.d.identity): n for n, h in self.d.hosts.items()
                  if h.worker_id is not None}
        clusters: dict[int, list[str]] = {c: [] for c in st.groups}
        for key, w in sorted(st.workers.items(), key=lambda kv: kv[1].worker_id):
            if key not in by_key:
                where = key[0] if not key[1] else f"{key[0]} UDP port {key[1]}"
                raise ConfigError("workers", f"{name} has worker {where} that the deployment does not describe")
            clusters.setdefault(w.cluster_id, []).append(by_key[key])
        return {c: tuple(ws) for c, ws in sorted(clusters.items())}

    def regroup(self, clusters: Mapping[int, Iterable[str]]) -> dict[str, Changes]:
        """Apply new cluster membership to every switch (validated first; nothing is
        written if it is invalid). Waiting updates stay in the queue.

        All or nothing: if a switch refuses or fails, the switches already changed are
        synced back to the old membership and the error is raised (RegroupFailed).
        """
        new = self.d.with_clusters({c: tuple(ws) for c, ws in clusters.items()})
        out: dict[str, Changes] = {}
        for name, sc in self.switches.items():
            try:
                out[name] = sc.sync(desired_state(new, name))
            except (P4RuntimeWriteError, SwitchUnavailable) as e:
                undone = self._roll_back([n for n in self.switches if n in out or n == name])
                raise RegroupFailed(f"{name}: {e}; {undone}") from e
        self.d = new
        return out

    def _roll_back(self, names: list[str]) -> str:
        """Sync ``names`` back to the current (old) deployment; says what it achieved."""
        failed = []
        for n in names:
            try:
                self.switches[n].sync(desired_state(self.d, n))
            except (P4RuntimeWriteError, SwitchUnavailable) as e:
                failed.append(f"{n} ({e})")
        if failed:
            return "rolling back also failed on " + ", ".join(failed) + "; run olafctl again to resync"
        return f"rolled back {', '.join(names)}: no switch changed"

    def set_queue(self, switch: Optional[str] = None, **changes) -> None:
        """Change queue parameters (size, reward_threshold, activity_window_ns) on one or all
        switches. Raises ValueError (nothing written) for a queue size above a switch's
        traffic-manager depth toward the PS."""
        targets = [n for n in self.switches if switch is None or n == switch]
        new = {n: dc_replace(self.d.switches[n].queue, **changes) for n in targets}
        for n in targets:
            check_depth(n, new[n].queue_size, self.d.switches[n].depth)
        for n in targets:
            self.switches[n].set_params(new[n], self.path(n))
            self.d = dc_replace(self.d, switches={**self.d.switches,
                                                  n: dc_replace(self.d.switches[n], queue=new[n])})

    def set_bottleneck(self, switch: str, rate_pps: Optional[int] = None, depth: Optional[int] = None) -> None:
        """Rate and depth of ``switch``'s queue toward the PS; the tokens' sojourn bound
        follows. Raises ValueError (nothing written) for a depth below the queue size."""
        c = self.d.switches[switch]
        c = dc_replace(c, rate_pps=c.rate_pps if rate_pps is None else rate_pps,
                       depth=c.depth if depth is None else depth)
        check_depth(switch, c.queue.queue_size, c.depth)
        d = dc_replace(self.d, switches={**self.d.switches, switch: c})
        self.switches[switch].set_bottleneck(self.ps_port(switch), c.rate_pps, c.depth)
        self.switches[switch].set_params(c.queue, self.path(switch, d))
        self.d = d

    def cluster_counters(self) -> dict[str, dict[int, ClusterCounters]]:
        return {n: sc.counters.clusters(self.d.clusters) for n, sc in self.switches.items()}

    def close(self) -> None:
        for sc in self.switches.values():
            sc.close()

"""ACK multicast (P4 controls ``AckMulticast`` and ``AckReplicaRewrite``,
p4src/include/ack_multicast.p4): cluster → PRE multicast group, and the per-replica
destination rewrite keyed by egress_rid (paper §7 "Downlink").

Owns ``cluster_mcast``, the PRE multicast groups and ``ack_rewrite``; writes and reads
of them go through this module only.
"""

from __future__ import annotations

from typing import Iterable

from olaf.constants import ACK_PORT
from olaf.controller.entries import Replica, Rewrite, group_id
from olaf.controller.p4rt import SwitchConnection, ip_str, mac_str, multicast_group_entry


class AckMulticast:
    """Owns ``cluster_mcast``, the PRE multicast groups and ``ack_rewrite`` of one switch.

    A replica toward a worker has ``rid = worker_id`` (≥ 1) and is rewritten
    to the worker's addresses; a replica toward another Olaf switch has
    ``rid = 0`` and is forwarded unchanged (that switch fans out).
    """

    MCAST_TABLE = "OlafIngress.ack_multicast.cluster_mcast"
    MCAST_ACTION = "OlafIngress.ack_multicast.set_mcast_grp"
    REWRITE_TABLE = "OlafEgress.ack_rewrite.ack_rewrite"
    REWRITE_ACTION = "OlafEgress.ack_rewrite.rewrite_dst"

    def __init__(self, sw: SwitchConnection):
        self.sw = sw

    # -- multicast groups -------------------------------------------------------------

    def group_updates(self, cluster_id: int, replicas: Iterable[Replica], kind: str):
        """The ordered updates for ``kind``: insert creates the group before the
        entry that points at it, delete removes the entry first, modify only
        replaces the group's replicas."""
        p = self.sw.require_pipeline()
        grp = group_id(cluster_id)
        group = self.sw.update(kind, multicast_group_entry(grp, replicas))
        if kind == "modify":
            return [group]
        match = {"hdr.olaf_ack.cluster_id": cluster_id}
        if kind == "insert":
            entry = p.table_entry(self.MCAST_TABLE, match, self.MCAST_ACTION, {"grp": grp})
            return [group, self.sw.update("insert", entry)]
        return [self.sw.update("delete", p.table_entry(self.MCAST_TABLE, match)), group]

    def set_group(self, cluster_id: int, replicas: Iterable[Replica], kind: str = "insert") -> None:
        """Create (``insert``), change the replicas of (``modify``) or remove
        (``delete``) the cluster's multicast group."""
        self.sw.write(self.group_updates(cluster_id, list(replicas), kind))

    def read_groups(self) -> dict[int, tuple[Replica, ...]]:
        """Installed clusters: cluster_id → its group's replicas, sorted by (port, rid)."""
        p = self.sw.require_pipeline()
        out = {}
        for e in self.sw.read_table(self.MCAST_TABLE):
            cid = p.match_values(e)["hdr.olaf_ack.cluster_id"]
            grp = p.param_values(e.action.action)["grp"]
            out[cid] = tuple(sorted(self.sw.read_multicast_group(grp) or [], key=lambda r: (r.port, r.rid)))
        return out

    # -- per-replica rewrite ----------------------------------------------------------

    def rewrite_entry(self, rid: int, rw: Rewrite | None = None):
        """The ``ack_rewrite`` entry of replicas with egress_rid ``rid`` (match only when ``rw`` is None)."""
        p = self.sw.require_pipeline()
        match = {"standard_metadata.egress_rid": rid}
        if rw is None:
            return p.table_entry(self.REWRITE_TABLE, match)
        return p.table_entry(self.REWRITE_TABLE, match, self.REWRITE_ACTION,
                             {"src_mac": rw.src_mac, "dst_mac": rw.dst_mac, "dst_ip": rw.dst_ip,
                              "dst_port": rw.dst_port})

    def set_rewrite(self, rid: int, src_mac: str, dst_mac: str, dst_ip: str, kind: str = "insert",
                    dst_port: int = ACK_PORT) -> None:
        """Rewrite replicas with egress_rid ``rid`` to the worker's addresses and UDP port."""
        if rid < 1:
            raise ValueError(f"rid={rid}: worker replicas need egress_rid >= 1 (0 means no rewrite)")
        self.sw.write([self.sw.update(kind, self.rewrite_entry(rid, Rewrite(src_mac, dst_mac, dst_ip, dst_port)))])

    def delete_rewrite(self, rid: int) -> None:
        self.sw.write([self.sw.update("delete", self.rewrite_entry(rid))])

    def read_rewrites(self) -> dict[int, Rewrite]:
        """Installed rewrites: egress_rid → :class:`Rewrite`."""
        p = self.sw.require_pipeline()
        out = {}
        for e in self.sw.read_table(self.REWRITE_TABLE):
            rid = p.match_values(e)["standard_metadata.egress_rid"]
            v = p.param_values(e.action.action)
            out[rid] = Rewrite(mac_str(v["src_mac"]), mac_str(v["dst_mac"]), ip_str(v["dst_ip"]), v["dst_port"])
        return out

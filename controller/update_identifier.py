"""Update identifier (P4 control ``UpdateIdentifier``, p4src/include/update_identifier.p4).

Owns ``worker_table``: an update's source IPv4 → (worker_id, cluster_id), which the
switch stamps into the header (paper §7 "Uplink"), together with what binds the worker
to its path: the switch port its packets arrive on and, for the paper's five-tuple
Worker_ID (§7), its UDP source port. Writes and reads go through this class only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from olaf.constants import ACK_PORT

if TYPE_CHECKING:
    from olaf.controller.p4rt import SwitchConnection

IDENTITIES = ("address_port", "five_tuple")


@dataclass(frozen=True)
class WorkerEntry:
    """One ``worker_table`` entry.

    Attributes:
        worker_id, cluster_id: stamped into the worker's updates.
        ingress_port: the switch port the worker's packets arrive on.
        src_port, src_port_mask: the worker's UDP source port must satisfy
            ``sport & mask == src_port`` (mask 0: any port).
    """

    worker_id: int
    cluster_id: int
    ingress_port: int
    src_port: int = 0
    src_port_mask: int = 0

    @classmethod
    def bound(cls, worker_id: int, cluster_id: int, ingress_port: int, identity: str) -> WorkerEntry:
        """The entry for ``identity``: ``address_port`` (source address from its port) or
        ``five_tuple`` (also the UDP source port: workers send from their ACK port, 50101)."""
        if identity not in IDENTITIES:
            raise ValueError(f"identity={identity!r}: expected one of {', '.join(IDENTITIES)}")
        if identity == "five_tuple":
            return cls(worker_id, cluster_id, ingress_port, ACK_PORT, 0xFFFF)
        return cls(worker_id, cluster_id, ingress_port)


class UpdateIdentifier:
    """Owns ``worker_table`` of one switch."""

    TABLE = "OlafIngress.identifier.worker_table"
    ACTION = "OlafIngress.identifier.set_worker"

    def __init__(self, sw: SwitchConnection):
        self.sw = sw

    def entry(self, ip: str, w: WorkerEntry | None = None):
        """The table entry of the worker at ``ip`` (match only when ``w`` is None)."""
        p = self.sw.require_pipeline()
        if w is None:
            return p.table_entry(self.TABLE, {"hdr.ipv4.srcAddr": ip})
        return p.table_entry(self.TABLE, {"hdr.ipv4.srcAddr": ip}, self.ACTION,
                             {"worker_id": w.worker_id, "cluster_id": w.cluster_id, "ingress_port": w.ingress_port,
                              "src_port": w.src_port, "src_port_mask": w.src_port_mask})

    def set_worker(self, ip: str, w: WorkerEntry, kind: str = "insert") -> None:
        """Insert (or, with ``kind="modify"``, move) the worker at ``ip``."""
        self.sw.write([self.sw.update(kind, self.entry(ip, w))])

    def remove_worker(self, ip: str) -> None:
        self.sw.write([self.sw.update("delete", self.entry(ip))])

    def read(self) -> dict[str, WorkerEntry]:
        """Installed workers: source IPv4 (dotted) → :class:`WorkerEntry`."""
        from olaf.controller.p4rt import ip_str  # noqa: PLC0415

        p = self.sw.require_pipeline()
        out = {}
        for e in self.sw.read_table(self.TABLE):
            v = p.param_values(e.action.action)
            out[ip_str(p.match_values(e)["hdr.ipv4.srcAddr"])] = WorkerEntry(
                v["worker_id"], v["cluster_id"], v["ingress_port"], v["src_port"], v["src_port_mask"])
        return out

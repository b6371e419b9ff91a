"""Update identifier (P4 control ``UpdateIdentifier``, p4src/include/update_identifier.p4).

Owns ``worker_table``: an update's source (IPv4 address and, for the paper's five-tuple
Worker_ID of §7, UDP source port) → (worker_id, cluster_id), which the switch stamps into the
header (paper §7 "Uplink"), together with the switch port the worker's packets must arrive
on. A worker's key is a :data:`WorkerKey`: ``(address, udp_port)``, with ``udp_port`` 0 for
every port of the address (identity ``address_port``: one worker per address); with identity
``five_tuple`` several workers may share an address (and a switch port), one per UDP port.
Writes and reads go through this class only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from olaf.controller.p4rt import SwitchConnection

IDENTITIES = ("address_port", "five_tuple")

WorkerKey = tuple[str, int]
"""A ``worker_table`` key: (source IPv4, dotted; UDP source port, or 0 for any port)."""

PRIORITY_PORT, PRIORITY_ANY_PORT = 2, 1
"""P4Runtime priorities of the ternary entries: an entry for one UDP port beats an address's
wildcard entry (P4Runtime spec §9.1: a higher number wins)."""


def worker_key(ip: str, udp_port: int, identity: str) -> WorkerKey:
    """The key that identifies the worker at ``(ip, udp_port)`` under ``identity``:
    ``address_port`` → ``(ip, 0)`` (any UDP port), ``five_tuple`` → ``(ip, udp_port)``.

    Raises:
        ValueError: an unknown identity, or a UDP port outside 1..65535 with five_tuple.
    """
    if identity not in IDENTITIES:
        raise ValueError(f"identity={identity!r}: expected one of {', '.join(IDENTITIES)}")
    if identity == "address_port":
        return (ip, 0)
    if not 1 <= udp_port <= 0xFFFF:
        raise ValueError(f"udp_port={udp_port}: a worker's UDP port is 1..65535")
    return (ip, udp_port)


@dataclass(frozen=True)
class WorkerEntry:
    """The action data of one ``worker_table`` entry.

    Attributes:
        worker_id, cluster_id: stamped into the worker's updates.
        ingress_port: the switch port the worker's packets arrive on (from elsewhere: spoofed).
    """

    worker_id: int
    cluster_id: int
    ingress_port: int


class UpdateIdentifier:
    """Owns ``worker_table`` of one switch."""

    TABLE = "OlafIngress.identifier.worker_table"
    ACTION = "OlafIngress.identifier.set_worker"

    def __init__(self, sw: SwitchConnection):
        self.sw = sw

    def entry(self, key: WorkerKey, w: WorkerEntry | None = None):
        """The table entry of the worker at ``key`` (match only when ``w`` is None)."""
        p = self.sw.require_pipeline()
        ip, port = key
        match: dict = {"hdr.ipv4.srcAddr": ip}
        if port:
            match["hdr.udp.srcPort"] = (port, 0xFFFF)
        prio = PRIORITY_PORT if port else PRIORITY_ANY_PORT
        if w is None:
            return p.table_entry(self.TABLE, match, priority=prio)
        return p.table_entry(self.TABLE, match, self.ACTION,
                             {"worker_id": w.worker_id, "cluster_id": w.cluster_id, "ingress_port": w.ingress_port},
                             priority=prio)

    def set_worker(self, key: WorkerKey, w: WorkerEntry, kind: str = "insert") -> None:
        """Insert (or, with ``kind="modify"``, move) the worker at ``key``."""
        self.sw.write([self.sw.update(kind, self.entry(key, w))])

    def remove_worker(self, key: WorkerKey) -> None:
        self.sw.write([self.sw.update("delete", self.entry(key))])

    def read(self) -> dict[WorkerKey, WorkerEntry]:
        """Installed workers: :data:`WorkerKey` → :class:`WorkerEntry`."""
        from olaf.controller.p4rt import ip_str  # noqa: PLC0415

        p = self.sw.require_pipeline()
        out = {}
        for e in self.sw.read_table(self.TABLE):
            v = p.param_values(e.action.action)
            m = p.match_values(e)
            port = m.get("hdr.udp.srcPort", (0, 0))[0]
            out[(ip_str(m["hdr.ipv4.srcAddr"]), port)] = WorkerEntry(v["worker_id"], v["cluster_id"],
                                                                     v["ingress_port"])
        return out

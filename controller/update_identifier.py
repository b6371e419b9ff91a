"""Update identifier (P4 control ``UpdateIdentifier``, p4src/include/update_identifier.p4).

Owns ``worker_table``: an update's source IPv4 → (worker_id, cluster_id), which the
switch stamps into the header (paper §7 "Uplink"). Writes and reads go through this
class only.
"""

from __future__ import annotations

from olaf.controller.p4rt import SwitchConnection, ip_str


class UpdateIdentifier:
    """Owns ``worker_table`` of one switch."""

    TABLE = "OlafIngress.identifier.worker_table"
    ACTION = "OlafIngress.identifier.set_worker"

    def __init__(self, sw: SwitchConnection):
        self.sw = sw

    def entry(self, ip: str, worker_id: int | None = None, cluster_id: int | None = None):
        """The table entry of the worker at ``ip`` (match only when ``worker_id`` is None)."""
        p = self.sw.require_pipeline()
        if worker_id is None:
            return p.table_entry(self.TABLE, {"hdr.ipv4.srcAddr": ip})
        return p.table_entry(self.TABLE, {"hdr.ipv4.srcAddr": ip}, self.ACTION,
                             {"worker_id": worker_id, "cluster_id": cluster_id})

    def set_worker(self, ip: str, worker_id: int, cluster_id: int, kind: str = "insert") -> None:
        """Insert (or, with ``kind="modify"``, move) the worker at ``ip``."""
        self.sw.write([self.sw.update(kind, self.entry(ip, worker_id, cluster_id))])

    def remove_worker(self, ip: str) -> None:
        self.sw.write([self.sw.update("delete", self.entry(ip))])

    def read(self) -> dict[str, tuple[int, int]]:
        """Installed workers: source IPv4 (dotted) → (worker_id, cluster_id)."""
        p = self.sw.require_pipeline()
        out = {}
        for e in self.sw.read_table(self.TABLE):
            v = p.param_values(e.action.action)
            out[ip_str(p.match_values(e)["hdr.ipv4.srcAddr"])] = (v["worker_id"], v["cluster_id"])
        return out

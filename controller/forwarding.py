"""IPv4 forwarding (P4 control ``Ipv4Forwarding``, p4src/include/forwarding.p4).

Owns ``ipv4_lpm``: routes to hosts, the PS and other switches. Writes and reads go
through this class only.
"""

from __future__ import annotations

from olaf.controller.entries import Route
from olaf.controller.p4rt import SwitchConnection, ip_str, mac_str


class Ipv4Forwarding:
    """Owns ``ipv4_lpm`` of one switch."""

    TABLE = "OlafIngress.forwarding.ipv4_lpm"
    ACTION = "OlafIngress.forwarding.ipv4_forward"

    def __init__(self, sw: SwitchConnection):
        self.sw = sw

    def entry(self, prefix: str, prefix_len: int = 32, port: int | None = None, src_mac: str | None = None,
              dst_mac: str | None = None):
        """The entry for ``prefix/prefix_len`` (match only when ``port`` is None)."""
        p = self.sw.require_pipeline()
        match = {"hdr.ipv4.dstAddr": (prefix, prefix_len)}
        if port is None:
            return p.table_entry(self.TABLE, match)
        return p.table_entry(self.TABLE, match, self.ACTION, {"src_mac": src_mac, "dst_mac": dst_mac, "port": port})

    def route(self, prefix: str, prefix_len: int, port: int, src_mac: str, dst_mac: str,
              kind: str = "insert") -> None:
        """Send ``prefix/prefix_len`` out of ``port`` with the given Ethernet addresses."""
        self.sw.write([self.sw.update(kind, self.entry(prefix, prefix_len, port, src_mac, dst_mac))])

    def delete(self, prefix: str, prefix_len: int = 32) -> None:
        self.sw.write([self.sw.update("delete", self.entry(prefix, prefix_len))])

    def read(self) -> dict[str, Route]:
        """Installed /32 routes: destination IPv4 (dotted) → :class:`Route`."""
        p = self.sw.require_pipeline()
        out = {}
        for e in self.sw.read_table(self.TABLE):
            ip, _plen = p.match_values(e)["hdr.ipv4.dstAddr"]
            v = p.param_values(e.action.action)
            out[ip_str(ip)] = Route(ip_str(ip), v["port"], mac_str(v["src_mac"]), mac_str(v["dst_mac"]))
        return out

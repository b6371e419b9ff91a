"""IPv4 forwarding (P4 control ``Ipv4Forwarding``, p4src/include/forwarding.p4)."""

from __future__ import annotations

from olaf.controller.p4rt import SwitchConnection


class Ipv4Forwarding:
    """Owns ``ipv4_lpm``: routes to hosts, the PS and other switches."""

    TABLE = "OlafIngress.forwarding.ipv4_lpm"
    ACTION = "OlafIngress.forwarding.ipv4_forward"

    def __init__(self, sw: SwitchConnection):
        self.sw = sw

    def entry(self, prefix: str, prefix_len: int, port: int, src_mac: str, dst_mac: str):
        return self.sw.require_pipeline().table_entry(
            self.TABLE, {"hdr.ipv4.dstAddr": (prefix, prefix_len)}, self.ACTION,
            {"src_mac": src_mac, "dst_mac": dst_mac, "port": port})

    def route(self, prefix: str, prefix_len: int, port: int, src_mac: str, dst_mac: str,
              kind: str = "insert") -> None:
        """Send ``prefix/prefix_len`` out of ``port`` with the given Ethernet addresses."""
        self.sw.write([self.sw.update(kind, self.entry(prefix, prefix_len, port, src_mac, dst_mac))])

    def delete(self, prefix: str, prefix_len: int) -> None:
        e = self.sw.require_pipeline().table_entry(self.TABLE, {"hdr.ipv4.dstAddr": (prefix, prefix_len)})
        self.sw.write([self.sw.update("delete", e)])

"""``IP[:PORT]`` host addresses on the command line."""

from __future__ import annotations

import ipaddress


def parse_hostport(text: str, default_port: int) -> tuple[str, int]:
    """Split ``"10.0.0.100"`` or ``"10.0.0.100:50100"`` into ``(ip, port)``.

    Only IPv4 (the Olaf wire format rides on IPv4 without options).

    Raises:
        ValueError: not an IPv4 address, or a port outside 1–65535; the message
            shows the accepted form.
    """
    host, sep, port_s = text.strip().rpartition(":")
    if not sep:
        host, port_s = text.strip(), ""
    try:
        ip = str(ipaddress.IPv4Address(host))
    except ValueError:
        raise ValueError(f"{text!r} is not an IPv4 address; use IP or IP:PORT, e.g. 10.0.0.100:{default_port}") from None
    if not port_s:
        return ip, default_port
    if not port_s.isdigit() or not 1 <= int(port_s) <= 65535:
        raise ValueError(f"{text!r} has a bad port {port_s!r}; the port must be 1-65535")
    return ip, int(port_s)

"""UDP sockets of the hosts (the PS and every worker): one receive buffer size and the kernel's
count of datagrams it dropped for a full buffer.

Linux delivers that count (``SO_RXQ_OVFL``, socket(7)) as ancillary data with each datagram
once the option is on: a cumulative uint32 per socket. The standard library's :mod:`socket` has
no name for the option, so its number comes from ``asm-generic/socket.h``.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from typing import Optional

from olaf.constants import SOCKET_RCVBUF

SO_RXQ_OVFL = 40
"""Linux's socket option (asm-generic/socket.h): the kernel's count of datagrams dropped for a
full receive buffer, delivered as ancillary data with each datagram."""
ANC_SPACE = socket.CMSG_SPACE(4)
"""``recvmsg`` ancillary buffer size for that count."""


def udp_socket(rcvbuf: int = SOCKET_RCVBUF) -> socket.socket:
    """An IPv4 UDP socket with a ``rcvbuf``-byte receive buffer (the kernel caps it at
    ``net.core.rmem_max``) that reports its drops (:func:`dropped`; silently not where the
    kernel lacks ``SO_RXQ_OVFL``)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    with contextlib.suppress(OSError):
        s.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
    return s


def dropped(ancdata: list[tuple[int, int, bytes]]) -> Optional[int]:
    """The socket's cumulative count of datagrams the kernel dropped for a full receive buffer,
    from one datagram's ``recvmsg`` ancillary data (None if it carries none)."""
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL and len(payload) >= 4:
            return int(struct.unpack("=I", payload[:4])[0])
    return None

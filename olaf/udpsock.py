"""UDP sockets of the hosts (the PS and every worker): the receive buffer, its size as the kernel
granted it, and the kernel's count of datagrams it dropped for a full buffer.

**Receive buffer.** :func:`udp_socket` asks for ``rcvbuf`` bytes with ``SO_RCVBUFFORCE`` (a
process with ``CAP_NET_ADMIN``, e.g. root under Mininet, may exceed ``net.core.rmem_max``) and
falls back to ``SO_RCVBUF``, which the kernel caps at ``net.core.rmem_max`` (208 KiB on a stock
Debian). Linux doubles the value asked for (bookkeeping overhead, socket(7)) and charges each
queued datagram its *truesize* — the buffer it was received into, not its payload
(:func:`datagram_truesize`). :func:`rcvbuf_granted` reads back what the kernel granted, so a
summary can name a capped buffer and its fix (:func:`rcvbuf_advice`).

**Drops.** Linux delivers the count of datagrams dropped for a full buffer (``SO_RXQ_OVFL``,
socket(7)) as ancillary data with each datagram once the option is on: a cumulative uint32 per
socket. The standard library's :mod:`socket` has no name for either option, so their numbers come
from ``asm-generic/socket.h``.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import struct
from pathlib import Path
from typing import Optional

from olaf.constants import SOCKET_RCVBUF

SO_RXQ_OVFL = 40
"""Linux's socket option (asm-generic/socket.h): the kernel's count of datagrams dropped for a
full receive buffer, delivered as ancillary data with each datagram."""
SO_RCVBUFFORCE = 33
"""Linux's socket option (asm-generic/socket.h): ``SO_RCVBUF`` without the ``rmem_max`` cap, for a
process with ``CAP_NET_ADMIN``."""
ANC_SPACE = socket.CMSG_SPACE(4)
"""``recvmsg`` ancillary buffer size for that count."""
RMEM_MAX = Path("/proc/sys/net/core/rmem_max")
"""The sysctl that caps ``SO_RCVBUF`` for an unprivileged process, bytes."""
TRUESIZE_OVERHEAD = 576
"""Bytes the kernel adds to a UDP payload before rounding its receive allocation up to a power of
two (IPv4 + UDP headers, ``skb_shared_info``, alignment; :func:`datagram_truesize`)."""
SKB_OVERHEAD = 256
"""Bytes of ``struct sk_buff`` charged per queued datagram beside its data (:func:`datagram_truesize`)."""


def udp_socket(rcvbuf: int = SOCKET_RCVBUF) -> socket.socket:
    """An IPv4 UDP socket with a ``rcvbuf``-byte receive buffer (``SO_RCVBUFFORCE`` where the
    process may, else ``SO_RCVBUF`` capped at ``net.core.rmem_max``: module docstring) that
    reports its drops (:func:`dropped`; silently not where the kernel lacks ``SO_RXQ_OVFL``).

    Raises:
        ValueError: ``rcvbuf`` < 1.
    """
    if rcvbuf < 1:
        raise ValueError(f"rcvbuf={rcvbuf!r} must be a positive number of bytes")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
    except OSError:  # EPERM without CAP_NET_ADMIN
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    with contextlib.suppress(OSError):
        s.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
    return s


BIND_HINTS = {
    errno.EADDRINUSE: "another socket is bound to it (a second client or PS on the same address and port?); "
                      "give another port, or stop the other process",
    errno.EADDRNOTAVAIL: "it is not an address of this host (or of this network namespace); give one of its "
                         "addresses (`ip -4 addr`) or 0.0.0.0",
    errno.EACCES: "a port below 1024 needs root; give a port of 1024 or more",
}
"""Why a bind fails, by errno, and what to do (:func:`udp_bound`)."""


def udp_bound(addr: tuple[str, int], rcvbuf: int = SOCKET_RCVBUF, *, who: str = "socket") -> socket.socket:
    """:func:`udp_socket` bound to ``addr``; ``who`` (``"client"``, ``"PS"``) names it in errors.

    Raises:
        ValueError: ``rcvbuf`` < 1.
        OSError: the bind failed; the message names ``who``, the address and the likely cause
            (:data:`BIND_HINTS`), the errno is the kernel's. The socket is closed.
    """
    s = udp_socket(rcvbuf)
    try:
        s.bind(addr)
    except OSError as e:
        s.close()
        hint = BIND_HINTS.get(e.errno or 0, "")
        raise OSError(e.errno, f"the {who} cannot bind UDP {addr[0]}:{addr[1]}: {e.strerror}"
                      + (f" ({hint})" if hint else "")) from None
    except (TypeError, OverflowError) as e:
        s.close()
        raise OSError(errno.EINVAL, f"the {who} cannot bind UDP {addr!r}: {e}") from None
    return s


def rcvbuf_granted(s: socket.socket) -> int:
    """The receive buffer the kernel granted ``s``, bytes: what it charges queued datagrams'
    truesize against (Linux reports twice the value set, socket(7))."""
    return int(s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))


def rmem_max() -> Optional[int]:
    """``net.core.rmem_max``, bytes (None where it cannot be read)."""
    try:
        return int(RMEM_MAX.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def datagram_truesize(payload: int) -> int:
    """Receive-buffer bytes the kernel charges one queued UDP datagram of ``payload`` bytes:
    ``2^⌈log₂(payload + 576)⌉ + 256``. An estimate for sizing, measured on Linux 6.1 loopback and
    veth: 2,304 bytes for a 1,472-byte payload, 16,644 for 8,972 (a jumbo frame's datagram costs
    nearly twice its size)."""
    if payload < 0:
        raise ValueError(f"payload={payload!r} must be >= 0 bytes")
    return (1 << max(payload + TRUESIZE_OVERHEAD - 1, 1).bit_length()) + SKB_OVERHEAD


def rcvbuf_for(datagrams: int, payload: int, floor: int = SOCKET_RCVBUF) -> int:
    """The ``rcvbuf`` to ask :func:`udp_socket` for so that a burst of ``datagrams`` datagrams of
    ``payload`` bytes fits however slowly they are read: ``datagrams · truesize(payload)``
    (:func:`datagram_truesize`), at least ``floor`` bytes. Linux doubles what is asked for, which
    leaves the rest of the buffer for what arrives while the burst is read."""
    if datagrams < 0:
        raise ValueError(f"datagrams={datagrams!r} must be >= 0")
    return max(floor, datagrams * datagram_truesize(payload))


def rcvbuf_advice(requested: int, granted: int) -> Optional[str]:
    """What to change when the kernel granted less than asked for (None when it granted it all):
    names the cap and the ``sysctl`` that lifts it."""
    if granted >= 2 * requested:
        return None
    cap = rmem_max()
    return (f"the kernel granted a {granted:,}-byte receive buffer of the {2 * requested:,} asked for "
            f"(net.core.rmem_max = {cap if cap is not None else 'unknown'}): raise it with "
            f"`sysctl -w net.core.rmem_max={requested}` or run as root (SO_RCVBUFFORCE)")


def dropped(ancdata: list[tuple[int, int, bytes]]) -> Optional[int]:
    """The socket's cumulative count of datagrams the kernel dropped for a full receive buffer,
    from one datagram's ``recvmsg`` ancillary data (None if it carries none)."""
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL and len(payload) >= 4:
            return int(struct.unpack("=I", payload[:4])[0])
    return None

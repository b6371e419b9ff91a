"""Join a network namespace from one thread: how an in-process worker (a Ray actor's, say)
opens its Olaf socket inside a Mininet host while its process stays where it is.

``setns(2)`` with ``CLONE_NEWNET`` moves only the calling thread; a socket belongs to the
namespace it was created in for its whole life, and threads the joined thread starts inherit its
namespace. So a thread that joins a host's namespace and then creates a worker has the worker's
UDP socket (and its helper threads) in that host, while the process's other threads — a Ray
actor's gRPC connections to its raylet, say — keep theirs. Mininet hosts are unnamed
namespaces: their handle is ``/proc/<pid of the host's shell>/ns/net``
(:func:`host_netns_path`), not a name under ``/var/run/netns``.

Our own code because the standard library has ``os.setns`` only from Python 3.12 (this project
supports 3.11): the call is made through libc (``ctypes``) when ``os.setns`` is missing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")

CLONE_NEWNET = 0x40000000
"""``setns(2)``'s namespace type for a network namespace (``<sched.h>``)."""


def host_netns_path(pid: int) -> Path:
    """The network namespace handle of the process ``pid`` (e.g. a Mininet host's shell)."""
    return Path(f"/proc/{pid}/ns/net")


def join_netns(path: Path | str) -> None:
    """Move the calling thread into the network namespace at ``path`` (``/proc/<pid>/ns/net`` or
    ``/var/run/netns/<name>``); sockets it creates afterwards live there.

    Raises:
        OSError: the handle cannot be opened (the process is gone, a typo) or ``setns`` refused
            (not root: it needs CAP_SYS_ADMIN); the message names ``path``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if hasattr(os, "setns"):
            os.setns(fd, CLONE_NEWNET)
            return
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into {path}: {os.strerror(err)} (joining a network namespace needs root)")
    finally:
        os.close(fd)


def netns_id(path: Path | str = "/proc/thread-self/ns/net") -> str:
    """The namespace ``path`` refers to (a ``/proc`` handle or a bind mount under ``/var/run/netns``),
    as the kernel names it (``net:[4026532177]``: its inode); by default the calling thread's."""
    return f"net:[{os.stat(path).st_ino}]"


def call_in_netns(path: Path | str, fn: Callable[[], T]) -> T:
    """``fn()`` run in a fresh thread that first joins the network namespace at ``path``; its result.

    The calling thread stays where it is: sockets ``fn`` creates (and threads it starts) are in
    ``path``'s namespace, everything else of the process is not. This is how an object whose
    methods are called from a framework's own thread (an RLlib EnvRunner's actor thread, whose Ray
    connections must stay put) opens its Olaf socket inside a Mininet host.

    Raises:
        OSError: joining failed (see :func:`join_netns`).
        Exception: whatever ``fn`` raised.
    """
    out: dict[str, object] = {}

    def body() -> None:
        try:
            join_netns(path)
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 -- handed to the caller's thread
            out["error"] = e

    t = threading.Thread(target=body, name=f"netns:{path}", daemon=True)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out["value"]  # type: ignore[return-value]

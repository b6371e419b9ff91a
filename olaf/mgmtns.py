"""A management network namespace for the switches' control ports, reachable only through
loopback forwarders.

BMv2's Thrift server has no bind-address option: it listens on every interface of its
network namespace. Run in the root namespace, its runtime API (tables, queues, PRE) would
be open, unauthenticated, to anything that reaches the machine. So the emulation runs every
``simple_switch_grpc`` in one namespace of its own, which holds only loopback and the
switches' data-plane ports (no addresses): nothing outside can reach a socket in it. For
the controller and ``olafctl``, a forwarder on ``127.0.0.1:<port>`` of the caller's
namespace relays each control connection (P4Runtime gRPC, Thrift) to the same port inside
the namespace. The forwarder is ours (asyncio) because the relay must open its connections
from inside another network namespace, which a thread can do with ``setns(2)``
(:func:`olaf.netns.join_netns`) and no tool on a base system does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import subprocess
import threading
from concurrent.futures import Future

from olaf.netns import join_netns

log = logging.getLogger(__name__)



class _NamespaceDialer(threading.Thread):
    """A thread that lives in the namespace and opens TCP connections for others: a socket
    keeps the network namespace it was created in."""

    def __init__(self, name: str):
        super().__init__(daemon=True, name=f"netns-dialer-{name}")
        self.ns = name
        self.requests: list[tuple[int, Future]] = []
        self.cv = threading.Condition()
        self.ready: Future = Future()
        self.closed = False

    def run(self) -> None:
        try:
            join_netns(f"/var/run/netns/{self.ns}")
        except OSError as e:
            self.ready.set_exception(e)
            return
        self.ready.set_result(True)
        while True:
            with self.cv:
                while not self.requests and not self.closed:
                    self.cv.wait()
                if self.closed:
                    return
                port, fut = self.requests.pop(0)
            try:
                fut.set_result(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError as e:
                fut.set_exception(e)

    def dial(self, port: int) -> Future:
        fut: Future = Future()
        with self.cv:
            self.requests.append((port, fut))
            self.cv.notify()
        return fut

    def close(self) -> None:
        with self.cv:
            self.closed = True
            self.cv.notify()


class ManagementNamespace:
    """``ip netns add <name>`` with loopback up; :meth:`forward` relays ``127.0.0.1:port`` of
    the caller's namespace into it. Context manager: leaving it stops the forwarders and
    deletes the namespace (and every interface still in it)."""

    def __init__(self, name: str):
        if len(name) > 32:
            raise ValueError(f"namespace name {name!r} is too long")
        self.name = name
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name=f"forwarders-{name}")
        self.dialer = _NamespaceDialer(name)
        self.servers: list[asyncio.base_events.Server] = []

    def __enter__(self) -> ManagementNamespace:
        subprocess.run(["ip", "netns", "add", self.name], check=True, capture_output=True)
        subprocess.run(["ip", "netns", "exec", self.name, "ip", "link", "set", "lo", "up"], check=True,
                       capture_output=True)
        self.dialer.start()
        self.dialer.ready.result(timeout=10)
        self.thread.start()
        return self

    def exec(self, *cmd: str) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.name, *cmd], capture_output=True, text=True)

    def move_interface(self, ifname: str) -> None:
        """Move ``ifname`` into the namespace and bring it up (IPv6 off: no stray traffic)."""
        subprocess.run(["ip", "link", "set", ifname, "netns", self.name], check=True, capture_output=True)
        self.exec("sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1")
        r = self.exec("ip", "link", "set", ifname, "up")
        if r.returncode != 0:
            raise RuntimeError(f"{self.name}: cannot bring {ifname} up: {r.stderr.strip()}")

    def forward(self, port: int) -> None:
        """Relay TCP ``127.0.0.1:port`` here to ``127.0.0.1:port`` in the namespace."""
        fut = asyncio.run_coroutine_threadsafe(asyncio.start_server(self._relay(port), "127.0.0.1", port),
                                               self.loop)
        self.servers.append(fut.result(timeout=10))

    def _relay(self, port: int):
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                sock = await asyncio.wrap_future(self.dialer.dial(port))
            except OSError as e:
                log.debug("%s: no listener on port %d inside: %s", self.name, port, e)
                writer.close()
                return
            sock.setblocking(False)
            in_r, in_w = await asyncio.open_connection(sock=sock)
            await asyncio.gather(_pump(reader, in_w), _pump(in_r, writer))
        return handle

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            for s in self.servers:
                s.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(s.wait_closed(), 2)
        if self.thread.is_alive():
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(timeout=10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
        self.dialer.close()
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            dst.close()


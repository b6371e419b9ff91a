"""Helpers for host tests on loopback: private 127.x.y.0/24 addresses, an ACK receiver, threads."""

from __future__ import annotations

import os
import random
import socket
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from olaf.wire import ACK_PORT, Ack, parse_ack

GUARD_SCALE_ENV = "OLAF_TEST_GUARD_SCALE"
"""Set by tests/conftest.py under ``--competing-load``: how much longer everything takes."""


def guard(seconds: float) -> float:
    """A hang guard (a deadline, a subprocess timeout, a job's wall-time budget) of ``seconds`` on an
    idle machine, stretched by the session's competing load (``(cores + N) / cores``)."""
    return seconds * float(os.environ.get(GUARD_SCALE_ENV, "1"))


def loopback_net() -> Callable[[int], str]:
    """A random 127.a.b.0/24 (Linux routes all of 127/8 to lo), so concurrent test runs do not collide."""
    a, b = random.randrange(32, 250), random.randrange(1, 250)
    return lambda host: f"127.{a}.{b}.{host}"


class AckReceiver:
    """A socket on ``(ip, 50101)`` standing where a worker would; :meth:`next` waits for one ACK."""

    def __init__(self, ip: str) -> None:
        self.ip = ip
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((ip, ACK_PORT))
        self.sock.settimeout(5.0)

    def send_to(self, data: bytes, addr: tuple[str, int]) -> None:
        self.sock.sendto(data, addr)

    def next(self) -> Ack:
        data, _ = self.sock.recvfrom(65535)
        return parse_ack(data)

    def close(self) -> None:
        self.sock.close()


@contextmanager
def running(target: Callable[[], object]) -> Iterator[dict]:
    """Run ``target`` in a thread; yields a dict that gets ``result`` (or ``error``) when it
    ends, and whose event ``done`` is set then.

    The caller must make ``target`` return (e.g. set its stop event) before leaving the block.
    """
    out: dict = {"done": threading.Event()}

    def body() -> None:
        try:
            out["result"] = target()
        except BaseException as e:  # surfaced to the test below
            out["error"] = e
        finally:
            out["done"].set()

    t = threading.Thread(target=body, daemon=True)
    t.start()
    try:
        yield out
    finally:
        t.join(timeout=10)
        assert not t.is_alive(), "host thread did not stop"
        if "error" in out:
            raise out["error"]

"""olaf/netns.py: a thread that joins a network namespace creates its sockets there, and only it
moves (root: it makes a namespace of its own with `ip netns`)."""

import os
import socket
import subprocess
import threading

import pytest
from p4_tier import require_root

from olaf.netns import host_netns_path, join_netns, netns_id


@pytest.fixture
def namespace():
    require_root()
    name = f"olafnetnstest{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "addr", "add", "10.77.0.1/32", "dev", "lo"]):
            subprocess.run(["ip", "netns", "exec", name, *cmd], check=True)
        yield f"/var/run/netns/{name}"
    finally:
        subprocess.run(["ip", "netns", "del", name], check=True)


def test_a_joined_thread_binds_an_address_that_exists_only_in_the_namespace(namespace):
    got: dict = {}

    def body():
        join_netns(namespace)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("10.77.0.1", 0))
            got["addr"] = s.getsockname()[0]
        got["ns"] = netns_id()
        inner = threading.Thread(target=lambda: got.setdefault("child_ns", netns_id()))
        inner.start()
        inner.join()

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert got["addr"] == "10.77.0.1" and got["ns"] == got["child_ns"] == netns_id(namespace)
    assert netns_id() == netns_id(host_netns_path(os.getpid())) != got["ns"]   # the caller did not move
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s, pytest.raises(OSError):
        s.bind(("10.77.0.1", 0))


def test_a_namespace_that_is_gone_names_its_path():
    with pytest.raises(OSError) as e:
        join_netns("/proc/999999999/ns/net")
    assert "/proc/999999999/ns/net" in str(e.value)

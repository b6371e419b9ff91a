"""Base class of the Olaf PTF tests: pushes the pipeline, programs a small star.

Ports (olaf/ptf_runner.py): 0 = the PS, 1..5 = workers. Worker k (1..5) has
IPv4 10.0.1.k, MAC 00:00:0a:00:01:0k and worker_id k. Each test starts from a
freshly pushed pipeline (new tables, counters and OlafQueue state) and from an
unlimited PS-port rate.

Holding the queue: BMv2 fixes a packet's departure time when it enters the
traffic manager's queue (rate limiter ``QueueingLogicPriRL``), so a held queue
cannot be "released". :meth:`OlafTest.open_window` sets the PS port's rate to
``rate_pps`` and sends a plug packet; once the plug has left, every packet that
enters the queue waits at least 1/rate_pps behind it. Tests inject their
updates inside that window and check, through the decision counters, that the
switch had processed all of them before the first departure.
"""

from __future__ import annotations

import time

import ptf
from ptf import testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from olaf import wire
from olaf.checksums import checksum_problem
from olaf.controller.ack_multicast import AckMulticast
from olaf.controller.counters import OlafCounters
from olaf.controller.forwarding import Ipv4Forwarding
from olaf.controller.olaf_params import OlafParams, PathParams, QueueParams
from olaf.controller.p4rt import Replica, SwitchConnection
from olaf.controller.tm import TrafficManager, push_pipeline
from olaf.controller.update_identifier import UpdateIdentifier, WorkerEntry, worker_key
from olaf.update import Update

PS_PORT = 0
WORKER_PORTS = [1, 2, 3, 4, 5]
SW_MAC = "00:00:00:00:01:00"
PS_IP = "10.0.0.100"
PS_MAC = "00:00:0a:00:00:64"
NUM_GRADS = 4


def worker_ip(k: int) -> str:
    return f"10.0.1.{k}"


def worker_mac(k: int) -> str:
    return f"00:00:0a:00:01:{k:02x}"


class OlafTest(BaseTest):
    """Connects over P4Runtime, pushes the pipeline and installs routes to the PS and workers."""

    num_grads = NUM_GRADS

    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        p = tu.test_params_get()
        self.sw = SwitchConnection(p["grpcaddr"], name="s1")
        self.sw.connect()
        self.tm = TrafficManager(p["thrift_port"], name="s1")
        self.fwd = Ipv4Forwarding(self.sw)
        self.workers = UpdateIdentifier(self.sw)
        self.params = OlafParams(self.sw)
        self.acks = AckMulticast(self.sw)
        self.counters = OlafCounters(self.sw)
        self.reset_switch()

    def reset_switch(self):
        """Fresh pipeline (tables, counters, queue state), unlimited rates, routes, default params."""
        p = tu.test_params_get()
        push_pipeline(self.sw, self.tm, p["p4info"], p["bmv2_json"])
        self.tm.set_queue_rate(0)
        self.tm.set_queue_depth(64)
        self.fwd.route(PS_IP, 32, PS_PORT, SW_MAC, PS_MAC)
        for k in WORKER_PORTS:
            self.fwd.route(worker_ip(k), 32, k, SW_MAC, worker_mac(k))
        self.set_params()

    def tearDown(self):
        self.drain_ps_port()
        self.sw.close()
        BaseTest.tearDown(self)

    def drain_ps_port(self):
        """Discard packets still paced toward the PS (a failed test can leave some in the
        traffic manager) until the port stays quiet for longer than the pacing interval,
        so they cannot reach the next test."""
        quiet = 1.0 / getattr(self, "window_rate", 1) + 0.5
        while isinstance(tu.dp_poll(self, device_number=0, port_number=PS_PORT, timeout=quiet),
                         self.dataplane.PollSuccess):
            pass

    # -- configuration -------------------------------------------------------------

    def set_params(self, max_sojourn_ns: int = 0, **kw):
        """Queue parameters (QueueParams fields) with the PS at PS_IP behind PS_PORT."""
        kw.setdefault("num_grads", self.num_grads)
        self.params.set(QueueParams(**kw), PathParams(PS_IP, PS_PORT, max_sojourn_ns))

    def add_workers(self, cluster_id: int, ks, *, group: bool = False, identity: str = "address_port"):
        """Register workers ``ks`` (each on its own port, sending from the ACK port) in
        ``cluster_id``; with ``group``, create its ACK group."""
        for k in ks:
            self.workers.set_worker(worker_key(worker_ip(k), wire.ACK_PORT, identity), WorkerEntry(k, cluster_id, k))
        if group:
            self.acks.set_group(cluster_id, [Replica(k, k) for k in ks])
            for k in ks:
                self.acks.set_rewrite(k, SW_MAC, worker_mac(k), worker_ip(k))

    # -- packets -------------------------------------------------------------------

    def update_frame(self, k: int, u: Update, *, src_ip: str | None = None, init: bool = False,
                     udp_checksum: bool = False, keep_ids: bool = False):
        """An update as worker ``k`` sends it (ids left 0: the switch stamps them; ``keep_ids``
        sends ``u``'s own); with ``udp_checksum`` the UDP checksum is computed, as a kernel
        socket does."""
        return (Ether(src=worker_mac(k), dst=SW_MAC)
                / IP(src=src_ip or worker_ip(k), dst=PS_IP, ttl=64, id=1)
                / UDP(sport=wire.ACK_PORT, dport=wire.UPDATE_PORT, chksum=None if udp_checksum else 0)
                / wire.update_layer(u if keep_ids else u.with_(cluster_id=0, worker_id=0), init=init))

    def send_update(self, k: int, u: Update, **kw):
        tu.send_packet(self, k, bytes(self.update_frame(k, u, **kw)))

    def send_updates(self, *items: tuple[int, Update]):
        """Send ``(worker, update)`` pairs in this order *as the switch sees it*: packets sent on
        two ports may reach the switch in either order, so each is sent only once the switch
        has decided the previous one (decision counters)."""
        base = self.decided()
        for i, (k, u) in enumerate(items):
            self.send_update(k, u)
            self.wait_decided(base + i + 1)

    def recv(self, port: int, timeout: float = 3.0) -> Ether:
        """The next packet on ``port``; fails the test on timeout, and if the frame's IPv4
        checksum is wrong or its UDP checksum is neither 0 nor right (every frame a test
        receives goes through this check)."""
        r = tu.dp_poll(self, device_number=0, port_number=port, timeout=timeout)
        if not isinstance(r, self.dataplane.PollSuccess):
            self.fail(f"no packet on port {port} within {timeout} s")
        problem = checksum_problem(bytes(r.packet))
        if problem:
            self.fail(f"port {port}: {problem}: {Ether(r.packet).summary()}")
        return Ether(r.packet)

    def recv_update(self, timeout: float = 3.0) -> tuple[Ether, Update]:
        """The next update reaching the PS port, strictly decoded."""
        pkt = self.recv(PS_PORT, timeout)
        self.assertIn(UDP, pkt, f"not UDP: {pkt.summary()}")
        self.assertEqual(pkt[UDP].dport, wire.UPDATE_PORT, f"not an update: {pkt.summary()}")
        return pkt, wire.parse_update(bytes(pkt[UDP].payload))

    def assert_no_packet(self, port: int, timeout: float = 0.5):
        r = tu.dp_poll(self, device_number=0, port_number=port, timeout=timeout)
        if isinstance(r, self.dataplane.PollSuccess):
            self.fail(f"unexpected packet on port {port}: {Ether(r.packet).summary()}")

    # -- holding the PS queue ----------------------------------------------------------

    def open_window(self, rate_pps: int = 2):
        """Rate-limit the PS port and send a plug: packets enqueued in the next
        1/rate_pps seconds wait (see the module docstring)."""
        self.tm.set_queue_rate(rate_pps, PS_PORT)
        plug = (Ether(src=worker_mac(5), dst=SW_MAC) / IP(src=worker_ip(5), dst=PS_IP)
                / UDP(sport=9, dport=9) / b"plug")
        tu.send_packet(self, 5, bytes(plug))
        got = self.recv(PS_PORT, timeout=2.0 / rate_pps + 3)
        self.assertEqual(bytes(got[UDP].payload)[:4], b"plug", "the plug did not come first")
        self.window_rate = rate_pps

    def wait_counter(self, group: str, name: str, value: int, timeout: float = 5.0):
        """Poll ``counters.<group>()[name]`` (e.g. ``traffic``, ``ttl_expired``) until it is ``value``;
        fail if it passes it or the deadline comes first."""
        deadline = time.monotonic() + timeout
        while (n := getattr(self.counters, group)()[name]) != value:
            if n > value:
                self.fail(f"{group}[{name}] = {n}, expected {value}")
            if time.monotonic() > deadline:
                self.fail(f"{group}[{name}] = {n} after {timeout} s, expected {value}")
            time.sleep(0.01)

    def decided(self) -> int:
        return sum(self.counters.decisions().values())

    def wait_decided(self, total: int, timeout: float = 5.0):
        """Poll the decision counters until ``total`` updates were decided."""
        deadline = time.monotonic() + timeout
        while (n := self.decided()) < total:
            if time.monotonic() > deadline:
                self.fail(f"switch decided {n} updates, expected {total}")
            time.sleep(0.01)

    def assert_window_holds(self):
        """No departure yet: the injected updates were all decided inside the window."""
        r = tu.dp_poll(self, device_number=0, port_number=PS_PORT, timeout=0)
        if isinstance(r, self.dataplane.PollSuccess):
            self.fail("timing: a packet left the PS queue before the updates of this window "
                      "were processed; the machine is too loaded for rate "
                      f"{self.window_rate} pps (this is not a queue mismatch)")

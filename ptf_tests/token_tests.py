"""The token ledger on BMv2 (docs/dataplane.md "The token ledger"): tokens the traffic
manager drops are detected and their segments reclaimed, never leaked; a token departs
with its own segment or not at all; every reclaimed segment is counted.

The PS port's queue is made small with BMv2's Thrift client directly (the controller
refuses a depth below the queue size; here the depth equals it, and INIT frames, which
share that queue, fill it) and paced at 1 pps. BMv2 fixes a packet's departure time when
it enters that queue (ptf_tests/olaf_base.py), so once the first INIT has reached the PS
the next two wait there for 1 and 2 s: the queue is full and the tokens of updates sent
meanwhile are dropped by the traffic manager — deterministically, whatever the load.
"""

from __future__ import annotations

import time

from olaf_base import PS_IP, PS_MAC, PS_PORT, SW_MAC, OlafTest, worker_ip
from ptf import testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from olaf import wire
from olaf.constants import UPDATE_FLAG_INIT
from olaf.controller.olaf_params import max_sojourn_ns
from olaf.update import Update

RATE_PPS = 1
TM_DEPTH = 2


def upd(cluster_id: int, worker_id: int, seq: int, fill: int) -> Update:
    """An update of ``cluster_id`` as the PS receives it from worker ``worker_id``."""
    return Update(cluster_id=cluster_id, worker_id=worker_id, seq=seq, count=1, reward_sum=0,
                  gen_ts=1000 + seq, grads=(fill, fill, fill, fill))


class TokenTest(OlafTest):
    """Clusters 0, 1, 2 with workers 1, 2, 3 on ports 1, 2, 3; a slow, shallow PS-port queue."""

    def setUp(self):
        super().setUp()
        for c, k in enumerate([1, 2, 3]):
            self.add_workers(c, [k])

    def slow_ps_port(self, depth: int = TM_DEPTH):
        self.tm.set_queue_rate(RATE_PPS, PS_PORT)
        self.tm.set_queue_depth(depth, PS_PORT)
        self.window_rate = RATE_PPS

    def fill_tm_with_inits(self):
        """Three INIT frames of worker 1: the first reaches the PS, the next two then wait in
        the PS-port queue for 1 and 2 s (see the module docstring): it is full."""
        self.send_update(1, upd(0, 1, 100, 0), init=True)
        self.recv_inits(1)
        for i in (1, 2):
            self.send_update(1, upd(0, 1, 100 + i, i), init=True)
        self.wait_counter("traffic", "init", 3)

    def send_decided(self, k: int, u: Update) -> str:
        """Send ``u`` as worker ``k``; the decision the switch took (decision counters)."""
        before = self.counters.decisions()
        self.send_update(k, u)
        self.wait_decided(sum(before.values()) + 1)
        after = self.counters.decisions()
        moved = [d for d in after if after[d] != before[d]]
        self.assertEqual(len(moved), 1, f"decision counters moved: {moved}")
        return moved[0]

    def recv_inits(self, n: int):
        for _ in range(n):
            pkt, got = self.recv_update(timeout=2.0 / RATE_PPS + 3)
            self.assertTrue(bytes(pkt[UDP].payload)[1] & UPDATE_FLAG_INIT, f"expected an INIT, got {got}")

    def assert_conserved(self, occupancy: int = 0):
        """Σ append = Σ departures + lost + expired + occupancy."""
        appended = self.counters.decisions()["append"]
        departed = sum(c.departures for c in self.counters.clusters(range(3)).values())
        r = self.counters.reclaimed()
        self.assertEqual(appended, departed + r["lost"] + r["expired"] + occupancy,
                         f"append {appended}, departures {departed}, reclaimed {r}, occupancy {occupancy}")


class LostTokensExpire(TokenTest):
    """Tokens the TM drops: queue 2, TM depth 2, 1 pps, three INIT frames, then updates of
    clusters 0 and 1 whose tokens the TM drops. Without the ledger cluster 2 stays
    drop_full for good and nothing departs again; with it the two segments are reclaimed
    once older than max_sojourn_ns (the controller's bound for this port), cluster 2's
    update appends and departs with its own content, and the counters show both segments
    reclaimed: cluster 0's by expiry, cluster 1's by expiry or, if cluster 2's token
    reaches egress first, as lost behind that newer token (both are right)."""

    def runTest(self):
        sojourn = max_sojourn_ns(RATE_PPS, TM_DEPTH)
        self.set_params(queue_size=2, max_sojourn_ns=sojourn)
        self.slow_ps_port()
        self.fill_tm_with_inits()
        self.assertEqual(self.send_decided(1, upd(0, 1, 1, 10)), "append")
        self.assertEqual(self.send_decided(2, upd(1, 2, 1, 20)), "append")
        appended_at = time.monotonic()
        self.assertEqual(self.send_decided(3, upd(2, 3, 1, 30)), "drop_full")
        self.recv_inits(2)   # the PS gets the INITs only: both tokens were dropped

        deadline = appended_at + sojourn / 1e9 + 10
        seq = 2
        while (decision := self.send_decided(3, upd(2, 3, seq, 30 + seq))) != "append":
            self.assertEqual(decision, "drop_full")
            if time.monotonic() > deadline:
                self.fail(f"cluster 2 still drop_full {time.monotonic() - appended_at:.1f} s after the "
                          f"tokens were lost (max_sojourn_ns = {sojourn}): the segments leaked")
            time.sleep(0.25)
            seq += 1
        self.assertGreater(time.monotonic() - appended_at, sojourn / 1e9 - 0.5, "reclaimed before expiry")

        pkt, got = self.recv_update(timeout=2.0 / RATE_PPS + 3)
        self.assertEqual(got, upd(2, 3, seq, 30 + seq))
        self.assertEqual(pkt[IP].src, worker_ip(3))
        self.assert_no_packet(PS_PORT, timeout=1.5)
        r = self.counters.reclaimed()
        self.assertEqual(r["lost"] + r["expired"], 2, f"reclaimed {r}")
        self.assertGreaterEqual(r["expired"], 1, f"reclaimed {r}")
        fates = self.counters.token_fates()
        self.assertEqual(fates, {"departed": 1 - r["lost"], "departed_after_loss": r["lost"], "stale": 0})
        self.assertEqual([c.departures for c in self.counters.clusters(range(3)).values()], [0, 0, 1])
        self.assert_conserved()


class LostTokenReclaimedByNewerToken(TokenTest):
    """A token newer than the head's: the head whose token the TM dropped is reclaimed
    (lost) and the newer token departs with its own segment — before the ledger it
    carried the lost segment's content. No expiry here (max_sojourn_ns = 0)."""

    def runTest(self):
        self.set_params(queue_size=3, max_sojourn_ns=0)
        self.slow_ps_port()
        self.fill_tm_with_inits()
        self.assertEqual(self.send_decided(1, upd(0, 1, 1, 10)), "append")   # token dropped
        self.recv_inits(2)
        self.assertEqual(self.send_decided(2, upd(1, 2, 1, 20)), "append")
        _, got = self.recv_update(timeout=2.0 / RATE_PPS + 3)
        self.assertEqual(got, upd(1, 2, 1, 20), "the token departed with another segment's content")
        self.assertEqual(self.counters.reclaimed(), {"lost": 1, "expired": 0})
        self.assertEqual(self.counters.token_fates()["departed_after_loss"], 1)
        # cluster 0 no longer waits: its next update appends and departs in its own token
        self.assertEqual(self.send_decided(1, upd(0, 1, 2, 11)), "append")
        _, got = self.recv_update(timeout=2.0 / RATE_PPS + 3)
        self.assertEqual(got, upd(0, 1, 2, 11))
        self.assertEqual(self.counters.token_fates(), {"departed": 1, "departed_after_loss": 1, "stale": 0})
        self.assert_conserved()


class StaleTokenDropped(TokenTest):
    """A token whose segment expired while it waited in the TM is stale: nothing departs,
    the packet is dropped and counted. The ACK that expired it reports the queue empty."""

    def runTest(self):
        self.set_params(queue_size=2, max_sojourn_ns=1)
        self.open_window(RATE_PPS)   # the token waits 1 / RATE_PPS in the PS-port queue
        self.assertEqual(self.send_decided(1, upd(0, 1, 1, 10)), "append")
        ack = (Ether(src=PS_MAC, dst=SW_MAC) / IP(src=PS_IP, dst=worker_ip(4))
               / UDP(sport=wire.UPDATE_PORT, dport=wire.ACK_PORT)
               / wire.ack_layer(cluster_id=0, worker_id=0, seq=0, count=1, global_reward=0, gen_ts=0, weights=[]))
        tu.send_packet(self, PS_PORT, bytes(ack))
        status = wire.parse_ack(bytes(self.recv(4)[UDP].payload)).status
        self.assertEqual(status.queue_util, 0, "the expired segment still counts as waiting")
        self.wait_counter("token_fates", "stale", 1, timeout=2.0 / RATE_PPS + 3)
        self.assert_no_packet(PS_PORT, timeout=1.5)
        self.assertEqual(self.counters.reclaimed(), {"lost": 0, "expired": 1})
        self.assertEqual(self.counters.cluster(0).departures, 0)
        self.assert_conserved()

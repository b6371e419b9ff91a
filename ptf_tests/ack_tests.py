"""ACK path: multicast to exactly the cluster's workers, per-replica rewrite, queue status; refusals."""

import json
from pathlib import Path

from olaf_base import PS_IP, PS_MAC, PS_PORT, SW_MAC, OlafTest, worker_ip, worker_mac
from ptf import testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from olaf import wire
from olaf.fixedpoint import reward_to_fixed
from olaf.update import Update
from olaf.wire import QueueStatus


def ack_frame(cluster_id, dst_ip, *, weights=(1, -2, 3, -4), status=None, flags_valid=False):
    layer = wire.ack_layer(cluster_id=cluster_id, worker_id=1, seq=42, count=3,
                           global_reward=reward_to_fixed(2.5), gen_ts=999, weights=list(weights),
                           status=status)
    return (Ether(src=PS_MAC, dst=SW_MAC) / IP(src=PS_IP, dst=dst_ip, ttl=64)
            / UDP(sport=wire.UPDATE_PORT, dport=wire.ACK_PORT) / layer)


class AckFanOut(OlafTest):
    """An ACK for cluster 0 reaches workers 1-3 (each rewritten to its address) and no one else,
    with the queue status filled in."""

    def runTest(self):
        self.add_workers(0, [1, 2, 3], group=True)
        self.add_workers(1, [4, 5], group=True)
        self.set_params(queue_size=6)
        # Two clusters active, one update waiting in the queue while the ACK passes.
        self.open_window(rate_pps=1)
        self.send_update(1, Update(cluster_id=0, worker_id=0, grads=(0, 0, 0, 0)))
        self.send_update(4, Update(cluster_id=0, worker_id=0, grads=(0, 0, 0, 0)))
        self.wait_decided(2)
        tu.send_packet(self, PS_PORT, bytes(ack_frame(0, worker_ip(1))))
        for k in (1, 2, 3):
            pkt = self.recv(k)
            self.assertEqual((pkt[Ether].dst, pkt[IP].dst, pkt[UDP].dport), (worker_mac(k), worker_ip(k), wire.ACK_PORT))
            a = wire.parse_ack(bytes(pkt[UDP].payload))
            self.assertEqual(a.status, QueueStatus(queue_util=2, active_clusters=2, queue_size=6))
            self.assertEqual((a.cluster_id, a.seq, a.count, a.weights), (0, 42, 3, (1, -2, 3, -4)))
        for k in (4, 5):
            self.assert_no_packet(k)
        self.recv_update(timeout=5)
        self.recv_update(timeout=5)
        self.assertEqual(self.counters.traffic()["ack_multicast"], 1)


class AckWithoutGroupIsUnicast(OlafTest):
    """An ACK for a cluster without a multicast group is forwarded to its IP destination, with
    the status written and a UDP checksum that is 0 or right (the switch changed the payload)."""

    def runTest(self):
        self.add_workers(0, [1, 2], group=True)
        tu.send_packet(self, PS_PORT, bytes(ack_frame(9, worker_ip(4))))
        pkt = self.recv(4)
        self.assertIsNotNone(wire.parse_ack(bytes(pkt[UDP].payload)).status)
        for k in (1, 2, 3, 5):
            self.assert_no_packet(k, timeout=0.2)
        self.assertEqual(self.counters.traffic()["ack_unicast"], 1)


class MultiHopKeepsTightestStatus(OlafTest):
    """A status already carried from a more congested switch (smaller Q_max/N) is kept;
    a less congested one is overwritten (docs/protocol.md "Multi-hop status")."""

    def runTest(self):
        self.add_workers(0, [1], group=True)
        self.set_params(queue_size=8)
        # Local status: Q_max = 8, N = 1 (worker 1 just sent) -> ratio 8.
        self.send_update(1, Update(cluster_id=0, worker_id=0, grads=(0, 0, 0, 0)))
        self.recv_update()
        tight = QueueStatus(queue_util=4, active_clusters=10, queue_size=4)   # ratio 0.4
        tu.send_packet(self, PS_PORT, bytes(ack_frame(0, worker_ip(1), status=tight)))
        self.assertEqual(wire.parse_ack(bytes(self.recv(1)[UDP].payload)).status, tight)
        loose = QueueStatus(queue_util=0, active_clusters=1, queue_size=100)  # ratio 100
        tu.send_packet(self, PS_PORT, bytes(ack_frame(0, worker_ip(1), status=loose)))
        got = wire.parse_ack(bytes(self.recv(1)[UDP].payload)).status
        self.assertEqual((got.queue_size, got.active_clusters), (8, 1))


class ForgedAckDropped(OlafTest):
    """An ACK that does not come from the PS (its address from a worker port, or another address
    on the PS port) is counted (forged_ack) and dropped: a forged status cannot silence a
    cluster (paper §5)."""

    def runTest(self):
        self.add_workers(0, [1, 2], group=True)
        silence = QueueStatus(queue_util=0, active_clusters=65535, queue_size=1)
        from_worker_port = ack_frame(0, worker_ip(1), status=silence)
        tu.send_packet(self, 3, bytes(from_worker_port))
        other_src = Ether(bytes(ack_frame(0, worker_ip(1), status=silence)))
        other_src[IP].src = worker_ip(3)
        del other_src[IP].chksum
        tu.send_packet(self, PS_PORT, bytes(other_src))
        tu.verify_no_other_packets(self, timeout=1)
        self.wait_counter("traffic", "forged_ack", 2)
        tu.send_packet(self, PS_PORT, bytes(ack_frame(0, worker_ip(1))))
        for k in (1, 2):
            self.assertNotEqual(wire.parse_ack(bytes(self.recv(k)[UDP].payload)).status.active_clusters, 65535)


REFUSAL_PAYLOAD = bytes.fromhex(
    "22" "08" "0000" "0000" "0001"   # version 2 / ACK; flags: REFUSED_REWARD (bit 3); no weights; chunk 0 of 1
    "0000" "0002" "0000002a" "0001"  # cluster 0, worker 2, seq 42, count 1
    "80000000" "00000000000003e7"    # global_reward INT32_MIN, gen_ts 999
    "000000" "0000" "000000")        # queue status: the switch writes it
"""A refusal laid out by hand from docs/protocol.md ("ACK", "Refusal"), not through olaf.wire."""


class RefusalReachesTheClusterWithItsReason(OlafTest):
    """A refusal (the PS did not apply an update, docs/protocol.md "Refusal") is an ACK to the
    switch: multicast to the cluster, each replica rewritten, the status written (bit 0 set) and
    the refusal's bit and every other byte kept."""

    def runTest(self):
        self.add_workers(0, [1, 2, 3], group=True)
        self.set_params(queue_size=6)
        frame = (Ether(src=PS_MAC, dst=SW_MAC) / IP(src=PS_IP, dst=worker_ip(2), ttl=64)
                 / UDP(sport=wire.UPDATE_PORT, dport=wire.ACK_PORT) / REFUSAL_PAYLOAD)
        tu.send_packet(self, PS_PORT, bytes(frame))
        for k in (1, 2, 3):
            pkt = self.recv(k)
            self.assertEqual((pkt[IP].dst, pkt[UDP].dport), (worker_ip(k), wire.ACK_PORT))
            got = bytes(pkt[UDP].payload)
            self.assertEqual(len(got), 38)
            self.assertEqual(got[1], 0x08 | 0x01)                     # REFUSED_REWARD kept, STATUS_VALID set
            self.assertEqual(got[:1] + got[2:30], REFUSAL_PAYLOAD[:1] + REFUSAL_PAYLOAD[2:30])  # the rest as sent
            self.assertEqual(int.from_bytes(got[35:38], "big"), 6)   # Q_max written by the switch
            self.assertEqual(wire.parse_ack(got).refusal, "reward")
        for k in (4, 5):
            self.assert_no_packet(k)
        self.assertEqual(self.counters.traffic()["ack_multicast"], 1)


class AckVectorsCrossTheSwitch(OlafTest):
    """Every ACK of tests/wire_vectors/acks.json (refusals of each reason, a refusal with a status,
    an ACK with weights) reaches its cluster with every byte kept but the ones the switch owns:
    STATUS_VALID set in byte 1 (the refusal's bit kept) and the queue status (bytes 30-37)."""

    def runTest(self):
        path = Path(tu.test_param_get("vectors")).parent / "wire_vectors" / "acks.json"
        acks = json.loads(path.read_text())["acks"]
        self.add_workers(1, [1], group=True)
        self.add_workers(2, [2], group=True)
        for v in acks:
            payload = bytes.fromhex(v["hex"])
            port = {1: 1, 2: 2}[v["expect"]["cluster_id"]]
            frame = (Ether(src=PS_MAC, dst=SW_MAC) / IP(src=PS_IP, dst=worker_ip(port), ttl=64)
                     / UDP(sport=wire.UPDATE_PORT, dport=wire.ACK_PORT) / payload)
            tu.send_packet(self, PS_PORT, bytes(frame))
            got = bytes(self.recv(port)[UDP].payload)
            self.assertEqual(len(got), len(payload), v["name"])
            self.assertEqual(got[1], payload[1] | wire.ACK_FLAG_STATUS_VALID, v["name"])
            self.assertEqual(got[:1] + got[2:30] + got[38:], payload[:1] + payload[2:30] + payload[38:], v["name"])
            self.assertEqual(wire.parse_ack(got).refusal, v["expect"]["refusal"], v["name"])

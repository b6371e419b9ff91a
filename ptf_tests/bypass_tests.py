"""Traffic that is not an update from a known worker bypasses the OlafQueue."""

from olaf_base import PS_IP, PS_MAC, PS_PORT, SW_MAC, OlafTest, worker_ip, worker_mac
from ptf import testutils as tu
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import Ether

from olaf import wire
from olaf.update import Update


class BypassNonOlaf(OlafTest):
    """Non-Olaf IPv4 (UDP, TCP, ICMP) is forwarded by ipv4_lpm and touches no queue state."""

    def runTest(self):
        self.add_workers(0, [1])
        for l4 in (UDP(sport=1234, dport=5678), TCP(sport=1, dport=2), ICMP()):
            pkt = Ether(src=worker_mac(1), dst=SW_MAC) / IP(src=worker_ip(1), dst=PS_IP, ttl=64) / l4 / (b"x" * 20)
            exp = Ether(src=SW_MAC, dst=PS_MAC) / IP(src=worker_ip(1), dst=PS_IP, ttl=63) / l4 / (b"x" * 20)
            tu.send_packet(self, 1, bytes(pkt))
            tu.verify_packet(self, bytes(exp), PS_PORT)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.counters.traffic()["bypass"], 3)
        self.assertEqual(self.decided(), 0)


class BypassUnknownSource(OlafTest):
    """An Olaf update from a source not in worker_table is forwarded untouched (ids not stamped)."""

    def runTest(self):
        self.add_workers(0, [1])
        u = Update(cluster_id=77, worker_id=88, seq=3, grads=(1, 2, 3, 4))
        pkt = (Ether(src=worker_mac(2), dst=SW_MAC) / IP(src=worker_ip(2), dst=PS_IP, ttl=64, id=1)
               / UDP(sport=wire.ACK_PORT, dport=wire.UPDATE_PORT, chksum=0) / wire.update_layer(u))
        tu.send_packet(self, 2, bytes(pkt))
        _, got = self.recv_update()
        self.assertEqual(got, u)
        self.assertEqual(self.counters.traffic()["unknown_source"], 1)
        self.assertEqual(self.decided(), 0)


class NoRouteDropped(OlafTest):
    """A packet without an ipv4_lpm entry is dropped, not queued."""

    def runTest(self):
        self.add_workers(0, [1])
        pkt = Ether(src=worker_mac(1), dst=SW_MAC) / IP(src=worker_ip(1), dst="192.0.2.1") / UDP(dport=9)
        tu.send_packet(self, 1, bytes(pkt))
        tu.verify_no_other_packets(self, timeout=1)

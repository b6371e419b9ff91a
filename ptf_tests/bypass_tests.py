"""Traffic that is not an update of a known worker: forwarded if it is ordinary IPv4, counted
and dropped if it is not to be trusted (every drop is counted in exactly one counter)."""

from olaf_base import PS_IP, PS_MAC, PS_PORT, SW_MAC, OlafTest, worker_ip, worker_mac
from ptf import testutils as tu
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.l2 import Ether

from olaf import wire
from olaf.controller.p4rt import Replica
from olaf.controller.update_identifier import WorkerEntry, worker_key
from olaf.update import Update

U = Update(cluster_id=77, worker_id=88, seq=3, grads=(1, 2, 3, 4))


def olaf_frame(k: int, *, src=None, dst=PS_IP, sport=wire.ACK_PORT, init=False, **ip):
    return (Ether(src=worker_mac(k), dst=SW_MAC) / IP(src=src or worker_ip(k), dst=dst, **ip)
            / UDP(sport=sport, dport=wire.UPDATE_PORT, chksum=0) / wire.update_layer(U, init=init))


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


class UnknownSourceDropped(OlafTest):
    """An update or INIT from a source not in worker_table never reaches the PS with the ids it
    declares: it is counted (traffic unknown_source) and dropped."""

    def runTest(self):
        self.add_workers(0, [1])
        tu.send_packet(self, 2, bytes(olaf_frame(2)))
        tu.send_packet(self, 2, bytes(olaf_frame(2, init=True)))
        tu.verify_no_other_packets(self, timeout=1)
        self.wait_counter("traffic", "unknown_source", 2)
        self.assertEqual(self.decided(), 0)


class SpoofedSourceDropped(OlafTest):
    """A known worker's source arriving on another switch port is counted as spoofed and dropped
    — its address (address_port identity) or its address and UDP port (five-tuple identity,
    paper §7); with the five-tuple identity a known address from a UDP port that no worker has
    is an unknown source. The real workers still work."""

    def runTest(self):
        self.add_workers(0, [1])
        self.add_workers(1, [2], identity="five_tuple")
        tu.send_packet(self, 3, bytes(olaf_frame(3, src=worker_ip(1))))          # w1's address on port 3
        tu.send_packet(self, 3, bytes(olaf_frame(3, src=worker_ip(2))))          # w2's address and UDP port on port 3
        tu.send_packet(self, 2, bytes(olaf_frame(2, sport=40000)))               # w2's address, another UDP port
        tu.verify_no_other_packets(self, timeout=1)
        self.wait_counter("traffic", "spoofed_source", 2)
        self.wait_counter("traffic", "unknown_source", 1)
        self.assertEqual(self.decided(), 0)
        for k in (1, 2):
            tu.send_packet(self, k, bytes(olaf_frame(k)))
            _, got = self.recv_update()
            self.assertEqual((got.cluster_id, got.worker_id), (k - 1, k))


class UpdateNotToPsIsMalformed(OlafTest):
    """An update addressed to anything but the PS is not queued (its token would carry another
    cluster's gradients elsewhere): malformed destination, dropped."""

    def runTest(self):
        self.add_workers(0, [1])
        tu.send_packet(self, 1, bytes(olaf_frame(1, dst=worker_ip(3))))
        tu.verify_no_other_packets(self, timeout=1)
        self.wait_counter("malformed", "destination", 1)
        self.assertEqual(self.decided(), 0)


class NoRouteDropped(OlafTest):
    """A packet without an ipv4_lpm entry is counted (no_route) and dropped, not queued."""

    def runTest(self):
        self.add_workers(0, [1])
        pkt = Ether(src=worker_mac(1), dst=SW_MAC) / IP(src=worker_ip(1), dst="192.0.2.1") / UDP(dport=9)
        tu.send_packet(self, 1, bytes(pkt))
        tu.verify_no_other_packets(self, timeout=1)
        self.wait_counter("traffic", "no_route", 1)


class TtlExpiredDropped(OlafTest):
    """TTL 1 (it would leave with 0) and TTL 0 are counted (ttl_expired) and dropped, Olaf or not."""

    def runTest(self):
        self.add_workers(0, [1])
        for ttl in (0, 1):
            tu.send_packet(self, 1, bytes(olaf_frame(1, ttl=ttl)))
            pkt = Ether(src=worker_mac(1), dst=SW_MAC) / IP(src=worker_ip(1), dst=PS_IP, ttl=ttl) / UDP(dport=9)
            tu.send_packet(self, 1, bytes(pkt))
        tu.verify_no_other_packets(self, timeout=1)
        self.wait_counter("traffic", "ttl_expired", 4)
        self.assertEqual(self.decided(), 0)


class BadIpv4ChecksumDropped(OlafTest):
    """A frame whose IPv4 header checksum is wrong is counted (ipv4_checksum) and dropped."""

    def runTest(self):
        self.add_workers(0, [1])
        good = olaf_frame(1)
        bad = Ether(bytes(good))
        bad[IP].chksum = bad[IP].chksum ^ 0x0101
        tu.send_packet(self, 1, bytes(bad))
        tu.verify_no_other_packets(self, timeout=1)
        self.wait_counter("traffic", "ipv4_checksum", 1)
        tu.send_packet(self, 1, bytes(good))
        self.recv_update()


class IpOptionsAndFragments(OlafTest):
    """An Olaf message behind IPv4 options, or in a first fragment, is malformed; other traffic
    with options is forwarded with its options intact and a valid checksum; a later fragment
    (no UDP header) is forwarded as ordinary IPv4."""

    def runTest(self):
        self.add_workers(0, [1])
        opts = [IPOption_NOP(), IPOption_RR(routers=["0.0.0.0"])]
        tu.send_packet(self, 1, bytes(olaf_frame(1, options=opts)))
        tu.send_packet(self, 1, bytes(olaf_frame(1, flags="MF")))
        tu.verify_no_other_packets(self, timeout=1)
        self.wait_counter("malformed", "ip_options", 1)
        self.wait_counter("malformed", "fragment", 1)
        plain = Ether(src=worker_mac(1), dst=SW_MAC) / IP(src=worker_ip(1), dst=PS_IP, options=opts) / UDP(dport=9) / b"o"
        tu.send_packet(self, 1, bytes(plain))
        got = self.recv(PS_PORT)
        self.assertEqual(bytes(got[IP].options[1]), bytes(opts[1]))
        later = Ether(src=worker_mac(1), dst=SW_MAC) / IP(src=worker_ip(1), dst=PS_IP, frag=100, proto=17) / (b"y" * 16)
        tu.send_packet(self, 1, bytes(later))
        self.assertEqual(bytes(self.recv(PS_PORT)[IP].payload), b"y" * 16)
        self.assertEqual(self.counters.traffic()["bypass"], 2)
        self.assertEqual(self.decided(), 0)


class WorkersSharingAnAddress(OlafTest):
    """Five-tuple identity (paper §7 Worker_ID): workers A and B at one address behind one switch
    port, told apart by their UDP ports. Each update is stamped with its sender's ids; the ACK of
    their cluster reaches each at its own UDP port; each one's (address, UDP port) from another
    switch port is spoofed, and the address from a third UDP port is unknown."""

    A, B = (1, wire.ACK_PORT), (6, wire.ACK_PORT + 1)   # (worker_id, UDP port), both on port 1 at w1's address

    def runTest(self):
        from ack_tests import ack_frame

        ip = worker_ip(1)
        for wid, udp in (self.A, self.B):
            self.workers.set_worker(worker_key(ip, udp, "five_tuple"), WorkerEntry(wid, 0, 1))
            self.acks.set_rewrite(wid, SW_MAC, worker_mac(1), ip, dst_port=udp)
        self.acks.set_group(0, [Replica(1, self.A[0]), Replica(1, self.B[0])])
        self.assertEqual(self.workers.read(), {(ip, self.A[1]): WorkerEntry(1, 0, 1), (ip, self.B[1]): WorkerEntry(6, 0, 1)})
        for wid, udp in (self.A, self.B):
            tu.send_packet(self, 1, bytes(olaf_frame(1, sport=udp)))
            _, got = self.recv_update()
            self.assertEqual((got.cluster_id, got.worker_id), (0, wid))
        tu.send_packet(self, PS_PORT, bytes(ack_frame(0, ip)))
        got_ports = sorted(self.recv(1)[UDP].dport for _ in range(2))
        self.assertEqual(got_ports, sorted(udp for _, udp in (self.A, self.B)))
        self.assert_no_packet(1, timeout=0.2)
        tu.send_packet(self, 3, bytes(olaf_frame(3, src=ip, sport=self.B[1])))    # B's five-tuple on port 3
        tu.send_packet(self, 1, bytes(olaf_frame(1, sport=wire.ACK_PORT + 2)))   # the address, a third UDP port
        tu.verify_no_other_packets(self, timeout=1)
        self.wait_counter("traffic", "spoofed_source", 1)
        self.wait_counter("traffic", "unknown_source", 1)
        self.assertEqual(self.decided(), 2)

"""Malformed Olaf packets are counted by reason and dropped; the switch keeps working."""

from olaf_base import PS_IP, SW_MAC, OlafTest, worker_ip, worker_mac
from ptf import testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from olaf import wire
from olaf.update import Update


def frame(payload: bytes, dport=wire.UPDATE_PORT, udp_len=None):
    return (Ether(src=worker_mac(1), dst=SW_MAC) / IP(src=worker_ip(1), dst=PS_IP)
            / UDP(sport=wire.ACK_PORT, dport=dport, len=udp_len) / payload)


class MalformedDropped(OlafTest):
    """Short, wrong-length, bad-version, wrong-type, count-0 and wrong-num_grads updates and a
    short ACK are dropped and counted; a valid update afterwards is still delivered."""

    def runTest(self):
        self.add_workers(0, [1])
        good = wire.encode_update(Update(cluster_id=0, worker_id=0, grads=(1, 2, 3, 4)))
        five = wire.encode_update(Update(cluster_id=0, worker_id=0, grads=(1, 2, 3, 4, 5)))
        cases = [
            (frame(good[:10]), "length"),                                  # shorter than the header
            (frame(good[:-2]), "length"),                                  # grads cut short
            (frame(good + b"\x00\x00\x00\x00"), "length"),                 # trailing bytes
            (frame(good, udp_len=8 + len(good) + 4), "length"),            # UDP length lies
            (frame(bytes([0x21]) + good[1:]), "version"),
            (frame(bytes([0x12]) + good[1:]), "msg_type"),
            (frame(good[:12] + b"\x00\x00" + good[14:]), "count"),
            (frame(five), "num_grads"),                                    # deployment has 4
            (frame(bytes(wire.ack_layer(cluster_id=0, worker_id=0, seq=0, count=1,
                                        global_reward=0, gen_ts=0, weights=[]))[:20],
                   dport=wire.ACK_PORT), "length"),
        ]
        expected = {}
        for pkt, reason in cases:
            tu.send_packet(self, 1, bytes(pkt))
            expected[reason] = expected.get(reason, 0) + 1
        tu.verify_no_other_packets(self, timeout=1)
        got = self.counters.malformed()
        for reason, n in expected.items():
            self.assertEqual(got[reason], n, f"malformed[{reason}]")
        self.assertEqual(self.decided(), 0)
        self.send_update(1, Update(cluster_id=0, worker_id=0, grads=(1, 2, 3, 4)))
        _, u = self.recv_update()
        self.assertEqual((u.cluster_id, u.worker_id, u.grads), (0, 1, (1, 2, 3, 4)))

"""Malformed Olaf packets are counted by reason and dropped; the switch keeps working."""

import struct

from olaf_base import PS_IP, PS_MAC, PS_PORT, SW_MAC, OlafTest, worker_ip, worker_mac
from ptf import testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from olaf import wire
from olaf.constants import CHUNK_OFFSET
from olaf.update import Update

# Byte offset of `count` in the update header (docs/protocol.md "Update").
COUNT_OFFSET = 16


def frame(payload: bytes, dport=wire.UPDATE_PORT, udp_len=None):
    return (Ether(src=worker_mac(1), dst=SW_MAC) / IP(src=worker_ip(1), dst=PS_IP)
            / UDP(sport=wire.ACK_PORT, dport=dport, len=udp_len) / payload)


def ps_ack_frame(payload: bytes):
    """An ACK as the PS sends it toward worker 1."""
    return (Ether(src=PS_MAC, dst=SW_MAC) / IP(src=PS_IP, dst=worker_ip(1))
            / UDP(sport=wire.UPDATE_PORT, dport=wire.ACK_PORT) / payload)


def with_chunks(msg: bytes, chunk: int, num_chunks: int) -> bytes:
    """``msg`` (an encoded update or ACK) with its chunk fields overwritten (any values,
    including ones olaf.update.Update refuses)."""
    return msg[:CHUNK_OFFSET] + struct.pack("!HH", chunk, num_chunks) + msg[CHUNK_OFFSET + 4:]


def ack_bytes(chunk: int = 0, num_chunks: int = 1, weights=()) -> bytes:
    return bytes(wire.ack_layer(cluster_id=0, worker_id=0, seq=0, count=1, global_reward=0, gen_ts=0,
                                weights=list(weights), chunk=chunk, num_chunks=num_chunks))


class MalformedDropped(OlafTest):
    """Short, wrong-length, bad-version, wrong-type, count-0, wrong-num_grads and bad-chunk
    updates and a short or bad-chunk ACK are dropped and counted; a valid update afterwards is
    still delivered."""

    def runTest(self):
        self.add_workers(0, [1])
        good = wire.encode_update(Update(cluster_id=0, worker_id=0, grads=(1, 2, 3, 4)))
        five = wire.encode_update(Update(cluster_id=0, worker_id=0, grads=(1, 2, 3, 4, 5)))
        cases = [
            (frame(good[:10]), "length"),                                  # shorter than the header
            (frame(good[:-2]), "length"),                                  # grads cut short
            (frame(good + b"\x00\x00\x00\x00"), "length"),                 # trailing bytes
            (frame(good, udp_len=8 + len(good) + 4), "length"),            # UDP length lies
            (frame(bytes([0x11]) + good[1:]), "version"),                  # version 1
            (frame(bytes([0x22]) + good[1:]), "msg_type"),                 # an ACK's type
            (frame(good[:COUNT_OFFSET] + b"\x00\x00" + good[COUNT_OFFSET + 2:]), "count"),
            (frame(five), "num_grads"),                                    # deployment has 4
            (frame(with_chunks(good, 0, 2)), "chunk"),                     # K = 2, deployment has 1
            (frame(with_chunks(good, 1, 1)), "chunk"),                     # chunk >= num_chunks
            (frame(with_chunks(good, 0, 0)), "chunk"),                     # num_chunks 0
            (frame(ack_bytes()[:20], dport=wire.ACK_PORT), "length"),
        ]
        expected = {}
        for pkt, reason in cases:
            tu.send_packet(self, 1, bytes(pkt))
            expected[reason] = expected.get(reason, 0) + 1
        # ACKs are accepted only from the PS on its port: these reach the chunk check.
        for chunk, num_chunks in ((1, 1), (0, 0)):
            tu.send_packet(self, PS_PORT, bytes(ps_ack_frame(with_chunks(ack_bytes(weights=(5,)), chunk, num_chunks))))
            expected["chunk"] += 1
        self.wait_counter("malformed", "chunk", expected["chunk"])
        tu.verify_no_other_packets(self, timeout=1)
        got = self.counters.malformed()
        for reason, n in expected.items():
            self.assertEqual(got[reason], n, f"malformed[{reason}]")
        self.assertEqual(self.decided(), 0)
        self.send_update(1, Update(cluster_id=0, worker_id=0, grads=(1, 2, 3, 4)))
        _, u = self.recv_update()
        self.assertEqual((u.cluster_id, u.worker_id, u.grads), (0, 1, (1, 2, 3, 4)))

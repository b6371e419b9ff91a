"""Chunked updates on BMv2 (docs/protocol.md "Chunks"): the OlafQueue is keyed by
(cluster, chunk), chunks of another K or out of range are malformed[chunk], and the
status in ACKs counts updates (⌈segments / K⌉, ⌊queue_size / K⌋).

Expected departures come from the reference model (olaf.queue_model) fed the same
updates with the ids the switch stamps; the tests also state the keys and counts they
expect, so a model and switch that agree on something else still fail.
"""

from malformed_tests import ack_bytes, ps_ack_frame, with_chunks
from olaf_base import PS_PORT, OlafTest, worker_ip
from ptf import testutils as tu
from scapy.layers.inet import IP, UDP

from olaf import wire
from olaf.fixedpoint import reward_to_fixed
from olaf.queue_model import QueueConfig, make_queue
from olaf.update import Update
from olaf.wire import QueueStatus

K = 3                      # chunks per update in these tests
L = 4                      # chunk length (num_grads), elements
CLUSTER_OF = {1: 0, 2: 0, 3: 1, 4: 1}   # worker k (PTF port k) -> cluster
WINDOW_PPS = 1             # PS-port rate while updates are injected (1 s window)
LONG_WINDOW_NS = 60_000_000_000        # activity window longer than any test, ns


def chunk(k: int, i: int, seq: int, *, base: int = 1, reward: float = 0.0, gen_ts: int = 1000) -> Update:
    """Chunk ``i`` of worker ``k``'s update ``seq`` (ids stamped as the switch will stamp them):
    grads ``base·(i+1)`` … so every key's sums are distinct."""
    return Update(cluster_id=CLUSTER_OF[k], worker_id=k, seq=seq, count=1, reward_sum=reward_to_fixed(reward),
                  gen_ts=gen_ts, grads=tuple(base * (i + 1) * (j + 1) for j in range(L)), chunk=i, num_chunks=K)


class ChunkTest(OlafTest):
    num_grads = L

    def setUp(self):
        super().setUp()
        self.add_workers(0, [1, 2], group=True)
        self.add_workers(1, [3, 4], group=True)

    def chunk_params(self, queue_size: int, **kw):
        self.set_params(queue_size=queue_size, num_chunks=K, activity_window_ns=LONG_WINDOW_NS, **kw)


class ChunksAggregatePerKey(ChunkTest):
    """Chunks of two clusters' updates, interleaved: each folds only into the waiting update of
    its own (cluster, chunk); a chunk that never arrives leaves only its key without an
    update; every departure keeps its chunk fields and the per-cluster counters count chunks
    of their cluster."""

    def runTest(self):
        self.chunk_params(queue_size=9)
        model = make_queue(QueueConfig(segments=9, num_clusters=2, num_grads=L, num_chunks=K,
                                       activity_window_ns=LONG_WINDOW_NS))
        sent = [
            (1, chunk(1, 0, 7, base=1, gen_ts=100)),
            (3, chunk(3, 0, 4, base=100, gen_ts=300)),
            (2, chunk(2, 0, 9, base=10, gen_ts=200)),     # folds into worker 1's chunk 0
            (1, chunk(1, 1, 7, base=1, gen_ts=100)),
            (4, chunk(4, 1, 5, base=1000, gen_ts=400)),
            (3, chunk(3, 1, 4, base=100, gen_ts=300)),    # cluster 1: folds into worker 4's chunk 1
            (2, chunk(2, 1, 9, base=10, gen_ts=200)),     # cluster 0: into worker 1's chunk 1
            (2, chunk(2, 2, 9, base=10, gen_ts=200)),
            (1, chunk(1, 2, 7, base=1, gen_ts=100)),      # into worker 2's chunk 2
            # cluster 1's chunk 2 never arrives, and worker 4's chunk 0 neither
        ]
        expected_decisions = ["append", "append", "aggregate", "append", "append", "aggregate",
                              "aggregate", "append", "aggregate"]
        self.open_window(rate_pps=WINDOW_PPS)
        for i, ((k, u), want) in enumerate(zip(sent, expected_decisions)):
            before = self.counters.decisions()
            self.send_update(k, u)
            self.wait_decided(i + 1)
            after = self.counters.decisions()
            self.assertEqual([d for d in after if after[d] != before[d]], [want], f"update {i}")
            self.assertEqual(model.enqueue(u, i).decision.label, want, f"model, update {i}")
        self.assert_window_holds()
        # (cluster, chunk, worker whose packet it is, count) in departure order
        keys = [(0, 0, 1, 2), (1, 0, 3, 1), (0, 1, 1, 2), (1, 1, 4, 2), (0, 2, 2, 2)]
        for cluster_id, i, owner, count in keys:
            want = model.dequeue().update
            self.assertEqual((want.cluster_id, want.chunk, want.worker_id, want.count), (cluster_id, i, owner, count))
            pkt, got = self.recv_update(timeout=2.0 / WINDOW_PPS + 3)
            self.assertEqual(got, want)
            self.assertEqual(pkt[IP].src, worker_ip(owner))
        self.assertEqual(model.occupancy, 0)
        self.assert_no_packet(PS_PORT, timeout=1.5 / WINDOW_PPS)
        c0, c1 = self.counters.cluster(0), self.counters.cluster(1)
        self.assertEqual((c0.decisions["append"], c0.decisions["aggregate"], c0.departures), (3, 3, 3))
        self.assertEqual((c1.decisions["append"], c1.decisions["aggregate"], c1.departures), (2, 1, 2))


class ChunkAggregateSums(ChunkTest):
    """The aggregate of one key is the saturating sum of that chunk's slices only, with the
    freshest gen_ts and the summed count and reward."""

    def runTest(self):
        self.chunk_params(queue_size=6)
        self.open_window(rate_pps=WINDOW_PPS)
        self.send_updates(
            (1, chunk(1, 1, 3, base=1, reward=1.5, gen_ts=500)),
            (2, chunk(2, 0, 8, base=7, reward=9.0, gen_ts=900)),    # another key: appended
            (2, chunk(2, 1, 8, base=10, reward=2.0, gen_ts=800)),
        )
        self.wait_decided(3)
        self.assert_window_holds()
        _, first = self.recv_update(timeout=2.0 / WINDOW_PPS + 3)
        self.assertEqual(first, Update(cluster_id=0, worker_id=1, seq=3, count=2, reward_sum=reward_to_fixed(3.5),
                                       gen_ts=800, grads=(22, 44, 66, 88), chunk=1, num_chunks=K))
        _, second = self.recv_update(timeout=2.0 / WINDOW_PPS + 3)
        self.assertEqual(second, chunk(2, 0, 8, base=7, reward=9.0, gen_ts=900))


class ChunkStatusInUpdates(ChunkTest):
    """With K = 3 and 7 segments, ACKs carry Q_max = ⌊7 / 3⌋ = 2 updates and Q_n = ⌈4 / 3⌉ = 2
    while four chunks wait (0 once they left); the ACK's chunk fields reach the workers."""

    def runTest(self):
        self.chunk_params(queue_size=7)
        self.open_window(rate_pps=WINDOW_PPS)
        self.send_updates(*[(1, chunk(1, i, 1)) for i in range(K)], (3, chunk(3, 0, 1)))
        self.assert_window_holds()
        self.check_ack(QueueStatus(queue_util=2, active_clusters=2, queue_size=2))
        for _ in range(4):
            self.recv_update(timeout=2.0 / WINDOW_PPS + 3)
        self.check_ack(QueueStatus(queue_util=0, active_clusters=2, queue_size=2))

    def check_ack(self, status: QueueStatus):
        """An ACK of chunk 1 for cluster 0 reaches workers 1 and 2 with ``status`` and its chunk fields."""
        tu.send_packet(self, PS_PORT, bytes(ps_ack_frame(ack_bytes(chunk=1, num_chunks=K, weights=(5, 6)))))
        for k in (1, 2):
            a = wire.parse_ack(bytes(self.recv(k)[UDP].payload))
            self.assertEqual(a.status, status, f"worker {k}")
            self.assertEqual((a.chunk, a.num_chunks, a.weights), (1, K, (5, 6)))


class ChunkMalformed(ChunkTest):
    """With K = 3: an update of another K (2, 4), a chunk index ≥ K, an INIT of another K and an
    ACK with chunk ≥ num_chunks are counted malformed[chunk] and dropped, never queued; a valid
    last chunk afterwards is delivered with its chunk fields."""

    def runTest(self):
        self.chunk_params(queue_size=6)
        good = wire.encode_update(chunk(1, 0, 1).with_(cluster_id=0, worker_id=0))
        for c, n in ((0, 2), (0, 4), (3, 3), (65535, 3), (0, 1)):
            self.send_update_bytes(with_chunks(good, c, n))
        init = bytes(wire.update_layer(chunk(1, 0, 1).with_(cluster_id=0, worker_id=0), init=True))
        self.send_update_bytes(with_chunks(init, 0, 2))
        tu.send_packet(self, PS_PORT, bytes(ps_ack_frame(with_chunks(ack_bytes(chunk=0, num_chunks=K), 3, K))))
        self.wait_counter("malformed", "chunk", 7)
        tu.verify_no_other_packets(self, timeout=1)
        self.assertEqual(sum(self.counters.malformed().values()), 7)
        self.assertEqual(self.decided(), 0)
        u = chunk(1, K - 1, 2)
        self.send_update(1, u)
        _, got = self.recv_update()
        self.assertEqual(got, u)
        self.assertEqual(self.counters.decisions()["append"], 1)

    def send_update_bytes(self, payload: bytes):
        pkt = self.update_frame(1, chunk(1, 0, 1))
        pkt[UDP].remove_payload()
        tu.send_packet(self, 1, bytes(pkt / payload))

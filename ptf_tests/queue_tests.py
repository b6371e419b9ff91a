"""OlafQueue decisions on the switch: append, replace, aggregate, reward filter, full, order."""

from olaf_base import PS_IP, PS_PORT, OlafTest, worker_ip
from scapy.layers.inet import IP, UDP

from olaf.fixedpoint import reward_to_fixed
from olaf.update import Update


def upd(seq=0, grads=(0, 0, 0, 0), reward=0.0, count=1, gen_ts=1000):
    return Update(cluster_id=0, worker_id=0, seq=seq, count=count,
                  reward_sum=reward_to_fixed(reward), gen_ts=gen_ts, grads=tuple(grads))


class Append(OlafTest):
    """An update from a known worker reaches the PS with worker_id/cluster_id stamped by the switch."""

    def runTest(self):
        self.add_workers(3, [1])
        u = upd(seq=7, grads=(1, -2, 3, -4), reward=1.5, gen_ts=123456789)
        self.send_update(1, u)
        pkt, got = self.recv_update()
        self.assertEqual(got, u.with_(cluster_id=3, worker_id=1))
        self.assertEqual((pkt[IP].src, pkt[IP].dst, pkt[IP].ttl), (worker_ip(1), PS_IP, 63))
        self.assertEqual(self.counters.decisions()["append"], 1)
        c = self.counters.cluster(3)
        self.assertEqual((c.decisions["append"], c.departures), (1, 1))


class ReplaceSameWorker(OlafTest):
    """A worker's newer update replaces its waiting one; only the newer reaches the PS."""

    def runTest(self):
        self.add_workers(0, [1])
        self.open_window()
        self.send_updates(
            (1, upd(seq=1, grads=(1, 1, 1, 1))),
            (1, upd(seq=2, grads=(2, 2, 2, 2), gen_ts=2000)),
        )
        self.wait_decided(2)
        self.assert_window_holds()
        _, got = self.recv_update()
        self.assertEqual(got, upd(seq=2, grads=(2, 2, 2, 2), gen_ts=2000).with_(worker_id=1))
        self.assert_no_packet(PS_PORT, timeout=1.0)
        self.assertEqual(self.counters.decisions()["replace_worker"], 1)


class Aggregate(OlafTest):
    """Two workers of one cluster: the PS gets one update with summed grads, count,
    reward sum and the freshest gen_ts, as the first worker's packet."""

    def runTest(self):
        self.add_workers(2, [1, 2, 3])
        self.open_window()
        self.send_updates(
            (1, upd(seq=5, grads=(10, -20, 2**31 - 5, 0), reward=1.25, gen_ts=5000)),
            (2, upd(seq=9, grads=(1, 2, 100, -7), reward=2.5, gen_ts=9000)),
            (3, upd(seq=1, grads=(-1, -1, -1, -1), reward=-0.75, gen_ts=7000)),
        )
        self.wait_decided(3)
        self.assert_window_holds()
        pkt, got = self.recv_update()
        self.assertEqual(got, Update(cluster_id=2, worker_id=1, seq=5, count=3,
                                     reward_sum=reward_to_fixed(3.0), gen_ts=9000,
                                     grads=(10, -19, 2**31 - 2, -8)))  # saturates, then -1
        self.assertEqual(pkt[IP].src, worker_ip(1))
        self.assertEqual(pkt[UDP].chksum, 0)
        self.assert_no_packet(PS_PORT, timeout=1.0)
        self.assertEqual(self.counters.decisions()["aggregate"], 2)


class RewardThreshold(OlafTest):
    """With reward filtering, a much better update replaces the waiting one and a much worse one is dropped."""

    def runTest(self):
        self.add_workers(1, [1, 2, 3])
        self.set_params(reward_threshold=reward_to_fixed(1.0))
        self.open_window()
        self.send_updates(
            (1, upd(seq=1, grads=(1, 1, 1, 1), reward=5.0)),
            (2, upd(seq=2, grads=(2, 2, 2, 2), reward=7.0)),  # +2 > T: replace
            (3, upd(seq=3, grads=(3, 3, 3, 3), reward=4.0)),  # -3 < -T: drop
        )
        self.wait_decided(3)
        self.assert_window_holds()
        pkt, got = self.recv_update()
        self.assertEqual(got, upd(seq=2, grads=(2, 2, 2, 2), reward=7.0).with_(cluster_id=1, worker_id=2))
        self.assertEqual(pkt[IP].src, worker_ip(2), "a replaced update carries the replacing packet's source")
        d = self.counters.decisions()
        self.assertEqual((d["replace_reward"], d["drop_reward"]), (1, 1))


class QueueFull(OlafTest):
    """A full queue drops a new cluster's update but still aggregates into waiting clusters."""

    def runTest(self):
        for c, k in enumerate([1, 2, 3]):
            self.add_workers(c, [k])
        self.add_workers(1, [4])
        self.set_params(queue_size=2)
        self.open_window()
        self.send_updates(
            (1, upd(seq=1, grads=(1, 0, 0, 0))),
            (2, upd(seq=1, grads=(2, 0, 0, 0))),
            (3, upd(seq=1, grads=(3, 0, 0, 0))),  # cluster 2: full -> drop
            (4, upd(seq=1, grads=(4, 0, 0, 0))),  # cluster 1: aggregate
        )
        self.wait_decided(4)
        self.assert_window_holds()
        got = [self.recv_update(timeout=5)[1] for _ in range(2)]
        self.assertEqual([(u.cluster_id, u.grads[0], u.count) for u in got], [(0, 1, 1), (1, 6, 2)])
        self.assert_no_packet(PS_PORT, timeout=1.0)
        self.assertEqual(self.counters.decisions()["drop_full"], 1)
        self.assertEqual(self.counters.cluster(2).decisions["drop_full"], 1)


class PositionInheritance(OlafTest):
    """Aggregation and replacement keep the waiting update's place in the departure order."""

    def runTest(self):
        for c, k in enumerate([1, 2, 3]):
            self.add_workers(c, [k])
        self.add_workers(0, [4])
        self.open_window()
        self.send_updates(
            *[(k, upd(seq=1, grads=(k, k, k, k))) for k in (1, 2, 3)],
            (4, upd(seq=1, grads=(10, 10, 10, 10))),  # folds into cluster 0 (head)
            (3, upd(seq=2, grads=(7, 7, 7, 7))),  # replaces cluster 2 (tail)
        )
        self.wait_decided(5)
        self.assert_window_holds()
        got = [self.recv_update(timeout=5)[1] for _ in range(3)]
        self.assertEqual([u.cluster_id for u in got], [0, 1, 2])
        self.assertEqual([u.grads[0] for u in got], [11, 2, 7])


class FifoMode(OlafTest):
    """The FIFO baseline of the same switch forwards every update of a cluster and tail-drops."""

    def runTest(self):
        self.add_workers(0, [1, 2])
        self.add_workers(1, [3])
        self.set_params(queue_size=2, discipline="fifo")
        self.open_window()
        self.send_updates(
            (1, upd(seq=1, grads=(1, 1, 1, 1))),
            (2, upd(seq=1, grads=(2, 2, 2, 2))),
            (3, upd(seq=1, grads=(3, 3, 3, 3))),  # full
        )
        self.wait_decided(3)
        self.assert_window_holds()
        got = [self.recv_update(timeout=5)[1] for _ in range(2)]
        self.assertEqual([(u.worker_id, u.count) for u in got], [(1, 1), (2, 1)])
        d = self.counters.decisions()
        self.assertEqual((d["append"], d["drop_full"], d["aggregate"]), (2, 1, 0))


class InitBypassesQueue(OlafTest):
    """A known worker's INIT update (initial weights) goes to the PS unqueued, with the ids the
    switch stamps (never the worker's own) and the weights untouched."""

    def runTest(self):
        self.add_workers(3, [1])
        u = upd(seq=0, grads=(5, 6, 7, 8))
        self.send_update(1, u.with_(cluster_id=9, worker_id=9), init=True, udp_checksum=True, keep_ids=True)
        pkt, got = self.recv_update()   # recv checks: UDP checksum 0 or valid
        self.assertEqual(got, u.with_(cluster_id=3, worker_id=1))
        self.assertEqual(bytes(pkt[UDP].payload)[1] & 1, 1)
        self.assertEqual(self.decided(), 0)
        self.assertEqual(self.counters.traffic()["init"], 1)

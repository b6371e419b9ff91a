"""The shared OlafQueue vectors (tests/vectors, docs/vectors.md) replayed through BMv2.

Each vector runs on a freshly pushed pipeline. Every (cluster, worker) pair of
the vector gets its own source IPv4 in worker_table, so the switch stamps the
vector's ids. Events map to the switch as follows:

* ``enqueue`` — the update is sent; the decision is read back from the
  ``decisions`` counter (exactly one label must go up, and it must be the
  expected one);
* ``dequeue`` — the next packet at the PS port must be the expected update,
  bit for bit, from the segment owner's source address (an empty dequeue is
  checked by the model having nothing waiting);
* ``status`` — an ACK from the PS must come back with the expected
  ``queue_util`` and ``queue_size`` (``active_clusters`` depends on the vector's
  virtual clock, which a real switch does not have: not compared);
* ``configure`` — written to ``olaf_params`` over P4Runtime.

A chunked vector (config ``num_chunks`` K > 1) sets ``olaf_params.num_chunks`` = K; its
updates carry ``chunk`` / ``num_chunks`` on the wire, the switch keys its queue by
(cluster, chunk) and reports the status in updates (⌈segments / K⌉, ⌊queue_size / K⌋).

Departures are paced by the PS port's rate limiter (olaf_base.OlafTest.open_window):
before an update that finds the queue empty a plug is sent, so the update waits
behind it; vectors with long bursts of events between departures run at a lower
rate (:data:`BURST_RATE_PPS`, :data:`SLOW_RATE_PPS`). Vectors with ``lock`` events are skipped: BMv2 locks and dequeues a
segment in one step (the egress extern call), so there is no observable locked
state to drive. So are the token-ledger vectors (``dequeue_token`` events, expiry;
:func:`olaf.vectors.uses_token_ledger`): their tokens are lost, duplicated and
reordered at will, which a test cannot do to the traffic manager's queue; the ledger
on BMv2 is tested by ptf_tests/token_tests.py. The run prints what it replayed and
skipped.
"""

import time
from pathlib import Path

from olaf_base import PS_IP, PS_MAC, PS_PORT, SW_MAC, OlafTest
from ptf import testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from olaf import vectors, wire
from olaf.controller.update_identifier import WorkerEntry
from olaf.queue_model import make_queue
from olaf.update import Update

ACK_SINK_IP = "10.255.0.1"
ACK_SINK_PORT = 2
RATE_PPS = 8
BURST_RATE_PPS = 4
SLOW_RATE_PPS = 2
LONG_BURST = 10
"""A vector with more than LONG_BURST events between two departures is replayed at
BURST_RATE_PPS (more than 2 · LONG_BURST: at SLOW_RATE_PPS): its events must all be decided
before the next departure is due (1 / rate s after the previous one), and each takes a few
P4Runtime counter reads."""
ATTEMPTS = 3
"""Replays of one vector when the switch departed an update before the vector's dequeue
(a loaded machine, not a queue mismatch): the retries run at SLOW_RATE_PPS."""


class ReplayTiming(Exception):
    """The switch departed an update before the vector said so: the replay's timing failed."""


def burst(v) -> int:
    """Most events (enqueue, status, configure) of ``v`` between two dequeues."""
    most = n = 0
    for e in v["events"]:
        n = 0 if e["op"] == "dequeue" else n + 1
        most = max(most, n)
    return most


def ip_for(cluster_id: int, worker_id: int) -> str:
    return f"10.{100 + cluster_id}.{worker_id // 256}.{worker_id % 256}"


class VectorReplay(OlafTest):
    """Every lock-free shared vector: the switch makes the model's decisions and sends its departures."""

    def runTest(self):
        files = sorted(Path(tu.test_param_get("vectors")).glob("*.json"))
        self.assertGreater(len(files), 0, "no vector files")
        done, skipped, n_enq, n_dep, chunked = [], [], 0, 0, 0
        for f in files:
            v = vectors.load(f)
            if any(e["op"] == "lock" for e in v["events"]) or vectors.uses_token_ledger(v):
                skipped.append(f.stem)
                continue
            b = burst(v)
            rate = RATE_PPS if b <= LONG_BURST else BURST_RATE_PPS if b <= 2 * LONG_BURST else SLOW_RATE_PPS
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    e, d = self.replay(v, rate)
                    break
                except ReplayTiming as t:
                    print(f"\n{f.stem}: attempt {attempt} at {rate} pps: {t}")
                    if attempt == ATTEMPTS:
                        self.fail(f"{f.stem}: {t} in all {ATTEMPTS} attempts; the machine is too loaded "
                                  f"for {rate} pps (this is not a queue mismatch)")
                    self.drain_ps_port()
                    rate = SLOW_RATE_PPS
            done.append(f.stem)
            chunked += vectors.config_of(v)[0].num_chunks > 1
            n_enq += e
            n_dep += d
        print(f"\nvector replay on BMv2: {len(done)} vectors ({chunked} chunked), {n_enq} enqueue decisions and "
              f"{n_dep} departures matched; skipped (lock events, token ledger) {len(skipped)}: {', '.join(skipped)}")
        self.assertGreaterEqual(len(done), 10)
        self.assertGreaterEqual(chunked, 3, "the chunk vectors without lock / token events must run")

    # -- one vector ----------------------------------------------------------------------

    def replay(self, v, rate: int) -> tuple[int, int]:
        """Replay ``v`` with departures paced at ``rate`` packets/s; (enqueues, departures) matched.

        Raises:
            ReplayTiming: the switch departed an update before the vector's dequeue (checked
                through the egress departure counter before every comparison).
        """
        name = v["name"]
        cfg, disc = vectors.config_of(v)
        self.reset_switch()
        self.fwd.route(ACK_SINK_IP, 32, ACK_SINK_PORT, SW_MAC, "00:00:0a:ff:00:01")
        pairs = sorted({(e["update"]["cluster_id"], e["update"]["worker_id"])
                        for e in v["events"] if e["op"] == "enqueue"})
        # every vector worker sends from PTF port 1 (its own address, so the queue sees its ids)
        self.sw.write([self.sw.update("insert", self.workers.entry((ip_for(c, w), 0), WorkerEntry(w, c, 1)))
                       for c, w in pairs])
        current = dict(queue_size=cfg.queue_size, num_grads=cfg.num_grads,
                       reward_threshold=cfg.reward_threshold,
                       activity_window_ns=cfg.activity_window_ns, discipline=disc,
                       num_chunks=cfg.num_chunks)
        self.set_params(**current)
        self.rate = self.window_rate = rate
        self.tm.set_queue_rate(self.rate, PS_PORT)
        model = make_queue(cfg, disc)
        decided = enq = dep = 0
        before = self.counters.decisions()  # only this replay's enqueues change them
        for i, e in enumerate(v["events"]):
            where = f"{name} event {i} ({e['op']})"
            op = e["op"]
            if op == "enqueue":
                u = Update.from_json(e["update"])
                if model.occupancy == 0:
                    self.plug()
                self.send_as(u)
                decided += 1
                after = self.wait_decisions(decided)
                self.check_timing(dep, where)
                moved = [k for k in after if after[k] != before[k]]
                self.assertEqual(moved, [e["expect"]["decision"]], where)
                before = after
                model.enqueue(u, e["t_ns"])
                enq += 1
            elif op == "dequeue":
                exp = e["expect"]
                m = model.dequeue()
                if exp is None:
                    self.assertIsNone(m, where)
                    continue
                self.expect_departure(Update.from_json(exp["update"]), where)
                dep += 1
            elif op == "status":
                model.status(e["t_ns"])
                self.check_timing(dep, where)
                self.check_status(e["expect"], where)
            elif op == "configure":
                for k, val in e.items():
                    if k != "op":
                        current[k] = val
                self.set_params(**current)
                model.configure(**{k: val for k, val in e.items() if k != "op"})
        while model.occupancy:
            self.expect_departure(model.dequeue().update, f"{name} drain")
            dep += 1
        self.assert_no_packet(PS_PORT, timeout=1.5 / self.rate)
        return enq, dep

    def wait_decisions(self, total: int, timeout: float = 5.0) -> dict[str, int]:
        """Poll the decision counters until ``total`` updates were decided; the counters then."""
        deadline = time.monotonic() + timeout
        while sum((d := self.counters.decisions()).values()) < total:
            if time.monotonic() > deadline:
                self.fail(f"switch decided {sum(d.values())} updates, expected {total}")
            time.sleep(0.01)
        return d

    def check_timing(self, departed: int, where: str):
        """ReplayTiming if the switch's egress has departed more than ``departed`` updates
        (its tokens that reached egress: the three-entry ``token_fates``, cheaper to read
        than the per-cluster departures; no token of a replay is stale)."""
        n = sum(self.counters.token_fates().values())
        if n > departed:
            raise ReplayTiming(f"{where}: the switch had departed {n} updates, the vector {departed}")

    def send_as(self, u: Update):
        pkt = (Ether(src="00:00:0a:00:01:01", dst=SW_MAC)
               / IP(src=ip_for(u.cluster_id, u.worker_id), dst=PS_IP, ttl=64, id=1)
               / UDP(sport=wire.ACK_PORT, dport=wire.UPDATE_PORT, chksum=0)
               / wire.update_layer(u.with_(cluster_id=0, worker_id=0)))
        tu.send_packet(self, 1, bytes(pkt))

    def plug(self):
        plug = Ether(src="00:00:0a:00:01:05", dst=SW_MAC) / IP(src="10.0.1.5", dst=PS_IP) / UDP(sport=9, dport=9) / b"plug"
        tu.send_packet(self, 5, bytes(plug))
        got = self.recv(PS_PORT, timeout=2.0 / self.rate + 3)
        self.assertEqual(bytes(got[UDP].payload)[:4], b"plug", "expected the plug, got a departure")
        self.window_rate = self.rate

    def expect_departure(self, want: Update, where: str):
        pkt, got = self.recv_update(timeout=2.0 / self.rate + 3)
        self.assertEqual(got, want, where)
        self.assertEqual(pkt[IP].src, ip_for(want.cluster_id, want.worker_id), f"{where}: source")

    def check_status(self, expect, where: str):
        layer = wire.ack_layer(cluster_id=0, worker_id=0, seq=0, count=1, global_reward=0,
                               gen_ts=0, weights=[])
        ack = (Ether(src=PS_MAC, dst=SW_MAC) / IP(src=PS_IP, dst=ACK_SINK_IP)
               / UDP(sport=wire.UPDATE_PORT, dport=wire.ACK_PORT) / layer)
        tu.send_packet(self, PS_PORT, bytes(ack))
        got = wire.parse_ack(bytes(self.recv(ACK_SINK_PORT)[UDP].payload)).status
        self.assertEqual((got.queue_util, got.queue_size), (expect["queue_util"], expect["queue_size"]), where)

"""Tests of the OlafQueue RTL (verilog_queue/rtl) on Verilator with cocotb.

cocotb tests (run inside the simulator, driven by the pytest functions at the
end through cocotb's Python runner):

* ``vectors``: replays the shared test vectors (tests/vectors/*.json) and
  compares every decision, segment, lock, departing frame (bit for bit),
  status and the final counters with the vector's expectations. Skipped: the
  token-ledger vectors (``dequeue_token`` events, expiry by ``max_sojourn_ns``;
  :func:`olaf.vectors.uses_token_ledger`): the RTL streams its head segment out
  itself, so there is no token that could be lost or reordered, and it has no
  expiry. Their enqueue ``token`` is not compared either, and the replayed
  vectors' ``lost``/``expired``/``token_fates`` counters must be 0;
* ``random_differential``: random update streams with idle input cycles,
  output backpressure and a random departure pacer, checked cycle by cycle
  against the reference model (olaf_queue_scoreboard); with K > 1 the updates
  are chunks, interleaved over clusters and workers, some lost, some
  overtaken by the worker's next generation;
* ``plain_traffic``, ``oversize``, ``registers``, ``chunk_errors``: behaviour
  the model does not cover (non-Olaf frames, frames longer than a segment, the
  register map, updates whose chunk fields do not match K).
"""

from __future__ import annotations

import itertools
import json
import os
import random
from collections import Counter
from pathlib import Path

import pytest

# skip reasons name their tier (tests/tiers.py)
_NO_RTL = "rtl tier: cocotb and cocotbext-axi are not installed (the 'rtl' extra of pyproject.toml; `make test` installs it)"
cocotb = pytest.importorskip("cocotb", reason=_NO_RTL)
pytest.importorskip("cocotbext.axi", reason=_NO_RTL)

from cocotb.triggers import RisingEdge  # noqa: E402
from cocotbext.axi import AxiResp  # noqa: E402
from olaf_queue_frames import beats, departing_frame, unpack_tuser, update_frame
from olaf_queue_scoreboard import DifferentialScoreboard, read_structures
from olaf_queue_tb import (
    REG_ACTIVE,
    REG_BEATS,
    REG_CHUNK_ERRORS,
    REG_CTRL,
    REG_ID,
    REG_MAX_CHUNKS,
    REG_NUM_CHUNKS,
    REG_NUM_CLUSTERS,
    REG_OCCUPANCY,
    REG_QUEUE_SIZE,
    REG_QUEUE_UTIL,
    REG_SEGMENTS,
    REG_THRESHOLD,
    REG_WINDOW_HI,
    REG_WINDOW_LO,
    EventLog,
    OlafQueueTB,
)

from olaf.fixedpoint import INT32_MAX, INT32_MIN, reward_to_fixed
from olaf.queue_model import Decision, OlafQueue, QueueConfig
from olaf.update import Update
from olaf.vectors import load, uses_token_ledger

pytestmark = pytest.mark.rtl

REPO = Path(__file__).resolve().parents[3]
VECTOR_DIR = REPO / "tests" / "vectors"

# Parameters of the simulation builds. Vectors need SEGMENTS equal to their
# "segments" (segment addresses are compared); NUM_CLUSTERS, MAX_CHUNKS and
# BEATS_PER_SEGMENT only need to be large enough. MAX_CHUNKS = 6 is not a
# power of two: the key table has 8 words per cluster, two never used.
TEST_NUM_CLUSTERS = 16
TEST_BEATS = 24
TEST_MAX_CHUNKS = 6


def build_params(segments: int) -> dict[str, int]:
    return {"SEGMENTS": segments, "NUM_CLUSTERS": TEST_NUM_CLUSTERS, "BEATS_PER_SEGMENT": TEST_BEATS,
            "MAX_CHUNKS": TEST_MAX_CHUNKS}


async def wait_for(tb: OlafQueueTB, cond, limit: int, what: str) -> None:
    for _ in range(limit):
        if cond():
            return
        await RisingEdge(tb.dut.clk)
    if not cond():
        raise AssertionError(f"timed out after {limit} cycles waiting for {what}")


async def pulse_departure(tb: OlafQueueTB) -> None:
    """Let the queue lock its head in exactly one cycle."""
    tb.dut.departure_enable.value = 1
    await RisingEdge(tb.dut.clk)
    tb.dut.departure_enable.value = 0
    await tb.cycles(3)


# -- shared vectors ----------------------------------------------------------------


class VectorReplay:
    """Drives one vector through the RTL in the vector's event order."""

    def __init__(self, tb: OlafQueueTB, log: EventLog, vector: dict):
        self.tb = tb
        self.log = log
        self.vector = vector
        self.name = vector["name"]
        self.owner: dict[int, tuple[Update, bool]] = {}
        self.locked = None
        self.decisions = Counter()
        self.per_cluster: dict[int, Counter] = {}
        self.departures = Counter()
        self.frames_compared = 0

    def fail(self, i: int, e: dict, msg: str) -> None:
        raise AssertionError(f"{self.name} event {i} ({e['op']}): {msg}")

    async def run(self) -> None:
        tb, cfg = self.tb, self.vector["config"]
        await tb.reset()
        tb.sink.pause = True
        await tb.configure(queue_size=cfg["queue_size"], reward_threshold=cfg["reward_threshold"],
                           activity_window_ns=cfg["activity_window_ns"],
                           fifo_mode=cfg.get("discipline", "olaf") == "fifo",
                           num_chunks=cfg.get("num_chunks", 1))
        for i, e in enumerate(self.vector["events"]):
            await getattr(self, "_" + e["op"])(i, e)
            self.check_structures(i, e)
        self.check_counters()

    def check_structures(self, i: int, e: dict) -> None:
        cfg = self.vector["config"]
        s = read_structures(self.tb.dut, self.tb.segments, cfg["num_clusters"], cfg.get("num_chunks", 1),
                            self.tb.max_chunks)
        occupied = sorted(s["out_mem_addrs"] + s["available_mem_addrs"])
        if occupied != list(range(self.tb.segments)):
            self.fail(i, e, f"segments leaked or duplicated: {s}")
        if s["locked"] != self.locked:
            self.fail(i, e, f"RTL locked segment {s['locked']}, expected {self.locked}")

    async def _enqueue(self, i: int, e: dict) -> None:
        tb, log = self.tb, self.log
        u = Update.from_json(e["update"])
        tb.set_now(e["t_ns"])
        n0, counts0 = len(log.decisions), log.counts()
        frame = update_frame(u)
        await tb.send(u, data=frame)
        await wait_for(tb, lambda: len(log.decisions) > n0, 100 + 2 * beats(len(frame)), "a decision")
        await tb.cycles(2)
        d = log.decisions[n0]
        want = Decision.from_label(e["expect"]["decision"])
        seg = e["expect"]["segment"]
        if (d.code, d.segment, d.cluster_id, d.update, d.chunk, d.chunk_error) != (
                int(want), 0 if seg is None else seg, u.cluster_id, True, u.chunk, False):
            self.fail(i, e, f"RTL decided {Decision(d.code).label} segment {d.segment}, expected {e['expect']}")
        if log.counts()[1:] != counts0[1:]:
            self.fail(i, e, "a lock or release happened without departure_enable")
        self.decisions[want.label] += 1
        self.per_cluster.setdefault(u.cluster_id, Counter())[want.label] += 1
        if want in (Decision.APPEND, Decision.REPLACE_WORKER, Decision.REPLACE_REWARD):
            self.owner[seg] = (u, False)
        elif want is Decision.AGGREGATE:
            self.owner[seg] = (self.owner[seg][0], True)

    async def _lock_head(self, i: int, e: dict, want) -> None:
        if self.locked is not None:
            if want != self.locked:
                self.fail(i, e, f"head {self.locked} is locked, expected {want}")
            return
        n_locks = len(self.log.locks)
        await pulse_departure(self.tb)
        got = self.log.locks[n_locks:]
        if got != ([] if want is None else [want]):
            self.fail(i, e, f"RTL locked {got}, expected {want}")
        self.locked = want

    async def _lock(self, i: int, e: dict) -> None:
        await self._lock_head(i, e, e["expect"]["segment"])

    async def _dequeue(self, i: int, e: dict) -> None:
        tb, log = self.tb, self.log
        exp = e["expect"]
        if exp is None:
            counts0 = log.counts()
            await self._lock_head(i, e, None)
            if log.counts() != counts0 or int(tb.dut.status_queue_util.value) != 0:
                self.fail(i, e, "the queue should be empty")
            return
        seg = exp["segment"]
        await self._lock_head(i, e, seg)
        n_rel = len(log.releases)
        tb.sink.pause = False
        owner, merged = self.owner.pop(seg)
        await wait_for(tb, lambda: len(log.releases) > n_rel, 100 + 2 * beats(len(update_frame(owner))),
                       "a departure")
        tb.sink.pause = True
        if log.releases[n_rel][0] != seg:
            self.fail(i, e, f"RTL released segment {log.releases[n_rel][0]}, expected {seg}")
        self.locked = None
        got = tb.sink.recv_nowait()
        u = Update.from_json(exp["update"])
        want = departing_frame(owner, u, merged)
        if bytes(got.tdata) != want:
            self.fail(i, e, f"departing frame differs:\n  RTL      {bytes(got.tdata).hex()}\n  expected {want.hex()}")
        user = unpack_tuser(got.tuser[0] if isinstance(got.tuser, list) else got.tuser)
        if (user.cluster_id, user.worker_id, user.count, user.reward_sum, user.gen_ts) != (
                u.cluster_id, u.worker_id, u.count, u.reward_sum, u.gen_ts):
            self.fail(i, e, f"m_axis_tuser {user}, expected {u}")
        self.departures[u.cluster_id] += 1
        self.frames_compared += 1

    async def _status(self, i: int, e: dict) -> None:
        tb = self.tb
        tb.set_now(e["t_ns"])
        await tb.cycles(4)
        got = {"queue_util": int(tb.dut.status_queue_util.value),
               "active_clusters": int(tb.dut.status_active_clusters.value),
               "queue_size": int(tb.dut.status_queue_size.value)}
        if got != e["expect"]:
            self.fail(i, e, f"RTL status {got}, expected {e['expect']}")
        util, resp = await tb.read_reg(REG_QUEUE_UTIL)
        active, resp2 = await tb.read_reg(REG_ACTIVE)
        if (util, active) != (got["queue_util"], got["active_clusters"]) or resp != AxiResp.OKAY or resp2 != AxiResp.OKAY:
            self.fail(i, e, f"status registers read {util}/{active} ({resp}, {resp2})")

    async def _configure(self, i: int, e: dict) -> None:
        await self.tb.configure(**{k: v for k, v in e.items() if k != "op"})

    def check_counters(self) -> None:
        want = self.vector.get("final_counters")
        if want is None:
            return
        labels = [d.label for d in Decision]
        got = {
            "decisions": {lab: self.decisions[lab] for lab in labels},
            "per_cluster": [
                {lab: self.per_cluster.get(c, Counter())[lab] for lab in labels}
                | {"departures": self.departures[c], "lost": 0, "expired": 0}
                for c in range(self.vector["config"]["num_clusters"])
            ],
            "token_fates": {f: 0 for f in want["token_fates"]},
        }
        if got != want:
            raise AssertionError(f"{self.name}: final counters from the RTL {got}, expected {want}")


@cocotb.test()
async def vectors(dut):
    """Replay the vector files listed in OLAF_VECTORS; every expectation must match."""
    tb = OlafQueueTB(dut)
    log = EventLog()
    tb.listeners.append(log)
    paths = json.loads(os.environ["OLAF_VECTORS"])
    events = frames = 0
    for path in paths:
        v = load(Path(path))
        assert v["config"]["segments"] == tb.segments, f"{path} needs SEGMENTS={v['config']['segments']}"
        replay = VectorReplay(tb, log, v)
        await replay.run()
        events += len(v["events"])
        frames += replay.frames_compared
        dut._log.info("vector %s: %d events, %d departing frames compared", v["name"], len(v["events"]),
                      replay.frames_compared)
    dut._log.info("replayed %d vectors: %d events, %d departing frames compared", len(paths), events, frames)


# -- random differential test -------------------------------------------------------


def random_updates(rng: random.Random, n: int, num_clusters: int, num_grads: int, workers: int,
                   hot: float):
    """Random updates: a few hot clusters (so that merges and replacements happen),
    mostly count 1, rewards around the threshold, some gradients at the int32 limits."""
    seqs: Counter = Counter()
    levels = [-3.0, -1.0, 0.0, 0.5, 1.0, 1.25, 2.0, 4.0]
    for _ in range(n):
        c = rng.randrange(2) if rng.random() < hot else rng.randrange(num_clusters)
        w = c * workers + rng.randrange(workers)
        seqs[w] += 1
        count = 1 if rng.random() < 0.85 else rng.randint(2, 5)
        grads = tuple(
            rng.choice([INT32_MAX, INT32_MIN, INT32_MAX - 1]) if rng.random() < 0.05
            else rng.randint(-(1 << 26), 1 << 26)
            for _ in range(num_grads)
        )
        yield Update(cluster_id=c, worker_id=w, seq=seqs[w], count=count,
                     reward_sum=reward_to_fixed(rng.choice(levels)) * count,
                     gen_ts=rng.randrange(1 << 64) if rng.random() < 0.02 else rng.randrange(1 << 40),
                     grads=grads)


def random_chunk_updates(rng: random.Random, n: int, num_clusters: int, num_grads: int, workers: int,
                         hot: float, num_chunks: int, p_lost: float = 0.1, p_new_generation: float = 0.08):
    """Random chunked updates (K = ``num_chunks``): a worker sends the K chunks of one
    generation (seq), mostly in order, sometimes shuffled; the workers of a few hot clusters
    interleave their chunks; a chunk is lost now and then, and a worker sometimes starts its
    next generation before the previous one's chunks are all sent (two generations of one
    worker meet per key)."""
    seqs: Counter = Counter()
    pending: dict[int, list] = {}
    levels = [-3.0, -1.0, 0.0, 0.5, 1.0, 1.25, 2.0, 4.0]
    emitted = 0
    while emitted < n:
        c = rng.randrange(2) if rng.random() < hot else rng.randrange(num_clusters)
        w = c * workers + rng.randrange(workers)
        if not pending.get(w) or rng.random() < p_new_generation:
            seqs[w] += 1
            count = 1 if rng.random() < 0.85 else rng.randint(2, 5)
            header = (seqs[w], count, reward_to_fixed(rng.choice(levels)) * count,
                      rng.randrange(1 << 64) if rng.random() < 0.02 else rng.randrange(1 << 40))
            order = list(range(num_chunks))
            if rng.random() < 0.3:
                rng.shuffle(order)
            pending[w] = [(header, k) for k in order if rng.random() >= p_lost]
            if not pending[w]:
                continue
        (seq, count, reward_sum, gen_ts), k = pending[w].pop(0)
        grads = tuple(
            rng.choice([INT32_MAX, INT32_MIN, INT32_MAX - 1]) if rng.random() < 0.05
            else rng.randint(-(1 << 26), 1 << 26)
            for _ in range(num_grads)
        )
        yield Update(cluster_id=c, worker_id=w, seq=seq, count=count, reward_sum=reward_sum, gen_ts=gen_ts,
                     grads=grads, chunk=k, num_chunks=num_chunks)
        emitted += 1


def pause_pattern(rng: random.Random, p_pause: float, length: int = 997):
    return itertools.cycle([rng.random() < p_pause for _ in range(length)])


@cocotb.test()
async def random_differential(dut):
    """Random traffic through RTL and model with idle input, output backpressure and pacing."""
    p = json.loads(os.environ["OLAF_RANDOM"])
    rng = random.Random(p["seed"])
    tb = OlafQueueTB(dut)
    await tb.reset()
    threshold = p.get("reward_threshold")
    window = p.get("activity_window_ns", 2000)
    k_chunks = p.get("num_chunks", 1)
    await tb.configure(queue_size=p.get("queue_size", tb.segments), reward_threshold=threshold,
                       activity_window_ns=window, num_chunks=k_chunks)
    model = OlafQueue(QueueConfig(segments=tb.segments, num_clusters=p["num_clusters"], num_grads=p["num_grads"],
                                  queue_size=p.get("queue_size", tb.segments), reward_threshold=threshold,
                                  activity_window_ns=window, num_chunks=k_chunks))
    sb = DifferentialScoreboard(tb, model, check_structures=p.get("check_structures", True))
    tb.listeners.append(sb)
    # the key table's write forwarded to the next update of the same key (olaf_queue_ctrl.v "Hazard")
    forwarded = []
    tb.listeners.append(lambda rec: forwarded.append(rec.index)
                        if int(dut.ctrl_inst.kt_fwd.value) and int(dut.ctrl_inst.b_valid.value) else None)

    tb.source.set_pause_generator(pause_pattern(rng, p.get("p_idle", 0.2)))
    tb.sink.set_pause_generator(pause_pattern(rng, p.get("p_backpressure", 0.3)))

    running = True

    async def drive_time():
        t = 0
        while running:
            t += 4 if rng.random() < 0.97 else rng.randrange(4, 5000)
            tb.set_now(t)
            await RisingEdge(dut.clk)

    async def drive_departures():
        while running:
            tb.dut.departure_enable.value = 1 if rng.random() < p.get("p_depart", 0.7) else 0
            for _ in range(rng.choice([1, 1, 2, 5, 20])):
                await RisingEdge(dut.clk)

    cocotb.start_soon(drive_time())
    cocotb.start_soon(drive_departures())

    n = p["updates"]
    reconfigure_every = p.get("reconfigure_every", 0)
    if k_chunks == 1:
        stream = random_updates(rng, n, p["num_clusters"], p["num_grads"], p.get("workers", 3), p.get("hot", 0.5))
    else:
        stream = random_chunk_updates(rng, n, p["num_clusters"], p["num_grads"], p.get("workers", 3),
                                      p.get("hot", 0.5), k_chunks)
    for k, u in enumerate(stream):
        if reconfigure_every and k and k % reconfigure_every == 0:
            # runtime writes happen with no frame in flight (configuration is sampled per frame)
            await tb.source.wait()
            await wait_for(tb, lambda: not sb.sent, 200, "the decisions of all frames sent")
            change = {}
            if rng.random() < 0.5:
                change["queue_size"] = rng.randint(k_chunks, tb.segments)
            else:
                change["reward_threshold"] = rng.choice([None, 0, reward_to_fixed(0.5), reward_to_fixed(1.0)])
            await tb.configure(**change)
            model.configure(**change)
        frame = sb.expect_frame(u)
        await tb.send(u, data=frame)
        sb.assert_clean()

    await tb.source.wait()
    await wait_for(tb, lambda: not sb.sent, 500, "the decisions of all frames sent")
    running = False
    await tb.cycles(2)
    tb.dut.departure_enable.value = 1
    tb.sink.set_pause_generator(None)
    tb.sink.pause = False
    await wait_for(tb, lambda: model.occupancy == 0 and int(dut.status_queue_util.value) == 0, 20000, "the queue to drain")
    await tb.cycles(4)
    sb.assert_clean()
    assert sb.frames_compared == sb.departures > 0
    assert sb.tb.sink.empty(), "frames left on m_axis that the model did not send"
    labels = {d.label: sb.decisions[d] for d in Decision}
    if p.get("expect_forwarding"):
        assert forwarded, "no update met the key-table write of the previous update of its key"
    dut._log.info("random_differential seed %d: %d updates (K = %d), %d cycles, decisions %s, %d departing frames "
                  "compared, %d key-table forwards", p["seed"], n, k_chunks, sb.records, labels, sb.frames_compared,
                  len(forwarded))
    report = os.environ.get("OLAF_REPORT")
    if report:
        Path(report).write_text(json.dumps({"updates": n, "cycles": sb.records, "decisions": labels,
                                            "frames_compared": sb.frames_compared}))


# -- behaviour outside the model ---------------------------------------------------


async def started(dut) -> tuple[OlafQueueTB, EventLog]:
    """A testbench out of reset with an event log attached."""
    tb = OlafQueueTB(dut)
    log = EventLog()
    tb.listeners.append(log)
    await tb.reset()
    return tb, log


@cocotb.test()
async def plain_traffic(dut):
    """Non-Olaf frames and unknown clusters queue FIFO, are never merged and leave unchanged."""
    tb, log = await started(dut)
    tb.sink.pause = True
    rng = random.Random(5)
    upd = Update(cluster_id=1, worker_id=3, seq=1, count=1, reward_sum=7, gen_ts=100, grads=(1, 2, 3, 4))
    unknown = upd.with_(cluster_id=TEST_NUM_CLUSTERS + 3)
    sent = [
        (upd, True, update_frame(upd)),
        (upd, False, bytes(rng.randrange(256) for _ in range(64))),      # one beat, claims cluster 1
        (upd, False, bytes(rng.randrange(256) for _ in range(150))),
        (unknown, True, update_frame(unknown)),                           # cluster id out of range
        (unknown.with_(worker_id=4), True, update_frame(unknown.with_(worker_id=4))),
    ]
    for u, valid, data in sent[: tb.segments]:
        await tb.send(u, update_valid=valid, data=data)
    await wait_for(tb, lambda: len(log.decisions) == min(len(sent), tb.segments), 200, "decisions")
    assert [d.code for d in log.decisions] == [int(Decision.APPEND)] * len(log.decisions), log.decisions
    assert [d.update for d in log.decisions] == [v for _, v, _ in sent[: tb.segments]]
    # a full queue tail-drops plain traffic too
    extra = bytes(range(100))
    await tb.send(upd, update_valid=False, data=extra)
    await wait_for(tb, lambda: len(log.decisions) == min(len(sent), tb.segments) + 1, 200, "decision")
    if tb.segments <= len(sent):
        assert log.decisions[-1].code == int(Decision.DROP_FULL)
        expected_out = sent[: tb.segments]
    else:
        expected_out = sent + [(upd, False, extra)]
    tb.dut.departure_enable.value = 1
    tb.sink.pause = False
    for u, valid, data in expected_out:
        got = await tb.sink.recv()
        assert bytes(got.tdata) == data, "a frame left changed"
        user = unpack_tuser(got.tuser if not isinstance(got.tuser, list) else got.tuser[0])
        assert (user.update_valid, user.cluster_id, user.worker_id) == (int(valid), u.cluster_id, u.worker_id)
    await tb.cycles(10)
    assert tb.sink.empty() and int(dut.status_queue_util.value) == 0

    # one-beat Olaf updates (malformed) are taken two cycles apart and still decided
    accepted = []
    tb.listeners.append(lambda rec: accepted.append(rec.index) if rec.accepted is not None else None)
    n0 = len(log.decisions)
    for k in range(3):
        await tb.send(upd.with_(cluster_id=k), data=bytes(64))
    await wait_for(tb, lambda: len(log.decisions) == n0 + 3, 100, "decisions")
    assert all(b - a >= 2 for a, b in zip(accepted, accepted[1:])), accepted
    appended = sum(d.code == int(Decision.APPEND) for d in log.decisions[n0:])
    await wait_for(tb, lambda: int(dut.status_queue_util.value) == 0, 100, "departures")
    await tb.cycles(2)
    assert tb.sink.count() == appended > 0


@cocotb.test()
async def oversize(dut):
    """A frame longer than a segment is cut to BEATS_PER_SEGMENT beats and flagged."""
    tb, log = await started(dut)
    pulses = []
    tb.listeners.append(lambda rec: pulses.append(rec.index) if int(dut.status_oversize.value) else None)
    upd = Update(cluster_id=0, worker_id=0)
    data = bytes((i * 7) & 0xFF for i in range(64 * tb.beats_per_segment + 100))
    tb.dut.departure_enable.value = 1
    await tb.send(upd, update_valid=False, data=data)
    got = await tb.sink.recv()
    assert bytes(got.tdata) == data[: 64 * tb.beats_per_segment]
    assert len(pulses) == 1 and [d.code for d in log.decisions] == [int(Decision.APPEND)]
    # the next frame is stored normally
    await tb.send(upd, update_valid=False, data=data[:200])
    got = await tb.sink.recv()
    assert bytes(got.tdata) == data[:200] and len(pulses) == 1


@cocotb.test()
async def registers(dut):
    """The AXI4-Lite register map: identification, range checks, window commit, status."""
    tb = OlafQueueTB(dut)
    await tb.reset()
    assert await tb.read_reg(REG_ID) == (0x4F4C4146, AxiResp.OKAY)
    assert await tb.read_reg(REG_SEGMENTS) == (tb.segments, AxiResp.OKAY)
    assert await tb.read_reg(REG_NUM_CLUSTERS) == (tb.num_clusters, AxiResp.OKAY)
    assert await tb.read_reg(REG_BEATS) == (tb.beats_per_segment, AxiResp.OKAY)
    assert await tb.read_reg(REG_QUEUE_SIZE) == (tb.segments, AxiResp.OKAY)
    assert await tb.read_reg(REG_NUM_CHUNKS) == (1, AxiResp.OKAY)
    assert await tb.read_reg(REG_MAX_CHUNKS) == (tb.max_chunks, AxiResp.OKAY)
    assert await tb.read_reg(REG_CHUNK_ERRORS) == (0, AxiResp.OKAY)
    assert await tb.read_reg(REG_OCCUPANCY) == (0, AxiResp.OKAY)
    assert await tb.read_reg(0x3C) == (0, AxiResp.SLVERR)

    for addr, value in [(REG_QUEUE_SIZE, 0), (REG_QUEUE_SIZE, tb.segments + 1), (REG_THRESHOLD, 1 << 31),
                        (REG_CTRL, 4), (REG_SEGMENTS, 3), (REG_ID, 0), (0x3C, 1), (REG_NUM_CHUNKS, 0),
                        (REG_NUM_CHUNKS, tb.max_chunks + 1), (REG_MAX_CHUNKS, 1), (REG_CHUNK_ERRORS, 0),
                        (REG_OCCUPANCY, 0)]:
        assert await tb.write_reg(addr, value) == AxiResp.SLVERR, f"write 0x{addr:02x} <- {value}"
    partial = await tb.axil.write(REG_QUEUE_SIZE, (1).to_bytes(2, "little"))
    assert partial.resp == AxiResp.SLVERR
    assert await tb.read_reg(REG_QUEUE_SIZE) == (tb.segments, AxiResp.OKAY)

    assert await tb.write_reg(REG_QUEUE_SIZE, 1) == AxiResp.OKAY
    assert int(dut.status_queue_size.value) == 1
    assert await tb.write_reg(REG_THRESHOLD, (1 << 31) - 1) == AxiResp.OKAY
    assert await tb.read_reg(REG_THRESHOLD) == ((1 << 31) - 1, AxiResp.OKAY)
    assert await tb.write_reg(REG_CTRL, 3) == AxiResp.OKAY
    assert await tb.read_reg(REG_CTRL) == (3, AxiResp.OKAY)

    # the window changes only when its low word is written
    assert await tb.read_reg(REG_WINDOW_LO) == (1_000_000_000, AxiResp.OKAY)
    assert await tb.write_reg(REG_WINDOW_HI, 2) == AxiResp.OKAY
    assert await tb.read_reg(REG_WINDOW_HI) == (0, AxiResp.OKAY)
    assert await tb.write_reg(REG_WINDOW_LO, 5) == AxiResp.OKAY
    assert await tb.read_reg(REG_WINDOW_HI) == (2, AxiResp.OKAY)
    assert await tb.read_reg(REG_WINDOW_LO) == (5, AxiResp.OKAY)

    # K and the status Q_max = floor(QUEUE_SIZE / K): K <= QUEUE_SIZE, QUEUE_SIZE >= K; the
    # quotient is in force when the write is answered
    k = min(tb.max_chunks, tb.segments)
    assert await tb.write_reg(REG_QUEUE_SIZE, tb.segments) == AxiResp.OKAY
    if k > 1:
        assert await tb.write_reg(REG_QUEUE_SIZE, k - 1) == AxiResp.OKAY
        assert await tb.write_reg(REG_NUM_CHUNKS, k) == AxiResp.SLVERR   # K above QUEUE_SIZE
        assert await tb.write_reg(REG_QUEUE_SIZE, tb.segments) == AxiResp.OKAY
    for kk in range(1, k + 1):
        assert await tb.write_reg(REG_NUM_CHUNKS, kk) == AxiResp.OKAY
        assert int(dut.status_queue_size.value) == tb.segments // kk, kk
        for q in sorted({kk, tb.segments, (kk + tb.segments) // 2}):
            assert await tb.write_reg(REG_QUEUE_SIZE, q) == AxiResp.OKAY
            assert int(dut.status_queue_size.value) == q // kk, (q, kk)
        if kk > 1:
            assert await tb.write_reg(REG_QUEUE_SIZE, kk - 1) == AxiResp.SLVERR  # QUEUE_SIZE below K
        assert await tb.write_reg(REG_QUEUE_SIZE, tb.segments) == AxiResp.OKAY
    assert await tb.read_reg(REG_NUM_CHUNKS) == (k, AxiResp.OKAY)
    # K cannot change while the queue holds a frame
    assert await tb.write_reg(REG_NUM_CHUNKS, 1) == AxiResp.OKAY
    await tb.send(Update(cluster_id=0, worker_id=0), update_valid=False, data=bytes(100))
    for _ in range(20):
        if int(dut.status_queue_util.value):
            break
        await RisingEdge(dut.clk)
    assert await tb.read_reg(REG_OCCUPANCY) == (1, AxiResp.OKAY)
    assert await tb.write_reg(REG_NUM_CHUNKS, k) == AxiResp.SLVERR
    assert await tb.read_reg(REG_NUM_CHUNKS) == (1, AxiResp.OKAY)


@cocotb.test()
async def chunk_errors(dut):
    """Updates whose num_chunks is not K or whose chunk is not below K are not keyed: they
    are flagged, counted, queued as plain traffic (never merged), leave unchanged and do not
    count as activity; well-formed chunks of the same cluster are keyed as usual."""
    tb, log = await started(dut)
    k = min(3, tb.max_chunks, tb.segments)
    await tb.configure(num_chunks=k, activity_window_ns=1_000_000)
    tb.sink.pause = True
    tb.set_now(1000)
    good = Update(cluster_id=2, worker_id=7, seq=1, count=1, reward_sum=5, gen_ts=9, grads=(1, 2, 3),
                  chunk=k - 1, num_chunks=k)
    other = good.with_(cluster_id=3, worker_id=9)   # the refused updates' cluster
    other_k = k + 1
    patched = bytearray(update_frame(other))
    patched[46:48] = k.to_bytes(2, "big")            # chunk = K with num_chunks = K (the encoder refuses it)
    frames = [
        (good, update_frame(good)),
        (other, update_frame(other.with_(chunk=0, num_chunks=other_k))),   # num_chunks is not K
        (other, update_frame(other.with_(chunk=k, num_chunks=other_k))),   # ... and chunk >= K
        (other, bytes(patched)),
        (other, update_frame(other)[:48]),                                  # one beat, num_chunks cut off
    ]
    n = min(len(frames), tb.segments)
    for u, data in frames[:n]:
        await tb.send(u, data=data)
    await wait_for(tb, lambda: len(log.decisions) == n, 200, "decisions")
    assert [d.chunk_error for d in log.decisions] == [False] + [True] * (n - 1), log.decisions
    assert [d.code for d in log.decisions] == [int(Decision.APPEND)] * n, log.decisions
    assert log.decisions[0].chunk == k - 1
    assert await tb.read_reg(REG_CHUNK_ERRORS) == (n - 1, AxiResp.OKAY)
    await tb.cycles(4)
    assert int(dut.status_active_clusters.value) == 1, "a refused update counted as activity"
    s = read_structures(dut, tb.segments, TEST_NUM_CLUSTERS, k, tb.max_chunks)
    assert [seg for seg in s["cluster_status"] if seg is not None] == [log.decisions[0].segment], s
    assert s["cluster_status"][2 * k + k - 1] == log.decisions[0].segment
    # the key's next chunk aggregates into the keyed one, never into a refused frame
    if n < tb.segments:
        await tb.send(good.with_(worker_id=8))
        await wait_for(tb, lambda: len(log.decisions) == n + 1, 200, "decision")
        assert (log.decisions[-1].code, log.decisions[-1].segment) == (int(Decision.AGGREGATE),
                                                                        log.decisions[0].segment)
    tb.dut.departure_enable.value = 1
    tb.sink.pause = False
    await tb.sink.recv()                                  # the keyed chunk
    for _, data in frames[1:n]:
        got = await tb.sink.recv()
        assert bytes(got.tdata) == data, "a refused update left changed"
    await wait_for(tb, lambda: int(dut.status_queue_util.value) == 0, 200, "departures")


# -- pytest: build and run -------------------------------------------------------------

import olaf_queue_sim as sim  # noqa: E402


def _skip_without_simulator() -> None:
    reason = sim.missing_simulator_reason()
    if reason:
        pytest.skip(f"rtl tier: {reason}")


def vector_files_by_segments() -> dict[int, list[str]]:
    """The vectors the RTL replays (all but the token ledger's, see the module docstring), by segments."""
    groups: dict[int, list[str]] = {}
    for path in sorted(VECTOR_DIR.glob("*.json")):
        v = load(path)
        if uses_token_ledger(v):
            continue
        groups.setdefault(v["config"]["segments"], []).append(str(path))
    return groups


_VECTOR_GROUPS = vector_files_by_segments()


@pytest.mark.parametrize("segments", sorted(_VECTOR_GROUPS))
def test_rtl_vectors(segments):
    """The RTL matches every committed vector file with this segment count."""
    _skip_without_simulator()
    sim.run(build_params(segments), "vectors", extra_env={"OLAF_VECTORS": json.dumps(_VECTOR_GROUPS[segments])})


RANDOM_CASES = {
    # two-beat frames back to back: the merge path's forwarding case
    "small_frames": dict(seed=11, updates=1500, num_clusters=5, num_grads=4, hot=0.6,
                         reward_threshold=None, reconfigure_every=400),
    "reward_filter": dict(seed=12, updates=1500, num_clusters=6, num_grads=23, hot=0.5,
                          reward_threshold=reward_to_fixed(1.0), p_backpressure=0.5, reconfigure_every=500),
    # chunks (K = 3) of two-beat frames back to back with no idle input cycle: updates of one
    # key meet the previous one's key-table write (forwarding) and its segment write
    "chunks_small_frames": dict(seed=13, updates=1500, num_clusters=3, num_grads=4, hot=0.7, workers=3,
                                num_chunks=3, p_idle=0.0, reward_threshold=None, reconfigure_every=400,
                                expect_forwarding=True),
    # K = 5 (the most the vectors use), reward filtering, many interleaved workers
    "chunks_reward_filter": dict(seed=14, updates=1500, num_clusters=4, num_grads=9, hot=0.5, workers=5,
                                 num_chunks=5, reward_threshold=reward_to_fixed(1.0), p_backpressure=0.5,
                                 reconfigure_every=500),
}


@pytest.mark.parametrize("case", sorted(RANDOM_CASES))
def test_rtl_random_differential(case):
    """Random traffic with idle cycles and backpressure: RTL and model agree cycle by cycle."""
    _skip_without_simulator()
    segments = 4 if RANDOM_CASES[case].get("num_chunks", 1) <= 4 else 8
    sim.run(build_params(segments), "random_differential", extra_env={"OLAF_RANDOM": json.dumps(RANDOM_CASES[case])})


@pytest.mark.parametrize("seed", [101, 102, 103, 104])
def test_rtl_random_differential_long(seed):
    """Longer random runs (48,000 updates in all; seed 104: chunks, K = 4); `make rtl-test` sets
    OLAF_RTL_LONG=1."""
    if not os.environ.get("OLAF_RTL_LONG"):
        pytest.skip("long random run: set OLAF_RTL_LONG=1 (as `make rtl-test` does)")
    _skip_without_simulator()
    params = dict(seed=seed, updates=12000, num_clusters=7, num_grads=8 + seed % 3 * 17, hot=0.5,
                  reward_threshold=reward_to_fixed(0.5) if seed % 2 else None, reconfigure_every=1000,
                  check_structures=False, num_chunks=4 if seed == 104 else 1, workers=3 if seed < 104 else 4)
    sim.run(build_params(8 if seed % 2 else 4), "random_differential", extra_env={"OLAF_RANDOM": json.dumps(params)})


@pytest.mark.parametrize("segments", [2, 8])
def test_rtl_directed(segments):
    """Plain traffic, oversize frames, the register map and chunk errors."""
    _skip_without_simulator()
    sim.run(build_params(segments), ["plain_traffic", "oversize", "registers", "chunk_errors"])

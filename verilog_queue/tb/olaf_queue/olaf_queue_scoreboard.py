"""Differential scoreboard: the reference model (olaf.queue_model) follows the
RTL event by event and every observable is compared.

The scoreboard listens to the monitor's :class:`Cycle` records. Each frame
sent is an Olaf update; its decision is reported in arrival order, so the
n-th decision belongs to the n-th frame, which arrived at the `now` recorded
when its first beat was accepted. Per record the model applies the RTL's
events in the RTL's order (decision, release, lock) and then checks:

* decision code and segment (drops report segment 0), the frame's cluster and chunk;
* the locked and released segment;
* every departing frame bit for bit (:func:`departing_frame`) and its tuser;
* status_queue_util against the model's status (⌈occupancy / K⌉ updates);
* status_active_clusters against the model's last arrivals two cycles back
  (the activity counter's pipeline depth);
* optionally the RTL's structures (available_mem_addrs, out_mem_addrs, the
  occupancy in segments, and per key (cluster, chunk) cluster_status and
  replace_status) against the model's, and the model's own invariants.
"""

from __future__ import annotations

from collections import Counter, deque

from olaf_queue_frames import departing_frame, unpack_tuser, update_frame
from olaf_queue_tb import Cycle, OlafQueueTB

from olaf.queue_model import Decision, OlafQueue
from olaf.update import Update


class Mismatch(AssertionError):
    """The RTL and the reference model disagree."""


class DifferentialScoreboard:
    def __init__(self, tb: OlafQueueTB, model: OlafQueue, *, check_structures: bool = True,
                 check_active: bool = True):
        self.tb = tb
        self.model = model
        self.check_structures = check_structures
        self.check_active = check_active
        self.sent: deque[Update] = deque()
        self.arrivals: deque[int] = deque()
        self.owner: dict[int, tuple[Update, bool]] = {}
        self.history: deque[tuple[int, tuple]] = deque(maxlen=3)
        self.decisions: Counter = Counter()
        self.departures = 0
        self.frames_compared = 0
        self.records = 0
        self.errors: list[str] = []

    # -- stimulus bookkeeping ---------------------------------------------------

    def expect_frame(self, u: Update) -> bytes:
        """Register an update about to be sent; returns its frame bytes."""
        self.sent.append(u)
        return update_frame(u)

    # -- per-cycle check -----------------------------------------------------------

    def __call__(self, rec: Cycle) -> None:
        try:
            self._step(rec)
        except Mismatch as e:
            if len(self.errors) < 20:
                self.errors.append(f"cycle {rec.index}: {e}")

    def assert_clean(self) -> None:
        if self.errors:
            raise Mismatch(f"{len(self.errors)} mismatch(es), first: " + "; ".join(self.errors[:5]))

    def _step(self, rec: Cycle) -> None:
        self.records += 1
        m = self.model
        if rec.accepted is not None:
            self.arrivals.append(rec.accepted)
        if rec.decision is not None:
            self._enqueue(rec)
        if rec.release is not None:
            self._release(rec)
        if rec.lock is not None:
            self._lock(rec)
        if rec.queue_util != m.status_queue_util:
            raise Mismatch(f"status_queue_util {rec.queue_util}, model {m.status_queue_util} "
                           f"({m.occupancy} segments, K = {m.config.num_chunks})")
        self.history.append((rec.now, tuple(m.last_seen_ns)))
        if self.check_active and len(self.history) == 3:
            now, last_seen = self.history[0]
            w = m.config.activity_window_ns
            want = sum(1 for s in last_seen if s is not None and 0 <= now - s <= w)
            if rec.active_clusters != want:
                raise Mismatch(f"status_active_clusters {rec.active_clusters}, model {want} (now {now})")
        if self.check_structures and (rec.decision or rec.release or rec.lock is not None):
            m.check_invariants()
            self._compare_structures()

    def _enqueue(self, rec: Cycle) -> None:
        if not self.sent or not self.arrivals:
            raise Mismatch(f"decision {rec.decision} with no frame sent")
        u = self.sent.popleft()
        t = self.arrivals.popleft()
        r = self.model.enqueue(u, t)
        got = rec.decision
        want = (int(r.decision), 0 if r.segment is None else r.segment, u.cluster_id, True, u.chunk, False)
        # the model's bookkeeping first, so that later records still compare after a mismatch
        self.decisions[r.decision] += 1
        if r.decision in (Decision.APPEND, Decision.REPLACE_WORKER, Decision.REPLACE_REWARD):
            self.owner[r.segment] = (u, False)
        elif r.decision is Decision.AGGREGATE:
            self.owner[r.segment] = (self.owner[r.segment][0], True)
        if (got.code, got.segment, got.cluster_id, got.update, got.chunk, got.chunk_error) != want:
            raise Mismatch(f"enqueue of {u.cluster_id}/{u.worker_id}/{u.seq} chunk {u.chunk}: RTL {got}, model "
                           f"{r.decision.label} segment {r.segment}")

    def _lock(self, rec: Cycle) -> None:
        want = self.model.lock_head()
        if rec.lock != want:
            raise Mismatch(f"lock of segment {rec.lock}, model locks {want}")

    def _release(self, rec: Cycle) -> None:
        seg, cluster = rec.release
        if self.model.locked is None:
            raise Mismatch(f"release of segment {seg} without a lock in the model")
        dep = self.model.dequeue()
        if dep is None or dep.segment != seg or dep.update.cluster_id != cluster:
            raise Mismatch(f"release of segment {seg} (cluster {cluster}), model {dep}")
        self.departures += 1
        owner, merged = self.owner.pop(seg)
        if self.tb.sink.empty():
            raise Mismatch(f"release of segment {seg} but no frame left on m_axis")
        got = self.tb.sink.recv_nowait()
        want = departing_frame(owner, dep.update, merged)
        if bytes(got.tdata) != want:
            raise Mismatch(f"departing frame of segment {seg} differs: RTL {bytes(got.tdata).hex()} "
                           f"expected {want.hex()}")
        user = unpack_tuser(got.tuser[0] if isinstance(got.tuser, list) else got.tuser)
        u = dep.update
        if (user.update_valid, user.cluster_id, user.worker_id, user.count, user.reward_sum, user.gen_ts) != (
                1, u.cluster_id, u.worker_id, u.count, u.reward_sum, u.gen_ts):
            raise Mismatch(f"m_axis_tuser {user} for departing {u}")
        self.frames_compared += 1

    # -- white-box comparison of the paper's structures ------------------------------

    def _compare_structures(self) -> None:
        m = self.model
        rtl = read_structures(self.tb.dut, self.tb.segments, m.config.num_clusters, m.config.num_chunks,
                              self.tb.max_chunks)
        want = {
            "occupancy": m.occupancy,
            "available_mem_addrs": list(m.available_mem_addrs),
            "out_mem_addrs": list(m.out_mem_addrs),
            "cluster_status": list(m.cluster_status),
            "replace_status": [(r.flag, r.worker_id) for r in m.replace_status],
            "locked": m.locked,
        }
        for key, value in want.items():
            if rtl[key] != value:
                raise Mismatch(f"{key}: RTL {rtl[key]}, model {value}")


def key_address(cluster: int, chunk: int, max_chunks: int) -> int:
    """The RTL key table's address of key (cluster, chunk): {cluster, chunk}, the chunk in
    clog2(MAX_CHUNKS) bits (olaf_queue_ctrl.v "Keys")."""
    return cluster << max(max_chunks - 1, 0).bit_length() | chunk


def read_structures(dut, segments: int, num_clusters: int, num_chunks: int = 1, max_chunks: int = 1) -> dict:
    """The RTL's queue structures, in the model's terms (white-box read).

    ``cluster_status`` and ``replace_status`` are listed per key in the model's order
    (key ``cluster · K + chunk``). A key's word in the RTL's key table counts only while
    it is live: its segment is marked in ``seg_in_status`` and belongs to the key.
    """
    c = dut.ctrl_inst
    occ = int(c.occupancy.value)
    rp = int(c.read_ptr.value)
    wp = int(c.write_ptr.value)
    out = [int(c.out_mem_addrs[(rp + i) % segments].value) for i in range(occ)]
    avail = [int(c.available_mem_addrs[(wp + i) % segments].value) for i in range(segments - occ)]
    in_status = int(c.seg_in_status.value)
    cluster_status: list = []
    replace: list = []
    for cluster in range(num_clusters):
        for chunk in range(num_chunks):
            addr = key_address(cluster, chunk, max_chunks)
            word = int(c.key_table[addr].value)
            seg, flag, worker = word >> 17, (word >> 16) & 1, word & 0xFFFF
            live = seg < segments and (in_status >> seg) & 1 and int(c.seg_key[seg].value) == addr
            cluster_status.append(seg if live else None)
            replace.append((bool(flag), worker) if live else (False, 0))
    locked = int(c.locked_seg.value) if int(c.locked.value) else None
    return {"occupancy": occ, "available_mem_addrs": avail, "out_mem_addrs": out,
            "cluster_status": cluster_status, "replace_status": replace, "locked": locked}

"""The parameter server (paper §2.1): ``olaf ps``.

Listens for Olaf updates on UDP (default port 50100), decodes each with
:func:`olaf.wire.parse_update`, applies :class:`~olaf.hosts.global_model.GlobalModel`
(INIT handling and the update rule: the paper's reward-gated averaged gradient
by default, SGD or Adam steps as alternatives) and, in the default ``async``
training mode, answers **every** decodable update of the right size with an ACK to
``(update's source IP, UDP 50101)``, sent from the update port. In the
``async_with_aggr`` and ``sync`` modes (:mod:`olaf.hosts.modes`) updates are
summed into windows and each flush broadcasts one ACK per cluster; INITs and
updates before INIT are still ACKed at once. The ACK carries
the update's ``cluster_id``, ``worker_id``, ``seq``, ``count`` and ``gen_ts``,
the global reward (Q15.16, ``INT32_MIN`` = −∞) and the global weights (Q7.24;
none before the model is initialised); flags 0 — an Olaf switch on the path
fills the queue status and sets STATUS_VALID.

**Chunks** (``docs/protocol.md`` "Chunks", :mod:`olaf.chunks`): with ``num_params`` P and
``mtu`` configured, the model travels as K = ``Chunking.for_model(P, mtu).num_chunks`` chunks of
L elements. Every chunk is handled alone as it arrives: the global model applies it to its slice
(per-slice gate, ``g_a``, Adam moments and schedule, :mod:`olaf.hosts.global_model`) and the ACK
answers it with that slice's weights (unpadded) and that slice's ``r_g``, ``chunk`` and
``num_chunks`` set. An INIT chunk initialises its slice. A chunk whose ``num_chunks`` is not K or
whose ``num_grads`` is not L (a worker of another model size or MTU) is *wrong_size*: counted by
field in ``wrong_size_reasons``, logged with ``reason``, never applied, refused. Without
``num_params`` the PS is K = 1 and the first INIT sets P (a chunked update is then wrong_size,
reason ``num_chunks``).

Log ``<name>.jsonl`` (see :mod:`olaf.hosts.runlog`; the records are the models of
:mod:`olaf.rundir.records`), one record per datagram:

* ``{"ev": "update", "t_ns", "src", "cluster_id", "worker_id", "seq", "count",
  "gen_ts", "reward_sum", "reward", "init", "outcome", "global_reward"}`` —
  ``t_ns`` the reception time (``CLOCK_REALTIME`` ns), ``reward`` the mean
  reward ``reward_sum/count`` as a float, ``init`` the INIT flag, ``outcome``
  one of :class:`~olaf.hosts.global_model.Outcome`, ``global_reward`` the
  global reward after it (float, null for −∞; K > 1: of the chunk's slice, and ``chunk``,
  ``num_chunks`` are set). ``wrong_size`` updates are never applied; their ``reason`` names the field
  and the sender gets a refusal (docs/protocol.md "Refusal"), as does a ``before_init`` update
  (``no_model``) and an ``init_ignored`` INIT while the slice has no weights (``init_source``).
  In the aggregating modes an update's outcome is ``buffered``. ``version`` is the slice's version
  after the update (chunks applied to it so far: the model its ACK carries), ``staleness`` the PS's
  estimate δ̂ of a non-INIT update's staleness (:mod:`olaf.hosts.staleness`).
* ``{"ev": "flush", "t_ns", "updates", "count", "reward", "outcome", "global_reward",
  "acks", "by"}`` — a window applied (``by`` = ``size`` or ``time``), ``reward``
  its mean reward, ``acks`` the broadcast ACKs sent.
* ``{"ev": "malformed", "t_ns", "src", "len", "reason"}`` — dropped, no ACK;
* ``{"ev": "untrusted", "t_ns", "src", "reason", "init", "cluster_id", "worker_id", "seq",
  "count"}`` — decoded but refused by the trust checks (:mod:`olaf.hosts.trust`: ``source``,
  ``reward``, ``gen_ts``): refused (the refusal names the reason), except ``source``, which
  gets no answer (an answer to an unadmitted source would make the PS a reflector); malformed
  datagrams get none either. Both are logged for the first 100 datagrams of each reason,
  then only counted.

Summary ``<name>.summary.json``: counters (``datagrams``, ``updates``,
``inits``, ``malformed`` and ``malformed_reasons``, ``untrusted`` and ``untrusted_reasons``,
``init_source`` (INITs of allowed workers other than ``init_from``, answered but not used),
``refusals_sent`` and ``refusal_reasons``, ``socket_drops`` (datagrams the kernel dropped for a
full receive buffer, ``SO_RXQ_OVFL``; ``rcvbuf_bytes`` the buffer granted, ``rcvbuf_advice`` how
to lift a cap that shrank it), outcomes, ``acks_sent``,
``ack_errors``, ``flushes``), per-cluster counts (over all chunks), ``per_chunk`` (cluster →
chunk → ``chunks`` received, ``worker_updates`` = Σ ``count``, ``acked``, one counter per
outcome), ``wrong_size_reasons``, ``num_chunks``/``chunk_len``, the final global reward (K > 1:
the lowest slice's ``r_g``; ``global_rewards`` per slice) and weights, the rule (``step``,
``gate``, ``mode``) and ``t_start_ns``/``t_stop_ns``.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from olaf.chunks import Chunking
from olaf.constants import MTU, SOCKET_RCVBUF
from olaf.fixedpoint import INT32_MIN, reward_from_fixed
from olaf.hosts.checkpoint import CheckpointError, read_checkpoint, write_checkpoint
from olaf.hosts.global_model import GlobalModel, Outcome, Step
from olaf.hosts.modes import Aggregator, Mode, ModeParams, staleness_scale
from olaf.hosts.runlog import OutputFiles
from olaf.hosts.staleness import StalenessTracker
from olaf.hosts.trust import Reject, TrustPolicy
from olaf.rundir.atomic import write_json
from olaf.rundir.jsonl import JsonlLog
from olaf.rundir.records import (
    FlushRecord,
    MalformedRecord,
    PsStart,
    PsSummary,
    StopRecord,
    UntrustedRecord,
    UpdateRecord,
)
from olaf.udpsock import ANC_SPACE, dropped, rcvbuf_advice, rcvbuf_granted, udp_bound
from olaf.update import Update
from olaf.wire import (
    ACK_PORT,
    UPDATE_PORT,
    MalformedOlafPacket,
    encode_ack,
    parse_update,
    update_elements,
    update_is_init,
)

RECV_BUF = 65535
LOGGED_PER_REASON = 100
"""Malformed or rejected datagrams logged one by one per reason; later ones are only counted
(a flood of bad datagrams cannot fill the disk)."""


@dataclass(frozen=True)
class PsConfig(OutputFiles):
    """PS options (``olaf ps``).

    Attributes:
        bind_ip, port: where to listen for updates (port 50100 by protocol).
        ack_port: UDP destination port of ACKs (50101 by protocol).
        lr: learning rate ``γ``.
        lr_final, lr_decay_updates: ``γ`` falls linearly to ``lr_final`` over this many worker
            updates (:mod:`olaf.hosts.global_model`; None: constant).
        step: optimizer step (:class:`~olaf.hosts.global_model.Step` value).
        gate: reward gating (None: on for ``paper``, off otherwise).
        modes: training mode and its parameters.
        duration_s: stop after this many seconds (None: until stopped).
        out_dir, name: log ``out_dir/name.jsonl``, summary ``out_dir/name.summary.json``.
        flush_s: log flush interval, seconds.
        rcvbuf: socket receive buffer to ask for, bytes (:func:`olaf.udpsock.udp_socket`: the kernel
            caps it at ``net.core.rmem_max`` unless the PS has ``CAP_NET_ADMIN``); a job's PS asks
            for a burst of one update from every worker (:func:`olaf.hosts.jobconfig.ps_config`).
            The summary gives what was granted (``rcvbuf_bytes``) and, if less, how to lift the cap.
        trust: what the PS accepts (:mod:`olaf.hosts.trust`).
        checkpoint_s: write ``out_dir/name.checkpoint.npz`` (:mod:`olaf.hosts.checkpoint`) this often,
            seconds, and when the PS stops (None: only when it stops).
        snapshot_s: also keep a copy of the checkpoint every this many seconds of the PS's run, as
            ``out_dir/name.snapshots/<k>.npz`` (k: the multiple of ``snapshot_s`` since the PS started,
            six digits), once the model is initialised: the series an evaluator scores on a fixed
            schedule however far behind it falls (None: no series).
        resume_from: a checkpoint to continue from (its weights, optimizer state and ``r_g``).
        staleness_root: Stellaris Eq. 4's root factor ``v`` (≥ 1): every update's direction is scaled
            by ``1 / δ̂^(1/v)`` before it is applied or summed (:func:`olaf.hosts.modes.staleness_scale`);
            None: no scaling.
        worker_ack_wait_ms: the workers' ``--ack-wait-ms``: an ACK sent to a worker this soon after its
            update is the base of its next one (:mod:`olaf.hosts.staleness`, the staleness estimate).
        ack_each_worker: in the aggregating modes, a flush answers every worker the PS has heard from
            (its latest message) instead of one ACK per cluster: for a PS without an Olaf switch in
            front (loopback), where nothing multicasts a cluster's ACK to its workers.
        num_params: P, the model's parameter count; with ``mtu`` it fixes the chunking (K, L) that
            every worker must use. None: K = 1, the first INIT sets P.
        mtu: IPv4 MTU of the links, bytes (the chunking's; used with ``num_params``).

    Raises:
        ValueError: a model that cannot be chunked at ``mtu`` (:class:`olaf.chunks.ChunkingError`).
    """

    bind_ip: str = "0.0.0.0"
    port: int = UPDATE_PORT
    ack_port: int = ACK_PORT
    lr: float = 0.001
    lr_final: Optional[float] = None
    lr_decay_updates: Optional[int] = None
    step: str = Step.PAPER.value
    gate: Optional[bool] = None
    modes: ModeParams = field(default_factory=ModeParams)
    duration_s: Optional[float] = None
    out_dir: Path = Path(".")
    name: str = "ps"
    flush_s: float = 0.5
    rcvbuf: int = SOCKET_RCVBUF
    trust: TrustPolicy = field(default_factory=TrustPolicy)
    checkpoint_s: Optional[float] = None
    snapshot_s: Optional[float] = None
    resume_from: Optional[Path] = None
    num_params: Optional[int] = None
    mtu: int = MTU
    staleness_root: Optional[int] = None
    worker_ack_wait_ms: float = 0.0
    ack_each_worker: bool = False

    def __post_init__(self) -> None:
        _ = self.chunking  # raises ChunkingError (a ValueError) naming P, K and the limit
        if self.staleness_root is not None and self.staleness_root < 1:
            raise ValueError(f"staleness_root={self.staleness_root}: Stellaris' v must be an integer >= 1")

    @property
    def chunking(self) -> Optional[Chunking]:
        """The model's chunking (None: K = 1, size from the first INIT)."""
        return None if self.num_params is None else Chunking.for_model(self.num_params, self.mtu)

    @property
    def checkpoint_path(self) -> Path:
        """``out_dir/name.checkpoint.npz``."""
        return Path(self.out_dir) / f"{self.name}.checkpoint.npz"

    @property
    def snapshot_dir(self) -> Path:
        """``out_dir/name.snapshots``: the series of :attr:`snapshot_s`."""
        return Path(self.out_dir) / f"{self.name}.snapshots"


def _reason_key(message: str) -> str:
    """Group malformed-packet messages by kind: text before ':' with numbers elided."""
    return re.sub(r"\d+", "N", message.split(":")[0]).strip()


class ParameterServer:
    """One PS on one UDP socket. :meth:`run` serves until ``stop`` is set or the duration ends."""

    def __init__(self, cfg: PsConfig, stop: Optional[threading.Event] = None) -> None:
        self.cfg = cfg
        self.stop = stop or threading.Event()
        self.model = GlobalModel(cfg.lr, cfg.step, cfg.gate, cfg.lr_final, cfg.lr_decay_updates, cfg.chunking)
        if cfg.resume_from is not None:
            ck = read_checkpoint(cfg.resume_from)
            try:
                self.model.load_state(ck.state)
            except ValueError as e:
                raise CheckpointError(f"{cfg.resume_from}: {e}") from None
        self.aggregator = None if cfg.modes.mode is Mode.ASYNC else Aggregator(cfg.modes)
        if self.aggregator is not None and cfg.resume_from is not None:
            try:
                self.aggregator.load_state(ck.state, time.time_ns())
            except ValueError as e:
                raise CheckpointError(f"{cfg.resume_from}: {e}") from None
        self.counters: Counter[str] = Counter()
        self.malformed_reasons: Counter[str] = Counter()
        self.untrusted_reasons: Counter[str] = Counter()
        self._t_start = time.time_ns()
        self.per_cluster: dict[int, Counter[str]] = defaultdict(Counter)
        self.per_chunk: dict[tuple[int, int], Counter[str]] = defaultdict(Counter)
        """(cluster, chunk) → ``chunks`` received, ``worker_updates`` (Σ count), ``acked``, outcomes."""
        self.wrong_size_reasons: Counter[str] = Counter()
        self.refusal_reasons: Counter[str] = Counter()
        self.staleness = StalenessTracker(int(cfg.worker_ack_wait_ms * 1e6))
        """What the PS sent to each worker and when: its estimate of an update's staleness."""
        self.sock = udp_bound((cfg.bind_ip, cfg.port), cfg.rcvbuf, who="PS")
        self.rcvbuf_bytes = rcvbuf_granted(self.sock)
        """The receive buffer the kernel granted, bytes (:func:`olaf.udpsock.rcvbuf_granted`)."""
        self.ready = threading.Event()
        """Set once the socket is bound and the log is open (for in-process users)."""
        self.on_progress: Optional[Callable[[dict[str, Any]], None]] = None
        """Called from the receive loop every :attr:`progress_s` with :meth:`summary` so far (without
        the weights; ``stop_reason`` ``running``): ``olaf ps``'s progress line."""
        self.progress_s = 10.0

    def run(self) -> dict[str, Any]:
        """Receive, update, ACK and log until stopped; write and return the summary."""
        cfg = self.cfg
        log = JsonlLog(cfg.log_path, cfg.flush_s)
        t_start = self._t_start = time.time_ns()
        log.write(PsStart(ev="start", role="ps", t_ns=t_start, bind=f"{cfg.bind_ip}:{cfg.port}",
                          ack_port=cfg.ack_port, lr=cfg.lr, lr_final=cfg.lr_final,
                          lr_decay_updates=cfg.lr_decay_updates, step=self.model.step.value, gate=self.model.gate,
                          mode=cfg.modes.mode.value, modes={k: getattr(cfg.modes, k) for k in (
                              "aggr_k", "aggr_t_ms", "sync_workers", "round_timeout_ms")},
                          duration_s=cfg.duration_s))
        deadline = None if cfg.duration_s is None else t_start + int(cfg.duration_s * 1e9)
        every_ns = None if cfg.checkpoint_s is None else int(cfg.checkpoint_s * 1e9)
        next_checkpoint = None if every_ns is None else t_start + every_ns
        snap_ns = None if cfg.snapshot_s is None else int(cfg.snapshot_s * 1e9)
        next_snapshot = None if snap_ns is None else t_start + snap_ns
        self.ready.set()
        reason = "signal"
        next_progress = t_start + int(self.progress_s * 1e9)
        try:
            while not self.stop.is_set():
                now = time.time_ns()
                if self.on_progress is not None and now >= next_progress:
                    self.on_progress(self.summary(t_start, now, "running", weights=False))
                    next_progress = now + int(self.progress_s * 1e9)
                if deadline is not None and now >= deadline:
                    reason = "duration"
                    break
                if next_checkpoint is not None and every_ns is not None and now >= next_checkpoint:
                    self.checkpoint(now)
                    next_checkpoint = now + every_ns
                if next_snapshot is not None and snap_ns is not None and now >= next_snapshot:
                    k = (now - t_start) // snap_ns
                    self.checkpoint(now, cfg.snapshot_dir / f"{k:06d}.npz")
                    next_snapshot = t_start + (k + 1) * snap_ns
                wait_ns = 100_000_000
                flush_at = None if self.aggregator is None else self.aggregator.deadline_ns()
                if flush_at is not None:
                    if now >= flush_at:
                        self._flush(now, log, "time")
                        continue
                    wait_ns = min(wait_ns, flush_at - now)
                self.sock.settimeout(max(wait_ns, 1000) / 1e9)
                try:
                    data, ancdata, _flags, (src, _sport) = self.sock.recvmsg(RECV_BUF, ANC_SPACE)
                except socket.timeout:
                    log.tick()
                    continue
                self._socket_drops(ancdata)
                self._handle(data, src, time.time_ns(), log)
        finally:
            self.sock.close()
            t_stop = time.time_ns()
            self.checkpoint(t_stop)
            summary = self.summary(t_start, t_stop, reason)
            log.write(StopRecord(ev="stop", t_ns=t_stop, reason=reason))
            log.close()
            write_json(cfg.summary_path, summary)
        return summary

    def checkpoint(self, t_ns: int, path: Optional[Path] = None) -> None:
        """Write the model's state to ``path`` (default :attr:`PsConfig.checkpoint_path`; nothing
        before INIT); a write error is counted (``checkpoint_errors``), never fatal."""
        if not self.model.initialised:
            return
        updates, worker_updates = self.updates_at_chunk0()
        state = self.model.state()
        if self.aggregator is not None:
            c = self.model.chunking
            assert c is not None
            state.update(self.aggregator.state(c.num_chunks, c.chunk_len))
        try:
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
            write_checkpoint(path or self.cfg.checkpoint_path, state, t_ns, updates, worker_updates)
            self.counters["checkpoints"] += 1
        except OSError:
            self.counters["checkpoint_errors"] += 1

    def updates_at_chunk0(self) -> tuple[int, int]:
        """``(messages, worker updates in them)`` received for chunk 0 (every update with K = 1):
        chunk 0 stands for the update when each of its K chunks is a message."""
        msgs = sum(c["chunks"] for (_, k), c in self.per_chunk.items() if k == 0)
        return msgs, sum(c["worker_updates"] for (_, k), c in self.per_chunk.items() if k == 0)

    def _direction(self, outcome: Outcome) -> dict[str, float]:
        """``norm`` and ``cos_prev`` of an update just applied (empty otherwise), rounded for the log."""
        if outcome is not Outcome.ACCEPTED or self.model.last_direction is None:
            return {}
        norm, cos = self.model.last_direction
        return {"norm": round(norm, 6), **({} if cos is None else {"cos_prev": round(cos, 4)})}

    def _socket_drops(self, ancdata: list[tuple[int, int, bytes]]) -> None:
        """``socket_drops``: datagrams the kernel dropped because the receive buffer was full
        (``SO_RXQ_OVFL``, a cumulative uint32 on each datagram; socket(7))."""
        n = dropped(ancdata)
        if n is not None:
            self.counters["socket_drops"] = max(self.counters["socket_drops"], n)

    def _handle(self, data: bytes, src: str, t_ns: int, log: JsonlLog) -> None:
        self.counters["datagrams"] += 1
        try:
            u = parse_update(data)
        except MalformedOlafPacket as e:
            self.counters["malformed"] += 1
            key = _reason_key(str(e))
            self.malformed_reasons[key] += 1
            if self.malformed_reasons[key] <= LOGGED_PER_REASON:
                log.write(MalformedRecord(ev="malformed", t_ns=t_ns, src=src, len=len(data), reason=str(e)))
            return
        init = update_is_init(data)
        reject = self.cfg.trust.check(u, init, src, t_ns, self._t_start)
        if reject is not None:
            self.counters["untrusted"] += 1
            if not init:
                self.per_cluster[u.cluster_id]["untrusted"] += 1
            self.untrusted_reasons[reject.value] += 1
            if self.untrusted_reasons[reject.value] <= LOGGED_PER_REASON:
                log.write(UntrustedRecord(ev="untrusted", t_ns=t_ns, src=src, reason=reject.value, init=init,
                                          cluster_id=u.cluster_id, worker_id=u.worker_id, seq=u.seq, count=u.count))
            if reject is not Reject.SOURCE:  # an admitted sender learns why; any other gets no answer
                self._refuse(u, src, reject.value)
            return
        full = False
        refusal: Optional[str] = None  # docs/protocol.md "Refusal"
        mismatch = self.model.mismatch(u.num_chunks, len(u.grads))
        stale = None
        if mismatch is None:  # an INIT starts the worker's first iteration as an update starts its next
            stale = self.staleness.on_update((u.cluster_id, u.worker_id, u.chunk), t_ns, self.model.version(u.chunk))
            stale = None if init else stale
        if mismatch is not None:
            outcome, refusal = Outcome.WRONG_SIZE, mismatch.value
            self.wrong_size_reasons[mismatch.value] += 1
        elif init and not self.cfg.trust.may_set_weights(src) and not self.model.slice_ready(u.chunk):
            self.counters["init_source"] += 1  # refused: it cannot set the weights, and there are none yet
            outcome, refusal = Outcome.INIT_IGNORED, "init_source"
        elif init:
            outcome = self.model.init(u.grads, u.chunk)
        elif self.aggregator is not None and self.model.slice_ready(u.chunk):
            full = self.aggregator.add(u, src, t_ns, stale, staleness_scale(stale, self.cfg.staleness_root),
                                       update_elements(data))
            outcome = Outcome.BUFFERED
        else:
            outcome = self.model.apply(u, staleness_scale(stale, self.cfg.staleness_root), update_elements(data))
        if self.aggregator is not None and outcome is not Outcome.WRONG_SIZE:
            self.aggregator.see(u, src)
        self.counters["inits" if init else "updates"] += 1
        self.counters[outcome.value] += 1
        if not init:
            c = self.per_cluster[u.cluster_id]
            c["updates"] += 1
            c["worker_updates"] += u.count
            c[outcome.value] += 1
            if mismatch is None:
                k = self.per_chunk[(u.cluster_id, u.chunk)]
                k["chunks"] += 1
                k["worker_updates"] += u.count
                k[outcome.value] += 1
        chunked = u.num_chunks > 1
        rec = UpdateRecord(ev="update", t_ns=t_ns, src=src, cluster_id=u.cluster_id, worker_id=u.worker_id,
                           seq=u.seq, count=u.count, gen_ts=u.gen_ts, reward_sum=u.reward_sum,
                           reward=reward_from_fixed(u.reward_sum) / u.count, init=init, outcome=outcome,
                           global_reward=None if mismatch is not None else self.model.global_reward(u.chunk),
                           **({"chunk": u.chunk, "num_chunks": u.num_chunks} if chunked else {}),
                           **({"reason": mismatch.value} if mismatch is not None else {}),
                           **({} if mismatch is not None else {"version": self.model.version(u.chunk)}),
                           **({} if stale is None else {"staleness": stale}),
                           **self._direction(outcome))
        log.write(rec)
        if outcome is Outcome.BUFFERED:
            if full:
                self._flush(t_ns, log, "size", u.chunk)
            return
        if outcome is Outcome.BEFORE_INIT:
            refusal = "no_model"
        if refusal is not None:
            self._refuse(u, src, refusal)
        else:
            self._ack(u.cluster_id, u.worker_id, u.seq, u.count, u.gen_ts, src, u.chunk, count_key=not init)

    def _refuse(self, u: Update, dst: str, reason: str) -> None:
        """Send the refusal of ``u`` (docs/protocol.md "Refusal": the ACK of ``u`` without weights,
        flag ``REFUSED_<reason>``), counted in ``refusals_sent`` and ``refusal_reasons``. It does not
        count as an ACK of the key (``acked``) nor as one the staleness estimate saw."""
        ack = encode_ack(cluster_id=u.cluster_id, worker_id=u.worker_id, seq=u.seq, count=u.count,
                         global_reward=INT32_MIN, gen_ts=u.gen_ts, weights=b"", chunk=u.chunk,
                         num_chunks=u.num_chunks, refusal=reason)
        try:
            self.sock.sendto(ack, (dst, self.cfg.ack_port))
            self.counters["refusals_sent"] += 1
            self.refusal_reasons[reason] += 1
        except OSError:
            self.counters["ack_errors"] += 1

    def _ack(self, cluster_id: int, worker_id: int, seq: int, count: int, gen_ts: int, dst: str, chunk: int,
             count_key: bool = True) -> None:
        """Send slice ``chunk``'s ACK; ``count_key``: count it in ``per_chunk[(cluster, chunk)]["acked"]``."""
        ack = encode_ack(cluster_id=cluster_id, worker_id=worker_id, seq=seq, count=count,
                         global_reward=self.model.global_reward_fixed(chunk), gen_ts=gen_ts,
                         weights=self.model.ack_weight_bytes(chunk), chunk=chunk, num_chunks=self.model.num_chunks)
        self.staleness.on_ack((cluster_id, worker_id, chunk), time.time_ns(), self.model.version(chunk))
        try:
            self.sock.sendto(ack, (dst, self.cfg.ack_port))
            self.counters["acks_sent"] += 1
            if count_key:
                self.per_chunk[(cluster_id, chunk)]["acked"] += 1
        except OSError:
            self.counters["ack_errors"] += 1

    def _flush(self, t_ns: int, log: JsonlLog, by: str, chunk: Optional[int] = None) -> None:
        """Apply chunk ``chunk``'s open window (None: the one due first) as one update of its slice
        and broadcast one ACK of that slice per known cluster, or per known worker with
        ``ack_each_worker`` (:mod:`olaf.hosts.modes`)."""
        assert self.aggregator is not None
        stellaris = self.cfg.modes.mode is Mode.STELLARIS
        due = self.aggregator.window if chunk is None else self.aggregator.windows.get(chunk)
        beta = self.aggregator.beta(due.chunk) if stellaris and due is not None else None
        w = self.aggregator.take(chunk)
        assert w.grad_sum is not None
        outcome = self.model.apply_sums(w.reward_sum, w.count, w.grad_sum, w.chunk)
        self.counters["flushes"] += 1
        self.counters[outcome.value] += 1
        for c in w.clusters:
            self.per_cluster[c][outcome.value] += 1
            self.per_chunk[(c, w.chunk)][f"flush_{outcome.value}"] += 1
        if self.cfg.ack_each_worker:
            dests = [(c, last) for (c, _), last in sorted(self.aggregator.workers.items())]
        else:
            dests = [(c, w.clusters.get(c, last)) for c, last in sorted(self.aggregator.known.items())]
        for c, mine in dests:
            self._ack(c, mine.worker_id, mine.seq, mine.count, mine.gen_ts, mine.src, w.chunk)
        log.write(FlushRecord(ev="flush", t_ns=t_ns, updates=w.updates, count=w.count,
                              reward=reward_from_fixed(w.reward_sum) / w.count, outcome=outcome,
                              global_reward=self.model.global_reward(w.chunk), acks=len(dests), by=by,
                              **({"chunk": w.chunk} if self.model.num_chunks > 1 else {}),
                              **({"staleness": round(w.mean_staleness, 4)}
                                 if stellaris and w.mean_staleness is not None else {}),
                              **({"beta": round(beta, 4)} if beta is not None and beta != float("inf") else {})))

    def summary(self, t_start: int, t_stop: int, reason: str, *, weights: bool = True) -> dict[str, Any]:
        """Counters and final state (the ``<name>.summary.json`` content, a :class:`PsSummary`);
        ``weights=False`` leaves the global weights out (None)."""
        keys = ["datagrams", "updates", "inits", "malformed", "untrusted", "init_source", "socket_drops",
                "acks_sent", "refusals_sent", "ack_errors", "flushes", "checkpoints",
                "checkpoint_errors"] + [o.value for o in Outcome]
        m = self.model
        return PsSummary(**{
            "role": "ps",
            "name": self.cfg.name,
            "bind": f"{self.cfg.bind_ip}:{self.cfg.port}",
            "lr": self.cfg.lr,
            "lr_final": self.cfg.lr_final,
            "lr_decay_updates": self.cfg.lr_decay_updates,
            "step": m.step.value,
            "gate": m.gate,
            "mode": self.cfg.modes.mode.value,
            "t_start_ns": t_start,
            "t_stop_ns": t_stop,
            "stop_reason": reason,
            **{k: self.counters[k] for k in keys},
            "rcvbuf_bytes": self.rcvbuf_bytes,
            "rcvbuf_advice": rcvbuf_advice(self.cfg.rcvbuf, self.rcvbuf_bytes),
            "malformed_reasons": dict(self.malformed_reasons),
            "untrusted_reasons": dict(self.untrusted_reasons),
            "trust": {"allowed_sources": None if self.cfg.trust.allowed_sources is None else
                      sorted(self.cfg.trust.allowed_sources), "init_from": self.cfg.trust.init_from,
                      "max_abs_reward": self.cfg.trust.max_abs_reward, "gen_ts_slack_s": self.cfg.trust.gen_ts_slack_s},
            "per_cluster": {str(c): dict(v) for c, v in sorted(self.per_cluster.items())},
            "per_chunk": {str(c): {str(k): dict(v) for (cc, k), v in sorted(self.per_chunk.items()) if cc == c}
                          for c in sorted({c for c, _ in self.per_chunk})},
            "wrong_size_reasons": dict(self.wrong_size_reasons),
            "refusal_reasons": dict(self.refusal_reasons),
            "num_chunks": m.num_chunks,
            "chunk_len": None if m.chunking is None else m.chunking.chunk_len,
            "global_rewards": m.global_rewards(),
            "global_reward": None if not m.global_rewards() or None in m.global_rewards() else min(
                r for r in m.global_rewards() if r is not None),
            "num_weights": m.num_weights,
            "weights": None if m.weights is None or not weights else m.weights.tolist(),
            "resumed_from": None if self.cfg.resume_from is None else str(self.cfg.resume_from),
            "cpu_s": round(time.process_time(), 3),
        }).dump()

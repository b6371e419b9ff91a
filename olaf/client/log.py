"""A worker log for any client: :class:`ClientRecorder`, the records ``olaf worker`` writes
(``olaf/rundir/records.py``: ``start``, ``go``, ``init``, ``gen``, ``ack``, ``malformed_ack``,
``stop`` and ``<name>.summary.json``), written from an :class:`~olaf.client.OlafClient`'s event
hooks, so ``olaf report`` (per-cluster accounting, AoM, the plots) reads a user's own training
loop as it reads Olaf's workers.

    rec = ClientRecorder(run_dir / "hosts", "w1")
    client = OlafClient(ps, num_params=P, bind=ip, events=rec)
    rec.start(client)            # the start and go records: the client is up, its loop begins now
    ...                          # init, push, adopt: each logged from the client's hooks
    client.close()               # the stop record and the summary

The integrations (:mod:`olaf.integrations`) do this themselves when started by ``olaf launch``
(:func:`recorder_from_env`: the launch's run directory, ``w<rank + 1>``). A loop drives its own
iterations, so a ``gen`` record's schedule fields are what a client knows: ``late_ms`` 0 and the
iteration's index; ``exp_reward`` None (no bandit).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Optional

from olaf.client.events import AckKey, ClientEvents
from olaf.fixedpoint import INT32_MIN, reward_from_fixed
from olaf.rundir.atomic import write_json
from olaf.rundir.jsonl import JsonlLog
from olaf.rundir.records import (
    AckRecord,
    GenRecord,
    GoRecord,
    InitRecord,
    MalformedAckRecord,
    Record,
    StopRecord,
    WorkerStart,
    WorkerSummary,
)
from olaf.wire import Ack

ENV_LOG_DIR = "OLAF_LOG_DIR"
"""Set by ``olaf launch``: the directory of the launch's host logs (``<run>/hosts``)."""


def init_record(t_ns: int, retry: bool) -> InitRecord:
    return InitRecord(ev="init", t_ns=t_ns, retry=retry)


def ack_record(t_ns: int, ack: Ack, own: bool) -> AckRecord:
    """The ``ack`` record of ``ack`` (received at ``t_ns``; ``own``: it answers this worker's update)."""
    st = ack.status
    return AckRecord(
        ev="ack", t_ns=t_ns, cluster_id=ack.cluster_id, worker_id=ack.worker_id, seq=ack.seq, count=ack.count,
        gen_ts=ack.gen_ts, global_reward=None if ack.global_reward == INT32_MIN else reward_from_fixed(ack.global_reward),
        weights=len(ack.weights), own=own, status=None if st is None else (st.queue_util, st.active_clusters, st.queue_size),
        **({"chunk": ack.chunk, "num_chunks": ack.num_chunks} if ack.num_chunks > 1 else {}),
        **({"refusal": ack.refusal} if ack.refusal is not None else {}))


def malformed_ack_record(t_ns: int, length: int, reason: str) -> MalformedAckRecord:
    return MalformedAckRecord(ev="malformed_ack", t_ns=t_ns, len=length, reason=reason)


def gen_record(result: Any, *, idx: int, late_ms: float, chunked: bool, adopted_slices: int,
               base: Optional[AckKey], own_reward: Optional[float] = None,
               info: Optional[Mapping[str, Any]] = None) -> GenRecord:
    """The ``gen`` record of push ``result`` (a :class:`~olaf.client.PushResult`): iteration ``idx``,
    ``late_ms`` after it was due, ``adopted_slices`` adopted before it, ``base`` the ACK of the newest
    slice 0 adopted; ``own_reward`` the iteration's own mean return (the record's reward when the
    push was not sent); ``info`` the task's fields (``exp_reward``, PPO's losses, …). ``olaf worker``
    and :class:`ClientRecorder` write it alike."""
    d, extra = result.decision, dict(info or {})
    rec: dict[str, Any] = {
        "ev": "gen", "t_ns": result.gen_ts, "idx": idx, "late_ms": late_ms, "sent": False, "seq": None,
        "reward": own_reward, "folded": None, "adopted": adopted_slices > 0,
        "base": None if base is None else list(base), "exp_reward": extra.pop("exp_reward", None),
        "reason": "no_episode" if result.reason == "no_episode" else d.reason, "p_send": d.p_send, "draw": d.draw,
        "delta_hat_ms": d.delta_hat_ms, "N": d.active_clusters, "q_max": d.queue_size, **extra}
    if chunked:
        rec["adopted_slices"] = adopted_slices
    if result.sent:
        rec.update(sent=True, seq=result.seq, reward=result.reward, folded=result.folded, saturated=result.saturated,
                   **({"chunks": result.chunks} if chunked else {}))
    return GenRecord(**rec)


SUMMARY_COUNTERS = ("sent", "skipped", "init_sent", "init_chunks_sent", "send_errors", "acks", "acks_own",
                    "acks_malformed", "acks_foreign", "acks_wrong_size", "recv_errors", "callback_errors",
                    "handling_errors", "socket_drops", "slices_superseded", "rcvbuf_bytes", "rcvbuf_advice",
                    "saturated_elements", "saturated_updates", "num_chunks", "chunks_sent", "ack_slices", "ack_events",
                    "model_acked", "last_seq", "last_global_reward", "last_reward", "learned_cluster_id",
                    "learned_worker_id")
"""The :class:`~olaf.client.ClientStats` fields a worker summary carries (:func:`summary_counters`)."""


def summary_counters(stats: Any) -> dict[str, Any]:
    """A client's final counters (:class:`~olaf.client.ClientStats`) as the fields of a
    :class:`~olaf.rundir.records.WorkerSummary`, ``generated`` included."""
    return {"generated": stats.pushes, **{k: getattr(stats, k) for k in SUMMARY_COUNTERS}}


class ClientRecorder(ClientEvents):
    """The worker log ``out_dir/<name>.jsonl`` and summary ``out_dir/<name>.summary.json`` of one
    client (module docstring). Records are written under one lock, flushed at once (a killed
    process loses nothing written).

    Raises:
        OSError: the log cannot be created (at :meth:`start`).
    """

    def __init__(self, out_dir: Path | str, name: str, *, task: Optional[Mapping[str, Any]] = None) -> None:
        self.out_dir, self.name = Path(out_dir), name
        self.task = dict(task) if task is not None else None
        self._log: Optional[JsonlLog] = None
        self._lock = threading.Lock()
        self._t0: Optional[int] = None
        self._idx = 0
        self._client: Any = None

    @property
    def log_path(self) -> Path:
        return self.out_dir / f"{self.name}.jsonl"

    @property
    def summary_path(self) -> Path:
        return self.out_dir / f"{self.name}.summary.json"

    def start(self, client: Any, *, seed: int = 0) -> None:
        """Open the log with the ``start`` record (``client``, an :class:`~olaf.client.OlafClient`: its
        addresses, ids and model) and the ``go`` record (its loop begins now)."""
        self._client = client
        t = time.time_ns()
        with self._lock:
            self._log = JsonlLog(self.log_path, flush_s=0)
        k = client.chunking.num_chunks
        self._write(WorkerStart(
            ev="start", role="worker", t_ns=t, name=self.name, bind=client.bind[0], ps=f"{client.ps[0]}:{client.ps[1]}",
            cluster_id=client.cluster_id, worker_id=client.worker_id, pid=os.getpid(), seed=seed,
            schedule={"kind": "client", "duration_s": None, "max_updates": None}, task_kind=None, task=self.task,
            num_weights=client.num_params, tx=client.tx.model_dump(), **({"num_chunks": k} if k > 1 else {})))
        self._t0 = time.time_ns()
        self._write(GoRecord(ev="go", t_ns=self._t0, t0_ns=self._t0, requested_t0_ns=self._t0))

    def _write(self, rec: Record) -> None:
        with self._lock:
            if self._log is not None:
                self._log.write(rec)

    # -- the client's hooks (lock held: quick) ----------------------------------------------------
    def init_sent(self, t_ns: int, retry: bool) -> None:
        self._write(init_record(t_ns, retry))

    def ack(self, t_ns: int, ack: Ack, own: bool) -> None:
        self._write(ack_record(t_ns, ack, own))

    def malformed(self, t_ns: int, length: int, reason: str) -> None:
        self._write(malformed_ack_record(t_ns, length, reason))

    def pushed(self, result: Any, adopted_slices: int, base: Optional[AckKey]) -> None:
        chunked = self._client is not None and self._client.chunking.num_chunks > 1
        self._write(gen_record(result, idx=self._idx, late_ms=0.0, chunked=chunked, adopted_slices=adopted_slices,
                               base=base))
        self._idx += 1

    def closed(self, stats: Any) -> None:
        t = time.time_ns()
        self._write(StopRecord(ev="stop", t_ns=t, reason="closed"))
        with self._lock:
            if self._log is None:
                return
            self._log.close()
            self._log = None
        c = self._client
        write_json(self.summary_path, WorkerSummary(
            role="worker", name=self.name, task=None, bind="" if c is None else c.bind[0],
            cluster_id=None if c is None else c.cluster_id, worker_id=None if c is None else c.worker_id,
            t0_ns=self._t0, gen_end_ns=t, t_stop_ns=t, stop_reason="closed",
            num_params=None if c is None else c.num_params, **summary_counters(stats)).dump())


def recorder_from_env(environ: Optional[Mapping[str, str]] = None, **kw: Any) -> Optional[ClientRecorder]:
    """The recorder of a worker started by ``olaf launch`` (``OLAF_LOG_DIR``, name ``w<rank + 1>``),
    None otherwise."""
    env = os.environ if environ is None else environ
    if not env.get(ENV_LOG_DIR) or not env.get("OLAF_RANK"):
        return None
    return ClientRecorder(env[ENV_LOG_DIR], f"w{int(env['OLAF_RANK']) + 1}", **kw)

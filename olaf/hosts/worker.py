"""The DRL worker: ``olaf worker``.

One process per worker. It binds UDP ``(bind IP, 50101)`` — where ACKs arrive —
and sends its updates from that socket to the PS (``IP:50100``). The protocol side (INIT and
its repetition, Q7.24 packing, chunks, transmission control, folding of skipped updates, ACK
handling, adoption of slices) is :class:`olaf.client.OlafClient`, the library any training
loop can use (``docs/client.md``); this module adds what belongs to the process: the
schedule, the learning task, the log, the summary and the signals.

Life of a worker (all times ``CLOCK_REALTIME`` ns):

1. writes its ``start`` record (it is up and bound: a harness can wait for
   these), then waits for its start ``t0``: ``start_at_ns``, or the time written
   into ``start_file`` once that file appears (a harness writes it when every
   process is up, so that slow process start-up on a busy machine does not eat
   into the run), or now, plus its schedule's start phase (``phase_ns``); a ``go``
   record gives ``t0`` (never earlier than the moment the worker got there);
2. sends an **INIT** update (flag INIT, ``seq`` 0) carrying its initial
   weights (paper §2.1) and repeats the chunks whose slices have not come back,
   first after ``init_retry_ms`` and then with randomised exponential back-off
   (:func:`olaf.client.init_retry_delay_s`), until every slice of the global
   weights has arrived;
3. when an update is due (:mod:`olaf.hosts.schedule`: one gap after the
   previous one was due, or after it was generated if that was later still;
   generation stops at ``t0 + duration``) first takes the ACKs that arrived,
   then runs one iteration of its learning task (:mod:`olaf.hosts.learning`:
   the bandit of :mod:`olaf.hosts.task`, or PPO, :mod:`olaf.rl.task`), handing
   it the global weights of the latest ACK if new ones arrived since the
   previous iteration (adopted between iterations, never during one: paper
   §8.2), and asks transmission control (:mod:`olaf.txcontrol`) whether
   to send. A sent update (``count`` 1, ``seq`` 1, 2, … per sent update,
   wrapping at 2³²; with a model of K chunks, :mod:`olaf.chunks`, it is K datagrams,
   chunk 0..K−1, with the same ``seq``, ``reward_sum`` and ``gen_ts`` — transmission control
   decides once per update: all K chunks or none) carries the mean reward (Q15.16) of the episodes that ended
   and the sample-weighted mean direction (Q7.24, saturated and counted, never
   wrapped) of all iterations since the last sent update, ``gen_ts`` = the
   generation time, and ``cluster_id``/``worker_id`` as configured (an Olaf
   switch overwrites them). An update needs a reward: until the first episode
   has ended, iterations are folded into the next one (reason ``no_episode``).
   After its INIT the worker waits up to ``ack_wait_ms`` for the whole global model (every
   slice); after each sent update it waits up to ``ack_wait_ms`` for the next ACK event
   with weights before it iterates again, so that on a fast network the next
   iteration starts from the global weights that include its own update (on a
   slow or lossy one it goes on training and adopts them after that
   iteration); 0 = no wait; synchronous training (:mod:`olaf.hosts.modes`)
   sets it to the round's cutoff;
4. meanwhile receives ACKs, in its client's receive thread, during an iteration too: a busy
   worker loses no answer to a full socket buffer; it keeps the newest slice of every chunk for
   the next adoption (``docs/reliability.md``). With K = 1 any ACK is an *ACK event*; with K > 1 the event is
   the **first** ACK slice answering an update (one ``(worker_id, seq, gen_ts)``, of any worker
   of its cluster: docs/hosts.md "Chunks at the worker" says why the first and not the last).
   An ACK event restarts the ``Δ̂`` timer; ``ack_wait_ms`` waits for the *whole answer*: every
   one of the K slices of an update answered after the worker's send (K = 1: the ACK event); every slice's
   status (if STATUS_VALID) becomes the latest status. Every slice's weights (the slice's
   length, ``num_chunks`` = K) are stored as they arrive and adopted only at the start of the next
   iteration (the task's current weights with the stored slices written over them). The model
   is *acked* (INITs stop) once every slice has arrived at least once. An ACK matching one of its
   own sent ``(seq, gen_ts)`` is *own*: it tells the worker its switch-assigned
   ``cluster_id``/``worker_id``, and its slice is counted for that update (summary
   ``ack_slices``). An ACK of another K or slice length is counted (``acks_wrong_size``) and
   dropped. Malformed ACKs are counted and dropped;
5. after the schedule (or on SIGTERM/SIGINT) keeps receiving ACKs for
   ``linger_ms``, then writes its summary. A task whose training produces
   NaN/inf (PPO) stops the worker at once: stop reason ``non_finite_loss``, the
   log and the summary keep what was collected, and :class:`TaskFailed` is raised.

Log ``<name>.jsonl`` (:mod:`olaf.hosts.runlog`; the records are the models of
:mod:`olaf.rundir.records`), records after ``start``:

* ``{"ev": "go", "t_ns", "t0_ns", "requested_t0_ns"}`` — the start;
* ``{"ev": "init", "t_ns", "retry"}`` — an INIT sent;
* ``{"ev": "gen", "t_ns", "idx", "late_ms", "sent", "seq", "reward", "folded",
  "exp_reward", "reason", "p_send", "draw", "delta_hat_ms", "N", "q_max"}`` —
  one generated update; ``t_ns`` is its ``gen_ts``; ``late_ms`` how long after
  its due time it was generated (including the episodes' compute time); ``sent`` false = skipped by transmission control
  or ``no_episode`` (not sent; its episodes are folded into the next sent update); ``seq``,
  ``folded`` (generations folded in) and ``saturated`` (Q7.24 elements clamped) only when sent;
  ``reward`` the mean reward sent (or of this generation if skipped, null if no
  episode ended); ``adopted`` whether the iteration started from newly received
  global weights; ``base`` the ``[worker_id, seq, gen_ts]`` of the ACK whose slice 0 the worker
  last adopted (the update's staleness is measured from the global model's version in it:
  :mod:`olaf.training.staleness`); ``exp_reward`` the bandit's expected reward ``J(w)`` of the
  weights used (null for PPO); the rest is the
  :class:`~olaf.txcontrol.Decision`. A PPO task adds ``steps``,
  ``episodes``, ``env_steps`` (cumulative) and the iteration's mean
  ``policy_loss``, ``value_loss``, ``entropy``, ``clip_fraction``,
  ``approx_kl``, ``grad_norm`` and, when it adopted new global weights, ``kl_adopted``
  (KL of the adopted policy from the previous rollout's, on that rollout's states);
* ``{"ev": "ack", "t_ns", "cluster_id", "worker_id", "seq", "count", "gen_ts",
  "global_reward", "weights", "own", "status"}`` — ``global_reward`` float or
  null (−∞), ``weights`` the number of weight elements, ``status``
  ``[queue_util, active_clusters, queue_size]`` or null;
* ``{"ev": "malformed_ack", "t_ns", "len", "reason"}``;
* ``{"ev": "error", "t_ns", "error"}`` — the task failed (NaN loss);
* ``{"ev": "stop", "t_ns", "reason"}``.

Summary ``<name>.summary.json``: ``task``, ``generated``, ``sent``, ``skipped``, ACK
counters, ``saturated_elements`` / ``saturated_updates`` (Q7.24 clamping of
sent directions), ``num_chunks`` (K), ``chunks_sent``, ``ack_slices`` (sent updates by how
many of their K ACK slices came back: their sum is ``sent``), ``ack_events``, the configured and
learned ids, ``t0_ns``, ``gen_end_ns``
(end of the generation phase), the final rewards, ``error`` (or null) and the
task's own summary (bandit: ``final_exp_reward``; PPO: ``env_steps``,
``episodes``, ``iterations``, ``num_params``).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from olaf.client import INIT_RETRY_S, ClientEvents, OlafClient
from olaf.client.log import ack_record, gen_record, init_record, malformed_ack_record, summary_counters
from olaf.hosts.learning import Task, task_factory, task_kinds
from olaf.hosts.runlog import OutputFiles, StartFileError, wait_for_start_file, wait_until
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.task import TaskParams
from olaf.plan.tx import TxParams
from olaf.plan.workload import PPOTaskSpec
from olaf.rundir.atomic import write_json
from olaf.rundir.jsonl import JsonlLog
from olaf.rundir.records import (
    ErrorRecord,
    GoRecord,
    Record,
    StopRecord,
    WorkerStart,
    WorkerSummary,
)
from olaf.wire import ACK_PORT, UPDATE_PORT, Ack


class TaskFailed(RuntimeError):
    """The worker's learning task failed during training (NaN/inf loss); the log and summary were written."""


@dataclass(frozen=True)
class WorkerConfig(OutputFiles):
    """Worker options (``olaf worker``); see the module docstring for their use.

    Attributes:
        ps_ip, ps_port: the PS (port 50100 by protocol).
        bind_ip: this worker's IP; ACKs arrive on ``(bind_ip, ack_port)``.
        ack_port: the UDP port it sends from and receives ACKs on (50101 by protocol; workers sharing
            an address behind an Olaf switch each have their own, identity five_tuple).
        schedule: when updates are generated.
        task_kind: ``"bandit"`` or ``"ppo"`` (:mod:`olaf.hosts.learning`).
        task: bandit parameters (``task.num_weights`` = ``G``), used when ``task_kind`` is bandit.
        ppo: the PPO task (environment, hyperparameters, MTU), used when ``task_kind`` is ppo;
            ``G`` is then its network's parameter count and ``ppo.mtu`` the links' MTU.
        mtu: the bandit's links' IPv4 MTU, bytes: an update of ``G`` elements travels as
            ``Chunking.for_model(G, mtu)`` chunks (None: one message; with ``task_kind`` ppo
            it must be None, ``ppo.mtu`` is the MTU).
        ack_wait_ms: after each sent update wait at most this long (ms, ≥ 0) for
            an ACK with weights before iterating again.
        tx: transmission control.
        seed: seeds the worker's RNG streams (initial weights, episodes, jitter,
            transmission draws — independent streams, so switching transmission
            control on does not change the schedule or the episodes).
        cluster_id, worker_id: header values (uint16) when no switch stamps them.
        start_at_ns: ``t0`` (CLOCK_REALTIME ns), None = start now.
        start_file: wait until this file exists, then take ``t0`` from it (an
            integer, CLOCK_REALTIME ns; empty = now); replaces ``start_at_ns``.
        init_retry_ms: delay of the first INIT repetition before its random factor, ms; later
            ones back off exponentially (:func:`olaf.client.init_retry_delay_s`) until the model
            is acknowledged.
        linger_ms: time to keep receiving ACKs after the last generation.
        out_dir, name: log ``out_dir/name.jsonl``, summary ``out_dir/name.summary.json``.
        resume: a restarted incarnation of the same worker (its Ray actor was restarted): it
            appends to its log (a second ``start`` record, ``resumed``: true; the report counts the
            restart and the gap) and its generation ends where the run's does (the start time plus
            ``schedule.duration_s``), not a duration after its own late start.
    """

    ps_ip: str
    bind_ip: str
    schedule: ScheduleSpec
    ps_port: int = UPDATE_PORT
    ack_port: int = ACK_PORT
    task_kind: str = "bandit"
    task: TaskParams = field(default_factory=TaskParams)
    ppo: PPOTaskSpec = field(default_factory=PPOTaskSpec)
    ack_wait_ms: float = 0.0
    mtu: Optional[int] = None
    tx: TxParams = field(default_factory=TxParams)
    seed: int = 0
    cluster_id: Optional[int] = None
    worker_id: Optional[int] = None
    start_at_ns: Optional[int] = None
    start_file: Optional[Path] = None
    init_retry_ms: float = INIT_RETRY_S * 1000
    linger_ms: float = 500.0
    out_dir: Path = Path(".")
    name: str = "worker"
    resume: bool = False

    def __post_init__(self) -> None:
        if self.task_kind not in task_kinds():
            raise ValueError(f"task_kind={self.task_kind!r} must be one of {', '.join(task_kinds())}")
        if not self.ack_wait_ms >= 0:
            raise ValueError(f"ack_wait_ms must be >= 0, got {self.ack_wait_ms}")
        if self.task_kind == "ppo" and self.mtu is not None:
            raise ValueError(f"mtu={self.mtu}: a PPO worker's MTU is ppo.mtu ({self.ppo.mtu}); leave mtu None")

    @property
    def links_mtu(self) -> Optional[int]:
        """The MTU the update is chunked for (None: one message)."""
        return self.ppo.mtu if self.task_kind == "ppo" else self.mtu


def make_task(cfg: WorkerConfig, init_rng: np.random.Generator, task_rng: np.random.Generator) -> Task:
    """The learning task ``cfg`` selects, from the task registry (:mod:`olaf.hosts.learning`).

    Raises:
        TaskUnavailable: the task's optional dependencies are missing (``ppo``: the ``train`` extra).
        ValueError: the task cannot be built from ``cfg`` (e.g. ``ppo``'s EnvError, ModelTooLarge).
    """
    return task_factory(cfg.task_kind)(cfg, init_rng, task_rng)


class _LogEvents(ClientEvents):
    """The worker's log records of its client's protocol events (``init``, ``ack``, ``malformed_ack``;
    the records of :mod:`olaf.client.log`, written into the worker's own log)."""

    def __init__(self, worker: "Worker") -> None:
        self.worker = worker

    def init_sent(self, t_ns: int, retry: bool) -> None:
        self.worker._log_write(init_record(t_ns, retry))

    def ack(self, t_ns: int, ack: Ack, own: bool) -> None:
        # from the receive thread, which may call this before the worker's constructor returns (a
        # restarted worker's socket gets its cluster's ACKs at once): only the log and its lock,
        # set before the client, and the ACK itself are used
        self.worker._log_write(ack_record(t_ns, ack, own))

    def malformed(self, t_ns: int, length: int, reason: str) -> None:
        self.worker._log_write(malformed_ack_record(t_ns, length, reason))


class Worker:
    """One worker; :meth:`run` blocks until its schedule ends or ``stop`` is set.

    The protocol (INIT, packing, chunks, transmission control, ACKs, adoption) is its
    :class:`~olaf.client.OlafClient` (``self.client``, with its receive thread: ACKs are taken off
    the socket while an iteration runs, and adopted only between iterations, paper §8.2); the
    worker adds the schedule, the task, the log and the summary. Log records are written under one
    lock (the receive thread writes ``ack`` records, the main thread ``gen`` records), in the order
    they happen.
    """

    def __init__(self, cfg: WorkerConfig, stop: Optional[threading.Event] = None, task: Optional[Task] = None) -> None:
        self.cfg = cfg
        self.stop = stop or threading.Event()
        ss = np.random.SeedSequence(cfg.seed).spawn(4)
        init_rng, task_rng, self._sched_rng, tx_rng = (np.random.default_rng(s) for s in ss)
        self.task = make_task(cfg, init_rng, task_rng) if task is None else task
        self.num_weights = self.task.num_weights
        self.initial_weights = self.task.initial_weights()
        self.error: Optional[str] = None
        self._log: Optional[JsonlLog] = None
        self.gen_end: Optional[int] = None
        self._next_idx = 0
        self._t0: Optional[int] = None  # the start of a worker driven from outside (begin)
        self._log_lock = threading.Lock()  # the receive thread's ack records and the main thread's records
        self.client = OlafClient(
            (cfg.ps_ip, cfg.ps_port), num_params=self.num_weights, bind=(cfg.bind_ip, cfg.ack_port), mtu=cfg.links_mtu,
            tx=cfg.tx, rng=tx_rng, cluster_id=cfg.cluster_id, worker_id=cfg.worker_id,
            init_retry_s=cfg.init_retry_ms / 1000, background=True, events=_LogEvents(self), stop=self.stop)
        self.chunking = self.client.chunking

    @property
    def model_acked(self) -> bool:
        """Every slice of the global model has arrived at least once."""
        return self.client.model_acked

    @property
    def counters(self) -> dict[str, Any]:
        """The client's counters now (:class:`~olaf.client.ClientStats` as a dict) and ``generated``."""
        st = asdict(self.client.stats())
        return {**st, "generated": st["pushes"]}

    # -- one generation ------------------------------------------------------

    def _generate(self, idx: int, t_sched: int) -> tuple[int, bool]:
        """Generate update ``idx`` due at ``t_sched``; return its ``gen_ts`` and whether it was sent.

        Raises:
            FloatingPointError: the task's training produced NaN/inf.
        """
        adopt, n_slices, _ = self.client.adopt(self.task.current_weights)
        gen = self.task.generate(adopt)
        r = self.client.push_generation(gen)
        rec = gen_record(r, idx=idx, late_ms=(r.gen_ts - t_sched) / 1e6, chunked=self.chunking.num_chunks > 1,
                         adopted_slices=n_slices, base=self.client.adopted_base,
                         own_reward=float(gen.rewards.mean()) if gen.rewards.size else None, info=gen.info)
        self._log_write(rec)
        return r.gen_ts, r.sent

    # -- main loop -----------------------------------------------------------

    def _log_write(self, rec: Record) -> None:
        with self._log_lock:
            if self._log is not None:  # the receive thread may outlive the log by one datagram
                self._log.write(rec)

    def _wait_for_start(self) -> Optional[tuple[int, int]]:
        """``(requested t0, actual t0)`` once the start has come, None if stopped first.

        Raises StartFileError for a start file that does not hold an integer.
        """
        cfg = self.cfg
        requested = cfg.start_at_ns
        if cfg.start_file is not None:
            requested = wait_for_start_file(cfg.start_file, self.stop)
            if requested is None:
                return None
        arrived = time.time_ns()
        if requested is None:
            requested = arrived
        requested += cfg.schedule.phase_ns  # its own start phase (olaf.plan.arrivals)
        if not wait_until(requested, self.stop):
            return None
        return requested, max(requested, arrived)

    def _init(self) -> None:
        """Send the INIT; with ``ack_wait_ms`` wait that long at most for the global model."""
        self.client.init(self.initial_weights)
        if self.cfg.ack_wait_ms > 0:  # start from the global model if it comes back in time
            self.client.wait_until(time.time_ns() + int(self.cfg.ack_wait_ms * 1e6), "model")

    def _generate_all(self, t0: int, end_base: int) -> None:
        """INIT, then the schedule from ``t0`` until ``end_base`` + the schedule's duration; sets
        ``self.gen_end``."""
        cfg = self.cfg
        client = self.client
        t_due = t_gen = time.time_ns()
        self._init()
        end = None if cfg.schedule.duration_s is None else end_base + int(cfg.schedule.duration_s * 1e9)
        for idx, gap in enumerate(cfg.schedule.gaps(self._sched_rng)):
            # keep the nominal chain (no drift from compute time) unless the last
            # generation ended after this one was due: then re-anchor, no burst
            t_due = t_due + gap if t_due + gap >= t_gen else t_gen + gap
            if end is not None and t_due >= end:
                break
            client.wait_until(t_due)
            if self.stop.is_set():
                break
            t_gen, sent = self._generate(idx, t_due)
            if cfg.ack_wait_ms > 0 and sent:
                client.wait_until(time.time_ns() + int(cfg.ack_wait_ms * 1e6), "answer")
                t_gen = max(t_gen, time.time_ns())
        self.gen_end = time.time_ns()
        client.wait_until(self.gen_end + int(cfg.linger_ms * 1e6))

    def run(self) -> dict[str, Any]:
        """Run the worker (see the module docstring); write and return the summary.

        Raises:
            StartFileError: the start file does not hold an integer (the log
                and summary are still written).
            TaskFailed: training produced NaN/inf (stop reason ``non_finite_loss``;
                the log and summary are still written).
        """
        cfg = self.cfg
        self._open_log()
        reason = "signal"
        t0 = None
        try:
            started = self._wait_for_start()
            if started is not None:
                requested, t0 = started
                self._log_write(GoRecord(ev="go", t_ns=time.time_ns(), t0_ns=t0, requested_t0_ns=requested))
                self._generate_all(t0, requested if cfg.resume else t0)
                if not self.stop.is_set():
                    reason = "schedule_end"
        except StartFileError:
            reason = "bad_start_file"
            raise
        except FloatingPointError as e:
            reason = "non_finite_loss"
            self._task_failed(e)
            raise TaskFailed(f"{cfg.name}: {e}; stopped (log {cfg.log_path}, summary {cfg.summary_path})") from e
        finally:
            summary = self._close(t0, reason)
        return summary

    # -- driven from outside (a framework's own loop: olaf.rl.rllib's EnvRunner) -----

    def announce(self) -> None:
        """Write the ``start`` record (the worker is up and bound: a harness waits for these before
        it starts the run); :meth:`begin` does it if not done yet."""
        if self._log is None:
            self._open_log()

    def begin(self) -> int:
        """Start now without a schedule: the ``start`` (unless :meth:`announce` wrote it) and ``go``
        records and the INIT (waiting up to ``ack_wait_ms`` for the global model); then call
        :meth:`step` per iteration and :meth:`end`. Returns ``t0`` (CLOCK_REALTIME ns)."""
        self.announce()
        t0 = time.time_ns()
        self._t0 = t0
        self._log_write(GoRecord(ev="go", t_ns=t0, t0_ns=t0, requested_t0_ns=t0))
        self._init()
        return t0

    def step(self) -> bool:
        """One generation now (adopt, the task's iteration, push, log), then up to ``ack_wait_ms``
        for its answer if it was sent; whether it was sent.

        Raises:
            FloatingPointError: the task's training produced NaN/inf (logged as an ``error`` record;
                :meth:`end` then writes the stop reason ``non_finite_loss``).
        """
        idx, self._next_idx = self._next_idx, self._next_idx + 1
        try:
            _, sent = self._generate(idx, time.time_ns())
        except FloatingPointError as e:
            self._task_failed(e)
            raise
        if sent and self.cfg.ack_wait_ms > 0:
            self.client.wait_until(time.time_ns() + int(self.cfg.ack_wait_ms * 1e6), "answer")
        return sent

    def end(self, reason: str = "signal") -> dict[str, Any]:
        """Linger ``linger_ms`` for ACKs, then close: the ``stop`` record and the summary (returned)."""
        self.gen_end = time.time_ns()
        if self.error is None:
            self.client.wait_until(self.gen_end + int(self.cfg.linger_ms * 1e6))
        return self._close(self._t0, "non_finite_loss" if self.error is not None else reason)

    # -- log and summary -----------------------------------------------------

    def _task_failed(self, e: FloatingPointError) -> None:
        self.error = str(e)
        self._log_write(ErrorRecord(ev="error", t_ns=time.time_ns(), error=self.error))

    def _close(self, t0: Optional[int], reason: str) -> dict[str, Any]:
        """Close the task and the client; write the ``stop`` record and the summary; the summary."""
        assert self._log is not None
        self.task.close()
        self.client.close()
        t_stop = time.time_ns()
        summary = self.summary(t0, self.gen_end, t_stop, reason)
        self._log_write(StopRecord(ev="stop", t_ns=t_stop, reason=reason))
        with self._log_lock:
            self._log.close()
            self._log = None
        write_json(self.cfg.summary_path, summary)
        return summary

    def _task_description(self) -> dict[str, Any]:
        """The start record's ``task``: the task's own ``describe()`` if it has one (a task handed
        in from outside), else the configured bandit or PPO parameters."""
        describe = getattr(self.task, "describe", None)
        if callable(describe):
            return dict(describe())
        return asdict(self.cfg.task) if self.cfg.task_kind == "bandit" else self.cfg.ppo.describe()

    def _open_log(self) -> None:
        """Open the log and write the ``start`` record."""
        cfg = self.cfg
        self._log = JsonlLog(cfg.log_path, flush_s=0, append=cfg.resume)
        self._log_write(WorkerStart(
            ev="start", role="worker", t_ns=time.time_ns(), name=cfg.name, start_at_ns=cfg.start_at_ns,
            start_file=None if cfg.start_file is None else str(cfg.start_file), bind=cfg.bind_ip,
            ps=f"{cfg.ps_ip}:{cfg.ps_port}", cluster_id=cfg.cluster_id, worker_id=cfg.worker_id, seed=cfg.seed,
            pid=os.getpid(), **({"udp_port": cfg.ack_port} if cfg.ack_port != ACK_PORT else {}),
            schedule=cfg.schedule.describe(), task_kind=cfg.task_kind, task=self._task_description(),
            num_weights=self.num_weights, ack_wait_ms=cfg.ack_wait_ms, tx=cfg.tx.model_dump(),
            **({"num_chunks": self.chunking.num_chunks} if self.chunking.num_chunks > 1 else {}),
            **({"resumed": True} if cfg.resume else {})))

    def summary(self, t0: Optional[int], gen_end: Optional[int], t_stop: int, reason: str) -> dict[str, Any]:
        """Counters and final state (the ``<name>.summary.json`` content, a :class:`WorkerSummary`)."""
        st = self.client.stats()
        return WorkerSummary(**{
            "role": "worker",
            "name": self.cfg.name,
            "task": self.task.kind,
            "bind": self.cfg.bind_ip,
            "cluster_id": self.cfg.cluster_id,
            "worker_id": self.cfg.worker_id,
            "t0_ns": t0,
            "gen_end_ns": gen_end,
            "t_stop_ns": t_stop,
            "stop_reason": reason,
            **summary_counters(st),
            "error": self.error,
            **self.task.summary(),
        }).dump()

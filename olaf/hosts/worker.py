"""The DRL worker: ``olaf worker``.

One process per worker. It binds UDP ``(bind IP, 50101)`` — where ACKs arrive —
and sends its updates from that socket to the PS (``IP:50100``).

Life of a worker (all times ``CLOCK_REALTIME`` ns):

1. writes its ``start`` record (it is up and bound: a harness can wait for
   these), then waits for its start ``t0``: ``start_at_ns``, or the time written
   into ``start_file`` once that file appears (a harness writes it when every
   process is up, so that slow process start-up on a busy machine does not eat
   into the run), or now; a ``go`` record gives ``t0`` (never earlier than the
   moment the worker got there);
2. sends an **INIT** update (flag INIT, ``seq`` 0) carrying its initial
   weights (paper §2.1) and repeats it every ``init_retry_ms`` until an ACK
   carrying the global weights arrives;
3. when an update is due (:mod:`olaf.hosts.schedule`: one gap after the
   previous one was due, or after it was generated if that was later still;
   generation stops at ``t0 + duration``) runs
   ``B`` episodes of the task (:mod:`olaf.hosts.task`) with the latest global
   weights received in an ACK (its own initial weights before that), and asks
   transmission control (:mod:`olaf.hosts.txcontrol`) whether to send. A sent
   update (``count`` 1, ``seq`` 1, 2, … per sent update, wrapping at 2³²)
   carries the mean reward (Q15.16) and mean gradient (Q7.24) of all
   episodes since the last sent update, ``gen_ts`` = the generation time, and
   ``cluster_id``/``worker_id`` as configured (an Olaf switch overwrites them);
4. meanwhile receives ACKs: any ACK restarts the ``Δ̂`` timer and its status
   (if STATUS_VALID) becomes the latest status; its weights, if it has ``G``
   of them, become the worker's weights. An ACK matching one of its own sent
   ``(seq, gen_ts)`` is *own*: it tells the worker its switch-assigned
   ``cluster_id``/``worker_id``. Malformed ACKs are counted and dropped;
5. after the schedule (or on SIGTERM/SIGINT) keeps receiving ACKs for
   ``linger_ms``, then writes its summary.

Log ``<name>.jsonl`` (:mod:`olaf.hosts.runlog`), records after ``start``:

* ``{"ev": "go", "t_ns", "t0_ns", "requested_t0_ns"}`` — the start;
* ``{"ev": "init", "t_ns", "retry"}`` — an INIT sent;
* ``{"ev": "gen", "t_ns", "idx", "late_ms", "sent", "seq", "reward", "folded",
  "exp_reward", "reason", "p_send", "draw", "delta_hat_ms", "N", "q_max"}`` —
  one generated update; ``t_ns`` is its ``gen_ts``; ``late_ms`` how long after
  its due time it was generated (including the episodes' compute time); ``sent`` false = skipped by transmission control
  (not sent; its episodes are folded into the next sent update); ``seq`` and
  ``folded`` (generations folded in) only when sent; ``reward`` the mean
  reward sent (or of this generation if skipped); ``exp_reward`` the task's
  expected reward ``J(w)`` of the weights used; the rest is the
  :class:`~olaf.hosts.txcontrol.Decision`;
* ``{"ev": "ack", "t_ns", "cluster_id", "worker_id", "seq", "count", "gen_ts",
  "global_reward", "weights", "own", "status"}`` — ``global_reward`` float or
  null (−∞), ``weights`` the number of weight elements, ``status``
  ``[queue_util, active_clusters, queue_size]`` or null;
* ``{"ev": "malformed_ack", "t_ns", "len", "reason"}``;
* ``{"ev": "stop", "t_ns", "reason"}``.

Summary ``<name>.summary.json``: ``generated``, ``sent``, ``skipped``, ACK
counters, the configured and learned ids, ``t0_ns``, ``gen_end_ns`` (end of
the generation phase) and the final rewards.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from olaf.fixedpoint import GRAD_FRAC_BITS, INT32_MIN, grads_to_fixed, reward_from_fixed, reward_to_fixed
from olaf.hosts.runlog import JsonlLog, OutputFiles, StartFileError, wait_for_start_file, wait_until, write_json
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.task import BanditTask, Experience, TaskParams
from olaf.hosts.txcontrol import TransmissionControl, TxParams
from olaf.update import Update
from olaf.wire import ACK_PORT, UPDATE_PORT, MalformedOlafPacket, encode_update, parse_ack

RECV_BUF = 65535
SENT_MEMORY = 4096
"""Sent ``(seq, gen_ts)`` pairs remembered to recognise own ACKs."""


@dataclass(frozen=True)
class WorkerConfig(OutputFiles):
    """Worker options (``olaf worker``); see the module docstring for their use.

    Attributes:
        ps_ip, ps_port: the PS (port 50100 by protocol).
        bind_ip: this worker's IP; ACKs arrive on ``(bind_ip, ack_port)``.
        ack_port: 50101 by protocol.
        schedule: when updates are generated.
        task: learning-task parameters (``task.num_weights`` = ``G``).
        tx: transmission control.
        seed: seeds the worker's RNG streams (initial weights, episodes, jitter,
            transmission draws — independent streams, so switching transmission
            control on does not change the schedule or the episodes).
        cluster_id, worker_id: header values (uint16) when no switch stamps them.
        start_at_ns: ``t0`` (CLOCK_REALTIME ns), None = start now.
        start_file: wait until this file exists, then take ``t0`` from it (an
            integer, CLOCK_REALTIME ns; empty = now); replaces ``start_at_ns``.
        init_retry_ms: INIT repetition period until the model is acknowledged.
        linger_ms: time to keep receiving ACKs after the last generation.
        out_dir, name: log ``out_dir/name.jsonl``, summary ``out_dir/name.summary.json``.
    """

    ps_ip: str
    bind_ip: str
    schedule: ScheduleSpec
    ps_port: int = UPDATE_PORT
    ack_port: int = ACK_PORT
    task: TaskParams = field(default_factory=TaskParams)
    tx: TxParams = field(default_factory=TxParams)
    seed: int = 0
    cluster_id: Optional[int] = None
    worker_id: Optional[int] = None
    start_at_ns: Optional[int] = None
    start_file: Optional[Path] = None
    init_retry_ms: float = 1000.0
    linger_ms: float = 500.0
    out_dir: Path = Path(".")
    name: str = "worker"


class Worker:
    """One worker; :meth:`run` blocks until its schedule ends or ``stop`` is set."""

    def __init__(self, cfg: WorkerConfig, stop: Optional[threading.Event] = None) -> None:
        self.cfg = cfg
        self.stop = stop or threading.Event()
        ss = np.random.SeedSequence(cfg.seed).spawn(4)
        init_rng, task_rng, self._sched_rng, tx_rng = (np.random.default_rng(s) for s in ss)
        self.task = BanditTask(cfg.task, task_rng)
        self.weights = self.task.initial_weights(init_rng)
        self.initial_weights = self.weights.copy()
        self.tc = TransmissionControl(cfg.tx, tx_rng)
        self.experience = Experience(cfg.task.num_weights)
        self.counters: Counter[str] = Counter()
        self.seq = 0
        self.model_acked = False
        self.learned_ids: Optional[tuple[int, int]] = None
        self.last_global_reward: Optional[float] = None
        self._sent: OrderedDict[int, int] = OrderedDict()  # seq -> gen_ts
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((cfg.bind_ip, cfg.ack_port))
        self._log: Optional[JsonlLog] = None
        self._last_init_ns = 0
        self.gen_end: Optional[int] = None

    # -- sending -------------------------------------------------------------

    def _send(self, u: Update, init: bool) -> bool:
        try:
            self.sock.sendto(encode_update(u, init=init), (self.cfg.ps_ip, self.cfg.ps_port))
        except OSError:
            self.counters["send_errors"] += 1
            return False
        self._sent[u.seq] = u.gen_ts
        if len(self._sent) > SENT_MEMORY:
            self._sent.popitem(last=False)
        return True

    def _header(self) -> dict[str, int]:
        return {"cluster_id": self.cfg.cluster_id or 0, "worker_id": self.cfg.worker_id or 0}

    def _send_init(self, gen_ts: int, retry: bool) -> None:
        u = Update(**self._header(), seq=0, count=1, reward_sum=0, gen_ts=gen_ts,
                   grads=tuple(grads_to_fixed(self.initial_weights)))
        if self._send(u, init=True):
            self.counters["init_sent"] += 1
        self._log_write({"ev": "init", "t_ns": time.time_ns(), "retry": retry})

    def _generate(self, idx: int, t_sched: int) -> int:
        """Generate update ``idx`` due at ``t_sched``; return its ``gen_ts``."""
        rewards, grads = self.task.rollout(self.weights)
        self.experience.add(rewards, grads)
        gen_ts = time.time_ns()
        self.counters["generated"] += 1
        d = self.tc.decide(gen_ts)
        rec: dict[str, Any] = {"ev": "gen", "t_ns": gen_ts, "idx": idx, "late_ms": (gen_ts - t_sched) / 1e6,
                               "sent": False, "seq": None, "reward": float(rewards.mean()), "folded": None,
                               "exp_reward": self.task.expected_reward(self.weights), "reason": d.reason,
                               "p_send": d.p_send, "draw": d.draw, "delta_hat_ms": d.delta_hat_ms,
                               "N": d.active_clusters, "q_max": d.queue_size}
        if d.send:
            reward, grad, folded = self.experience.take()
            self.seq = self.seq % 0xFFFFFFFF + 1
            u = Update(**self._header(), seq=self.seq, count=1, reward_sum=reward_to_fixed(reward),
                       gen_ts=gen_ts, grads=tuple(grads_to_fixed(grad)))
            if self._send(u, init=False):
                self.counters["sent"] += 1
                rec.update(sent=True, seq=self.seq, reward=reward, folded=folded)
        else:
            self.counters["skipped"] += 1
        self._log_write(rec)
        return gen_ts

    # -- receiving -----------------------------------------------------------

    def _on_datagram(self, data: bytes, t_ns: int) -> None:
        try:
            ack = parse_ack(data)
        except MalformedOlafPacket as e:
            self.counters["acks_malformed"] += 1
            self._log_write({"ev": "malformed_ack", "t_ns": t_ns, "len": len(data), "reason": str(e)})
            return
        self.counters["acks"] += 1
        self.tc.on_ack(t_ns, ack.status)
        own = self._sent.get(ack.seq) == ack.gen_ts
        if own:
            self.counters["acks_own"] += 1
            self.learned_ids = (ack.cluster_id, ack.worker_id)
        if len(ack.weights) == self.cfg.task.num_weights:
            self.weights = np.asarray(ack.weights, dtype=np.float64) / (1 << GRAD_FRAC_BITS)
            self.model_acked = True
        elif ack.weights:
            self.counters["acks_wrong_size"] += 1
        gr = None if ack.global_reward == INT32_MIN else reward_from_fixed(ack.global_reward)
        self.last_global_reward = gr
        st = ack.status
        self._log_write({"ev": "ack", "t_ns": t_ns, "cluster_id": ack.cluster_id, "worker_id": ack.worker_id,
                         "seq": ack.seq, "count": ack.count, "gen_ts": ack.gen_ts, "global_reward": gr,
                         "weights": len(ack.weights), "own": own,
                         "status": None if st is None else [st.queue_util, st.active_clusters, st.queue_size]})

    def _pump_until(self, t_ns: int, init_gen_ts: int) -> None:
        """Receive ACKs (and repeat the INIT when due) until ``t_ns`` or stop."""
        retry_ns = int(self.cfg.init_retry_ms * 1e6)
        while not self.stop.is_set():
            now = time.time_ns()
            if not self.model_acked and now - self._last_init_ns >= retry_ns:
                self._send_init(init_gen_ts, retry=True)
                self._last_init_ns = now
            left = t_ns - now
            if left <= 0:
                return
            wait = min(left, 100_000_000)
            if not self.model_acked:
                wait = min(wait, max(self._last_init_ns + retry_ns - now, 0))
            self.sock.settimeout(max(wait, 1) / 1e9)
            try:
                data, _ = self.sock.recvfrom(RECV_BUF)
            except socket.timeout:
                continue
            except OSError:
                self.counters["recv_errors"] += 1
                continue
            self._on_datagram(data, time.time_ns())

    # -- main loop -----------------------------------------------------------

    def _log_write(self, rec: dict[str, Any]) -> None:
        assert self._log is not None
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
        if not wait_until(requested, self.stop):
            return None
        return requested, max(requested, arrived)

    def _generate_all(self, t0: int) -> None:
        """INIT, then the schedule from ``t0``; sets ``self.gen_end``."""
        cfg = self.cfg
        init_gen_ts = t_due = t_gen = time.time_ns()
        self._send_init(init_gen_ts, retry=False)
        self._last_init_ns = init_gen_ts
        end = None if cfg.schedule.duration_s is None else t0 + int(cfg.schedule.duration_s * 1e9)
        for idx, gap in enumerate(cfg.schedule.gaps(self._sched_rng)):
            # keep the nominal chain (no drift from compute time) unless the last
            # generation ended after this one was due: then re-anchor, no burst
            t_due = t_due + gap if t_due + gap >= t_gen else t_gen + gap
            if end is not None and t_due >= end:
                break
            self._pump_until(t_due, init_gen_ts)
            if self.stop.is_set():
                break
            t_gen = self._generate(idx, t_due)
        self.gen_end = time.time_ns()
        self._pump_until(self.gen_end + int(cfg.linger_ms * 1e6), init_gen_ts)

    def run(self) -> dict[str, Any]:
        """Run the worker (see the module docstring); write and return the summary.

        Raises:
            StartFileError: the start file does not hold an integer (the log
                and summary are still written).
        """
        cfg = self.cfg
        self._log = JsonlLog(cfg.log_path, flush_s=0)
        self._log_write({"ev": "start", "role": "worker", "t_ns": time.time_ns(), "name": cfg.name,
                         "start_at_ns": cfg.start_at_ns, "start_file": None if cfg.start_file is None else str(cfg.start_file),
                         "bind": cfg.bind_ip, "ps": f"{cfg.ps_ip}:{cfg.ps_port}",
                         "cluster_id": cfg.cluster_id, "worker_id": cfg.worker_id, "seed": cfg.seed,
                         "schedule": cfg.schedule.describe(), "task": asdict(cfg.task), "tx": asdict(cfg.tx)})
        reason = "signal"
        t0 = None
        try:
            started = self._wait_for_start()
            if started is not None:
                requested, t0 = started
                self._log_write({"ev": "go", "t_ns": time.time_ns(), "t0_ns": t0, "requested_t0_ns": requested})
                self._generate_all(t0)
                if not self.stop.is_set():
                    reason = "schedule_end"
        except StartFileError:
            reason = "bad_start_file"
            raise
        finally:
            self.sock.close()
            t_stop = time.time_ns()
            summary = self.summary(t0, self.gen_end, t_stop, reason)
            self._log_write({"ev": "stop", "t_ns": t_stop, "reason": reason})
            self._log.close()
            write_json(cfg.summary_path, summary)
        return summary

    def summary(self, t0: Optional[int], gen_end: Optional[int], t_stop: int, reason: str) -> dict[str, Any]:
        """Counters and final state (the ``<name>.summary.json`` content)."""
        c = self.counters
        keys = ["generated", "sent", "skipped", "init_sent", "send_errors", "acks", "acks_own",
                "acks_malformed", "acks_wrong_size", "recv_errors"]
        return {
            "role": "worker",
            "name": self.cfg.name,
            "bind": self.cfg.bind_ip,
            "cluster_id": self.cfg.cluster_id,
            "worker_id": self.cfg.worker_id,
            "learned_cluster_id": None if self.learned_ids is None else self.learned_ids[0],
            "learned_worker_id": None if self.learned_ids is None else self.learned_ids[1],
            "t0_ns": t0,
            "gen_end_ns": gen_end,
            "t_stop_ns": t_stop,
            "stop_reason": reason,
            **{k: c[k] for k in keys},
            "model_acked": self.model_acked,
            "last_seq": self.seq,
            "last_global_reward": self.last_global_reward,
            "final_exp_reward": self.task.expected_reward(self.weights),
        }

"""The evaluator of the global model: a process beside the PS that scores the PS's weights.

While a training job runs, the PS writes its checkpoint (:mod:`olaf.hosts.checkpoint`) every
``checkpoint_s``; the evaluator reads the latest one at most every ``every_s`` seconds and runs
its weights deterministically for ``episodes`` episodes (:func:`olaf.rl.evaluate.evaluate_weights`;
100 is the environment's definition of "solved"), appending an
:class:`~olaf.rundir.records.EvalRecord` to ``hosts/evaluator.jsonl``. When the job ends it
evaluates the PS's final checkpoint once more (if it has not yet), then exits.

It is a separate process (``multiprocessing``'s spawn context): its environment steps and
forward passes would otherwise hold the interpreter lock of the process that runs the backend
and the monitor. It reads files only and sends no packet: nothing of it crosses the switch.
Its CPU time is shared with the workers' on the same cores, so a job that is evaluated often
trains a little slower: the records give each evaluation's wall time (``eval_s``).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from olaf.hosts.checkpoint import CheckpointError, read_checkpoint
from olaf.hosts.jobconfig import ps_checkpoint
from olaf.plan.workload import SOLVED_EPISODES, PPOTaskSpec
from olaf.priority import lower_priority
from olaf.rundir.jsonl import JsonlLog
from olaf.rundir.records import EvalRecord

EVAL_LOG = "evaluator.jsonl"
"""The evaluator's log in the run's ``hosts/``."""
POLL_S = 0.5
"""How often the evaluator looks for a newer checkpoint, s."""


@dataclass(frozen=True)
class EvalSchedule:
    """When and how much to evaluate.

    Attributes:
        every_s: at most one evaluation per this many seconds (> 0).
        episodes: episodes per evaluation (≥ 1; 100 to call the model solved).
        seed: the evaluation environments' seed (the same for every evaluation, so two checkpoints
            are scored on the same episodes' starts).
    """

    every_s: float = 30.0
    episodes: int = SOLVED_EPISODES
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.every_s > 0:
            raise ValueError(f"every_s={self.every_s} must be > 0")
        if self.episodes < 1:
            raise ValueError(f"episodes={self.episodes} must be >= 1")


def evaluate_checkpoints(spec: PPOTaskSpec, checkpoint: Path, log_path: Path, schedule: EvalSchedule,
                         stop: Any) -> int:
    """Follow ``checkpoint`` and log evaluations to ``log_path`` until ``stop`` (an Event) is set;
    then evaluate the last checkpoint if it is newer than the last evaluated. Returns the number
    of evaluations. An unreadable checkpoint (being replaced, or not yet written) is skipped."""
    from olaf.rl.evaluate import evaluate_weights  # noqa: PLC0415

    log = JsonlLog(log_path, flush_s=0)
    done_t = -1
    last_start = -float("inf")
    n = 0
    try:
        while True:
            final = stop.is_set()
            if final or time.monotonic() - last_start >= schedule.every_s:
                try:
                    ck = read_checkpoint(checkpoint)
                except CheckpointError:
                    ck = None
                if ck is not None and ck.t_ns > done_t:
                    last_start = time.monotonic()
                    r = evaluate_weights(spec, ck.weights, schedule.episodes, schedule.seed)
                    log.write(EvalRecord(ev="eval", t_ns=time.time_ns(), ckpt_t_ns=ck.t_ns,
                                         ps_messages=ck.updates, ps_updates=ck.worker_updates, episodes=r.episodes,
                                         mean=r.mean, std=r.std, min=r.min, max=r.max, mean_length=r.mean_length,
                                         eval_s=time.monotonic() - last_start))
                    done_t, n = ck.t_ns, n + 1
            if final:
                return n
            stop.wait(POLL_S)
    finally:
        log.close()


def _main(spec: PPOTaskSpec, checkpoint: Path, log_path: Path, schedule: EvalSchedule, stop: Any,
          nice: int) -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    lower_priority(nice, own_session=True)  # out of the harness's autogroup: one more worker's share
    evaluate_checkpoints(spec, checkpoint, log_path, schedule, stop)


class Evaluator:
    """The evaluator process of one job (module docstring); a context manager.

    Args:
        spec: the workers' task (environment and network).
        hosts_dir: the run's ``hosts/`` (``ps.checkpoint.npz`` is read, ``evaluator.jsonl`` written).
        schedule: when and how much.
        nice: the process's nice value: the workers' (its share of the cores is then one more
            worker's, as without a priority; :data:`olaf.constants.WORKER_NICE`).
    """

    def __init__(self, spec: PPOTaskSpec, hosts_dir: Path, schedule: EvalSchedule, nice: int = 0) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._stop = ctx.Event()
        self.log_path = hosts_dir / EVAL_LOG
        self._proc = ctx.Process(target=_main, name="olaf-evaluator", daemon=True,
                                 args=(spec, ps_checkpoint(hosts_dir), self.log_path, schedule, self._stop, nice))

    def __enter__(self) -> "Evaluator":
        self._proc.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def pid(self) -> Optional[int]:
        """The evaluator process's pid (None before :meth:`__enter__`)."""
        return self._proc.pid

    def close(self, timeout_s: Optional[float] = 600.0) -> None:
        """Ask for the final evaluation and wait for it (``timeout_s`` guards against a hang:
        the process is then killed)."""
        self._stop.set()
        self._proc.join(timeout_s)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()

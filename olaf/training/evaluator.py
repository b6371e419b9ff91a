"""The evaluator of the global model: a process beside the PS that scores the PS's weights.

While a training job runs, the PS keeps a snapshot of its checkpoint (:mod:`olaf.hosts.checkpoint`)
every ``every_s`` seconds (``hosts/ps.snapshots/<k>.npz``, :attr:`olaf.hosts.ps.PsConfig.snapshot_s`);
the evaluator scores every snapshot, in order, deterministically for ``episodes`` episodes
(:func:`olaf.rl.evaluate.evaluate_weights`; 100 is the environment's definition of "solved"),
appending an :class:`~olaf.rundir.records.EvalRecord` to ``hosts/evaluator.jsonl``. The schedule is
therefore fixed — one evaluation per ``every_s`` of the job, of the weights the PS had then —
however far behind the evaluator falls while it shares the cores with the workers. When the job
ends it scores the snapshots not yet scored (with the machine to itself) and then the PS's final
checkpoint, if newer; with ``until_solved`` it skips the remaining snapshots once the records show
a solved model (:func:`olaf.plan.workload.first_solved`) and scores only the final checkpoint.

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
from olaf.hosts.jobconfig import ps_checkpoint, ps_snapshots
from olaf.plan.workload import SOLVED_EPISODES, PPOTaskSpec, first_solved
from olaf.priority import lower_priority
from olaf.rundir.jsonl import JsonlLog
from olaf.rundir.records import EvalRecord

EVAL_LOG = "evaluator.jsonl"
"""The evaluator's log in the run's ``hosts/``."""
POLL_S = 0.5
"""How often the evaluator looks for a new snapshot, s."""


@dataclass(frozen=True)
class EvalSchedule:
    """When and how much to evaluate.

    Attributes:
        every_s: at most one evaluation per this many seconds (> 0).
        episodes: episodes per evaluation (≥ 1; 100 to call the model solved).
        seed: the evaluation environments' seed (the same for every evaluation, so two checkpoints
            are scored on the same episodes' starts).
        until_solved: with the job's ``solve_at``: once the records show a solved model, the
            snapshots left after the job ends are not scored (only the final checkpoint).
    """

    every_s: float = 30.0
    episodes: int = SOLVED_EPISODES
    seed: int = 0
    until_solved: Optional[float] = None

    def __post_init__(self) -> None:
        if not self.every_s > 0:
            raise ValueError(f"every_s={self.every_s} must be > 0")
        if self.episodes < 1:
            raise ValueError(f"episodes={self.episodes} must be >= 1")


def evaluate_checkpoints(spec: PPOTaskSpec, snapshots: Path, checkpoint: Path, log_path: Path,
                         schedule: EvalSchedule, stop: Any) -> int:
    """Score every snapshot in ``snapshots`` (in name order) as it appears and log evaluations to
    ``log_path`` until ``stop`` (an Event) is set; then the snapshots left (unless solved, with
    ``schedule.until_solved``) and ``checkpoint`` if it is newer than the last scored. Returns the
    number of evaluations. A snapshot or checkpoint that cannot be read is skipped, and so is one
    written after no update since the last scored one (the same updates and messages: the same
    weights): scored again, the same model would confirm its own "solved"."""
    from olaf.rl.evaluate import evaluate_weights  # noqa: PLC0415

    log = JsonlLog(log_path, flush_s=0)
    done: set[str] = set()
    done_t = -1
    done_counts: Optional[tuple[int, int]] = None
    scores: list[tuple[int, float]] = []
    n = 0

    def score(path: Path) -> None:
        nonlocal done_t, done_counts, n
        try:
            ck = read_checkpoint(path)
        except CheckpointError:
            return
        if ck.t_ns <= done_t or (ck.updates, ck.worker_updates) == done_counts:
            return
        start = time.monotonic()
        r = evaluate_weights(spec, ck.weights, schedule.episodes, schedule.seed)
        log.write(EvalRecord(ev="eval", t_ns=time.time_ns(), ckpt_t_ns=ck.t_ns, ps_messages=ck.updates,
                             ps_updates=ck.worker_updates, episodes=r.episodes, mean=r.mean, std=r.std, min=r.min,
                             max=r.max, mean_length=r.mean_length, eval_s=time.monotonic() - start))
        scores.append((r.episodes, r.mean))
        done_t, done_counts, n = ck.t_ns, (ck.updates, ck.worker_updates), n + 1

    def solved() -> bool:
        return schedule.until_solved is not None and first_solved(scores, schedule.until_solved) is not None

    try:
        while True:
            final = stop.is_set()
            pending = sorted(p for p in snapshots.glob("*.npz") if p.name not in done) if snapshots.is_dir() else []
            for p in pending:
                if final and solved():
                    break
                done.add(p.name)
                score(p)
                if not final and stop.is_set():
                    break
            if final:
                score(checkpoint)
                return n
            stop.wait(POLL_S)
    finally:
        log.close()


def _main(spec: PPOTaskSpec, hosts_dir: Path, log_path: Path, schedule: EvalSchedule, stop: Any,
          nice: int) -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    lower_priority(nice, own_session=True)  # out of the harness's autogroup: one more worker's share
    evaluate_checkpoints(spec, ps_snapshots(hosts_dir), ps_checkpoint(hosts_dir), log_path, schedule, stop)


class Evaluator:
    """The evaluator process of one job (module docstring); a context manager.

    Args:
        spec: the workers' task (environment and network).
        hosts_dir: the run's ``hosts/`` (``ps.snapshots/`` and ``ps.checkpoint.npz`` are read,
            ``evaluator.jsonl`` written).
        schedule: when and how much.
        nice: the process's nice value: the workers' (its share of the cores is then one more
            worker's, as without a priority; :data:`olaf.constants.WORKER_NICE`).
    """

    def __init__(self, spec: PPOTaskSpec, hosts_dir: Path, schedule: EvalSchedule, nice: int = 0) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._stop = ctx.Event()
        self.log_path = hosts_dir / EVAL_LOG
        self._proc = ctx.Process(target=_main, name="olaf-evaluator", daemon=True,
                                 args=(spec, hosts_dir, self.log_path, schedule, self._stop, nice))

    def __enter__(self) -> "Evaluator":
        self._proc.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def pid(self) -> Optional[int]:
        """The evaluator process's pid (None before :meth:`__enter__`)."""
        return self._proc.pid

    def close(self, timeout_s: Optional[float] = 1800.0) -> None:
        """Ask for the snapshots left and the final evaluation and wait for them (``timeout_s``
        guards against a hang: the process is then killed)."""
        self._stop.set()
        self._proc.join(timeout_s)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()

"""A training job on this host: real ``olaf ps`` and ``olaf worker`` processes over loopback UDP, no switch.

The reference ("ideal network") run of a training configuration and the
harness of ``tests/test_rl_train.py`` and ``bench/rl_train.py``: the same
processes and command lines (:mod:`olaf.hosts.argv`) a Mininet run starts,
with every host on its own loopback address (Linux routes all of 127/8 to
``lo``), so nothing is lost, aggregated or delayed.

:func:`run_local_job` starts the PS, then the workers with a start file;
once every worker has written its ``start`` record (all up: torch and the
environments loaded) it writes the start file, then polls the worker logs
(:class:`~olaf.rl.progress.RewardTracker`) until the mean worker reward
reaches the target, every worker has ended its schedule (e.g. after
``max_updates`` iterations: a job of a fixed number of iterations) or the
time budget is spent, and stops every process with SIGTERM (each writes its
summary). Times are wall-clock seconds from the start.

The output directory is a run directory (:mod:`olaf.rundir`): ``<name>.jsonl`` and
``<name>.summary.json`` of every host and the manifest ``run.json`` (backend ``local``; the
window from the start to the moment the processes were stopped; the plan: the PS's and the
workers' command-line arguments, the target and the budget; ``stopped_early_s`` when the target
ended the job, ``partial`` when a process failed).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional

from olaf.hosts.argv import ps_argv, worker_argv
from olaf.hosts.ps import PsConfig
from olaf.hosts.worker import WorkerConfig
from olaf.provenance import provenance
from olaf.rl.progress import Progress, RewardTracker
from olaf.rundir.atomic import write_text_atomic
from olaf.rundir.manifest import RunManifest, write_manifest

OLAF = [sys.executable, "-m", "olaf.cli"]
BACKEND = "local"


def _name(p: subprocess.Popen[Any]) -> str:
    """The host command of a job process (``olaf worker|ps --name …``) for error messages."""
    args = p.args if isinstance(p.args, (list, tuple)) else [p.args]
    return " ".join(map(str, list(args)[3:5]))

class JobError(RuntimeError):
    """A process of the job failed (exited early or did not come up); the message has its stderr."""


@dataclass
class JobResult:
    """Outcome of :func:`run_local_job`.

    Attributes:
        reached_s: seconds from the start until the mean worker reward first
            reached the target (None: not reached, or no target).
        reached: the :class:`Progress` at that moment.
        final: the last :class:`Progress`.
        elapsed_s: seconds from the start to the stop.
        startup_s: seconds from launch until every worker was up.
        history: ``(seconds, Progress)`` of every poll.
        schedules_ended: every worker ended its schedule by itself (exit status 0) before
            the target or the budget stopped the job.
    """

    reached_s: Optional[float]
    reached: Optional[Progress]
    final: Progress
    elapsed_s: float
    startup_s: float
    history: list[tuple[float, Progress]] = field(default_factory=list)
    schedules_ended: bool = False


def _poll(cond: Callable[[], bool], timeout_s: float, procs: list[subprocess.Popen]) -> bool:
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while time.monotonic() < deadline:
        if cond():
            return True
        for p in procs:
            if p.poll() is not None:
                raise JobError(f"{_name(p)} exited with {p.returncode}: "
                               f"{p.stderr.read() if p.stderr else ''}")
        tick.wait(0.1)
    return cond()


def run_local_job(out_dir: Path, ps: PsConfig, workers: list[WorkerConfig], *, target: Optional[float],
                  budget_s: float, poll_s: float = 1.0, startup_timeout_s: float = 300.0, window: int = 5,
                  on_progress: Optional[Callable[[float, Progress], None]] = None) -> JobResult:
    """Run PS and workers until the mean worker reward reaches ``target`` (None: no target), every
    worker has ended its schedule, or ``budget_s`` (wall seconds) passes.

    ``ps`` and ``workers`` are complete configurations (addresses on 127/8; the workers'
    schedules end by ``duration_s`` at least the budget, or by ``max_updates`` iterations);
    their ``out_dir`` and ``start_file`` are replaced by ``out_dir`` and ``out_dir/start_ns``.
    The logs are polled every ``poll_s`` seconds and once more after the last worker has
    ended, so the target is checked against the final state too.

    Raises:
        JobError: a process exited early or the workers were not up within ``startup_timeout_s``
            (``run.json`` then says ``partial``, with the error).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    start_file = out_dir / "start_ns"
    ps = replace(ps, out_dir=out_dir)
    workers = [replace(w, out_dir=out_dir, start_file=start_file) for w in workers]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    popen = lambda args: subprocess.Popen(OLAF + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,  # noqa: E731
                                          text=True, env=env)
    manifest = RunManifest(backend=BACKEND, plan={
        "ps": ps_argv(ps), "workers": {w.name: worker_argv(w) for w in workers}, "target": target,
        "budget_s": budget_s, "window": window}, provenance=provenance())
    procs = [popen(["ps", *ps_argv(ps)])]
    reached_s: Optional[float] = None
    try:
        _poll(lambda: ps.log_path.exists(), startup_timeout_s, procs)
        t_launch = time.monotonic()
        procs += [popen(["worker", *worker_argv(w)]) for w in workers]
        if not _poll(lambda: all(w.log_path.exists() for w in workers), startup_timeout_s, procs):
            raise JobError(f"workers not up within {startup_timeout_s} s")
        startup_s = time.monotonic() - t_launch
        t0_ns = time.time_ns()
        manifest = manifest.model_copy(update={"t_start_ns": t0_ns})
        write_manifest(out_dir, manifest)
        write_text_atomic(start_file, str(t0_ns))
        t0 = time.monotonic()
        tracker = RewardTracker([w.log_path for w in workers], window)
        history: list[tuple[float, Progress]] = []
        reached = None
        ended = False
        tick = threading.Event()
        while True:
            ended = all(p.poll() == 0 for p in procs[1:])  # before the poll: it then reads their last records
            if not ended:
                tick.wait(poll_s)
            now = time.monotonic() - t0
            prog = tracker.poll()
            history.append((now, prog))
            if on_progress is not None:
                on_progress(now, prog)
            if target is not None and prog.mean_worker_reward is not None \
                    and prog.workers_with_reward == len(workers) and prog.mean_worker_reward >= target:
                reached_s, reached = now, prog
                break
            if ended or now >= budget_s:
                break
            for p in procs:
                if p.poll() is not None and p.returncode != 0:
                    raise JobError(f"{_name(p)} exited with {p.returncode}: "
                                   f"{p.stderr.read() if p.stderr else ''}")
        elapsed = time.monotonic() - t0
    except JobError as e:
        manifest = manifest.model_copy(update={"partial": True, "partial_reason": str(e)})
        raise
    finally:
        if manifest.t_start_ns is not None:  # the window ends when the processes are stopped
            manifest = manifest.model_copy(update={"t_end_ns": time.time_ns()})
        manifest = manifest.model_copy(update={"stopped_early_s": reached_s})
        write_manifest(out_dir, manifest)
        for p in procs[1:] + procs[:1]:  # workers first, the PS last (it ACKs their last updates)
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return JobResult(reached_s, reached, tracker.poll(), elapsed, startup_s, history, ended)

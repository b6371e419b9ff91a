"""One training job through the emulated network (``olaf train``): the monitor that follows it and
the files it leaves in the run directory.

The job is an ``olaf run`` (:func:`olaf.topologies.emulation.run_once`: Mininet, BMv2 switches,
controller, PS, workers) whose workers run PPO (:class:`olaf.plan.workload.TrainJob`).
:class:`TrainMonitor` follows the host logs while they are written and ends the run when every
worker has a reward and the **mean worker reward** (:mod:`olaf.training.progress`) reaches the target
(or, for a job with ``solve_at``, when an evaluation of the global model of 100 episodes reaches
it and the next one confirms it: :func:`olaf.plan.workload.first_solved`,
:mod:`olaf.training.evaluator`), when every worker has done the job's number of iterations, or
when the PS has received the job's number of worker updates.
:func:`write_training_outputs` then writes, beside the AoM report of ``olaf report``:

* ``progress.csv`` — one row per poll (about 1 s): ``t_s`` (since t0), ``mean_worker_reward``,
  ``workers_with_reward``, ``env_steps``, ``iterations``, ``ps_messages`` (updates and aggregates
  the PS received), ``ps_updates`` (worker updates in them: Σ ``count``), ``global_reward``,
  ``eval_reward`` and ``eval_episodes`` (the latest evaluation of the global model, if any);
* ``rewards.csv`` — one row per worker iteration: ``worker``, ``t_s``, ``iteration``,
  ``env_steps``, ``reward`` (mean return of the episodes that ended in it, empty if none),
  ``sent``, ``ps_updates`` (worker updates the PS had received by then): reward over wall time
  and over received updates;
* ``training.json`` — the job, whether and when the target was reached, the final mean worker
  reward, the iterations of all workers and of the worker with fewest, saturated fixed-point
  elements, worker errors (e.g. a NaN loss), the workers lost with their machine
  (``lost_workers``: a Ray node lost mid-run), per host log that has any, its lines that are
  not valid records (``corrupt_log_lines``), and the evaluations of the global model
  (``evaluations``: the checkpoint's time since t0, the workers' environment steps then, worker
  updates at the PS, episodes, mean, std, the evaluation's wall time; ``final_eval``,
  ``best_eval``, ``solve_at``, ``solved``, ``solved_eval``);
* ``staleness.json`` and ``staleness.png`` — the updates' staleness and the policy drift
  (:mod:`olaf.training.staleness`);
* ``reward_time.png`` and ``reward_updates.png`` — the per-worker rewards (thin) and their mean
  (bold) over wall time and over the worker updates the PS received (paper Fig. 8's axes and
  Fig. 3's).
"""

from __future__ import annotations

import bisect
import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from olaf.plan.workload import first_solved
from olaf.rundir.jsonl import JsonlFollower, read_jsonl
from olaf.rundir.manifest import ManifestError, read_manifest
from olaf.rundir.records import ErrorRecord, EvalRecord, FlushRecord, GenRecord, UpdateRecord
from olaf.rundir.training import EvalRow, TrainingResult, write_training
from olaf.training.evaluator import EVAL_LOG
from olaf.training.progress import Progress, RewardTracker
from olaf.training.staleness import write_staleness

PROGRESS_FIELDS = ("t_s", "mean_worker_reward", "workers_with_reward", "env_steps", "iterations", "ps_messages",
                   "ps_updates", "global_reward", "eval_reward", "eval_episodes")


def _counts_update(rec: UpdateRecord) -> bool:
    """A non-INIT update record that stands for a worker update: with K > 1 chunks, chunk 0's
    (every chunk of an update is a message; chunk 0 counts it once, docs/hosts.md)."""
    return not rec.init and not rec.chunk


class _PsFollow:
    """Follows the PS log: messages received, worker updates in them (Σ count; chunk 0's when the
    model travels in chunks), the global reward (of the last slice updated)."""

    def __init__(self, path: Path) -> None:
        self.log: JsonlFollower[object] = JsonlFollower(path)
        self.messages = self.updates = 0
        self.global_reward: Optional[float] = None

    def poll(self) -> None:
        for rec in self.log.poll():
            if not isinstance(rec, (UpdateRecord, FlushRecord)):
                continue
            if isinstance(rec, UpdateRecord) and _counts_update(rec):
                self.messages += 1
                self.updates += rec.count
            if rec.global_reward is not None:
                self.global_reward = rec.global_reward


class _EvalFollow:
    """Follows the evaluator's log (:mod:`olaf.training.evaluator`): every evaluation so far."""

    def __init__(self, path: Path) -> None:
        self.log: JsonlFollower[object] = JsonlFollower(path)
        self.records: list[EvalRecord] = []

    def poll(self) -> Optional[EvalRecord]:
        self.records += [r for r in self.log.poll() if isinstance(r, EvalRecord)]
        return self.records[-1] if self.records else None


@dataclass
class TrainMonitor:
    """Follows a training run (:class:`olaf.topologies.emulation.RunMonitor`).

    Args:
        hosts_dir: the run's ``hosts/`` (``<worker>.jsonl``, ``ps.jsonl``).
        workers: the worker names.
        target: mean worker reward that ends the run (every worker must have a reward).
        window: iterations with an ended episode averaged per worker.
        stop_at_target: end the run when the target is reached (else only record when).
        iterations: end the run once every worker has done this many iterations (None: no limit).
        ps_updates: end the run once the PS has received this many worker updates (Σ ``count``;
            None: no limit).
        solve_at: with ``stop_at_target``, end the run when an evaluation of the global model of at
            least :data:`SOLVED_EPISODES` episodes scores this mean and the next confirms it
            (:func:`~olaf.plan.workload.first_solved`; the worker target is then only recorded);
            None: the worker target ends it.
    """

    hosts_dir: Path
    workers: list[str]
    target: float
    window: int = 5
    stop_at_target: bool = True
    iterations: Optional[int] = None
    ps_updates: Optional[int] = None
    solve_at: Optional[float] = None
    history: list[tuple[float, Progress, int, int, Optional[float], Optional[EvalRecord]]] = field(default_factory=list)
    reached_s: Optional[float] = None
    solved: Optional[EvalRecord] = None
    lost: set[str] = field(default_factory=set)
    """Workers lost with their machine (:meth:`workers_lost`): out of the target and the limits."""

    def __post_init__(self) -> None:
        self._tracker = RewardTracker([self.hosts_dir / f"{w}.jsonl" for w in self.workers], self.window)
        self._ps = _PsFollow(self.hosts_dir / "ps.jsonl")
        self._eval = _EvalFollow(self.hosts_dir / EVAL_LOG)

    @property
    def evaluations(self) -> list[EvalRecord]:
        """Every evaluation of the global model read so far."""
        return self._eval.records

    def poll_evaluations(self) -> Optional[EvalRecord]:
        """Read the evaluations appended since the last poll (also after the run: the evaluator's
        final one); sets :attr:`solved` at the first that solves. Returns the latest."""
        ev = self._eval.poll()
        if self.solve_at is not None and self.solved is None:
            recs = self._eval.records
            i = first_solved([(r.episodes, r.mean) for r in recs], self.solve_at)
            self.solved = None if i is None else recs[i]
        return ev

    def workers_lost(self, names: set[str]) -> None:
        """The harness lost ``names`` with their machine (a Ray node): from now on the target needs a
        reward from every *other* worker and the iteration limit counts only theirs
        (:meth:`olaf.training.progress.RewardTracker.retire`)."""
        for n in sorted(set(names) - self.lost):
            self._tracker.retire(self.hosts_dir / f"{n}.jsonl")
            self.lost.add(n)

    def poll(self, elapsed_s: float) -> tuple[str, bool]:
        p = self._tracker.poll()
        alive = len(self.workers) - len(self.lost)
        self._ps.poll()
        ev = self.poll_evaluations()
        self.history.append((elapsed_s, p, self._ps.messages, self._ps.updates, self._ps.global_reward, ev))
        reached = (p.mean_worker_reward is not None and p.workers_with_reward == alive
                   and p.mean_worker_reward >= self.target)
        if reached and self.reached_s is None:
            self.reached_s = elapsed_s
        stop = (self.solved is not None) if self.solve_at is not None else reached
        done = ((self.iterations is not None and p.fewest_generations >= self.iterations)
                or (self.ps_updates is not None and self._ps.updates >= self.ps_updates))
        mean = "–" if p.mean_worker_reward is None else f"{p.mean_worker_reward:.1f}"
        glob = "–" if self._ps.global_reward is None else f"{self._ps.global_reward:.1f}"
        updates = "" if self.ps_updates is None else f"/{self.ps_updates}"
        limit = "" if self.iterations is None else f" (fewest {p.fewest_generations}/{self.iterations} per worker)"
        solve = "" if self.solve_at is None else f", solved at {self.solve_at:g}"
        evaluated = "" if ev is None else f" | eval {ev.mean:.1f}±{ev.std:.0f} ({ev.episodes} ep{solve})"
        lost = f", {len(self.lost)} lost" if self.lost else ""
        return (f"reward {mean} ({p.workers_with_reward}/{alive} workers{lost}, target {self.target:g}) "
                f"global {glob}{evaluated} | PS {self._ps.updates}{updates} updates | {p.generations} iterations"
                f"{limit}"), (stop and self.stop_at_target) or done


def _worker_rows(path: Path, t0_ns: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A worker log's iteration rows and its stop facts (error, saturation, corrupt lines)."""
    rows: list[dict[str, Any]] = []
    facts: dict[str, Any] = {"saturated_elements": 0, "error": None, "iterations": 0, "corrupt": 0}
    if not path.exists():
        return rows, facts
    got = read_jsonl(path)
    facts["corrupt"] = got.corrupt_lines
    for r in got.records:
        if isinstance(r, GenRecord):
            facts["iterations"] += 1
            facts["saturated_elements"] += r.saturated or 0
            rows.append({"t_ns": r.t_ns, "t_s": (r.t_ns - t0_ns) / 1e9, "iteration": r.idx,
                         "env_steps": r.env_steps, "reward": r.reward, "sent": r.sent})
        elif isinstance(r, ErrorRecord):
            facts["error"] = r.error
    return rows, facts


def _ps_receptions(path: Path) -> tuple[list[tuple[int, int]], int]:
    """``(t_ns, count)`` of every non-INIT update the PS received (chunk 0's of a chunked model), in
    time order, and the PS log's corrupt lines."""
    if not path.exists():
        return [], 0
    got = read_jsonl(path)
    out = sorted((r.t_ns, r.count) for r in got.records if isinstance(r, UpdateRecord) and _counts_update(r))
    return out, got.corrupt_lines


def write_training_outputs(out: Path, monitor: TrainMonitor, job: dict[str, Any]) -> TrainingResult:
    """Write ``progress.csv``, ``rewards.csv``, ``training.json`` and the two plots into ``out``
    (the run directory; its manifest ``run.json`` gives t0); returns the ``training.json`` content.

    Raises:
        olaf.rundir.manifest.ManifestError: ``run.json`` missing, unreadable or without ``t_start_ns``.
    """
    manifest = read_manifest(out)
    if manifest.t_start_ns is None:
        raise ManifestError(f"{out / 'run.json'}: no t_start_ns (the run never started)")
    t0_ns = manifest.t_start_ns
    hosts = out / "hosts"
    with open(out / "progress.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PROGRESS_FIELDS)
        for t, p, msgs, upd, glob, ev in monitor.history:
            w.writerow([f"{t:.2f}", "" if p.mean_worker_reward is None else f"{p.mean_worker_reward:.3f}",
                        p.workers_with_reward, p.env_steps, p.generations, msgs, upd, "" if glob is None else glob,
                        "" if ev is None else f"{ev.mean:.3f}", "" if ev is None else ev.episodes])
    receptions, ps_corrupt = _ps_receptions(hosts / "ps.jsonl")
    times = [t for t, _ in receptions]
    cum = []
    total = 0
    for _, c in receptions:
        total += c
        cum.append(total)
    per_worker: dict[str, list[dict[str, Any]]] = {}
    facts: dict[str, dict[str, Any]] = {}
    for name in monitor.workers:
        rows, facts[name] = _worker_rows(hosts / f"{name}.jsonl", t0_ns)
        for r in rows:
            i = bisect.bisect_right(times, r["t_ns"])
            r["ps_updates"] = cum[i - 1] if i else 0
        per_worker[name] = rows
    with open(out / "rewards.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["worker", "t_s", "iteration", "env_steps", "reward", "sent", "ps_updates"])
        for name, rows in per_worker.items():
            for r in rows:
                w.writerow([name, f"{r['t_s']:.3f}", r["iteration"], r["env_steps"] if r["env_steps"] is not None else "",
                            "" if r["reward"] is None else f"{r['reward']:.3f}", int(r["sent"]), r["ps_updates"]])
    last = monitor.history[-1] if monitor.history else None
    monitor.poll_evaluations()  # the evaluator's last one, written after the run's last poll
    evals, solved = monitor.evaluations, monitor.solved
    poll_times = [h[0] for h in monitor.history]

    def steps_at(t_s: float) -> Optional[int]:
        """Environment steps of all workers at ``t_s`` (the last poll at or before it)."""
        i = bisect.bisect_right(poll_times, t_s)
        return monitor.history[i - 1][1].env_steps if i else None

    def eval_row(r: EvalRecord) -> EvalRow:
        t_s = (r.ckpt_t_ns - t0_ns) / 1e9
        return EvalRow(t_s=round(t_s, 2), env_steps=steps_at(t_s), ps_updates=r.ps_updates, episodes=r.episodes,
                       mean=round(r.mean, 3), std=round(r.std, 3), eval_s=round(r.eval_s, 2))

    result = TrainingResult(
        job=job,
        target=monitor.target,
        reached=monitor.reached_s is not None,
        time_to_target_s=monitor.reached_s,
        elapsed_s=last[0] if last else 0.0,
        final_mean_worker_reward=last[1].mean_worker_reward if last else None,
        workers_with_reward=last[1].workers_with_reward if last else 0,
        env_steps=last[1].env_steps if last else 0,
        iterations=last[1].generations if last else 0,
        fewest_worker_iterations=last[1].fewest_generations if last else 0,
        ps_updates=total,
        ps_messages=len(receptions),
        saturated_elements=sum(f["saturated_elements"] for f in facts.values()),
        worker_errors={n: f["error"] for n, f in facts.items() if f["error"]},
        lost_workers=sorted(monitor.lost),
        corrupt_log_lines={**{n: f["corrupt"] for n, f in facts.items() if f["corrupt"]},
                           **({"ps": ps_corrupt} if ps_corrupt else {})},
        evaluations=[eval_row(r) for r in evals],
        final_eval=eval_row(evals[-1]) if evals else None,
        best_eval=eval_row(max(evals, key=lambda r: r.mean)) if evals else None,
        solve_at=monitor.solve_at,
        solved=solved is not None,
        solved_eval=None if solved is None else eval_row(solved),
    )
    write_training(out, result)
    _plot(out, monitor, per_worker)
    write_staleness(out)
    return result


def _plot(out: Path, monitor: TrainMonitor, per_worker: dict[str, list[dict[str, Any]]]) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    for x_key, fname, xlabel in (("t_s", "reward_time.png", "time since start (s)"),
                                 ("ps_updates", "reward_updates.png", "worker updates received by the PS")):
        fig, ax = plt.subplots(figsize=(7, 4))
        for rows in per_worker.values():
            pts = [(r[x_key], r["reward"]) for r in rows if r["reward"] is not None]
            if pts:
                ax.plot(*zip(*pts), lw=0.5, alpha=0.35)
        hist = [(t, p.mean_worker_reward, upd) for t, p, _, upd, _, _ in monitor.history
                if p.mean_worker_reward is not None]
        if hist:
            xs = [h[0] for h in hist] if x_key == "t_s" else [h[2] for h in hist]
            ax.plot(xs, [h[1] for h in hist], lw=2.0, color="black", label="mean worker reward")
        if x_key == "t_s" and monitor.evaluations:
            ax.plot([h[0] for h in monitor.history if h[5] is not None],
                    [h[5].mean for h in monitor.history if h[5] is not None], lw=1.5, color="tab:red",
                    drawstyle="steps-post", label="global model, deterministic evaluation")
        ax.axhline(monitor.target, ls="--", lw=0.8, color="grey", label=f"target {monitor.target:g}")
        if monitor.solve_at is not None:
            ax.axhline(monitor.solve_at, ls=":", lw=0.8, color="tab:red", label=f"solved {monitor.solve_at:g}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("episode return")
        ax.legend(loc="lower right")
        fig.tight_layout()
        fig.savefig(out / fname, dpi=110)
        plt.close(fig)

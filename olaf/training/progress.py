"""Training progress read from the worker logs while they are written: the mean worker reward.

Each worker logs one ``gen`` record per iteration (:mod:`olaf.hosts.worker`)
with ``reward`` = the mean return of the episodes that ended in it (null if
none) and, for PPO, ``env_steps`` (cumulative). :class:`RewardTracker` follows
the logs incrementally (:class:`olaf.rundir.jsonl.JsonlFollower`: it reads only what
was appended since the last poll, a line still being written at the next one; lines
that are not valid records are counted, :attr:`RewardTracker.corrupt`) and gives

* a worker's reward: the mean of the ``reward`` of its last ``window``
  iterations that ended an episode (paper Fig. 8 plots such a per-worker
  average reward);
* the **mean worker reward**: the mean of that over the workers that have one;
* the total environment steps of all workers, and the iterations of the worker that has
  done fewest (a job of a fixed number of iterations per worker ends on it).

A worker that was lost with its machine (a Ray node; :meth:`RewardTracker.retire`) keeps its
environment steps, iterations and sent updates in the totals, but leaves the mean worker reward,
the count of workers with a reward and the fewest iterations: the job goes on with the others.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from olaf.rundir.jsonl import JsonlFollower
from olaf.rundir.records import GenRecord


@dataclass(frozen=True)
class Progress:
    """One poll of :class:`RewardTracker`.

    Attributes:
        mean_worker_reward: None until some worker has a reward.
        workers_with_reward: how many workers have one.
        env_steps: environment steps of all workers (PPO; 0 for the bandit).
        generations: iterations of all workers.
        sent: updates sent by all workers.
        fewest_generations: iterations of the worker that has done fewest (0 before every
            worker has logged one).
    """

    mean_worker_reward: Optional[float]
    workers_with_reward: int
    env_steps: int
    generations: int
    sent: int
    fewest_generations: int = 0


class _Follow:
    def __init__(self, path: Path, window: int) -> None:
        self.log: JsonlFollower[object] = JsonlFollower(path)
        self.rewards: deque[float] = deque(maxlen=window)
        self.env_steps = self.generations = self.sent = 0

    def poll(self) -> None:
        for rec in self.log.poll():
            if not isinstance(rec, GenRecord):
                continue
            self.generations += 1
            self.sent += rec.sent
            self.env_steps = max(self.env_steps, rec.env_steps or 0)
            if rec.reward is not None and (rec.episodes is None or rec.episodes > 0):
                self.rewards.append(rec.reward)


class RewardTracker:
    """Follows worker logs ``paths`` (they may not exist yet); :meth:`poll` returns the :class:`Progress`.

    Args:
        paths: the workers' ``.jsonl`` logs.
        window: iterations with an ended episode averaged per worker (≥ 1).
    """

    def __init__(self, paths: Iterable[Path], window: int = 5) -> None:
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self._logs = [_Follow(Path(p), window) for p in paths]
        self._retired: set[Path] = set()

    def retire(self, path: Path) -> None:
        """Leave the worker of log ``path`` out of the mean reward and the fewest iterations from now
        on (it was lost with its machine); its steps, iterations and sent updates stay in the totals.

        Raises:
            KeyError: ``path`` is not one of the followed logs.
        """
        if all(f.log.path != Path(path) for f in self._logs):
            raise KeyError(f"{path} is not a followed worker log")
        self._retired.add(Path(path))

    @property
    def corrupt(self) -> int:
        """Lines of the followed logs that were not valid records."""
        return sum(f.log.corrupt.count for f in self._logs)

    def poll(self) -> Progress:
        for f in self._logs:
            f.poll()
        live = [f for f in self._logs if f.log.path not in self._retired]
        per_worker = [sum(f.rewards) / len(f.rewards) for f in live if f.rewards]
        return Progress(sum(per_worker) / len(per_worker) if per_worker else None, len(per_worker),
                        sum(f.env_steps for f in self._logs), sum(f.generations for f in self._logs),
                        sum(f.sent for f in self._logs), min((f.generations for f in live), default=0))

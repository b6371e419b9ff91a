"""The worker's learning-task interface, and the folding of skipped generations.

A worker (:mod:`olaf.hosts.worker`) runs one :class:`Task`, chosen by name from the
task registry (:func:`task_kinds`, :func:`task_factory`): the Python entry points of the
group ``olaf.tasks`` (``pyproject.toml``), so a task package plugs in without the hosts
importing it:

* ``bandit`` — the numpy contextual bandit of :mod:`olaf.hosts.task` (cheap:
  tests and benchmarks of the network path);
* ``ppo`` — the PPO learner of :mod:`olaf.rl` on a Gymnasium environment
  (:class:`olaf.rl.task.PPOTask`; needs the ``train`` extra).

A factory takes ``(worker configuration, init_rng, task_rng)`` and returns a :class:`Task`;
one whose optional dependencies are missing raises :class:`TaskUnavailable`.

Each generation the worker calls :meth:`Task.generate` with the global weights
of the latest ACKs if any arrived since the previous generation (adopted now,
at the end of the previous iteration: paper §8.2, no preemption), else None. With a model
sent in K chunks an ACK carries one slice: the worker overwrites the slices that arrived in
:meth:`Task.current_weights` and hands over the result.
It returns a :class:`Generation`: the returns of the episodes that ended, the
update direction (what the PS adds, scaled, to ``w``) and how many samples
produced it.

:class:`Experience` sums generations until an update is sent, so a sent update
subsumes the skipped ones (paper §2.2, §5): its reward is the mean return of
all episodes that ended since the last sent update, its direction the
sample-weighted mean of their directions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable, Optional, Protocol

import numpy as np

TASK_GROUP = "olaf.tasks"
"""Entry-point group of the worker tasks (``name = "module:factory"``)."""


class TaskUnavailable(ImportError):
    """A registered task cannot run here (an optional dependency is missing); the message names
    it and the install command."""


def _registry() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=TASK_GROUP)}


def task_kinds() -> tuple[str, ...]:
    """Names of the registered tasks, sorted (``bandit`` at least).

    Raises:
        RuntimeError: no task is registered (Olaf's distribution is not installed: ``pip install -e .``).
    """
    kinds = tuple(sorted(_registry()))
    if not kinds:
        raise RuntimeError(f"no worker task is registered (entry points {TASK_GROUP!r}): install Olaf "
                           "(`pip install -e .` in the checkout) so its tasks are registered")
    return kinds


def task_factory(kind: str) -> Callable[..., Task]:
    """The factory of task ``kind`` (``factory(cfg, init_rng, task_rng) -> Task``).

    Raises:
        ValueError: no task of that name (the message lists the registered ones).
    """
    ep = _registry().get(kind)
    if ep is None:
        raise ValueError(f"unknown task {kind!r}; registered tasks: {', '.join(task_kinds())}")
    return ep.load()


@dataclass
class Generation:
    """One iteration of a task.

    Attributes:
        rewards: returns of the episodes that ended during it, shape ``(E,)`` (E may be 0).
        direction: update direction, shape ``(G,)`` float64.
        samples: samples behind ``direction`` (episodes for the bandit, environment
            steps for PPO); the weight of this generation when folded.
        info: JSON-ready fields for the worker's ``gen`` record (e.g. ``exp_reward``, losses).
    """

    rewards: np.ndarray
    direction: np.ndarray
    samples: int
    info: dict[str, Any] = field(default_factory=dict)


class Task(Protocol):
    """What a worker needs of a learning task."""

    kind: str
    num_weights: int

    def initial_weights(self) -> np.ndarray:
        """The worker's initial weights (sent in its INIT), shape ``(G,)``."""
        ...

    def current_weights(self) -> np.ndarray:
        """The weights the next iteration would start from, shape ``(G,)`` (a copy): the worker
        overwrites the ACK slices that arrived in it and hands the result to :meth:`generate`."""
        ...

    def generate(self, adopt: Optional[np.ndarray]) -> Generation:
        """One iteration; ``adopt`` (shape ``(G,)``) replaces the task's weights first if given.

        Raises:
            FloatingPointError: training produced NaN/inf (the worker stops).
        """
        ...

    def summary(self) -> dict[str, Any]:
        """JSON-ready final state for the worker's summary."""
        ...

    def close(self) -> None:
        """Release environments."""
        ...


class Experience:
    """Generations since the last sent update (sums, so skipped updates are subsumed)."""

    def __init__(self, num_weights: int) -> None:
        self._g = np.zeros(num_weights)
        self._r = 0.0
        self._episodes = 0
        self._samples = 0
        self.updates = 0
        self.last_reward: Optional[float] = None

    def add(self, gen: Generation) -> None:
        """Fold in one generation."""
        self._g += gen.direction * gen.samples
        self._r += float(np.sum(gen.rewards))
        self._episodes += int(gen.rewards.shape[0])
        self._samples += gen.samples
        self.updates += 1

    @property
    def ready(self) -> bool:
        """An update can be formed: something was collected and a reward is known
        (an episode ended since the last sent update, or one ended before)."""
        return self.updates > 0 and (self._episodes > 0 or self.last_reward is not None)

    def take(self) -> tuple[float, np.ndarray, int, int]:
        """``(mean reward, mean direction (G,), generations folded in, episodes)`` and reset.

        The reward is the mean return of the episodes folded in; with none, the
        reward of the previous take (an update needs a reward, paper §2.1).

        Raises:
            ValueError: not :attr:`ready`.
        """
        if not self.ready:
            raise ValueError("no experience collected" if self.updates == 0 else "no episode has ended yet")
        reward = self._r / self._episodes if self._episodes else self.last_reward
        assert reward is not None
        out = (reward, self._g / max(self._samples, 1), self.updates, self._episodes)
        self.last_reward = reward
        self._g = np.zeros_like(self._g)
        self._r, self._episodes, self._samples, self.updates = 0.0, 0, 0, 0
        return out

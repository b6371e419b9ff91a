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
It returns a :class:`~olaf.experience.Generation`: the returns of the episodes that ended, the
update direction (what the PS adds, scaled, to ``w``) and how many samples
produced it; the client folds generations until an update is sent
(:class:`olaf.experience.Experience`).
"""

from __future__ import annotations

from importlib import metadata
from typing import Any, Callable, Optional, Protocol

import numpy as np

from olaf.experience import Generation

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

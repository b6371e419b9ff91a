"""What a worker learned in one iteration (:class:`Generation`) and the folding of skipped ones
(:class:`Experience`), shared by the client library (:mod:`olaf.client`) and the workers'
learning tasks (:mod:`olaf.hosts.learning`).

:class:`Experience` sums generations until an update is sent, so a sent update subsumes the
skipped ones (paper §2.2, §5): its reward is the mean return of all episodes that ended since
the last sent update, its direction the sample-weighted mean of their directions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np


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

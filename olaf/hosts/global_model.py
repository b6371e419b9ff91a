"""The parameter server's global model and update rule (paper §2.1).

State: global weights ``w`` (``G`` floats), the averaged gradient ``g_a`` and the
global reward ``r_g``, initially −∞.

* **INIT** (flag INIT, ``docs/protocol.md``): the first INIT update's elements
  (Q7.24) become ``w``; the weights of later INITs are ignored.
* **Update** with ``count`` = c, ``reward_sum`` = R (Q15.16) and ``grads`` = S
  (Q7.24; the switch's element-wise sum over the c folded worker updates):

  1. mean reward ``r = R / c``; gradient of the aggregate ``g = S / c`` (the
     average of the folded worker gradients);
  2. if ``r > r_g`` (compared exactly, ``R·c_g > R_g·c``): ``g_a ← g`` on the
     first accepted update, else ``g_a ← (g_a + g) / 2`` (``avg(g_a, g)``);
     ``w ← w + γ·g_a`` (``γ`` = 0.001 in the paper), clipped to the Q7.24
     range; ``r_g ← r``;
  3. otherwise nothing changes (the update is *rejected* by reward gating).

  An update before any INIT changes nothing (*before_init*); one whose
  element count differs from ``G`` is *wrong_size*.

Whatever the outcome the PS ACKs the update with :meth:`GlobalModel.ack_weights`
(Q7.24, round half to even) and :meth:`GlobalModel.global_reward_fixed`
(Q15.16 of ``r_g``; ``INT32_MIN`` stands for −∞ and for "no model yet", when
the ACK carries no weights).
"""

from __future__ import annotations

import enum
from fractions import Fraction
from typing import Optional, Sequence

import numpy as np

from olaf.fixedpoint import GRAD_FRAC_BITS, INT32_MAX, INT32_MIN, reward_from_fixed
from olaf.update import Update

_SCALE = float(1 << GRAD_FRAC_BITS)
W_MIN = INT32_MIN / _SCALE
W_MAX = INT32_MAX / _SCALE


class Outcome(str, enum.Enum):
    """What the PS did with one received update (logged as its value)."""

    INITIALISED = "initialised"
    INIT_IGNORED = "init_ignored"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    BEFORE_INIT = "before_init"
    WRONG_SIZE = "wrong_size"


class GlobalModel:
    """Global weights, averaged gradient and global reward; see the module docstring.

    Args:
        lr: learning rate ``γ`` (> 0), paper §2.1 uses 0.001.
    """

    def __init__(self, lr: float = 0.001) -> None:
        if not lr > 0:
            raise ValueError(f"learning rate must be > 0, got {lr}")
        self.lr = lr
        self.weights: Optional[np.ndarray] = None
        self.avg_grad: Optional[np.ndarray] = None
        self._reward: Optional[tuple[int, int]] = None  # (reward_sum, count) of r_g; None = −∞
        self._ack_weights: tuple[int, ...] = ()
        self.accepted = 0

    @property
    def initialised(self) -> bool:
        return self.weights is not None

    @property
    def num_weights(self) -> Optional[int]:
        return None if self.weights is None else self.weights.size

    def init(self, weights_fixed: Sequence[int]) -> Outcome:
        """Handle an INIT update's elements (Q7.24); only the first one initialises ``w``."""
        if self.weights is not None:
            return Outcome.INIT_IGNORED
        self._set_weights(np.asarray(weights_fixed, dtype=np.float64) / _SCALE)
        return Outcome.INITIALISED

    def apply(self, u: Update) -> Outcome:
        """Apply the reward-gated averaged-gradient rule to a (possibly aggregated) update."""
        if self.weights is None:
            return Outcome.BEFORE_INIT
        if len(u.grads) != self.weights.size:
            return Outcome.WRONG_SIZE
        if self._reward is not None:
            g_sum, g_count = self._reward
            if u.reward_sum * g_count <= g_sum * u.count:
                return Outcome.REJECTED
        g = np.asarray(u.grads, dtype=np.float64) / (_SCALE * u.count)
        self.avg_grad = g if self.avg_grad is None else (self.avg_grad + g) / 2.0
        self._set_weights(self.weights + self.lr * self.avg_grad)
        self._reward = (u.reward_sum, u.count)
        self.accepted += 1
        return Outcome.ACCEPTED

    def _set_weights(self, w: np.ndarray) -> None:
        self.weights = np.clip(w, W_MIN, W_MAX)
        # round half to even, as olaf.fixedpoint.to_fixed
        self._ack_weights = tuple(np.rint(self.weights * _SCALE).astype(np.int64).tolist())

    def ack_weights(self) -> tuple[int, ...]:
        """The global weights as Q7.24 elements for an ACK (empty before INIT)."""
        return self._ack_weights

    def global_reward(self) -> Optional[float]:
        """``r_g`` as a float, None while it is −∞."""
        if self._reward is None:
            return None
        return reward_from_fixed(self._reward[0]) / self._reward[1]

    def global_reward_fixed(self) -> int:
        """``r_g`` in Q15.16 (round half to even), ``INT32_MIN`` for −∞."""
        if self._reward is None:
            return INT32_MIN
        return round(Fraction(*self._reward))

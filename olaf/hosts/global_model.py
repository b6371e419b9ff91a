"""The parameter server's global model and update rule (paper §2.1), with alternative optimizer steps.

State: global weights ``w`` (``G`` floats), the global reward ``r_g`` (initially
−∞) and the state of the optimizer step.

* **INIT** (flag INIT, ``docs/protocol.md``): the first INIT update's elements
  (Q7.24) become ``w``; the weights of later INITs are ignored.
* **Update** with ``count`` = c, ``reward_sum`` = R (Q15.16) and ``grads`` = S
  (Q7.24; the switch's element-wise sum over the c folded worker updates, or the
  PS's own sum over a flushed window, :mod:`olaf.hosts.modes`):

  1. mean reward ``r = R / c``; direction of the aggregate ``g = S / c`` (the
     average of the folded worker directions; a worker sends the ascent
     direction, so ``w ← w + …`` improves the objective);
  2. **reward gating** (on by default for the paper's rule): if ``r ≤ r_g``
     (compared exactly, ``R·c_g ≤ R_g·c``) the update is *rejected* and nothing
     changes;
  3. otherwise the **step** (:class:`Step`), each clipping ``w`` to the Q7.24 range:

     * ``paper`` (paper §2.1): ``g_a ← g`` on the first applied update, else
       ``g_a ← (g_a + g) / 2`` (``avg(g_a, g)``); ``w ← w + γ·g_a``
       (``γ`` = 0.001 in the paper);
     * ``sgd`` (plain asynchronous SGD, Hogwild-style at one PS): ``w ← w + γ·g``;
     * ``adam`` (Kingma & Ba 2015, ascent form, as the shared optimizer of
       asynchronous actor-critic): ``m ← β₁m + (1−β₁)g``, ``v ← β₂v + (1−β₂)g²``,
       ``w ← w + γ·m̂ / (√v̂ + ε)`` with bias-corrected ``m̂, v̂``; ``β₁ = 0.9``,
       ``β₂ = 0.999``, ``ε = 1e−8``;

  4. ``r_g ← r`` (with gating, ``r_g`` is therefore the best mean reward applied
     so far; without, the reward of the latest applied update).

  **Step-size schedule** (optional, ``lr_final``): ``γ`` goes linearly from ``lr`` to ``lr_final``
  over the first ``decay_updates`` worker updates applied (Σ ``count`` of accepted updates) and
  stays there: ``γ_k = lr + (lr_final − lr)·min(1, k/decay_updates)`` — the linear schedules of
  RL Zoo's PPO settings, counted in updates rather than environment steps.

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
from olaf.rundir.records import Outcome
from olaf.update import Update

_SCALE = float(1 << GRAD_FRAC_BITS)
W_MIN = INT32_MIN / _SCALE
W_MAX = INT32_MAX / _SCALE
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


class Step(str, enum.Enum):
    """The PS's optimizer step (module docstring)."""

    PAPER = "paper"
    SGD = "sgd"
    ADAM = "adam"


class GlobalModel:
    """Global weights, optimizer state and global reward; see the module docstring.

    Args:
        lr: learning rate ``γ`` (> 0), paper §2.1 uses 0.001.
        step: optimizer step (:class:`Step` or its value).
        gate: reward gating; None = on for ``paper``, off for ``sgd``/``adam``.
        lr_final, decay_updates: the step-size schedule (module docstring; None: constant ``lr``).

    Raises:
        ValueError: ``lr`` not > 0, ``lr_final`` not > 0 or without ``decay_updates`` ≥ 1, or an unknown step.
    """

    def __init__(self, lr: float = 0.001, step: Step | str = Step.PAPER, gate: Optional[bool] = None,
                 lr_final: Optional[float] = None, decay_updates: Optional[int] = None) -> None:
        if not lr > 0:
            raise ValueError(f"learning rate must be > 0, got {lr}")
        if lr_final is not None and not (lr_final > 0 and decay_updates is not None and decay_updates >= 1):
            raise ValueError(f"a step-size schedule needs lr_final > 0 (got {lr_final}) and decay_updates >= 1 "
                             f"(got {decay_updates})")
        try:
            self.step = Step(step)
        except ValueError:
            raise ValueError(f"unknown PS step {step!r}; use one of {', '.join(s.value for s in Step)}") from None
        self.gate = self.step is Step.PAPER if gate is None else gate
        self.lr = lr
        self.lr_final, self.decay_updates = lr_final, decay_updates
        self.applied = 0
        """Worker updates applied (Σ ``count`` of accepted updates): the schedule's ``k``."""
        self.weights: Optional[np.ndarray] = None
        self.avg_grad: Optional[np.ndarray] = None
        self._m: Optional[np.ndarray] = None
        self._v: Optional[np.ndarray] = None
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
        """Apply the rule to a (possibly aggregated) update."""
        return self.apply_sums(u.reward_sum, u.count, u.grads)

    def apply_sums(self, reward_sum: int, count: int, grad_sum: Sequence[int] | np.ndarray) -> Outcome:
        """Apply the rule to sums over ``count`` worker updates: ``reward_sum`` (Q15.16 units, any
        integer) and ``grad_sum`` (Q7.24 units, integers of any size, shape ``(G,)``)."""
        if self.weights is None:
            return Outcome.BEFORE_INIT
        if len(grad_sum) != self.weights.size:
            return Outcome.WRONG_SIZE
        if self.gate and self._reward is not None:
            g_sum, g_count = self._reward
            if reward_sum * g_count <= g_sum * count:
                return Outcome.REJECTED
        g = np.asarray(grad_sum, dtype=np.float64) / (_SCALE * count)
        lr = self.step_size()
        if self.step is Step.PAPER:
            self.avg_grad = g if self.avg_grad is None else (self.avg_grad + g) / 2.0
            delta = lr * self.avg_grad
        elif self.step is Step.SGD:
            delta = lr * g
        else:
            delta = self._adam(g, lr)
        self._set_weights(self.weights + delta)
        self._reward = (reward_sum, count)
        self.accepted += 1
        self.applied += count
        return Outcome.ACCEPTED

    def step_size(self) -> float:
        """``γ`` for the next update (the schedule's ``γ_k``, or ``lr``)."""
        if self.lr_final is None or self.decay_updates is None:
            return self.lr
        return self.lr + (self.lr_final - self.lr) * min(1.0, self.applied / self.decay_updates)

    def _adam(self, g: np.ndarray, lr: float) -> np.ndarray:
        b1, b2 = ADAM_BETAS
        if self._m is None or self._v is None:
            self._m, self._v = np.zeros_like(g), np.zeros_like(g)
        self._m = b1 * self._m + (1 - b1) * g
        self._v = b2 * self._v + (1 - b2) * g * g
        t = self.accepted + 1
        m_hat, v_hat = self._m / (1 - b1**t), self._v / (1 - b2**t)
        return lr * m_hat / (np.sqrt(v_hat) + ADAM_EPS)

    def _set_weights(self, w: np.ndarray) -> None:
        self.weights = np.clip(w, W_MIN, W_MAX)
        # round half to even, as olaf.fixedpoint.to_fixed
        self._ack_weights = tuple(np.rint(self.weights * _SCALE).astype(np.int64).tolist())

    def state(self) -> dict[str, np.ndarray]:
        """Everything :meth:`load_state` needs to continue exactly where this model is (a PS
        checkpoint, :mod:`olaf.hosts.checkpoint`): arrays only; absent parts are empty arrays.

        Raises:
            ValueError: the model is not initialised (nothing to save).
        """
        if self.weights is None:
            raise ValueError("the global model is not initialised: no state to save")
        empty = np.zeros(0)
        reward = np.zeros(0, dtype=np.int64) if self._reward is None else np.array(self._reward, dtype=np.int64)
        return {"weights": self.weights, "avg_grad": empty if self.avg_grad is None else self.avg_grad,
                "adam_m": empty if self._m is None else self._m, "adam_v": empty if self._v is None else self._v,
                "reward": reward, "accepted": np.array(self.accepted, dtype=np.int64),
                "applied": np.array(self.applied, dtype=np.int64)}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        """Continue from :meth:`state`'s output (weights, ``g_a``, Adam's moments, ``r_g``, the count).

        Raises:
            ValueError: a part is missing or its shape does not match the weights'.
        """
        try:
            w = np.asarray(state["weights"], dtype=np.float64)
            parts = {k: np.asarray(state[k], dtype=np.float64) for k in ("avg_grad", "adam_m", "adam_v")}
            reward = np.asarray(state["reward"], dtype=np.int64)
            accepted = int(state["accepted"])
            applied = int(state["applied"])
        except KeyError as e:
            raise ValueError(f"the checkpoint has no {e.args[0]!r}") from None
        if w.ndim != 1 or w.size == 0:
            raise ValueError(f"the checkpoint's weights have shape {w.shape}, expected (G,) with G >= 1")
        for k, v in parts.items():
            if v.size not in (0, w.size):
                raise ValueError(f"the checkpoint's {k} has {v.size} elements, its weights {w.size}")
        if reward.size not in (0, 2) or (reward.size == 2 and reward[1] < 1):
            raise ValueError(f"the checkpoint's reward {reward.tolist()} is not (reward_sum, count >= 1)")
        self._set_weights(w)
        self.avg_grad, self._m, self._v = (None if v.size == 0 else v for v in parts.values())
        self._reward = None if reward.size == 0 else (int(reward[0]), int(reward[1]))
        self.accepted, self.applied = accepted, applied

    def ack_weights(self) -> tuple[int, ...]:
        """The global weights as Q7.24 elements for an ACK (empty before INIT)."""
        return self._ack_weights

    def global_reward(self) -> Optional[float]:
        """``r_g`` as a float, None while it is −∞."""
        if self._reward is None:
            return None
        return reward_from_fixed(self._reward[0]) / self._reward[1]

    def global_reward_fixed(self) -> int:
        """``r_g`` in Q15.16 (round half to even, saturated to int32), ``INT32_MIN`` for −∞."""
        if self._reward is None:
            return INT32_MIN
        return max(INT32_MIN, min(INT32_MAX, round(Fraction(*self._reward))))

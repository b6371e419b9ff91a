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
     * ``nesterov`` (SGD with Nesterov momentum, Sutskever et al. 2013 in the form of
       ``torch.optim.SGD(nesterov=True)``; the outer optimizer of DiLoCo, Douillard et al. 2023,
       Alg. 1, over the mean of the replicas' deltas): ``b ← μb + g``, ``w ← w + γ·(g + μb)``
       with ``μ`` = :data:`NESTEROV_MOMENTUM` (0.9, DiLoCo's). In the steady state of aligned
       directions a direction moves ``w`` by ``γ/(1 − μ)`` = 10γ times itself; one at right angles
       to the others by about ``γ(1 + μ)``: it lengthens what the updates agree on. Meant for
       the synchronous mode, where each step is the mean of a round of deltas computed from the
       same weights (DiLoCo's setting);

  4. ``r_g ← r`` (with gating, ``r_g`` is therefore the best mean reward applied
     so far; without, the reward of the latest applied update).

  **Step-size schedule** (optional, ``lr_final``): ``γ`` goes linearly from ``lr`` to ``lr_final``
  over the first ``decay_updates`` worker updates applied (Σ ``count`` of accepted updates) and
  stays there: ``γ_k = lr + (lr_final − lr)·min(1, k/decay_updates)`` — the linear schedules of
  RL Zoo's PPO settings, counted in updates rather than environment steps.

  An update before any INIT changes nothing (*before_init*); one whose
  element count differs from ``G`` is *wrong_size*.

**Slices** (``docs/protocol.md`` "Chunks", :mod:`olaf.chunks`): a model of ``P`` parameters sent
as ``K`` chunks of ``L`` elements is ``K`` independent slices, and every piece of the state above
exists **per slice**: the weights of slice ``i`` (elements ``[i·L, min((i+1)·L, P))``), its
``r_g``, its ``g_a``, its Adam moments and bias-correction step, its schedule position ``k`` and
its accepted count. A chunk ``i`` (update or aggregate) is steps 1–4 applied to slice ``i``
alone, so chunks 2..K of one worker update, which carry the same reward, pass a gate that chunk 1
already raised (each slice has its own ``r_g``). An INIT chunk ``i`` initialises slice ``i``; the
model is initialised once every slice is. The zero padding of the last chunk is ignored. With
``K = 1`` all of this is the whole-model rule above.

Whatever the outcome the PS ACKs the chunk with :meth:`GlobalModel.ack_weights` of its slice
(Q7.24, round half to even, unpadded) and :meth:`GlobalModel.global_reward_fixed` of its slice
(Q15.16 of ``r_g``; ``INT32_MIN`` stands for −∞ and for "no model yet", when
the ACK carries no weights).
"""

from __future__ import annotations

import enum
from fractions import Fraction
from typing import Optional, Sequence

import numpy as np

from olaf.chunks import Chunking
from olaf.fixedpoint import GRAD_FRAC_BITS, INT32_MAX, INT32_MIN, reward_from_fixed
from olaf.rundir.records import Outcome
from olaf.update import Update

_SCALE = float(1 << GRAD_FRAC_BITS)
W_MIN = INT32_MIN / _SCALE
W_MAX = INT32_MAX / _SCALE
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
NESTEROV_MOMENTUM = 0.9
"""``μ`` of the ``nesterov`` step (DiLoCo's outer momentum, Douillard et al. 2023 §3)."""


class Step(str, enum.Enum):
    """The PS's optimizer step (module docstring)."""

    PAPER = "paper"
    SGD = "sgd"
    ADAM = "adam"
    NESTEROV = "nesterov"


class ModelMismatch(str, enum.Enum):
    """Why a chunk does not belong to the PS's model (refused, counted, never applied): a worker
    of another model size or MTU."""

    NUM_CHUNKS = "num_chunks"
    """``num_chunks`` is not the model's K (or K > 1 reached a PS that was not told the model size)."""
    NUM_GRADS = "num_grads"
    """``num_grads`` is not the model's chunk length L (K = 1: its P)."""


class GlobalModel:
    """Global weights, optimizer state and global reward, per slice; see the module docstring.

    Args:
        lr: learning rate ``γ`` (> 0), paper §2.1 uses 0.001.
        step: optimizer step (:class:`Step` or its value).
        gate: reward gating; None = on for ``paper``, off for ``sgd``/``adam``.
        lr_final, decay_updates: the step-size schedule (module docstring; None: constant ``lr``).
        chunking: the model's ``P``, ``K``, ``L`` (:class:`~olaf.chunks.Chunking`); None: one slice
            (``K = 1``) whose size ``P`` the first INIT sets.

    Raises:
        ValueError: ``lr`` not > 0, ``lr_final`` not > 0 or without ``decay_updates`` ≥ 1, or an unknown step.
    """

    def __init__(self, lr: float = 0.001, step: Step | str = Step.PAPER, gate: Optional[bool] = None,
                 lr_final: Optional[float] = None, decay_updates: Optional[int] = None,
                 chunking: Optional[Chunking] = None) -> None:
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
        self.chunking: Optional[Chunking] = None
        self._w = np.zeros(0)
        self._ready = np.zeros(0, dtype=bool)
        self._ga = np.zeros(0)
        self._ga_set = np.zeros(0, dtype=bool)
        self._m: Optional[np.ndarray] = None
        self._v: Optional[np.ndarray] = None
        self._b: Optional[np.ndarray] = None
        self._reward: list[Optional[tuple[int, int]]] = []  # per slice (reward_sum, count) of r_g; None = −∞
        self._accepted = np.zeros(0, dtype=np.int64)
        self._applied = np.zeros(0, dtype=np.int64)
        self._ack: list[bytes] = []  # per slice: its Q7.24 elements as an ACK carries them (big-endian int32)
        self._last_g = np.zeros(0)
        self.last_direction: Optional[tuple[float, Optional[float]]] = None
        """``(‖g‖, cos(g, g_prev))`` of the last applied update's mean direction ``g`` on its slice, with
        ``g_prev`` the slice's previous applied direction (None for the first): how large and how
        aligned the updates the PS applies one after another are (``docs/training.md``)."""
        if chunking is not None:
            self._allocate(chunking)

    def _allocate(self, c: Chunking) -> None:
        k, p = c.num_chunks, c.num_params
        self.chunking = c
        self._w, self._ready = np.zeros(p), np.zeros(k, dtype=bool)
        self._ga, self._ga_set = np.zeros(p), np.zeros(k, dtype=bool)
        self._m = self._v = self._b = None
        self._reward = [None] * k
        self._accepted, self._applied = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
        self._ack = [b""] * k
        self._last_g = np.zeros(p)

    # -- shape -------------------------------------------------------------------------------

    @property
    def num_chunks(self) -> int:
        """K (1 while a model without a configured chunking awaits its first INIT)."""
        return 1 if self.chunking is None else self.chunking.num_chunks

    @property
    def initialised(self) -> bool:
        """Every slice has its weights (from an INIT chunk or a checkpoint)."""
        return self.chunking is not None and bool(self._ready.all())

    def slice_ready(self, chunk: int) -> bool:
        """Slice ``chunk`` has its weights (False for a chunk outside the model)."""
        return self.chunking is not None and 0 <= chunk < self._ready.size and bool(self._ready[chunk])

    @property
    def num_weights(self) -> Optional[int]:
        """``P`` (None while unknown)."""
        return None if self.chunking is None else self.chunking.num_params

    @property
    def weights(self) -> Optional[np.ndarray]:
        """The global weights, shape ``(P,)`` float64, once every slice is initialised (else None)."""
        return self._w if self.initialised else None

    @property
    def avg_grad(self) -> Optional[np.ndarray]:
        """``g_a``, shape ``(P,)`` (zero in slices without one yet), None before any applied update."""
        return self._ga if self._ga_set.any() else None

    @property
    def accepted(self) -> int:
        """Chunks (updates or aggregates) applied, over all slices (with ``K = 1``: updates applied)."""
        return int(self._accepted.sum())

    @property
    def applied(self) -> int:
        """Worker updates applied to slice 0 (Σ ``count``; with ``K = 1``, the schedule's ``k``)."""
        return int(self._applied[0]) if self._applied.size else 0

    def version(self, chunk: int = 0) -> int:
        """Slice ``chunk``'s version: chunks (updates or aggregates) applied to it so far (0 before
        any; the version an ACK of the slice carries)."""
        return int(self._accepted[chunk]) if 0 <= chunk < self._accepted.size else 0

    def accepted_per_slice(self) -> list[int]:
        """Chunks applied per slice, length K."""
        return self._accepted.tolist()

    def applied_per_slice(self) -> list[int]:
        """Worker updates applied per slice (each slice's schedule position ``k``), length K."""
        return self._applied.tolist()

    def mismatch(self, num_chunks: int, num_grads: int) -> Optional[ModelMismatch]:
        """Why a chunk announcing ``num_chunks`` and carrying ``num_grads`` elements is not of this
        model, or None if it is. Before a model without configured chunking has its first INIT, any
        single-message update fits (the INIT sets ``P``) and a chunked one does not."""
        c = self.chunking
        if c is None:
            return None if num_chunks == 1 else ModelMismatch.NUM_CHUNKS
        if num_chunks != c.num_chunks:
            return ModelMismatch.NUM_CHUNKS
        if num_grads != c.chunk_len:
            return ModelMismatch.NUM_GRADS
        return None

    # -- the rule ----------------------------------------------------------------------------

    def init(self, weights_fixed: Sequence[int], chunk: int = 0) -> Outcome:
        """Handle INIT chunk ``chunk``'s elements (Q7.24, ``L`` of them, the last chunk padded): only
        the first INIT of a slice initialises it. Without a configured chunking the first INIT
        sets ``P`` = its length (``K = 1``).

        Raises:
            ValueError: ``chunk`` out of range or a length other than ``L`` (check :meth:`mismatch` first).
        """
        if self.chunking is None:
            if chunk != 0:
                raise ValueError(f"chunk={chunk} of a model without chunking (K = 1)")
            self._allocate(Chunking.single(len(weights_fixed)))
        c = self.chunking
        assert c is not None
        if self._ready[chunk]:
            return Outcome.INIT_IGNORED
        values = np.asarray(c.unpad(chunk, weights_fixed), dtype=np.float64) / _SCALE
        self._set_slice(chunk, values)
        self._ready[chunk] = True
        return Outcome.INITIALISED

    def apply(self, u: Update, scale: float = 1.0, elements: Optional[np.ndarray] = None) -> Outcome:
        """Apply the rule to a (possibly aggregated) update chunk: slice ``u.chunk``, its direction
        times ``scale`` (Stellaris Eq. 4's factor, :func:`olaf.hosts.modes.staleness_scale`).
        ``elements``: ``u.grads`` as an array already (:func:`olaf.wire.update_elements`, shape
        ``(L,)``), which spares converting the tuple of P Python ints."""
        grads: Sequence[int] | np.ndarray = u.grads if elements is None else elements
        if scale != 1.0:
            grads = np.asarray(grads, dtype=np.float64) * scale
        return self.apply_sums(u.reward_sum, u.count, grads, u.chunk)

    def apply_sums(self, reward_sum: int, count: int, grad_sum: Sequence[int] | np.ndarray,
                   chunk: int = 0) -> Outcome:
        """Apply the rule to slice ``chunk`` with sums over ``count`` worker updates: ``reward_sum``
        (Q15.16 units, any integer) and ``grad_sum`` (Q7.24 units, integers of any size, shape
        ``(L,)``; the padding of the last chunk is ignored)."""
        c = self.chunking
        if c is None or not 0 <= chunk < c.num_chunks or not self._ready[chunk]:
            return Outcome.BEFORE_INIT
        if len(grad_sum) != c.chunk_len:
            return Outcome.WRONG_SIZE
        r = self._reward[chunk]
        if self.gate and r is not None:
            g_sum, g_count = r
            if reward_sum * g_count <= g_sum * count:
                return Outcome.REJECTED
        start, stop = c.bounds(chunk)
        g = np.asarray(grad_sum[: stop - start], dtype=np.float64) / (_SCALE * count)
        norm = float(np.linalg.norm(g))
        prev = self._last_g[start:stop]
        prev_norm = float(np.linalg.norm(prev)) if self._accepted[chunk] else 0.0
        cos = float(g @ prev) / (norm * prev_norm) if norm > 0 and prev_norm > 0 else None
        self.last_direction = (norm, cos)
        self._last_g[start:stop] = g
        lr = self.step_size(chunk)
        if self.step is Step.PAPER:
            if self._ga_set[chunk]:
                self._ga[start:stop] = (self._ga[start:stop] + g) / 2.0
            else:
                self._ga[start:stop] = g
                self._ga_set[chunk] = True
            delta = lr * self._ga[start:stop]
        elif self.step is Step.SGD:
            delta = lr * g
        elif self.step is Step.NESTEROV:
            if self._b is None:
                self._b = np.zeros_like(self._w)
            b = self._b[start:stop] = NESTEROV_MOMENTUM * self._b[start:stop] + g
            delta = lr * (g + NESTEROV_MOMENTUM * b)
        else:
            delta = self._adam(chunk, start, stop, g, lr)
        self._set_slice(chunk, self._w[start:stop] + delta)
        self._reward[chunk] = (reward_sum, count)
        self._accepted[chunk] += 1
        self._applied[chunk] += count
        return Outcome.ACCEPTED

    def step_size(self, chunk: int = 0) -> float:
        """``γ`` for slice ``chunk``'s next update (the schedule's ``γ_k`` at that slice's ``k``, or ``lr``)."""
        if self.lr_final is None or self.decay_updates is None:
            return self.lr
        k = int(self._applied[chunk]) if self._applied.size else 0
        return self.lr + (self.lr_final - self.lr) * min(1.0, k / self.decay_updates)

    def _adam(self, chunk: int, start: int, stop: int, g: np.ndarray, lr: float) -> np.ndarray:
        b1, b2 = ADAM_BETAS
        if self._m is None or self._v is None:
            self._m, self._v = np.zeros_like(self._w), np.zeros_like(self._w)
        m = self._m[start:stop] = b1 * self._m[start:stop] + (1 - b1) * g
        v = self._v[start:stop] = b2 * self._v[start:stop] + (1 - b2) * g * g
        t = int(self._accepted[chunk]) + 1
        m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
        return lr * m_hat / (np.sqrt(v_hat) + ADAM_EPS)

    def _set_slice(self, chunk: int, w: np.ndarray) -> None:
        c = self.chunking
        assert c is not None
        start, stop = c.bounds(chunk)
        self._w[start:stop] = np.clip(w, W_MIN, W_MAX)
        # round half to even, as olaf.fixedpoint.to_fixed; W_MIN..W_MAX keep it in int32
        self._ack[chunk] = np.rint(self._w[start:stop] * _SCALE).astype(">i4").tobytes()

    # -- checkpoint --------------------------------------------------------------------------

    def state(self) -> dict[str, np.ndarray]:
        """Everything :meth:`load_state` needs to continue exactly where this model is (a PS
        checkpoint, :mod:`olaf.hosts.checkpoint`), arrays only:

        * ``weights`` ``(P,)``; ``avg_grad``, ``adam_m``, ``adam_v``, ``momentum`` (the
          ``nesterov`` step's ``b``) ``(P,)`` or empty when absent;
        * ``avg_grad_set`` ``(K,)`` bool: the slices that have a ``g_a``;
        * ``reward`` ``(K, 2)`` int64: per slice ``(reward_sum, count)`` of ``r_g``, count 0 for −∞;
        * ``accepted``, ``applied`` ``(K,)`` int64: per slice chunks applied and worker updates in
          them (the Adam step and the schedule position);
        * ``num_chunks``, ``chunk_len``: K and L.

        Raises:
            ValueError: the model is not initialised (nothing to save).
        """
        c = self.chunking
        if c is None or not self.initialised:
            raise ValueError("the global model is not initialised: no state to save")
        empty = np.zeros(0)
        reward = np.array([(0, 0) if r is None else r for r in self._reward], dtype=np.int64).reshape(-1, 2)
        return {"weights": self._w.copy(), "avg_grad": self._ga.copy() if self._ga_set.any() else empty,
                "avg_grad_set": self._ga_set.copy(),
                "adam_m": empty if self._m is None else self._m.copy(),
                "adam_v": empty if self._v is None else self._v.copy(),
                "momentum": empty if self._b is None else self._b.copy(),
                "reward": reward, "accepted": self._accepted.copy(), "applied": self._applied.copy(),
                "num_chunks": np.array(c.num_chunks, dtype=np.int64),
                "chunk_len": np.array(c.chunk_len, dtype=np.int64)}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        """Continue from :meth:`state`'s output (per slice: weights, ``g_a``, Adam's moments, ``r_g``,
        the counts). A whole-model state without ``num_chunks`` (one ``r_g``, scalar counts) is
        one slice. With a configured chunking the state's ``P`` and ``K`` must be the same.

        Raises:
            ValueError: a part is missing, its shape does not match, or the model size differs.
        """
        try:
            w = np.asarray(state["weights"], dtype=np.float64)
            parts = {k: np.asarray(state[k], dtype=np.float64) for k in ("avg_grad", "adam_m", "adam_v")}
            # a checkpoint written before the nesterov step existed has no momentum: none to continue
            parts["momentum"] = np.asarray(state.get("momentum", np.zeros(0)), dtype=np.float64)
            reward = np.asarray(state["reward"], dtype=np.int64)
            accepted = np.atleast_1d(np.asarray(state["accepted"], dtype=np.int64))
            applied = np.atleast_1d(np.asarray(state["applied"], dtype=np.int64))
        except KeyError as e:
            raise ValueError(f"the checkpoint has no {e.args[0]!r}") from None
        if w.ndim != 1 or w.size == 0:
            raise ValueError(f"the checkpoint's weights have shape {w.shape}, expected (P,) with P >= 1")
        if "num_chunks" in state:
            c = Chunking(w.size, int(state["chunk_len"]), int(state["num_chunks"]))
        else:
            c = Chunking.single(w.size)
            reward = reward.reshape(-1, 2) if reward.size else np.zeros((1, 2), dtype=np.int64)
        k = c.num_chunks
        if self.chunking is not None and self.chunking != c:
            raise ValueError(f"the checkpoint's model has {c.num_params} parameters in {k} chunks of {c.chunk_len}, "
                             f"this PS's {self.chunking.num_params} in {self.chunking.num_chunks} of "
                             f"{self.chunking.chunk_len} (--num-params, --mtu)")
        for name, v in parts.items():
            if v.size not in (0, w.size):
                raise ValueError(f"the checkpoint's {name} has {v.size} elements, its weights {w.size}")
        if reward.shape != (k, 2) or (reward[:, 1] < 0).any():
            raise ValueError(f"the checkpoint's reward {reward.tolist()} is not (reward_sum, count >= 0) per slice "
                             f"({k} slices)")
        for name, a in (("accepted", accepted), ("applied", applied)):
            if a.shape != (k,):
                raise ValueError(f"the checkpoint's {name} has shape {a.shape}, expected ({k},)")
        ga_set = (np.asarray(state["avg_grad_set"], dtype=bool) if "avg_grad_set" in state
                  else np.full(k, parts["avg_grad"].size > 0))
        if ga_set.shape != (k,):
            raise ValueError(f"the checkpoint's avg_grad_set has shape {ga_set.shape}, expected ({k},)")
        self._allocate(c)
        for i in range(k):
            start, stop = c.bounds(i)
            self._set_slice(i, w[start:stop])
        self._ready[:] = True
        if parts["avg_grad"].size:
            self._ga = parts["avg_grad"].copy()
        self._ga_set = ga_set.copy()
        self._m, self._v, self._b = (None if v.size == 0 else v.copy()
                                     for v in (parts["adam_m"], parts["adam_v"], parts["momentum"]))
        self._reward = [None if int(cnt) == 0 else (int(s), int(cnt)) for s, cnt in reward]
        self._accepted, self._applied = accepted.copy(), applied.copy()

    # -- ACK contents ------------------------------------------------------------------------

    def ack_weights(self, chunk: int = 0) -> tuple[int, ...]:
        """Slice ``chunk``'s global weights as Q7.24 elements for an ACK, unpadded (empty before its INIT)."""
        return tuple(np.frombuffer(self.ack_weight_bytes(chunk), dtype=">i4").tolist())

    def ack_weight_bytes(self, chunk: int = 0) -> bytes:
        """:meth:`ack_weights` as an ACK carries them (big-endian int32 each, ``olaf.wire``), computed
        once per change of the slice: what the PS sends."""
        return self._ack[chunk] if chunk < len(self._ack) else b""

    def global_reward(self, chunk: int = 0) -> Optional[float]:
        """Slice ``chunk``'s ``r_g`` as a float, None while it is −∞."""
        r = self._reward[chunk] if chunk < len(self._reward) else None
        if r is None:
            return None
        return reward_from_fixed(r[0]) / r[1]

    def global_rewards(self) -> list[Optional[float]]:
        """Every slice's ``r_g`` (None: −∞), length K."""
        return [self.global_reward(i) for i in range(len(self._reward))]

    def global_reward_fixed(self, chunk: int = 0) -> int:
        """Slice ``chunk``'s ``r_g`` in Q15.16 (round half to even, saturated to int32), ``INT32_MIN`` for −∞."""
        r = self._reward[chunk] if chunk < len(self._reward) else None
        if r is None:
            return INT32_MIN
        return max(INT32_MIN, min(INT32_MAX, round(Fraction(*r))))

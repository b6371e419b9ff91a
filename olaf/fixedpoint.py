"""Signed 32-bit fixed-point numbers as carried on the Olaf wire.

Formats (see ``docs/protocol.md``):

* gradients and global weights: **Q7.24** — int32, value = raw / 2**24
  (range [-128, 128), resolution 5.96e-8);
* rewards (``reward_sum``, ``global_reward``): **Q15.16** — int32,
  value = raw / 2**16 (range [-32768, 32768), resolution 1.53e-5).

Conversion from float rounds half to even and saturates to the int32 range;
addition on the switch is a saturating int32 add (:func:`sat_add32`), so an
aggregate of many updates clips instead of wrapping around.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
UINT16_MAX = (1 << 16) - 1
UINT64_MAX = (1 << 64) - 1

GRAD_FRAC_BITS = 24
"""Fractional bits of a gradient / weight element (Q7.24)."""

REWARD_FRAC_BITS = 16
"""Fractional bits of a reward (Q15.16)."""


def saturate32(x: int) -> int:
    """Clamp an integer to the signed 32-bit range [-2**31, 2**31 - 1]."""
    return INT32_MIN if x < INT32_MIN else INT32_MAX if x > INT32_MAX else x


def sat_add32(a: int, b: int) -> int:
    """Saturating signed 32-bit addition, the switch's aggregation operator."""
    return saturate32(a + b)


def sat_add_u16(a: int, b: int) -> int:
    """Saturating unsigned 16-bit addition (the ``count`` field)."""
    return min(a + b, UINT16_MAX)


def to_fixed(value: float, frac_bits: int) -> int:
    """Encode a real number as a saturated int32 with ``frac_bits`` fraction bits.

    Rounds half to even (Python's :func:`round`). Raises :class:`ValueError`
    for NaN, whose encoding would be meaningless.
    """
    if value != value:  # NaN
        raise ValueError("cannot encode NaN as fixed point")
    if value in (float("inf"), float("-inf")):
        return INT32_MAX if value > 0 else INT32_MIN
    return saturate32(round(value * (1 << frac_bits)))


def from_fixed(raw: int, frac_bits: int) -> float:
    """Decode an int32 with ``frac_bits`` fraction bits to a float."""
    return raw / (1 << frac_bits)


def grads_to_fixed(values: Iterable[float]) -> list[int]:
    """Encode gradient / weight floats as Q7.24 int32 elements."""
    return [to_fixed(float(v), GRAD_FRAC_BITS) for v in values]


def pack_q724(values: "np.ndarray | Sequence[float]") -> tuple[list[int], int]:
    """Encode a vector of floats as Q7.24 int32 elements, vectorised (numpy).

    The same elements as :func:`grads_to_fixed` (round half to even, saturate),
    for vectors of thousands of elements (a model update). Returns ``(elements,
    saturated)``: the raw values as Python ints, ready for
    :class:`~olaf.update.Update`, and how many elements lay outside [−128, 128)
    and were clamped to ``INT32_MIN``/``INT32_MAX`` (±inf included) — counted,
    never wrapped.

    Raises:
        ValueError: a NaN element (its index is named).
    """
    v = np.asarray(values, dtype=np.float64)
    nan = np.flatnonzero(np.isnan(v))
    if nan.size:
        raise ValueError(f"cannot encode NaN as Q7.24 (element {int(nan[0])} of {v.size})")
    raw = np.rint(np.clip(v, -(2.0**40), 2.0**40) * (1 << GRAD_FRAC_BITS))
    saturated = int(np.count_nonzero((raw < INT32_MIN) | (raw > INT32_MAX)))
    return np.clip(raw, INT32_MIN, INT32_MAX).astype(np.int64).tolist(), saturated


def unpack_q724(raw: "np.ndarray | Sequence[int]") -> np.ndarray:
    """Decode Q7.24 int32 elements to a float64 vector (inverse of :func:`pack_q724` up to rounding)."""
    return np.asarray(raw, dtype=np.float64) / (1 << GRAD_FRAC_BITS)


def grads_from_fixed(raw: Sequence[int]) -> list[float]:
    """Decode Q7.24 int32 elements to floats."""
    return [from_fixed(r, GRAD_FRAC_BITS) for r in raw]


def reward_to_fixed(value: float) -> int:
    """Encode a reward as Q15.16."""
    return to_fixed(value, REWARD_FRAC_BITS)


def reward_from_fixed(raw: int) -> float:
    """Decode a Q15.16 reward."""
    return from_fixed(raw, REWARD_FRAC_BITS)

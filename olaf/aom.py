"""Age-of-Model (AoM) metrics at the parameter server (paper §2.2, §6, §8).

Input is, per cluster, the list of updates the PS received: reception time
``t_ns`` and the update's ``gen_ts_ns`` (generation time of the freshest worker
update folded in) and ``count`` (worker updates folded in). All times are
integers in ns on one clock.

Definitions:

* AoM (paper §2.2): ``Δ(t) = t − g(t)``, ``g(t)`` the largest ``gen_ts`` received
  up to ``t``. A reception of an older update than the freshest one does not
  change ``Δ`` (the PS already has a fresher model).
* Time-average AoM: ``(1/(t_end − t_0)) ∫ Δ(t) dt`` over ``[t_0, t_end]``. By
  default ``t_0`` is the first reception; with ``t_start_ns`` the window starts
  there and, until the first reception, the age grows from ``initial_gen_ts_ns``
  (default ``t_start_ns``) — a cluster that is never served then ages instead of
  vanishing from the average.
* Peak AoM (paper §6, Fig. 5): the value of ``Δ`` just before each reception that
  refreshes the model, ``Δp(k) = D(k) − g(D(k)⁻)``.
* Update accounting (paper Tab. 1): ``aggregated = Σ count − delivered`` and
  ``lost = sent − delivered − aggregated``.
* Jain's fairness index (paper Tab. 2, [Jain 1990]): ``(Σx)² / (n Σx²)`` =
  ``μ² / (μ² + σ²)``.
* Peak-AoM fairness gap (paper §6, the verifier's query
  ``|avg Δp^u − avg Δp^v| ≤ ε``): :func:`peak_aom_gap`, exact on rationals, in
  one of three units — ``ms``/``ns`` (absolute, the unit of the inputs),
  ``period`` (each average divided by its cluster's period) or ``relative``
  (difference over the mean of the two averages).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Optional, Sequence, Union

import numpy as np


@dataclass(frozen=True)
class Delivery:
    """One update received by the PS: reception time, generation time (ns) and count."""

    t_ns: int
    gen_ts_ns: int
    count: int = 1


def _sorted(deliveries: Iterable[Delivery]) -> list[Delivery]:
    ds = sorted(deliveries, key=lambda d: d.t_ns)
    if not ds:
        raise ValueError("no deliveries: AoM is undefined before the first reception")
    return ds


def _refreshes(ds: Sequence[Delivery], g0: Optional[int]) -> list[tuple[int, int]]:
    """(t, new freshest gen_ts) at each reception that refreshes the model."""
    out: list[tuple[int, int]] = []
    g = g0
    for d in ds:
        if g is None or d.gen_ts_ns > g:
            g = d.gen_ts_ns
            out.append((d.t_ns, g))
    return out


def sawtooth(
    deliveries: Iterable[Delivery],
    t_end_ns: Optional[int] = None,
    *,
    t_start_ns: Optional[int] = None,
    initial_gen_ts_ns: Optional[int] = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints of the AoM sawtooth, ready for ``plt.plot(t, age)``.

    Returns two int64 arrays ``(t_ns, age_ns)`` of equal length; a refresh at
    ``t`` appears twice (age before and after the jump). The curve runs from
    ``t_start_ns`` (or the first reception) to ``t_end_ns`` (default: last
    reception). With ``t_start_ns`` and ``t_end_ns`` a cluster that received
    nothing has a defined AoM (it ages from the start over the whole window).
    Raises ValueError with no deliveries and no window, or ``t_end_ns`` before
    the start.
    """
    ds = sorted(deliveries, key=lambda d: d.t_ns)
    if not ds and (t_start_ns is None or t_end_ns is None):
        raise ValueError("no deliveries: AoM is undefined before the first reception "
                         "(give t_start_ns and t_end_ns for a window)")
    g0 = None if t_start_ns is None else (t_start_ns if initial_gen_ts_ns is None else initial_gen_ts_ns)
    t0 = ds[0].t_ns if t_start_ns is None else t_start_ns
    t_end = ds[-1].t_ns if t_end_ns is None else t_end_ns
    if t_end < t0:
        raise ValueError(f"t_end_ns={t_end} is before the start {t0}")
    ts: list[int] = []
    ages: list[int] = []
    g = g0
    if g is not None:
        ts.append(t0)
        ages.append(t0 - g)
    for t, g_new in _refreshes(ds, g0):
        if t > t_end:
            break
        if g is not None:
            ts.append(t)
            ages.append(t - g)
        ts.append(t)
        ages.append(t - g_new)
        g = g_new
    assert g is not None
    ts.append(t_end)
    ages.append(t_end - g)
    return np.asarray(ts, dtype=np.int64), np.asarray(ages, dtype=np.int64)


def time_average_aom(
    deliveries: Iterable[Delivery],
    t_end_ns: Optional[int] = None,
    *,
    t_start_ns: Optional[int] = None,
    initial_gen_ts_ns: Optional[int] = None,
) -> float:
    """Time-average AoM in ns over the window (see module docstring).

    Exact for integer inputs (trapezoids of a piecewise-linear curve). If the
    window has zero length, returns the AoM at that instant.
    """
    t, a = sawtooth(deliveries, t_end_ns, t_start_ns=t_start_ns, initial_gen_ts_ns=initial_gen_ts_ns)
    span = int(t[-1] - t[0])
    if span == 0:
        return float(a[-1])
    dt = np.diff(t).astype(np.float64)
    area2 = np.sum(dt * (a[:-1] + a[1:]).astype(np.float64))
    return float(area2 / 2.0 / span)


def peak_aoms(
    deliveries: Iterable[Delivery],
    *,
    t_start_ns: Optional[int] = None,
    initial_gen_ts_ns: Optional[int] = None,
) -> list[tuple[int, int]]:
    """``(t_ns, peak_ns)`` for every reception that refreshes the model.

    The first reception has a peak only when ``t_start_ns`` gives an initial age
    (then no deliveries give no peaks rather than an error).
    """
    ds = _sorted(deliveries) if t_start_ns is None else sorted(deliveries, key=lambda d: d.t_ns)
    g = None if t_start_ns is None else (t_start_ns if initial_gen_ts_ns is None else initial_gen_ts_ns)
    peaks = []
    for t, g_new in _refreshes(ds, g):
        if g is not None:
            peaks.append((t, t - g))
        g = g_new
    return peaks


def average_peak_aom(deliveries: Iterable[Delivery], **kw) -> Optional[float]:
    """Mean of :func:`peak_aoms` in ns (the paper's ``avg Δp``), None if there is no peak."""
    p = peak_aoms(deliveries, **kw)
    return float(np.mean([x for _, x in p])) if p else None


def peak_aom_sum(deliveries: Iterable[Delivery], **kw) -> tuple[int, int]:
    """Exact ``(Σ peaks in ns, number of peaks)`` of :func:`peak_aoms`, for
    rational averages (the verifier compares ``Σ/n`` without rounding)."""
    p = peak_aoms(deliveries, **kw)
    return sum(x for _, x in p), len(p)


PEAK_GAP_UNITS = ("ms", "ns", "period", "relative")


def peak_aom_gap(
    avg_a: Union[Fraction, int],
    avg_b: Union[Fraction, int],
    unit: str = "ms",
    *,
    period_a: Optional[Union[int, Fraction]] = None,
    period_b: Optional[Union[int, Fraction]] = None,
) -> Fraction:
    """Gap between two clusters' average peak AoM (paper §6), exact.

    ``ms``/``ns``: ``|a − b|`` in the unit of the inputs. ``period``:
    ``|a/period_a − b/period_b|`` (each average in units of its cluster's
    generation period; periods in the unit of the averages). ``relative``:
    ``|a − b| / ((a + b)/2)``, 0 when both are 0. The fairness query holds for
    the pair iff the gap is ``≤ ε``.

    Raises ValueError for an unknown unit, missing/non-positive periods with
    ``period``, or negative averages.
    """
    a, b = Fraction(avg_a), Fraction(avg_b)
    if a < 0 or b < 0:
        raise ValueError(f"average peak AoM must be >= 0, got {a} and {b}")
    if unit in ("ms", "ns"):
        return abs(a - b)
    if unit == "period":
        if not period_a or not period_b or period_a <= 0 or period_b <= 0:
            raise ValueError("unit='period' needs period_a > 0 and period_b > 0")
        return abs(a / period_a - b / period_b)
    if unit == "relative":
        return Fraction(0) if a + b == 0 else abs(a - b) * 2 / (a + b)
    raise ValueError(f"unit={unit!r}: expected one of {', '.join(PEAK_GAP_UNITS)}")


@dataclass(frozen=True)
class Accounting:
    """Worker-update accounting for one cluster (paper Tab. 1)."""

    sent: int
    delivered: int
    aggregated: int
    lost: int

    @property
    def loss_fraction(self) -> float:
        return self.lost / self.sent if self.sent else 0.0


def accounting(sent: int, deliveries: Iterable[Delivery]) -> Accounting:
    """Delivered packets, updates folded into them, and updates lost.

    Raises ValueError if the PS saw more worker updates than were sent (a
    counting bug upstream, never a legitimate outcome).
    """
    ds = list(deliveries)
    delivered = len(ds)
    total = sum(d.count for d in ds)
    if total > sent:
        raise ValueError(f"deliveries carry {total} worker updates but only {sent} were sent")
    return Accounting(sent=sent, delivered=delivered, aggregated=total - delivered, lost=sent - total)


def aggregations_per_delivery(deliveries: Iterable[Delivery]) -> np.ndarray:
    """Aggregations in each delivered update (``count − 1``), for the CDF of paper Fig. 6."""
    return np.asarray([d.count - 1 for d in deliveries], dtype=np.int64)


def ecdf(values: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF: sorted values and ``P(X ≤ x)`` at each."""
    x = np.sort(np.asarray(list(values), dtype=np.float64))
    if x.size == 0:
        return x, x
    return x, np.arange(1, x.size + 1, dtype=np.float64) / x.size


def jain_fairness(values: Iterable[float]) -> float:
    """Jain's fairness index ``(Σx)² / (n Σx²)`` in (0, 1]; 1.0 if all values are 0.

    Raises ValueError for an empty input or negative values.
    """
    x = np.asarray(list(values), dtype=np.float64)
    if x.size == 0:
        raise ValueError("Jain's fairness of no values is undefined")
    if np.any(x < 0):
        raise ValueError("Jain's fairness needs non-negative values")
    sq = float(np.sum(x * x))
    if sq == 0.0:
        return 1.0
    return float(np.sum(x) ** 2 / (x.size * sq))


def time_to_updates(deliveries: Iterable[Delivery], k: int) -> Optional[int]:
    """First reception time (ns) at which the PS holds ≥ ``k`` worker updates
    (Σ count), None if never — the time-to-reward proxy of paper §8.2."""
    total = 0
    for d in sorted(deliveries, key=lambda d: d.t_ns):
        total += d.count
        if total >= k:
            return d.t_ns
    return None

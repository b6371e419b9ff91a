"""When a worker generates its updates: a jittered period or a trace file.

A schedule is a sequence of **gaps in ns**: update ``k`` is due one gap after
update ``k − 1`` was due (the first one gap after the start). A worker that
falls more than a gap behind (busy CPU) re-anchors at its last generation
instead of bursting to catch up, like a slow trainer; it logs how late each
generation was (:mod:`olaf.hosts.worker`).

* Periodic (the verifier's cluster model, docs/verifier.md): the gap
  between consecutive generations is ``period + U(−jitter, +jitter)`` ms, so
  ``A(n+1) − A(n) ∈ [period − jitter, period + jitter]``; the first update
  comes one gap after the start. ``0 ≤ jitter ≤ period``.
* Trace: a file of generation times, e.g. scaled training traces (paper §8.2).
  Formats:

  - CSV with a header row and a column ``t_ms`` (offset from the start, ms) or
    ``interval_ms`` (gap since the previous generation, or since the start for
    the first row); other columns are ignored;
  - JSON: ``{"t_ms": [...]}``, ``{"interval_ms": [...]}`` or a bare list
    (read as ``t_ms``).

  ``t_ms`` must be non-decreasing and every value ≥ 0. ``scale`` multiplies
  every time (0.5 replays twice as fast).

Both are limited by a duration (no generation at or after ``start + duration``)
and/or a number of updates.
"""

from __future__ import annotations

import csv
import json
from itertools import islice
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import numpy as np

NS_PER_MS = 1_000_000


class TraceError(ValueError):
    """A trace file that cannot be used; the message names the file and the problem."""


def periodic(period_ms: float, jitter_ms: float, rng: np.random.Generator) -> Iterator[int]:
    """Endless gaps (ns) ``period_ms + U(−jitter_ms, jitter_ms)``.

    Raises:
        ValueError: ``period_ms`` ≤ 0 or ``jitter_ms`` outside ``[0, period_ms]``.
    """
    _check_period(period_ms, jitter_ms)
    while True:
        gap = period_ms + (rng.uniform(-jitter_ms, jitter_ms) if jitter_ms > 0 else 0.0)
        yield round(gap * NS_PER_MS)


def _check_period(period_ms: float, jitter_ms: float) -> None:
    if not period_ms > 0:
        raise ValueError(f"period must be > 0 ms, got {period_ms}")
    if not 0 <= jitter_ms <= period_ms:
        raise ValueError(f"jitter must be in [0, period={period_ms}] ms, got {jitter_ms}")


def _from_columns(path: Path, t_ms: Optional[Sequence[Any]], interval_ms: Optional[Sequence[Any]]) -> list[float]:
    if t_ms is None and interval_ms is None:
        raise TraceError(f"{path}: no 't_ms' or 'interval_ms' column")
    if t_ms is not None:
        times = [float(x) for x in t_ms]
    else:
        assert interval_ms is not None
        times = np.cumsum([float(x) for x in interval_ms]).tolist()
        if any(float(x) < 0 for x in interval_ms):
            raise TraceError(f"{path}: negative interval_ms")
    for i, t in enumerate(times):
        if not t >= 0:
            raise TraceError(f"{path}: entry {i} is {t} ms; times must be >= 0")
        if i and t < times[i - 1]:
            raise TraceError(f"{path}: entry {i} ({t} ms) is before entry {i - 1} ({times[i - 1]} ms)")
    return times


def load_trace(path: Path | str) -> list[float]:
    """Generation offsets in ms from a trace file (formats in the module docstring).

    Raises:
        TraceError: unreadable, unknown format, missing column, bad or decreasing values.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror})") from e
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
            if isinstance(data, list):
                return _from_columns(path, data, None)
            if isinstance(data, dict):
                return _from_columns(path, data.get("t_ms"), data.get("interval_ms"))
            raise TraceError(f"{path}: JSON trace must be a list or an object with 't_ms'/'interval_ms'")
        rows = list(csv.DictReader(text.splitlines()))
        cols = rows[0].keys() if rows else []
        pick = lambda c: [r[c] for r in rows] if c in cols else None  # noqa: E731
        return _from_columns(path, pick("t_ms"), pick("interval_ms"))
    except (ValueError, TypeError) as e:
        if isinstance(e, TraceError):
            raise
        raise TraceError(f"{path}: {e}") from e


def from_trace(times_ms: Sequence[float], scale: float = 1.0) -> Iterator[int]:
    """Gaps (ns) between the generation times of a loaded trace (the first from the
    start), every time multiplied by ``scale`` (> 0)."""
    if not scale > 0:
        raise ValueError(f"trace scale must be > 0, got {scale}")
    prev = 0
    for t in times_ms:
        cur = round(t * scale * NS_PER_MS)
        yield cur - prev
        prev = cur


class ScheduleSpec:
    """A worker's schedule: periodic (``period_ms``, ``jitter_ms``) unless ``trace_ms`` is given.

    Args:
        period_ms, jitter_ms: see :func:`periodic`.
        trace_ms: offsets from :func:`load_trace` (ms), or None.
        trace_scale: multiplies the trace times.
        duration_s, max_updates: limits (generation stops at ``t0 + duration``
            or after ``max_updates``); a periodic schedule needs one of them.

    Raises:
        ValueError: bad numbers, or an endless schedule.
    """

    def __init__(self, *, period_ms: float = 100.0, jitter_ms: float = 0.0,
                 trace_ms: Optional[Sequence[float]] = None, trace_scale: float = 1.0,
                 duration_s: Optional[float] = None, max_updates: Optional[int] = None) -> None:
        if trace_ms is None:
            if duration_s is None and max_updates is None:
                raise ValueError("a periodic schedule needs a duration or a number of updates")
            _check_period(period_ms, jitter_ms)
        elif not trace_scale > 0:
            raise ValueError(f"trace scale must be > 0, got {trace_scale}")
        if duration_s is not None and not duration_s > 0:
            raise ValueError(f"duration must be > 0 s, got {duration_s}")
        if max_updates is not None and max_updates < 1:
            raise ValueError(f"number of updates must be >= 1, got {max_updates}")
        self.period_ms, self.jitter_ms = period_ms, jitter_ms
        self.trace_ms = None if trace_ms is None else list(trace_ms)
        self.trace_scale = trace_scale
        self.duration_s, self.max_updates = duration_s, max_updates

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScheduleSpec) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable attributes

    def gaps(self, rng: np.random.Generator) -> Iterator[int]:
        """Gaps in ns between generations, the first from the start (``rng`` draws
        the jitter), at most ``max_updates`` of them. The duration is the caller's
        to apply, on the wall clock."""
        src = (periodic(self.period_ms, self.jitter_ms, rng) if self.trace_ms is None
               else from_trace(self.trace_ms, self.trace_scale))
        return src if self.max_updates is None else islice(src, self.max_updates)

    def describe(self) -> dict:
        """JSON-ready description for the worker's start record."""
        d: dict = {"duration_s": self.duration_s, "max_updates": self.max_updates}
        if self.trace_ms is None:
            d.update(kind="periodic", period_ms=self.period_ms, jitter_ms=self.jitter_ms)
        else:
            d.update(kind="trace", trace_len=len(self.trace_ms), trace_scale=self.trace_scale)
        return d

"""When a worker generates its updates: a jittered period, on/off bursts or a trace file
(the arrival models of a run plan, :mod:`olaf.plan.arrivals`; :func:`worker_schedule` is a plan
worker's schedule).

A schedule is a start phase and a sequence of **gaps in ns**: the worker starts ``phase_ns``
after its start time ``t0`` and its generation window (``duration``) counts from there; update
``k`` is due one gap after update ``k − 1`` was due (the first one gap after the start). A worker that
falls more than a gap behind (busy CPU) re-anchors at its last generation
instead of bursting to catch up, like a slow trainer; it logs how late each
generation was (:mod:`olaf.hosts.worker`).

* Periodic (the verifier's cluster model, docs/verifier.md): the gap
  between consecutive generations is ``period + U(−jitter, +jitter)`` ms, so
  ``A(n+1) − A(n) ∈ [period − jitter, period + jitter]``; the first update
  comes one gap after the start. ``0 ≤ jitter ≤ period``.
* On/off: ``burst`` > 1 updates back to back (gaps 0), one burst per gap
  ``burst · period + U(−jitter, +jitter)`` (:func:`olaf.plan.arrivals.arrival_gaps_ns`).
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
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

import numpy as np

from olaf.plan.arrivals import NS_PER_MS, arrival_gaps_ns, check_period, trace_gaps_ns

if TYPE_CHECKING:
    from olaf.plan.plan import RunPlan


class TraceError(ValueError):
    """A trace file that cannot be used; the message names the file and the problem."""


def periodic(period_ms: float, jitter_ms: float, rng: np.random.Generator) -> Iterator[int]:
    """Endless gaps (ns) ``period_ms + U(−jitter_ms, jitter_ms)``.

    Raises:
        ValueError: ``period_ms`` ≤ 0 or ``jitter_ms`` outside ``[0, period_ms]``.
    """
    return arrival_gaps_ns(period_ms, jitter_ms, 1, rng)


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
    start), every time multiplied by ``scale`` (> 0): :func:`olaf.plan.arrivals.trace_gaps_ns`."""
    return trace_gaps_ns(times_ms, scale)


class ScheduleSpec:
    """A worker's schedule: periodic (``period_ms``, ``jitter_ms``; on/off with ``burst`` > 1)
    unless ``trace_ms`` is given.

    Args:
        period_ms, jitter_ms: see :func:`periodic`.
        burst: updates per burst of the on/off model (1: periodic).
        phase_ns: the worker starts this long after its start time ``t0``, ns (≥ 0).
        trace_ms: offsets from :func:`load_trace` (ms), or None.
        trace_scale: multiplies the trace times.
        trace_path: the file ``trace_ms`` was read from (``olaf worker --trace``), or None.
        duration_s, max_updates: limits (generation stops at ``start + duration``
            or after ``max_updates``); a periodic schedule needs one of them.

    Raises:
        ValueError: bad numbers, or an endless schedule.
    """

    def __init__(self, *, period_ms: float = 100.0, jitter_ms: float = 0.0, burst: int = 1, phase_ns: int = 0,
                 trace_ms: Optional[Sequence[float]] = None, trace_scale: float = 1.0,
                 trace_path: Optional[Path] = None,
                 duration_s: Optional[float] = None, max_updates: Optional[int] = None) -> None:
        if trace_ms is None:
            if duration_s is None and max_updates is None:
                raise ValueError("a periodic schedule needs a duration or a number of updates")
            check_period(period_ms, jitter_ms, burst)
        elif not trace_scale > 0:
            raise ValueError(f"trace scale must be > 0, got {trace_scale}")
        if duration_s is not None and not duration_s > 0:
            raise ValueError(f"duration must be > 0 s, got {duration_s}")
        if max_updates is not None and max_updates < 1:
            raise ValueError(f"number of updates must be >= 1, got {max_updates}")
        if phase_ns < 0:
            raise ValueError(f"start phase must be >= 0 ns, got {phase_ns}")
        self.period_ms, self.jitter_ms, self.burst, self.phase_ns = period_ms, jitter_ms, burst, phase_ns
        self.trace_ms = None if trace_ms is None else list(trace_ms)
        self.trace_scale = trace_scale
        self.trace_path = trace_path
        self.duration_s, self.max_updates = duration_s, max_updates

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScheduleSpec) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable attributes

    def gaps(self, rng: np.random.Generator) -> Iterator[int]:
        """Gaps in ns between generations, the first from the start (``rng`` draws
        the jitter), at most ``max_updates`` of them. The duration is the caller's
        to apply, on the wall clock."""
        src = (arrival_gaps_ns(self.period_ms, self.jitter_ms, self.burst, rng) if self.trace_ms is None
               else from_trace(self.trace_ms, self.trace_scale))
        return src if self.max_updates is None else islice(src, self.max_updates)

    def describe(self) -> dict:
        """JSON-ready description for the worker's start record."""
        d: dict = {"duration_s": self.duration_s, "max_updates": self.max_updates}
        if self.phase_ns:
            d["phase_ms"] = self.phase_ns / NS_PER_MS
        if self.trace_ms is None:
            d.update(kind="periodic" if self.burst == 1 else "onoff", period_ms=self.period_ms,
                     jitter_ms=self.jitter_ms, **({"burst": self.burst} if self.burst > 1 else {}))
        else:
            d.update(kind="trace", trace_len=len(self.trace_ms), trace_scale=self.trace_scale)
        return d


def worker_schedule(plan: RunPlan, group: int, worker_id: int, *, duration_s: Optional[float],
                    max_updates: Optional[int], trace_dir: Optional[Path] = None, name: str = "") -> ScheduleSpec:
    """The schedule of worker ``worker_id`` (1..N, of ``plan.groups[group]``) under the plan's arrival
    model (:mod:`olaf.plan.arrivals`), with the backend's limits ``duration_s`` and ``max_updates``.

    Replaying a trace, the worker's times are written to ``trace_dir/<name>.trace.json`` (the
    file ``olaf worker --trace`` reads; :func:`write_trace`) when ``trace_dir`` is given.

    Raises:
        olaf.configfile.ConfigError: the plan's trace cannot be replayed (names ``trace.file``).
    """
    g = plan.groups[group]
    if plan.trace is not None:
        t_ms = plan.traces()[worker_id - 1].t_ms
        path = None
        if trace_dir is not None:
            path = write_trace(Path(trace_dir) / f"{name or f'w{worker_id}'}.trace.json", t_ms)
        return ScheduleSpec(trace_ms=t_ms, trace_scale=plan.trace.scale, trace_path=path, duration_s=duration_s,
                            max_updates=max_updates)
    return ScheduleSpec(period_ms=g.period_ms, jitter_ms=g.jitter_ms, burst=g.burst,
                        phase_ns=plan.start_phase_ns(group, worker_id), duration_s=duration_s,
                        max_updates=max_updates)


def write_trace(path: Path, t_ms: Sequence[float]) -> Path:
    """Write generation offsets ``t_ms`` (ms) as a trace file :func:`load_trace` reads back exactly
    (JSON ``{"t_ms": [...]}``); return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"t_ms": [float(t) for t in t_ms]}))
    return path

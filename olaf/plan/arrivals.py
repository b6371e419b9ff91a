"""When a plan's workers generate their updates (the arrival models of a run plan), the one
definition every backend that generates updates follows (ns-3's C++ workers through
:mod:`olaf.sim.backend`, the real ``olaf worker`` through :mod:`olaf.hosts.schedule`).

A worker's schedule is a start and a sequence of **gaps in ns**: update ``k`` is due one gap
after update ``k − 1`` (the first one gap after the start).

* **Start phase** (``ClusterGroup.start_phase``): ``aligned`` — every worker of a group starts
  at the group's ``start_ms``; ``random`` (the default) — worker ``i`` starts
  :func:`start_phase_ns` later, a phase drawn uniformly from ``[0, cycle)`` with ``cycle`` =
  ``period_ms · burst`` (one whole period of its arrival pattern), so the workers of a cluster
  are not in phase. The draw is the worker's own: NumPy's ``default_rng`` on child
  :data:`PHASE_STREAM` of ``SeedSequence(worker_seed(run seed, worker_id))``
  (:func:`olaf.plan.topology.worker_seed`; the worker process draws its task, schedule and
  transmission-control streams from children 0..3). The worker's generation window
  (``duration_s``) counts from its own, phased start.
* **Periodic** (``arrivals: periodic``): gaps ``period + U(−jitter, +jitter)``.
* **On/off** (``arrivals: onoff``, ``burst`` = B): updates come in bursts of B back to back —
  the gap before the first update of a burst is ``B · period + U(−jitter, +jitter)``, the
  B − 1 gaps inside a burst are 0 (each update is handed to the network as soon as the one
  before it: the access link carries the burst at line rate). The mean rate stays
  ``1/period``; B = 1 is the periodic model, draw for draw.
* **Trace** (the plan's ``trace``): worker ``i`` of the plan (workers numbered 1..N in group
  order, :mod:`olaf.plan.topology`) generates at the ``i``-th trace worker's times, offsets
  from its start in ms (times ``scale``), each gap :func:`trace_gaps_ns`. A trace file is
  JSON (:func:`read_traces`; ``olaf trace extract`` writes one from a run directory)::

      {"unit": "ms", "source": "...", "workers": [{"name": "w1", "t_ms": [12.5, 110.0, ...]}, ...]}

  with every ``t_ms`` non-empty, ≥ 0 and non-decreasing. With ``trace.repeat`` a worker's
  times are replayed again and again until the plan's ``duration_s`` (:func:`repeat_times`):
  a job that trains longer than the recorded one keeps its rhythm.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from olaf.plan.topology import SEED_CACHE, worker_seed

NS_PER_MS = 1_000_000

PHASE_STREAM = 4
"""Child of a worker's ``SeedSequence`` whose first uniform draw is its start phase (children
0..3 are the worker process's own streams, :class:`olaf.hosts.worker.Worker`)."""

START_PHASES = ("random", "aligned")
"""``ClusterGroup.start_phase`` values (module docstring)."""
ARRIVALS = ("periodic", "onoff")
"""``ClusterGroup.arrivals`` values (module docstring)."""


class TraceFileError(ValueError):
    """A trace file that cannot be replayed; the message names the field ``trace.file``, the
    file and what is wrong."""


@functools.lru_cache(maxsize=SEED_CACHE)
def start_phase_ns(run_seed: int, worker_id: int, cycle_ms: float) -> int:
    """The start phase of worker ``worker_id`` in a run seeded ``run_seed``: U[0, ``cycle_ms``)
    ms drawn from its own stream (module docstring), in ns (rounded)."""
    ss = np.random.SeedSequence(worker_seed(run_seed, worker_id), spawn_key=(PHASE_STREAM,))
    return round(float(np.random.default_rng(ss).uniform(0.0, cycle_ms)) * NS_PER_MS)


def arrival_gaps_ns(period_ms: float, jitter_ms: float, burst: int, rng: np.random.Generator) -> Iterator[int]:
    """Endless gaps (ns) of the periodic (``burst`` = 1) or on/off model (module docstring);
    ``rng`` draws the jitter, once per burst.

    Raises:
        ValueError: ``period_ms`` ≤ 0, ``jitter_ms`` outside ``[0, period_ms]`` or ``burst`` < 1.
    """
    check_period(period_ms, jitter_ms, burst)
    while True:
        gap = burst * period_ms + (rng.uniform(-jitter_ms, jitter_ms) if jitter_ms > 0 else 0.0)
        yield round(gap * NS_PER_MS)
        for _ in range(burst - 1):
            yield 0


def check_period(period_ms: float, jitter_ms: float, burst: int = 1) -> None:
    """Raise ValueError unless ``period_ms`` > 0, 0 ≤ ``jitter_ms`` ≤ ``period_ms`` and ``burst`` ≥ 1."""
    if not period_ms > 0:
        raise ValueError(f"period must be > 0 ms, got {period_ms}")
    if not 0 <= jitter_ms <= period_ms:
        raise ValueError(f"jitter must be in [0, period={period_ms}] ms, got {jitter_ms}")
    if burst < 1:
        raise ValueError(f"burst must be >= 1 update, got {burst}")


def trace_gaps_ns(times_ms: Sequence[float], scale: float = 1.0) -> Iterator[int]:
    """Gaps (ns) between the generation times ``times_ms`` (offsets from the start, ms), the first
    from the start, every time multiplied by ``scale`` (> 0) and rounded to ns."""
    if not scale > 0:
        raise ValueError(f"trace scale must be > 0, got {scale}")
    prev = 0
    for t in times_ms:
        cur = round(t * scale * NS_PER_MS)
        yield cur - prev
        prev = cur


@dataclass(frozen=True)
class WorkerTrace:
    """One worker's generation times: ``t_ms`` offsets from its start, ms (non-decreasing, ≥ 0)."""

    name: str
    t_ms: tuple[float, ...]


def check_times(where: str, times: Sequence[float]) -> list[float]:
    """``times`` as floats, checked: non-empty, finite, ≥ 0 and non-decreasing.

    Raises:
        ValueError: the message starts with ``where`` and names the first bad entry.
    """
    out = [float(t) for t in times]
    if not out:
        raise ValueError(f"{where}: no generation times")
    for i, t in enumerate(out):
        if not (np.isfinite(t) and t >= 0):
            raise ValueError(f"{where}: entry {i} is {t} ms; times must be finite and >= 0")
        if i and t < out[i - 1]:
            raise ValueError(f"{where}: entry {i} ({t} ms) is before entry {i - 1} ({out[i - 1]} ms)")
    return out


def repeat_times(times_ms: Sequence[float], until_ms: float) -> tuple[float, ...]:
    """``times_ms`` (offsets from the start, non-decreasing) replayed again and again, the times
    before ``until_ms`` (a worker's generation window is ``[start, start + duration)``). Cycle
    ``c`` adds ``c · L`` to every time, with ``L`` = the last time plus the mean gap (last /
    number of times), so that the gap across a cycle boundary is the mean one.

    Raises:
        ValueError: ``times_ms`` empty or ending at 0 (nothing to repeat).
    """
    if not times_ms or times_ms[-1] <= 0:
        raise ValueError("a trace to repeat needs times after its start")
    cycle = times_ms[-1] * (1 + 1 / len(times_ms))
    out: list[float] = []
    k = 0
    while True:
        for t in times_ms:
            x = t + k * cycle
            if x >= until_ms:
                return tuple(out)
            out.append(x)
        k += 1


def traces_json(workers: Sequence[WorkerTrace], source: str) -> dict:
    """The trace file's JSON object (module docstring) for ``workers``, in order."""
    return {"unit": "ms", "source": source, "workers": [{"name": w.name, "t_ms": list(w.t_ms)} for w in workers]}


def read_traces(path: Path | str) -> list[WorkerTrace]:
    """The workers' traces of trace file ``path``, in file order.

    Raises:
        TraceFileError: unreadable, not the format of the module docstring, no workers, or a
            worker with no or bad times (the message names ``trace.file``, the file and the worker).
    """
    path = Path(path)

    def bad(msg: str) -> TraceFileError:
        return TraceFileError(f"trace.file: {path}: {msg}")

    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise bad(f"cannot read ({e.strerror}); write one with `olaf trace extract RUN_DIR -o FILE`") from None
    except json.JSONDecodeError as e:
        raise bad(f"not JSON ({e.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("workers"), list):
        raise bad('expected {"unit": "ms", "workers": [{"name": ..., "t_ms": [...]}, ...]}')
    if data.get("unit", "ms") != "ms":
        raise bad(f"unit {data['unit']!r}: only ms")
    if not data["workers"]:
        raise bad("no workers")
    out = []
    for i, w in enumerate(data["workers"]):
        name = w.get("name", f"workers[{i}]") if isinstance(w, dict) else f"workers[{i}]"
        if not isinstance(w, dict) or not isinstance(w.get("t_ms"), list):
            raise bad(f"workers[{i}]: needs a list t_ms")
        try:
            out.append(WorkerTrace(str(name), tuple(check_times(f"worker {name}", w["t_ms"]))))
        except (TypeError, ValueError) as e:
            raise bad(str(e)) from None
    return out

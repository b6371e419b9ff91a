"""Where the host programs write, how they wait for their start, and the shutdown signal
handling they share.

Every host writes, into its output directory:

* ``<name>.jsonl`` — one record per line (:class:`olaf.rundir.jsonl.JsonlLog`). The first
  is its ``start`` record (``role`` ``worker`` or ``ps``, its configuration), the last (on a
  clean shutdown) ``stop``; the records and their fields are the models of
  :mod:`olaf.rundir.records` (JSON Schema: ``docs/schemas/host-log.schema.json``). Times
  are ``CLOCK_REALTIME`` ns.
* ``<name>.summary.json`` — counters at shutdown (written atomically:
  :func:`olaf.rundir.atomic.write_json`).

:mod:`olaf.report.rundata` finds the logs of a run by their start record's ``role``.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Optional, Sequence


class OutputFiles:
    """Mixin for a host's configuration with ``out_dir`` and ``name`` attributes."""

    out_dir: Path
    name: str

    @property
    def log_path(self) -> Path:
        """``out_dir/name.jsonl``."""
        return Path(self.out_dir) / f"{self.name}.jsonl"

    @property
    def summary_path(self) -> Path:
        """``out_dir/name.summary.json``."""
        return Path(self.out_dir) / f"{self.name}.summary.json"


def stop_on_signals(stop: threading.Event) -> None:
    """Make SIGTERM and SIGINT set ``stop`` (call from the main thread of a CLI)."""
    handler = lambda signum, frame: stop.set()  # noqa: E731
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


class StartFileError(ValueError):
    """A start file whose content is not a CLOCK_REALTIME time in ns."""


def write_start_file(path: Path, t_ns: int) -> None:
    """Write ``t0`` (CLOCK_REALTIME ns) into ``path`` atomically: a waiting host never reads half a number."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(str(t_ns))
    tmp.replace(path)


def group_start_file(start_file: Path, group_index: int) -> Path:
    """The start file of the workers of cluster group ``group_index`` when the group starts after t0."""
    return start_file.with_name(f"{start_file.name}.g{group_index}")


START_LEAD_NS = 1_000_000_000
"""How far ahead of now a harness sets a run's t0 (:func:`start_run`), ns: every waiting host reads
its start file before t0 comes."""


def start_run(start_file: Path, group_starts_ms: Sequence[float], lead_ns: int = START_LEAD_NS) -> int:
    """Start a run's hosts, waiting on ``start_file`` (and their groups' files): t0 = now +
    ``lead_ns``; a group ``i`` with ``group_starts_ms[i]`` > 0 gets its own file
    (:func:`group_start_file`) at t0 + that; the main file is written last. Returns t0 (ns)."""
    t0 = time.time_ns() + lead_ns
    for gi, start_ms in enumerate(group_starts_ms):
        if start_ms > 0:
            write_start_file(group_start_file(start_file, gi), t0 + round(start_ms * 1e6))
    write_start_file(start_file, t0)
    return t0


def wait_for_start_file(path: Path | str, stop: threading.Event) -> Optional[int]:
    """Wait until ``path`` exists; return the integer (ns) in it, ``time.time_ns()`` if it is
    empty, None if ``stop`` was set first.

    Raises:
        StartFileError: the file holds something else than an integer.
    """
    path = Path(path)
    while not stop.is_set():
        if path.exists():
            text = path.read_text().strip()
            if not text:
                return time.time_ns()
            try:
                return int(text)
            except ValueError:
                raise StartFileError(f"start file {path} must hold a time in ns (an integer), got {text[:40]!r}") from None
        stop.wait(0.02)
    return None


def wait_until(t_ns: int, stop: threading.Event) -> bool:
    """Sleep until ``time.time_ns() ≥ t_ns`` or ``stop`` is set; True if the time came."""
    while not stop.is_set():
        left = t_ns - time.time_ns()
        if left <= 0:
            return True
        stop.wait(min(left / 1e9, 0.1))
    return False

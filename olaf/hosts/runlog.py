"""Logs and summaries of the host programs, and the shutdown signal handling they share.

Every host writes, into its output directory:

* ``<name>.jsonl`` — one JSON object per line. The first line is
  ``{"ev": "start", "role": "worker"|"ps", "t_ns": …, …configuration}``, the
  last (on a clean shutdown) ``{"ev": "stop", …}``; event records in between
  are described by :mod:`olaf.hosts.worker` and :mod:`olaf.hosts.ps`. Times
  are ``CLOCK_REALTIME`` ns.
* ``<name>.summary.json`` — counters at shutdown (written atomically).

:mod:`olaf.report.report` finds the logs of a run by their start record's ``role``.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, TextIO


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


class JsonlLog:
    """Append JSON records to a file, one a line; flushed at most every ``flush_s`` seconds.

    ``flush_s = 0`` flushes every record (for low-rate writers such as workers,
    so that a killed process loses nothing).
    """

    def __init__(self, path: Path | str, flush_s: float = 0.5) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: Optional[TextIO] = open(self.path, "w", buffering=1 << 16)
        self._flush_ns = int(flush_s * 1e9)
        self._last_flush = time.monotonic_ns()

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record (``ValueError`` if the log is closed)."""
        if self._f is None:
            raise ValueError(f"log {self.path} is closed")
        self._f.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.tick()

    def tick(self) -> None:
        """Flush if ``flush_s`` has passed since the last flush (call when idle too)."""
        now = time.monotonic_ns()
        if self._f is not None and now - self._last_flush >= self._flush_ns:
            self._f.flush()
            self._last_flush = now

    def close(self) -> None:
        """Flush and close (idempotent)."""
        if self._f is not None:
            self._f.close()
            self._f = None


def write_json(path: Path | str, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically (temporary file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n")
    os.replace(tmp, path)


def read_jsonl(path: Path | str) -> Iterator[dict]:
    """Records of a JSONL log; a torn last line (killed writer) is skipped.

    Raises ValueError naming the file and line for a corrupt line elsewhere.
    """
    path = Path(path)
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as e:
            if i == len(lines) - 1:
                return
            raise ValueError(f"{path}:{i + 1}: not JSON ({e.msg})") from e


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

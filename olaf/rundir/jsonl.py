"""JSON-lines logs: the one writer, the one reader and the one follower.

* :class:`JsonlLog` appends :class:`~olaf.rundir.records.Record` models, one a line, as a host
  runs; :func:`write_jsonl` writes records known at once (a simulation's logs, a regroup).
* :func:`read_jsonl` reads a finished log: the records that are valid and a count of the
  lines that are not. A line is *corrupt* when it is not JSON, not a JSON object, or not a
  valid record of the model (``strict``: a number where an integer belongs, a string for a
  number, an unknown field, a value out of range …); a torn last line of a killed writer
  is corrupt too. It never raises on content and never drops a line without counting it.
  Blank lines carry nothing and are passed over.
* :class:`JsonlFollower` reads a log while it is written (live monitors): each
  :meth:`~JsonlFollower.poll` returns the records completed since the previous one; a last
  line without its newline yet is kept back until the rest arrives.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Iterable, Optional, TextIO, TypeVar

from pydantic import TypeAdapter, ValidationError

from olaf.rundir.records import LOG_RECORD, Record

T = TypeVar("T")

PROBLEMS_KEPT = 10
"""Corrupt lines described one by one (line number and reason); later ones are only counted."""


class JsonlLog:
    """Append records to ``path`` (created, or truncated), one a line; flushed at most every
    ``flush_s`` seconds (``0``: every record, so that a killed low-rate writer loses nothing).

    Raises:
        OSError: the file cannot be created.
    """

    def __init__(self, path: Path | str, flush_s: float = 0.5, append: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: Optional[TextIO] = open(self.path, "a" if append else "w", buffering=1 << 16)
        self._flush_ns = int(flush_s * 1e9)
        self._last_flush = time.monotonic_ns()

    def write(self, record: Record) -> None:
        """Append one record (its :meth:`~olaf.rundir.records.Record.line`).

        Raises:
            ValueError: the log is closed.
        """
        if self._f is None:
            raise ValueError(f"log {self.path} is closed")
        self._f.write(record.line() + "\n")
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

    def __enter__(self) -> JsonlLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_jsonl(path: Path | str, records: Iterable[Record], *, append: bool = False) -> int:
    """Write ``records`` to ``path`` one a line (created or truncated; appended with ``append``), in
    one pass with a large buffer (a whole log known at once: a simulation's, a regroup); returns
    how many.

    Raises:
        OSError: the file cannot be written.
    """
    n = 0
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a" if append else "w", buffering=1 << 20) as f:
        for r in records:
            f.write(r.line())
            f.write("\n")
            n += 1
    return n


@dataclass
class Corruption:
    """Corrupt lines of one log: their ``count`` and the first :data:`PROBLEMS_KEPT` as
    ``"<line number>: <reason>"``."""

    count: int = 0
    problems: list[str] = field(default_factory=list)

    def add(self, lineno: int, reason: str) -> None:
        self.count += 1
        if len(self.problems) < PROBLEMS_KEPT:
            self.problems.append(f"{lineno}: {reason}")


def _parse(adapter: TypeAdapter[Any], line: bytes) -> tuple[Any, Optional[str]]:
    """``(record, None)`` or ``(None, why the line is corrupt)``."""
    try:
        return adapter.validate_json(line, strict=True), None
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        if err["type"] == "json_invalid":
            return None, "not JSON"
        if not line.lstrip().startswith(b"{"):
            return None, "not a JSON object"
        loc = ".".join(str(p) for p in err["loc"])
        return None, f"{loc + ': ' if loc else ''}{err['msg']}"


@dataclass
class JsonlContents(Generic[T]):
    """What :func:`read_jsonl` found: the valid ``records`` in file order and the ``corrupt`` lines."""

    path: Path
    records: list[T]
    corrupt: Corruption

    @property
    def corrupt_lines(self) -> int:
        return self.corrupt.count


def read_jsonl(path: Path | str, adapter: TypeAdapter[Any] = LOG_RECORD) -> JsonlContents[Any]:
    """Every valid record of the log ``path`` (validated by ``adapter``, by default any host
    log record) and the count of corrupt lines (module docstring). Never raises on content.

    Raises:
        OSError: the file cannot be read (missing, a directory, no permission).
    """
    path = Path(path)
    out: list[Any] = []
    bad = Corruption()
    for i, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        rec, why = _parse(adapter, line)
        if why is None:
            out.append(rec)
        else:
            bad.add(i, why)
    return JsonlContents(path, out, bad)


class JsonlFollower(Generic[T]):
    """Reads a log while its writer appends to it (the file may not exist yet).

    Each :meth:`poll` reads what was appended since the previous one and returns its complete
    lines' valid records; corrupt complete lines are counted in :attr:`corrupt`; an
    unfinished last line is kept back and read with its rest at a later poll (a writer that
    dies mid-line leaves it in :attr:`pending`, which :func:`read_jsonl` then counts as
    corrupt).
    """

    def __init__(self, path: Path | str, adapter: TypeAdapter[Any] = LOG_RECORD) -> None:
        self.path = Path(path)
        self.adapter = adapter
        self.offset = 0
        """Bytes of the file consumed (complete lines only)."""
        self.lines = 0
        self.corrupt = Corruption()

    @property
    def pending(self) -> int:
        """Bytes after the last complete line, waiting for their newline."""
        try:
            return max(self.path.stat().st_size - self.offset, 0)
        except FileNotFoundError:
            return 0

    def poll(self) -> list[Any]:
        """The valid records of the lines completed since the previous poll (empty if the file
        does not exist yet)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        out = []
        for line in data[:end].splitlines():
            self.lines += 1
            if not line.strip():
                continue
            rec, why = _parse(self.adapter, line)
            if why is None:
                out.append(rec)
            else:
                self.corrupt.add(self.lines, why)
        return out

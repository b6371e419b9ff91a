"""The one way a run directory's JSON (and YAML) files are written: whole or not at all.

A reader (``olafctl``, the report, a live monitor, a resumed experiment) may open a file
while it is being rewritten; it must see the old content or the new one, never half of
either. Every writer goes through :func:`write_text_atomic`: the text goes to a temporary
file in the same directory (same file system), which is then renamed over the target
(``os.replace``, atomic on POSIX).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: Path | str, data: bytes) -> Path:
    """As :func:`write_text_atomic` for bytes (e.g. a PS checkpoint, ``numpy.savez``'s output)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: Path | str, text: str) -> Path:
    """Replace ``path`` by a file holding ``text`` in one step; create its directory if missing.

    The temporary file is ``.<name>.<pid>.tmp`` beside it (created with the process's umask,
    so the result has the permissions a plain write would give). Returns ``path``.

    Raises:
        OSError: the directory cannot be created or written; the target is then unchanged
            and the temporary file removed.
    """
    return write_bytes_atomic(path, text.encode())


def write_json(path: Path | str, obj: Any, *, indent: int = 2) -> Path:
    """Write ``obj`` (JSON-ready: dicts, lists, str, numbers, bool, None) as indented JSON with
    a final newline, atomically (:func:`write_text_atomic`). Returns ``path``.

    Raises:
        TypeError: ``obj`` holds something JSON cannot encode (nothing is written).
        OSError: as :func:`write_text_atomic`.
    """
    return write_text_atomic(path, json.dumps(obj, indent=indent) + "\n")

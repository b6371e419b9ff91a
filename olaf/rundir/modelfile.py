"""Reading one JSON file of a run directory into its pydantic model, with errors that name the
file and the fields (``training.json``, ``summary.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def read_model_file(path: Path, model: type[M], error: type[ValueError], *, what: str, missing: str) -> M:
    """``path`` validated as ``model``.

    Raises:
        ``error``: ``path`` missing (the message ends with ``missing``, the hint), unreadable or not
            JSON, or not a ``what`` (the first five invalid fields named).
    """
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: missing ({missing})") from None
    except (OSError, json.JSONDecodeError) as e:
        raise error(f"{path}: cannot read: {e}") from None
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        fields = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()[:5])
        raise error(f"{path}: not {what} ({fields})") from None

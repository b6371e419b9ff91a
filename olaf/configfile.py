"""Configuration files: reading YAML/JSON, validating them with pydantic, one error type.

Every configuration Olaf reads (the deployment ``network.yaml``, verifier configs,
experiment specs) is a pydantic model with ``extra="forbid"``; :func:`validate` turns
pydantic's errors into :class:`ConfigError`, whose message starts with the location of
the field at fault (``switches.s1.queue.size``, ``clusters[1].jitter_ms``) and says
what is allowed. The JSON Schemas of these models are published in ``docs/schemas/``
(``olaf codegen generate``) for editors and other tools.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional, TypeVar, Union

import yaml
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A bad configuration value. ``path`` is the field's location (dotted, ``[i]`` for
    list items; empty for the whole file); the message starts with it."""

    def __init__(self, path: str, message: str = ""):
        if not message:  # ConfigError("clusters[1].x: ...") — location already in the text
            path, _, message = path.partition(": ") if ": " in path else ("", "", path)
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message

    @property
    def field(self) -> str:
        """The field's location (the same as ``path``)."""
        return self.path


class FileModel(BaseModel):
    """Base of the configuration file models: unknown keys are errors, values are checked
    on assignment, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


def location(loc: tuple[Union[str, int], ...]) -> str:
    """pydantic's error location as ``a.b[2].c`` (ints are list indices)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _message(err: Any) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        return "unknown field (remove it or check its spelling)"
    if err["type"] == "missing":
        return "missing (required)"
    return f"{msg} (got {err['input']!r})" if "input" in err and not isinstance(err["input"], (dict, list)) else msg


_FIELD_FIRST = re.compile(r"^([A-Za-z_]\w*(?:\[\d+\]|\.[\w*]+)*): ")
"""A message that starts with a field's path (``queue_size.s1: …``, ``faults[0]: …``)."""


def validate(model: type[M], raw: Any, where: str = "") -> M:
    """``model`` validated from ``raw`` (a parsed YAML/JSON document).

    Raises:
        ConfigError: at the first invalid field, named by its location (prefixed by
            ``where``, e.g. a file name, when given).
    """
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        loc = location(tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))))
        more = f" (and {e.error_count() - 1} more problem(s))" if e.error_count() > 1 else ""
        message = _message(err)
        named = _FIELD_FIRST.match(message) if not loc else None
        if named:  # a model-wide check that names the field it refuses ("faults[0]: …"): locate it there
            loc, message = named.group(1), message[named.end():]
        path = f"{where}:{loc}" if where and loc else (where or loc)
        raise ConfigError(path or "(top level)", message + more) from None


def read_document(path: Union[str, Path]) -> Any:
    """Parse a ``.json`` or YAML file.

    Raises:
        ConfigError: the file cannot be read or is not valid JSON/YAML.
    """
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(str(p), f"cannot read ({e.strerror})") from None
    try:
        return json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise ConfigError(str(p), f"not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {e}") from None


def load(model: type[M], path: Union[str, Path], overrides: Optional[dict[str, Any]] = None) -> M:
    """Read ``path`` and validate it as ``model`` (``overrides`` replace top-level keys)."""
    raw = read_document(path)
    if overrides and isinstance(raw, dict):
        raw = {**raw, **overrides}
    return validate(model, raw)


def json_schema(model: Any, title: str, description: str) -> str:
    """The JSON Schema (draft 2020-12) of ``model`` — a pydantic model, or a type pydantic
    validates such as a union of models — as stable, indented text."""
    schema = model.model_json_schema() if isinstance(model, type) and issubclass(model, BaseModel) \
        else TypeAdapter(model).json_schema()
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title,
              "description": description, **{k: v for k, v in schema.items() if k not in ("title", "description")}}
    return json.dumps(schema, indent=2, sort_keys=False, ensure_ascii=False) + "\n"

"""OlafQueue test vectors: the file format, the one function that computes an event's
expected outcome, and replay through the reference model.

Format (``docs/vectors.md`` is the normative description): one JSON object per
file::

    {"format": "olaf-queue-vectors", "format_version": 2,
     "name": str, "description": str,
     "config": {"discipline": "olaf"|"fifo", "segments": int, "num_clusters": int,
                "num_grads": int, "queue_size": int,
                "reward_threshold": int|null, "activity_window_ns": int,
                "max_sojourn_ns": int, "first_token": int, "num_chunks": int (optional, 1)},
     "events": [event, ...],
     "final_counters": {"decisions": {...}, "per_cluster": [...], "token_fates": {...}}}

Events (``op``):

* ``enqueue``: ``t_ns``, ``update`` (Update fields; ``chunk`` and ``num_chunks`` only when
  ``num_chunks`` > 1), ``expect`` = ``{"decision": label,
  "segment": int|null, "token": int|null}``;
* ``lock``: ``expect`` = ``{"segment": int|null}``;
* ``dequeue``: ``expect`` = ``{"segment": int, "update": {...}}`` or null when empty;
* ``dequeue_token``: ``t_ns``, ``token``; ``expect`` = ``{"fate": label, "lost": int,
  "expired": int, "segment": int|null, "update": {...}|null}``;
* ``status``: ``t_ns``, ``expect`` = ``{"queue_util", "active_clusters", "queue_size"}``;
* ``configure``: any of ``queue_size``, ``reward_threshold`` (null disables),
  ``activity_window_ns``, ``max_sojourn_ns``; no expectation.

:func:`outcome` applies one event to a queue and returns what it produced; the trace
builder (:mod:`olaf.vectors.builder`) records that as the expectation and :func:`replay`
compares it, so both sides compute an event's result in exactly one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olaf.constants import Decision, TokenFate
from olaf.queue_model import OlafQueue, QueueConfig, make_queue
from olaf.update import Update

FORMAT = "olaf-queue-vectors"
FORMAT_VERSION = 2
OPS = ("enqueue", "lock", "dequeue", "dequeue_token", "status", "configure")
TOKEN_OPS = frozenset({"dequeue_token"})
"""Event kinds that exist only where tokens can be lost or reordered (the BMv2 mapping)."""


class VectorFormatError(ValueError):
    """A vector file that does not follow the format; the message names the place."""


@dataclass
class Mismatch:
    """One event whose outcome differs from the vector's expectation."""

    event_index: int
    op: str
    expected: Any
    actual: Any

    def __str__(self) -> str:
        return f"event {self.event_index} ({self.op}): expected {self.expected}, got {self.actual}"


def outcome(q: OlafQueue, event: dict[str, Any]) -> Any:
    """Apply ``event`` (its op and inputs; any ``expect`` is ignored) to ``q`` and return
    the JSON expectation it produces (None for ``configure``, and for a ``dequeue`` of an
    empty queue). Raises VectorFormatError for an unknown op."""
    op = event["op"]
    if op == "enqueue":
        r = q.enqueue(Update.from_json(event["update"]), event["t_ns"])
        return {"decision": r.decision.label, "segment": r.segment, "token": r.token}
    if op == "lock":
        return {"segment": q.lock_head()}
    if op == "dequeue":
        d = q.dequeue()
        return None if d is None else {"segment": d.segment, "update": d.update.to_json()}
    if op == "dequeue_token":
        t = q.dequeue_token(event["token"], event["t_ns"])
        dep = t.departure
        return {"fate": t.fate.label, "lost": t.lost, "expired": t.expired,
                "segment": None if dep is None else dep.segment,
                "update": None if dep is None else dep.update.to_json()}
    if op == "status":
        s = q.status(event["t_ns"])
        return {"queue_util": s.queue_util, "active_clusters": s.active_clusters, "queue_size": s.queue_size}
    if op == "configure":
        q.configure(**{k: v for k, v in event.items() if k != "op"})
        return None
    raise VectorFormatError(f"unknown op {op!r} (expected one of {', '.join(OPS)})")


def config_json(config: QueueConfig, discipline: str) -> dict[str, Any]:
    """The ``config`` object of a vector file."""
    return {"discipline": discipline, "segments": config.segments, "num_clusters": config.num_clusters,
            "num_grads": config.num_grads, "queue_size": config.queue_size,
            "reward_threshold": config.reward_threshold, "activity_window_ns": config.activity_window_ns,
            "max_sojourn_ns": config.max_sojourn_ns, "first_token": config.first_token} | (
                {"num_chunks": config.num_chunks} if config.num_chunks != 1 else {})


def config_of(vector: dict[str, Any]) -> tuple[QueueConfig, str]:
    """``(QueueConfig, discipline)`` of a loaded vector."""
    c = dict(vector["config"])
    disc = c.pop("discipline", "olaf")
    return QueueConfig(**c), disc


def load(path: Path) -> dict[str, Any]:
    """Load and check the envelope of a vector file; raises VectorFormatError."""
    try:
        v = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise VectorFormatError(f"{path}: not JSON: {e}") from None
    if v.get("format") != FORMAT:
        raise VectorFormatError(f"{path}: 'format' must be {FORMAT!r}")
    if v.get("format_version") != FORMAT_VERSION:
        raise VectorFormatError(f"{path}: format_version {v.get('format_version')!r} is not {FORMAT_VERSION}")
    for key in ("name", "config", "events"):
        if key not in v:
            raise VectorFormatError(f"{path}: missing {key!r}")
    return v


def dumps(vector: dict[str, Any]) -> str:
    """Serialise a vector with one event per line (diff-friendly, still plain JSON)."""
    head = {k: v for k, v in vector.items() if k not in ("events", "final_counters")}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"  {json.dumps(k)}: {json.dumps(v)},")
    lines.append('  "events": [')
    ev = vector["events"]
    for i, e in enumerate(ev):
        lines.append("    " + json.dumps(e) + ("," if i < len(ev) - 1 else ""))
    lines.append("  ],")
    lines.append(f'  "final_counters": {json.dumps(vector["final_counters"])}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def replay(vector: dict[str, Any]) -> list[Mismatch]:
    """Run the reference model over a vector; return every mismatch (empty = match)."""
    cfg, disc = config_of(vector)
    q = make_queue(cfg, disc)
    bad: list[Mismatch] = []
    for i, e in enumerate(vector["events"]):
        try:
            got = outcome(q, e)
        except VectorFormatError as err:
            raise VectorFormatError(f"event {i}: {err}") from None
        if e["op"] != "configure" and got != e["expect"]:
            bad.append(Mismatch(i, e["op"], e["expect"], got))
    if "final_counters" in vector and q.counters.as_dict() != vector["final_counters"]:
        bad.append(Mismatch(len(vector["events"]), "final_counters", vector["final_counters"], q.counters.as_dict()))
    return bad


def decisions_covered(vector: dict[str, Any]) -> set[Decision]:
    """The enqueue decisions a vector exercises."""
    return {Decision.from_label(e["expect"]["decision"]) for e in vector["events"] if e["op"] == "enqueue"}


def fates_covered(vector: dict[str, Any]) -> set[TokenFate]:
    """The token fates a vector exercises."""
    return {TokenFate.from_label(e["expect"]["fate"]) for e in vector["events"] if e["op"] == "dequeue_token"}


def uses_token_ledger(vector: dict[str, Any]) -> bool:
    """True if replaying ``vector`` needs the token ledger: a ``dequeue_token`` event, or
    expiry (``max_sojourn_ns`` other than 0 in the config or a ``configure``). Shells whose
    departure order cannot lose tokens (the RTL, the ns-3 QueueDisc) skip these."""
    return vector["config"].get("max_sojourn_ns", 0) != 0 or any(
        e["op"] in TOKEN_OPS or e.get("max_sojourn_ns", 0) != 0 for e in vector["events"])

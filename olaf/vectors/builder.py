"""Building vector traces: drive the reference queue and record each event with the
outcome :func:`olaf.vectors.format.outcome` computes for it."""

from __future__ import annotations

from typing import Any, Optional

from olaf.queue_model import Departure, OlafQueue, QueueConfig, make_queue
from olaf.update import Update
from olaf.vectors.format import FORMAT, FORMAT_VERSION, config_json, outcome


class TraceBuilder:
    """Drives a reference queue and records each event with its expected result.

    The ``expect*`` arguments state what a curated trace means to exercise; a trace
    whose model outcome differs raises AssertionError when it is built.
    """

    def __init__(self, name: str, description: str, config: QueueConfig, discipline: str = "olaf"):
        self.name = name
        self.description = description
        self.initial_config = config
        self.discipline = discipline
        self.queue: OlafQueue = make_queue(config, discipline)
        self.events: list[dict[str, Any]] = []
        self.t_ns = 0
        self.last_token: Optional[int] = None

    def tick(self, dt_ns: int = 1000) -> int:
        """Advance the trace clock by ``dt_ns`` (ns) and return the new time."""
        self.t_ns += dt_ns
        return self.t_ns

    def record(self, event: dict[str, Any]) -> Any:
        """Apply one event (its op and inputs; any ``expect`` is replaced) to the model and
        record it with the model's outcome as its expectation; returns that outcome."""
        event = {k: v for k, v in event.items() if k != "expect"}
        got = outcome(self.queue, event)
        self.events.append(event if event["op"] == "configure" else {**event, "expect": got})
        return got

    def enqueue(self, update: Update, *, expect: Optional[str] = None, dt_ns: int = 1000) -> Optional[int]:
        """Record an enqueue; ``expect`` (a decision label) is asserted against the model.
        Returns the segment touched; an APPEND's token is kept in :attr:`last_token`."""
        got = self.record({"op": "enqueue", "t_ns": self.tick(dt_ns), "update": update.to_json()})
        if expect is not None and got["decision"] != expect:
            raise AssertionError(f"{self.name}: event {len(self.events) - 1} expected {expect}, "
                                 f"model says {got['decision']}")
        if got["token"] is not None:
            self.last_token = got["token"]
        return got["segment"]

    def append(self, update: Update, *, dt_ns: int = 1000) -> int:
        """Record an enqueue that must APPEND; returns the new segment's token id."""
        self.enqueue(update, expect="append", dt_ns=dt_ns)
        assert self.last_token is not None
        return self.last_token

    def lock(self, *, expect_segment: object = ...) -> Optional[int]:
        seg = self.record({"op": "lock"})["segment"]
        if expect_segment is not ... and seg != expect_segment:
            raise AssertionError(f"{self.name}: lock expected {expect_segment}, got {seg}")
        return seg

    def dequeue(self, *, expect_update: Optional[Update] = None, expect_empty: bool = False) -> Optional[Departure]:
        got = self.record({"op": "dequeue"})
        dep = None if got is None else Departure(got["segment"], Update.from_json(got["update"]))
        if expect_empty and dep is not None:
            raise AssertionError(f"{self.name}: expected an empty queue")
        if expect_update is not None and (dep is None or dep.update != expect_update):
            raise AssertionError(f"{self.name}: dequeue expected {expect_update}, got {dep}")
        return dep

    def dequeue_token(self, token: int, *, dt_ns: int = 1000, expect: Optional[str] = None,
                      expect_lost: Optional[int] = None, expect_expired: Optional[int] = None,
                      expect_update: Optional[Update] = None) -> dict[str, Any]:
        """Record the packet of ``token`` reaching egress; ``expect`` (a fate label), the
        reclaimed counts and the departing update are asserted against the model."""
        got = self.record({"op": "dequeue_token", "t_ns": self.tick(dt_ns), "token": token})
        checks = [("fate", expect, got["fate"]), ("lost", expect_lost, got["lost"]),
                  ("expired", expect_expired, got["expired"]),
                  ("update", None if expect_update is None else expect_update.to_json(), got["update"])]
        for what, want, have in checks:
            if want is not None and want != have:
                raise AssertionError(f"{self.name}: event {len(self.events) - 1} expected {what} {want}, "
                                     f"model says {have}")
        return got

    def drain(self) -> list[Departure]:
        out = []
        while self.queue.occupancy:
            dep = self.dequeue()
            assert dep is not None
            out.append(dep)
        return out

    def status(self, *, dt_ns: int = 0, expect: Optional[tuple[int, int]] = None) -> dict[str, int]:
        got = self.record({"op": "status", "t_ns": self.tick(dt_ns)})
        if expect is not None and (got["queue_util"], got["active_clusters"]) != expect:
            raise AssertionError(f"{self.name}: status expected {expect}, got {got}")
        return got

    def configure(self, **changes: Any) -> None:
        self.record({"op": "configure", **changes})

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "name": self.name,
            "description": self.description,
            "config": config_json(self.initial_config, self.discipline),
            "events": self.events,
            "final_counters": self.queue.counters.as_dict(),
        }

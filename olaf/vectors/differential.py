"""Differential step of the queue-core fuzzer: C++ core against the reference model.

The fuzzer (``p4src/extern/fuzz_queue_core.cpp``, ``make fuzz-core``) turns bytes into calls
on the C++ core. Its trace program (``fuzz_queue_trace``, the same decoder) replays fuzz
inputs and writes each as a *trace*: JSON lines ``{"config": …}``, then per call
``{"event": …}`` before it and ``{"expect": …}`` (what the C++ core produced) after it,
``{"failure": …}`` if one of the fuzzer's checks failed, and ``{"final_counters": …}``.
A trace is a vector (``docs/vectors.md``) whose expectations are the C++ core's, so
:func:`olaf.vectors.format.replay` compares it with the model event by event.

A *finding* is an input whose trace diverges from the model, that failed a check
(invariant, conservation, a token releasing the wrong segment) or crashed (a sanitizer
report: the trace stops inside a call). :func:`save_finding` turns it into a vector file
``fuzz_<kind>_<hash>.json`` whose expectations are the model's, so every implementation
must replay it from then on; :func:`olaf.vectors.corpus.found_traces` re-derives those
files from their own events when the corpus is regenerated.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from olaf.vectors.builder import TraceBuilder
from olaf.vectors.format import FORMAT, FORMAT_VERSION, Mismatch, config_of, dumps, replay

FOUND_PREFIX = "fuzz_"
"""Vector files made from fuzz findings start with this (``fuzz_<kind>_<hash>.json``)."""


@dataclass
class Trace:
    """One input's trace, as a vector with the C++ core's expectations.

    Attributes:
        name: the input file's name.
        vector: ``config``, ``events`` (each with ``expect`` unless the call never returned)
            and, if the run completed, ``final_counters``.
        failure: the fuzzer's check that failed, if any.
        complete: the trace program finished this input (no crash).
    """

    name: str
    vector: dict[str, Any]
    failure: Optional[str] = None
    complete: bool = False


@dataclass
class Finding:
    """An input the C++ core and the model disagree on, or that broke the core."""

    trace: Trace
    kind: str                      # "divergence" | "invariant" | "crash"
    detail: str
    mismatches: list[Mismatch] = field(default_factory=list)


def read_trace(path: Path) -> Trace:
    """Parse a trace file (JSON lines, see the module docstring); raises ValueError if it
    has no config line."""
    lines = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]
    if not lines or "config" not in lines[0]:
        raise ValueError(f"{path}: not a fuzz trace (no config line)")
    events: list[dict[str, Any]] = []
    t = Trace(Path(path).name.removesuffix(".jsonl"), {})
    final = None
    for x in lines[1:]:
        if "event" in x:
            events.append(dict(x["event"]))
        elif "expect" in x:
            if events[-1]["op"] != "configure":
                events[-1]["expect"] = x["expect"]
        elif "failure" in x:
            t.failure = x["failure"]
        elif "final_counters" in x:
            final = x["final_counters"]
    t.vector = {"format": FORMAT, "format_version": FORMAT_VERSION, "name": t.name,
                "description": "fuzz trace", "config": lines[0]["config"], "events": events}
    if final is not None:
        t.vector["final_counters"] = final
        t.complete = True
    return t


def check_trace(t: Trace) -> Optional[Finding]:
    """Compare a trace with the model; the finding, or None if they agree and the C++ run
    completed with every check passing."""
    done = [e for e in t.vector["events"] if e["op"] == "configure" or "expect" in e]
    vector = {**t.vector, "events": done}
    try:
        bad = replay(vector)
    except (ValueError, AssertionError) as e:
        return Finding(t, "divergence", f"the model refused an event the C++ core accepted: {e}")
    if bad:
        return Finding(t, "divergence", str(bad[0]), bad)
    if t.failure is not None:
        return Finding(t, "invariant", t.failure)
    if not t.complete:
        pending = t.vector["events"][-1]["op"] if len(done) < len(t.vector["events"]) else "?"
        return Finding(t, "crash", f"the trace program stopped inside a call ({pending}): see its stderr")
    return None


def run_trace_tool(tool: Path, inputs: Iterable[Path], out_dir: Path) -> dict[Path, Path]:
    """Run the trace program over ``inputs``; returns input → trace file. An input that
    makes the program abort (a failed check or a sanitizer report) ends that batch; the
    remaining inputs are run in a new one."""
    pending = [Path(p) for p in inputs]
    out_dir.mkdir(parents=True, exist_ok=True)
    traces: dict[Path, Path] = {}
    while pending:
        subprocess.run([str(tool), str(out_dir), *map(str, pending)], capture_output=True, check=False)
        done = 0
        for p in pending:
            f = out_dir / f"{p.name}.jsonl"
            if not f.exists():
                break
            traces[p] = f
            done += 1
            if not read_trace(f).complete:
                break
        if done == 0:
            raise RuntimeError(f"{tool} wrote no trace for {pending[0]}")
        pending = pending[done:]
    return traces


def differential(tool: Path, inputs: Iterable[Path]) -> tuple[list[Finding], int, int]:
    """Trace every input with ``tool`` and compare with the model: (findings, inputs, events
    compared)."""
    inputs = sorted(Path(p) for p in inputs)
    with tempfile.TemporaryDirectory(prefix="olaf-fuzz-traces-") as tmp:
        traces = run_trace_tool(tool, inputs, Path(tmp))
        findings, events = [], 0
        for path in traces.values():
            t = read_trace(path)
            events += len(t.vector["events"])
            f = check_trace(t)
            if f is not None:
                findings.append(f)
    return findings, len(inputs), events


def save_finding(f: Finding, found_dir: Path) -> Path:
    """Write ``f`` as a vector file with the model's expectations; returns its path. Events
    from the one the model refuses on are left out (the description says so)."""
    digest = hashlib.sha256(json.dumps(f.trace.vector["events"], sort_keys=True).encode()).hexdigest()[:10]
    name = f"{FOUND_PREFIX}{f.kind}_{digest}"
    description = f"Found by the queue-core fuzzer ({f.kind}): {f.detail}"
    b = build_found(name, description, f.trace.vector)
    found_dir.mkdir(parents=True, exist_ok=True)
    out = found_dir / f"{name}.json"
    out.write_text(dumps(b.to_json()))
    return out


def build_found(name: str, description: str, vector: dict[str, Any]) -> TraceBuilder:
    """Rebuild a vector's events through the model (its inputs only), stopping before an
    event the model refuses."""
    cfg, disc = config_of(vector)
    b = TraceBuilder(name, description, cfg, disc)
    for i, e in enumerate(vector["events"]):
        try:
            b.record(e)
        except ValueError as err:
            b.description += f" [events from {i} on left out: the model refuses event {i}: {err}]"
            break
    return b

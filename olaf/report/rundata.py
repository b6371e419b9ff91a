"""Loading a run directory: the PS log, the workers' logs, optional harness files.

A run directory holds (any depth below it):

* host logs ``*.jsonl`` written by ``olaf ps`` and ``olaf worker``
  (:mod:`olaf.hosts.runlog`), recognised by their first record's ``role``;
  exactly one PS log;
* their ``*.summary.json`` files (not needed: the logs carry everything, and a
  worker killed without a summary still counts);
* optionally ``run.json`` from the harness: ``t_start_ns``/``t_end_ns`` (the
  metric window, CLOCK_REALTIME ns) and any description (queue, topology …),
  copied into the report;
* optionally ``switch_counters.json`` from the harness, copied verbatim into
  the report under ``"switch"``.

A worker's cluster is, in this order: ``--cluster-id`` given to it (its start
record), or the ``cluster_id`` of ACKs answering its own updates (stamped by
the switch, learned by the worker).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from olaf.hosts.runlog import read_jsonl


class RunDirError(ValueError):
    """A run directory the report cannot use; the message says what is missing."""


@dataclass
class WorkerLog:
    """What the report needs from one worker's log.

    ``t0_ns``: its start (``go`` record), None if it never started;
    ``sent_ts``: ``gen_ts`` (ns) of every sent update; ``exp_rewards``:
    ``(t_ns, expected reward of the weights used)`` per generation;
    ``gen_end_ns``: end of its generation phase — ``t0 + duration`` if it had a
    duration, else its last generation, and no later than its stop record.
    """

    name: str
    path: Path
    cluster_id: Optional[int]
    t0_ns: Optional[int]
    gen_end_ns: Optional[int]
    generated: int = 0
    skipped: int = 0
    sent_ts: list[int] = field(default_factory=list)
    exp_rewards: list[tuple[int, float]] = field(default_factory=list)
    stopped: bool = False
    late_start_ms: float = 0.0
    """How long after its requested start (``--start-at-ns`` or start file) it got going."""

    @property
    def sent(self) -> int:
        return len(self.sent_ts)


@dataclass
class RunData:
    """A loaded run: PS reception records (non-INIT updates), workers, harness files."""

    ps_path: Path
    ps_start: dict[str, Any]
    ps_updates: list[dict[str, Any]]
    ps_inits: int
    ps_malformed: int
    ps_stopped: bool
    workers: list[WorkerLog]
    run_meta: dict[str, Any]
    switch: Optional[dict[str, Any]]
    regroups: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    bad_records: dict[str, int] = field(default_factory=dict)
    """Log lines the report could not use, by file name: not JSON, or fields of the wrong
    type or range. They are counted (``summary.json`` ``bad_records``), never fatal."""
    """Membership changes made with ``olafctl`` during the run (``regroups.jsonl``):
    ``(t_ns, {worker name: cluster id})``, in time order."""

    network: Optional[Any] = None
    """The run's deployment (``network.yaml``), if the run directory has one."""

    def path_of(self, workers: list[WorkerLog]) -> list[str]:
        """The switches between these workers (the first that the network knows) and the PS."""
        if self.network is None:
            return []
        from olaf.controller.routing import switch_path  # noqa: PLC0415

        for w in workers:
            if w.name in self.network.hosts:
                return switch_path(self.network, w.name, self.network.ps)
        return []

    def cluster_at(self, w: WorkerLog, t_ns: int) -> Optional[int]:
        """The cluster ``w`` belonged to at ``t_ns`` (None: in no cluster then)."""
        cluster = w.cluster_id
        for t, members in self.regroups:
            if t > t_ns:
                break
            cluster = members.get(w.name)
        return cluster


def _load_worker(path: Path, records: list[dict]) -> WorkerLog:
    start = records[0]
    w = WorkerLog(name=start.get("name", path.stem), path=path, cluster_id=start.get("cluster_id"),
                  t0_ns=None, gen_end_ns=None)
    learned = None
    last_gen = None
    stop_ns = None
    for r in records[1:]:
        ev = r.get("ev")
        if ev == "go":
            w.t0_ns = r["t0_ns"]
            w.late_start_ms = (r["t0_ns"] - r["requested_t0_ns"]) / 1e6
        elif ev == "gen":
            w.generated += 1
            last_gen = r["t_ns"]
            w.exp_rewards.append((r["t_ns"], r["exp_reward"]))
            if r["sent"]:
                w.sent_ts.append(r["t_ns"])
            else:
                w.skipped += 1
        elif ev == "ack" and r.get("own"):
            learned = r["cluster_id"]
        elif ev == "stop":
            w.stopped = True
            stop_ns = r["t_ns"]
    if w.cluster_id is None:
        w.cluster_id = learned
    duration = (start.get("schedule") or {}).get("duration_s")
    ends = [e for e in (last_gen, stop_ns) if e is not None]
    if duration is not None and w.t0_ns is not None:
        ends = [w.t0_ns + round(duration * 1e9)] + ([stop_ns] if stop_ns is not None else [])
    w.gen_end_ns = min(ends) if ends else None
    return w


def _read_optional_json(path: Path) -> Optional[dict]:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise RunDirError(f"{path}: not JSON ({e.msg})") from e
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: expected a JSON object")
    return data


def _read_regroups(path: Path) -> list[tuple[int, dict[str, int]]]:
    if not path.exists():
        return []
    out = []
    for r in read_jsonl(path):
        out.append((int(r["t_ns"]), {w: int(c) for c, ws in r["clusters"].items() for w in ws}))
    return sorted(out, key=lambda x: x[0])


def load_run(run_dir: Path | str) -> RunData:
    """Read every host log below ``run_dir``.

    Raises:
        RunDirError: not a directory, no PS log or more than one, a corrupt log.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir} is not a directory")
    ps: list[tuple[Path, list[dict]]] = []
    workers: list[WorkerLog] = []
    bad: dict[str, int] = {}
    for path in sorted(run_dir.rglob("*.jsonl")):
        if path.name == "regroups.jsonl":
            continue
        records, n_bad = _read_records(path)
        if n_bad:
            bad[path.name] = n_bad
        role = records[0].get("role") if records and records[0].get("ev") == "start" else None
        if role == "ps":
            ps.append((path, records))
        elif role == "worker":
            workers.append(_load_worker(path, records))
    if len(ps) != 1:
        found = ", ".join(str(p) for p, _ in ps) or "none"
        raise RunDirError(f"{run_dir}: need exactly one PS log (a .jsonl starting with role 'ps'), found {found}")
    ps_path, recs = ps[0]
    updates = []
    for r in recs:
        if r.get("ev") == "update" and not r.get("init"):
            if _valid_update(r):
                updates.append(r)
            else:
                bad[ps_path.name] = bad.get(ps_path.name, 0) + 1
    return RunData(
        ps_path=ps_path,
        ps_start=recs[0],
        ps_updates=updates,
        ps_inits=sum(1 for r in recs if r.get("ev") == "update" and r.get("init")),
        ps_malformed=sum(1 for r in recs if r.get("ev") == "malformed"),
        ps_stopped=any(r.get("ev") == "stop" for r in recs),
        workers=workers,
        regroups=_read_regroups(run_dir / "regroups.jsonl"),
        run_meta=_read_optional_json(run_dir / "run.json") or {},
        switch=_read_optional_json(run_dir / "switch_counters.json"),
        network=_read_network(run_dir / "network.yaml"),
        bad_records=bad,
    )


def _read_records(path: Path) -> tuple[list[dict], int]:
    """JSON object records of a log and the number of lines that are not (a torn last
    line of a killed writer counts too)."""
    out, bad = [], 0
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        if isinstance(r, dict):
            out.append(r)
        else:
            bad += 1
    return out, bad


_U64 = (1 << 64) - 1


def _valid_update(r: dict) -> bool:
    """A PS reception record with the fields the report uses, of the right types and ranges."""
    ints = {"t_ns": _U64, "gen_ts": _U64, "count": 0xFFFF, "cluster_id": 0xFFFF}
    return all(isinstance(r.get(k), int) and not isinstance(r.get(k), bool) and 0 <= r[k] <= hi
               for k, hi in ints.items()) and r["count"] >= 1


def _read_network(path: Path) -> Optional[Any]:
    if not path.exists():
        return None
    from olaf.controller import config as cfgmod  # noqa: PLC0415

    try:
        return cfgmod.load(path)
    except cfgmod.ConfigError as e:
        raise RunDirError(f"{path}: {e}") from e

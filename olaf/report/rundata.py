"""Loading a run directory (:mod:`olaf.rundir`): the PS log, the workers' logs, the manifest.

A run directory holds (any depth below it):

* host logs ``*.jsonl`` written by ``olaf ps`` and ``olaf worker`` (or a backend that
  simulates them), recognised by their first record's ``role``; exactly one PS log. Every
  line is read through :func:`olaf.rundir.jsonl.read_jsonl` and validated against the
  record models (:mod:`olaf.rundir.records`); lines that are not valid records are counted
  per file (``bad_records``), never fatal;
* their ``*.summary.json`` files (not needed: the logs carry everything, and a
  worker killed without a summary still counts);
* optionally ``run.json``, the manifest (:func:`olaf.rundir.manifest.read_manifest`, which
  also converts the layouts of earlier versions): the metric window ``t_start_ns``/
  ``t_end_ns``, the backend, the plan, copied into the report;
* optionally ``switch_counters.json`` from the backend, copied verbatim into
  the report under ``"switch"``;
* optionally ``network.yaml`` and ``regroups.jsonl`` (membership changes with ``olafctl``).

A worker's cluster is, in this order: ``--cluster-id`` given to it (its start
record), or the ``cluster_id`` of ACKs answering its own updates (stamped by
the switch, learned by the worker).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from pydantic import TypeAdapter

from olaf.rundir import MANIFEST_FILE, NETWORK_FILE, REGROUPS_FILE, SWITCH_COUNTERS_FILE
from olaf.rundir.jsonl import read_jsonl
from olaf.rundir.manifest import ManifestError, RunManifest, read_manifest
from olaf.rundir.records import (
    AckRecord,
    GenRecord,
    GoRecord,
    MalformedRecord,
    Outcome,
    PsStart,
    RegroupRecord,
    StopRecord,
    UpdateRecord,
    WorkerStart,
)

_REGROUP = TypeAdapter(RegroupRecord)


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
    sent_seq: list[int] = field(default_factory=list)
    """``seq`` of every sent update, in the order of ``sent_ts``."""
    address: Optional[str] = None
    """The worker's IPv4 address (its start record's ``bind``): the ``src`` of its updates at the PS."""
    worker_id: Optional[int] = None
    """Its ``--worker-id`` (the id an Olaf switch stamps; tells apart workers sharing an address)."""
    exp_rewards: list[tuple[int, Optional[float]]] = field(default_factory=list)
    stopped: bool = False
    late_start_ms: float = 0.0
    """How long after its requested start (``--start-at-ns`` or start file) it got going."""
    restart_gaps_ms: list[float] = field(default_factory=list)
    """One per restart (a later ``start`` record in the same log: a restarted Ray actor): the time
    from the previous incarnation's last record to the restarted one's ``go``, ms."""

    @property
    def sent(self) -> int:
        return len(self.sent_ts)


@dataclass
class RunData:
    """A loaded run: PS reception records (non-INIT updates; of a model in K chunks, chunk 0's),
    workers, the manifest and the backend's files."""

    ps_path: Path
    ps_start: PsStart
    ps_updates: list[UpdateRecord]
    ps_inits: int
    ps_malformed: int
    ps_stopped: bool
    workers: list[WorkerLog]
    manifest: Optional[RunManifest]
    """``run.json`` (None: the directory has none)."""
    switch: Optional[dict[str, Any]]
    regroups: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    """Membership changes made with ``olafctl`` during the run (``regroups.jsonl``):
    ``(t_ns, {worker name: cluster id})``, in time order."""
    bad_records: dict[str, int] = field(default_factory=dict)
    """Log lines that are not valid records (:func:`olaf.rundir.jsonl.read_jsonl`), by file
    name. They are counted (``summary.json`` ``bad_records``), never fatal."""

    network: Optional[Any] = None
    """The run's deployment (``network.yaml``), if the run directory has one."""
    ps_chunks: list[UpdateRecord] = field(default_factory=list)
    """Every non-INIT reception, one record per chunk (a model of one frame: ``ps_updates``)."""

    @property
    def num_chunks(self) -> int:
        """K, chunks per update (docs/protocol.md "Chunks"): the deployment's, else what the PS
        records announce, else 1."""
        if self.network is not None:
            return int(self.network.num_chunks)
        return max((r.num_chunks or 1 for r in self.ps_chunks), default=1)

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


def _load_worker(path: Path, start: WorkerStart, records: list[Any]) -> WorkerLog:
    w = WorkerLog(name=start.name, path=path, cluster_id=start.cluster_id, t0_ns=None, gen_end_ns=None,
                  address=start.bind.rsplit(":", 1)[0] if ":" in start.bind else start.bind, worker_id=start.worker_id)
    learned = None
    last_gen = None
    stop_ns = None
    last_t: Optional[int] = start.t_ns
    gap_from: Optional[int] = None
    for r in records:
        if isinstance(r, WorkerStart):  # a restarted incarnation: its gap ends at its go record
            gap_from = last_t
            w.stopped = False
            continue
        if isinstance(r, GoRecord) and gap_from is not None:
            w.restart_gaps_ms.append((r.t_ns - gap_from) / 1e6)
            gap_from = None
            last_t = r.t_ns
            continue
        last_t = getattr(r, "t_ns", last_t)
        if isinstance(r, GoRecord):
            w.t0_ns = r.t0_ns
            w.late_start_ms = (r.t0_ns - r.requested_t0_ns) / 1e6
        elif isinstance(r, GenRecord):
            w.generated += 1
            last_gen = r.t_ns
            w.exp_rewards.append((r.t_ns, r.exp_reward))
            if r.sent:
                w.sent_ts.append(r.t_ns)
                w.sent_seq.append(-1 if r.seq is None else r.seq)
            else:
                w.skipped += 1
        elif isinstance(r, AckRecord) and r.own:
            learned = r.cluster_id
        elif isinstance(r, StopRecord):
            w.stopped = True
            stop_ns = r.t_ns
    if w.cluster_id is None:
        w.cluster_id = learned
    duration = start.schedule.get("duration_s")
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


def _read_regroups(path: Path, bad: dict[str, int]) -> list[tuple[int, dict[str, int]]]:
    if not path.exists():
        return []
    got = read_jsonl(path, _REGROUP)
    if got.corrupt_lines:
        bad[path.name] = got.corrupt_lines
    out = [(r.t_ns, {w: int(c) for c, ws in r.clusters.items() for w in ws}) for r in got.records]
    return sorted(out, key=lambda x: x[0])


def _read_manifest(run_dir: Path) -> Optional[RunManifest]:
    if not (run_dir / MANIFEST_FILE).exists():
        return None
    try:
        return read_manifest(run_dir)
    except ManifestError as e:
        raise RunDirError(str(e)) from None


GEN_TS_FUTURE_NS = 1_000_000_000
"""A reception whose ``gen_ts`` is more than this after the reception itself (the hosts
share one clock) cannot be a real update's generation time."""
GEN_TS_BEFORE_RUN_NS = 3600 * 1_000_000_000
"""Nor can one that predates the PS's start by more than this."""


def plausible_gen_ts(r: UpdateRecord, ps_start_ns: int) -> bool:
    """``gen_ts`` within the run: not in the future of its reception, not long before it."""
    return ps_start_ns - GEN_TS_BEFORE_RUN_NS <= r.gen_ts <= r.t_ns + GEN_TS_FUTURE_NS


def usable(records: list[UpdateRecord], ps_start_ns: int) -> list[UpdateRecord]:
    """The receptions the report counts: not ``wrong_size`` (the PS could not use them) and with a
    plausible ``gen_ts`` (the rest are counted, see :func:`bad_gen_ts`)."""
    return [r for r in records if r.outcome != Outcome.WRONG_SIZE and plausible_gen_ts(r, ps_start_ns)]


def load_run(run_dir: Path | str) -> RunData:
    """Read every host log below ``run_dir``.

    Raises:
        RunDirError: not a directory, no PS log or more than one, a ``run.json`` that is not
            a manifest (or names a schema version this Olaf does not read), a
            ``switch_counters.json`` or ``network.yaml`` that cannot be read.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir} is not a directory")
    ps: list[tuple[Path, PsStart, list[Any]]] = []
    workers: list[WorkerLog] = []
    bad: dict[str, int] = {}
    for path in sorted(run_dir.rglob("*.jsonl")):
        if path.name == REGROUPS_FILE:
            continue
        got = read_jsonl(path)
        if got.corrupt_lines:
            bad[path.name] = got.corrupt_lines
        first = got.records[0] if got.records else None
        if isinstance(first, PsStart):
            ps.append((path, first, got.records[1:]))
        elif isinstance(first, WorkerStart):
            workers.append(_load_worker(path, first, got.records[1:]))
    if len(ps) != 1:
        found = ", ".join(str(p) for p, _, _ in ps) or "none"
        raise RunDirError(f"{run_dir}: need exactly one PS log (a .jsonl starting with role 'ps'), found {found}")
    ps_path, start, recs = ps[0]
    updates = [r for r in recs if isinstance(r, UpdateRecord)]
    return RunData(
        ps_path=ps_path,
        ps_start=start,
        # a PS that logs every chunk of a K-chunk model (olaf ps): chunk 0's record stands for the
        # update (docs/hosts.md "Accounting"); the simulated PS logs completions without a chunk
        ps_updates=[r for r in updates if not r.init and not r.chunk],
        ps_chunks=[r for r in updates if not r.init],
        ps_inits=sum(1 for r in updates if r.init),
        ps_malformed=sum(1 for r in recs if isinstance(r, MalformedRecord)),
        ps_stopped=any(isinstance(r, StopRecord) for r in recs),
        workers=workers,
        regroups=_read_regroups(run_dir / REGROUPS_FILE, bad),
        manifest=_read_manifest(run_dir),
        switch=_read_optional_json(run_dir / SWITCH_COUNTERS_FILE),
        network=_read_network(run_dir / NETWORK_FILE),
        bad_records=bad,
    )


def _read_network(path: Path) -> Optional[Any]:
    if not path.exists():
        return None
    from olaf.controller import config as cfgmod  # noqa: PLC0415

    try:
        return cfgmod.load(path)
    except cfgmod.ConfigError as e:
        raise RunDirError(f"{path}: {e}") from e

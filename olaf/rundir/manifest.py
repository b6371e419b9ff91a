"""``run.json``: the manifest of a run directory, the same layout for every backend.

:class:`RunManifest` says which backend ran the run, its metric window (``t_start_ns``,
``t_end_ns``: the generation window, CLOCK_REALTIME ns — simulated ns from 0 in an ns-3
run), the parameters the backend was given (``plan``), what produced it (``provenance``),
whether it ended early (``partial``, ``incomplete``, ``stopped_early_s``), the faults
injected into it and what only one backend records (``backend_info``: ns-3's event-loop
statistics). Backends write it with :func:`write_manifest`; every reader goes through
:func:`read_manifest`, which also reads the layouts written before the manifest existed
(:func:`from_legacy`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from olaf.provenance import RESULTS_SCHEMA_VERSION
from olaf.rundir.atomic import write_json

MANIFEST_FILE = "run.json"
LEGACY_SCHEMA_VERSIONS = (1, 2)
"""``results_schema_version`` of the layouts :func:`from_legacy` converts: a flat ``run.json``
(the emulation's run parameters at the top level, no ``backend``) and ns-3's nested one
(``backend: "ns3"``, ``scenario``, ``sim``)."""
LEGACY_MANIFEST_KEYS = ("t_start_ns", "t_end_ns", "provenance", "partial", "ps_died", "faults", "incomplete",
                        "stopped_early_s")
"""Keys of a flat legacy ``run.json`` that are not run parameters."""


class ManifestError(ValueError):
    """A ``run.json`` that cannot be read: missing, not JSON, of an unknown schema version, or
    not a valid manifest. The message names the file and the problem."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Provenance(_Model):
    """What produced the run (:func:`olaf.provenance.provenance`)."""

    results_schema_version: int
    git_commit: Optional[str] = Field(description="<sha>, <sha>-dirty, or None outside git")
    python: str
    platform: str
    tools: dict[str, Optional[str]] = Field(description="first line of each tool's --version (None: absent)")
    packages: dict[str, Optional[str]] = Field(description="installed versions (None: not installed)")


class Incomplete(_Model):
    """A run of ``updates_per_worker`` whose workers did not all generate them by the deadline."""

    updates_per_worker: int = Field(ge=1)
    deadline_s: Optional[float] = Field(description="the run's duration limit, s (None: none)")
    generated: dict[str, int] = Field(description="per worker that fell short: updates it generated")


class FaultRecord(_Model):
    """A fault injected during the run (``topologies/faults.py``): its kind, when (``at_s``
    after t0), when it struck; for a switch restart the switch, when it was reprogrammed,
    the gap and the switches the controller reprogrammed."""

    fault: str
    at_s: float
    killed_ns: int
    switch: Optional[str] = None
    reprogrammed_ns: Optional[int] = None
    gap_ms: Optional[float] = None
    reprogrammed: Optional[list[str]] = None


class BottleneckChange(_Model):
    """A change of a measured link's capacity (``uplinks.<switch>.load``, :mod:`olaf.plan.bottleneck`)."""

    switch: str
    at_s: float = Field(description="when it was applied, s after t0")
    offered_pps: float = Field(ge=0, description="the offered rate measured at the switch, packets/s")
    rate_pps: int = Field(ge=1, description="the capacity set, packets/s")


class LostWorker(_Model):
    """A worker lost with its machine mid-run (a Ray node lost, ``olaf.backends.ray``): the run
    went on without it."""

    worker: str
    at_s: float = Field(description="when the harness noticed, s after t0")
    reason: str


class RunManifest(_Model):
    """The manifest ``run.json`` of a run directory (module docstring).

    Attributes:
        schema_version: :data:`olaf.provenance.RESULTS_SCHEMA_VERSION` of the writer.
        backend: the backend that ran it (``mininet``, ``ns3``, ``local`` or another
            registered name; ``external`` for a directory written by another harness).
        t_start_ns, t_end_ns: the metric window (None: not known; the report then takes it
            from the worker logs).
        plan: the run's parameters as the backend was given them (a JSON object).
        provenance: commit, tools and packages that produced it.
        partial: the run was cut short (interrupted, or a host died); ``partial_reason`` says why.
        incomplete: workers that did not generate their ``updates_per_worker`` in time.
        stopped_early_s: a monitor ended the run this many seconds after t0 (its goal reached).
        faults: the faults injected, in order.
        lost_workers: workers lost with their machine mid-run (the run went on without them).
        bottleneck_changes: the capacities set on links measured during the run (``load``).
        backend_info: what only this backend records (ns-3: ``sim`` statistics).
    """

    schema_version: int = RESULTS_SCHEMA_VERSION
    backend: str = Field(min_length=1)
    t_start_ns: Optional[int] = None
    t_end_ns: Optional[int] = None
    plan: dict[str, Any] = Field(default_factory=dict)
    provenance: Optional[Provenance] = None
    partial: bool = False
    partial_reason: Optional[str] = None
    incomplete: Optional[Incomplete] = None
    stopped_early_s: Optional[float] = None
    faults: list[FaultRecord] = Field(default_factory=list)
    lost_workers: list[LostWorker] = Field(default_factory=list)
    bottleneck_changes: list[BottleneckChange] = Field(default_factory=list)
    backend_info: dict[str, Any] = Field(default_factory=dict)

    @field_validator("schema_version")
    @classmethod
    def _current(cls, v: int) -> int:
        if v != RESULTS_SCHEMA_VERSION:
            raise ValueError(f"schema_version {v}: this Olaf writes and reads {RESULTS_SCHEMA_VERSION} "
                             f"(and converts {', '.join(map(str, LEGACY_SCHEMA_VERSIONS))})")
        return v

    @property
    def label(self) -> Optional[str]:
        """The run's queue discipline as its plan names it (``queue``), e.g. for a comparison's labels."""
        q = self.plan.get("queue")
        return q if isinstance(q, str) else None


def write_run_manifest(run_dir: Path | str, backend: str, plan: Any, t_start_ns: int, t_end_ns: Optional[int],
                       **fields: Any) -> RunManifest:
    """Write the manifest of a run of ``plan`` (a :class:`~olaf.plan.plan.RunPlan`, dumped as JSON) on
    ``backend`` with its metric window (ns), this code's provenance (:func:`olaf.provenance.provenance`)
    and ``fields`` of :class:`RunManifest` (``partial``, ``incomplete``, ``backend_info`` …): the one
    place every backend builds its ``run.json``. Returns it.

    Raises:
        pydantic.ValidationError: a field of the wrong type (a bug of the caller).
    """
    from olaf.provenance import provenance  # noqa: PLC0415 (git, read when a run ends)

    m = RunManifest(backend=backend, t_start_ns=t_start_ns, t_end_ns=t_end_ns, plan=plan.model_dump(mode="json"),
                    provenance=provenance(), **fields)
    write_manifest(run_dir, m)
    return m


def write_manifest(run_dir: Path | str, manifest: RunManifest) -> Path:
    """Write ``run_dir/run.json`` atomically (every field, defaults included); returns its path."""
    return write_json(Path(run_dir) / MANIFEST_FILE, manifest.model_dump(mode="json"))


def from_legacy(raw: dict[str, Any], where: str = MANIFEST_FILE) -> RunManifest:
    """Convert a ``run.json`` written before the manifest (no ``schema_version``).

    * ns-3's (``backend: "ns3"``): ``scenario`` becomes the plan, ``sim`` and a
      ``network_yaml`` note go to ``backend_info`` (``topo``/``queue`` repeated the scenario's);
    * the flat one (no ``backend``): ``t_start_ns``, ``t_end_ns``, ``provenance``, ``partial``,
      ``ps_died``, ``faults``, ``incomplete``, ``stopped_early_s`` are manifest fields, every
      other key a run parameter. The emulation wrote them (backend ``mininet``, recognised by
      its ``bmv2_log_level``); a harness of its own may have written the window alone
      (backend ``external``).

    Raises:
        ManifestError: a results schema version other than the legacy ones, an unknown
            backend, or values that do not fit the manifest.
    """
    prov = raw.get("provenance")
    version = prov.get("results_schema_version") if isinstance(prov, dict) else None
    if version is not None and version not in LEGACY_SCHEMA_VERSIONS:
        raise ManifestError(f"{where}: results schema version {version} without a schema_version key is not a "
                            f"layout this Olaf knows (it reads {RESULTS_SCHEMA_VERSION} and converts "
                            f"{', '.join(map(str, LEGACY_SCHEMA_VERSIONS))})")
    backend = raw.get("backend")
    m: dict[str, Any]
    if backend == "ns3":
        info: dict[str, Any] = {k: raw[k] for k in ("sim", "network_yaml") if k in raw}
        m = {"backend": "ns3", "t_start_ns": raw.get("t_start_ns"), "t_end_ns": raw.get("t_end_ns"),
             "plan": raw.get("scenario") or {}, "provenance": prov, "incomplete": raw.get("incomplete"),
             "backend_info": info}
    elif backend is None:
        ps_died = raw.get("ps_died")
        partial = bool(raw.get("partial", False))
        m = {"backend": "mininet" if "bmv2_log_level" in raw else "external",
             "t_start_ns": raw.get("t_start_ns"), "t_end_ns": raw.get("t_end_ns"),
             "plan": {k: v for k, v in raw.items() if k not in LEGACY_MANIFEST_KEYS},
             "provenance": prov, "partial": partial,
             "partial_reason": ps_died if ps_died else ("interrupted" if partial else None),
             "incomplete": raw.get("incomplete"), "stopped_early_s": raw.get("stopped_early_s"),
             "faults": raw.get("faults") or []}
    else:
        raise ManifestError(f"{where}: backend {backend!r} without a schema_version key: not a layout this "
                            "Olaf knows")
    try:
        return RunManifest.model_validate(m)
    except ValidationError as e:
        raise ManifestError(f"{where}: legacy run.json does not convert: {_first(e)}") from None


def _first(e: ValidationError) -> str:
    err = e.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: {err['msg']}" if loc else err["msg"]


def parse_manifest(raw: Any, where: str = MANIFEST_FILE) -> RunManifest:
    """A :class:`RunManifest` from a parsed ``run.json`` (converted if it is a legacy layout).

    Raises:
        ManifestError: not an object, an unknown ``schema_version`` (named), or invalid fields.
    """
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: expected a JSON object")
    if "schema_version" not in raw:
        return from_legacy(raw, where)
    v = raw["schema_version"]
    if v != RESULTS_SCHEMA_VERSION:
        raise ManifestError(f"{where}: schema_version {v!r} is not one this Olaf reads (it reads "
                            f"{RESULTS_SCHEMA_VERSION} and converts the layouts of versions "
                            f"{', '.join(map(str, LEGACY_SCHEMA_VERSIONS))}, which have no schema_version key)")
    try:
        return RunManifest.model_validate(raw)
    except ValidationError as e:
        raise ManifestError(f"{where}: {_first(e)}") from None


def read_manifest(run_dir: Path | str) -> RunManifest:
    """The manifest of the run directory ``run_dir`` (its ``run.json``).

    Raises:
        ManifestError: no ``run.json``, not JSON, or as :func:`parse_manifest`.
    """
    path = Path(run_dir) / MANIFEST_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ManifestError(f"{path}: missing") from None
    except OSError as e:
        raise ManifestError(f"{path}: cannot read ({e.strerror})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestError(f"{path}: not JSON ({e.msg})") from None
    return parse_manifest(raw, str(path))


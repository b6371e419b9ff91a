"""What a backend is: the :class:`Backend` protocol, its options, its result, and the refusal of
plan fields it cannot honour.

A backend runs a :class:`~olaf.plan.plan.RunPlan` into a run directory that ``olaf report``
reads. Before anything starts, :meth:`Backend.check` refuses every field *set in the plan*
(pydantic's ``model_fields_set``, recursively; a default is never refused) that the backend
cannot honour, with the field's path and the reason (:class:`PlanRefused`), and a workload it
cannot run. :func:`refuse_set` is the helper every backend uses for that.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Protocol, runtime_checkable

from pydantic import BaseModel
from rich.console import Console

from olaf.bmv2 import BMV2_LOG_LEVEL
from olaf.configfile import ConfigError
from olaf.constants import WORKER_NICE
from olaf.harness import RunMonitor
from olaf.plan.plan import RunPlan
from olaf.plan.topology import shares_hosts
from olaf.rundir.manifest import read_manifest


class PlanRefused(ConfigError):
    """A backend cannot run a plan as given. ``field`` is the plan field's path (``uplinks.s1.delay_us``,
    ``workload``); the message says why and what to do."""

    def __init__(self, backend: str, field: str, reason: str) -> None:
        super().__init__(field, f"the {backend} backend cannot honour it: {reason}")
        self.backend = backend


@dataclass
class BackendOptions:
    """How to run, not what: options of the backends (each reads the ones it knows).

    Attributes:
        console: where progress and tables go.
        build: the P4 build directory (mininet: ``olaf.json``, ``olaf.p4info.txt``, ``olaf_queue.so``).
        quiet: no report tables on the console.
        progress: the backend's own progress line (off under a caller's progress bar).
        report: write the report (``summary.json``, ...) into the run directory after the run.
        plots: the report's plots too.
        bmv2_log_level: mininet: the switches' log level.
        pcap: mininet: capture every switch port into ``<run>/pcap/``.
        admission: mininet: ``olafctl`` asks the AoM verifier before growing a cluster.
        interactive: mininet: the network stays up with the Mininet CLI until it exits (the plan's
            duration is then only an upper bound of the workers' schedule).
        workers_per_actor: ray: workers that share one Ray actor process (each in its own thread).
        ray_nodes: ray: one Ray node per Mininet host on a management link, the head in the root
            namespace (a cluster of machines, emulated; docs/ray.md).
        actor_restarts: ray: how often Ray restarts a dead actor (``max_restarts``); its workers
            come back with the same Olaf identity and re-INIT.
        worker_nice: local, mininet, ray: the workers' (and the evaluator's) nice value, 0..19
            (:data:`olaf.constants.WORKER_NICE`: the switch and the PS are not starved by training).
    """

    console: Console = field(default_factory=Console)
    build: Optional[Path] = None
    quiet: bool = True
    progress: bool = False
    report: bool = True
    plots: bool = False
    bmv2_log_level: str = BMV2_LOG_LEVEL
    pcap: bool = False
    admission: bool = False
    interactive: bool = False
    workers_per_actor: int = 1
    ray_nodes: bool = False
    actor_restarts: int = 1
    worker_nice: int = WORKER_NICE


@dataclass
class RunResult:
    """A finished run.

    Attributes:
        backend: the backend's name.
        out: the run directory.
        status: ``ok``, ``incomplete`` (workers could not generate their updates in the
            deadline: ``run.json``'s ``incomplete``) or ``stopped`` (the monitor ended it early).
        elapsed_s: wall-clock seconds of the run (simulated seconds for ``ns3``).
        summary: the report's ``summary.json`` content, None without a report.
    """

    backend: str
    out: Path
    status: str = "ok"
    elapsed_s: float = 0.0
    summary: Optional[dict[str, Any]] = None

    @classmethod
    def of_run(cls, backend: str, out: Path, elapsed_s: float, summary: Optional[dict[str, Any]]) -> RunResult:
        """The result of the finished run in ``out``, its :attr:`status` from its manifest (the one
        rule for every backend).

        Raises:
            olaf.rundir.manifest.ManifestError: ``out/run.json`` missing or unreadable.
        """
        m = read_manifest(out)
        status = "incomplete" if m.incomplete else "stopped" if m.stopped_early_s is not None else "ok"
        return cls(backend, out, status, elapsed_s, summary)


@runtime_checkable
class Backend(Protocol):
    """A way to run a plan. ``name`` is its registry name (:mod:`olaf.backends`).

    Every backend names it as its base (``class LocalBackend(Backend)``), so mypy checks each
    method's signature against this one and a backend without one of them cannot be created
    (they are abstract); the registry checks the attributes too (:func:`olaf.backends.get`).
    """

    name: str
    description: str
    options: BackendOptions
    """How to run (each backend reads the options it knows)."""
    mtu: int
    """IPv4 MTU of the links between workers and PS by default, bytes: an update that does not fit
    it travels in K chunks (:meth:`RunPlan.chunking <olaf.plan.plan.RunPlan.chunking>`)."""
    max_mtu: int
    """The largest MTU a training job may ask of this backend's links (``olaf train --mtu``),
    bytes: the links are raised to the job's MTU where it is above :attr:`mtu`."""

    @abstractmethod
    def preflight(self) -> None:
        """Say what this machine lacks for this backend, before any run starts.

        Raises:
            RuntimeError: what is missing and how to get it (root, tools, build outputs, packages).
        """
        ...

    @abstractmethod
    def check(self, plan: RunPlan) -> None:
        """Refuse what this backend cannot honour.

        Raises:
            PlanRefused: a field set in the plan (named) or the workload.
        """
        ...

    @abstractmethod
    def run(self, plan: RunPlan, out: Path, monitor: Optional[RunMonitor] = None) -> RunResult:
        """Run ``plan`` into the run directory ``out`` (created), after :meth:`check`.

        Raises:
            PlanRefused: as :meth:`check`.
            olaf.harness.RunFailed: the run failed (:class:`~olaf.harness.RunInterrupted`: stopped by Ctrl-C or SIGTERM).
            RuntimeError: the backend is not usable on this machine (the message says what to install).
        """
        ...


def set_paths(model: BaseModel, prefix: str = "") -> list[str]:
    """Paths of every field set in ``model`` (pydantic's ``model_fields_set``), recursively: a set
    sub-model contributes its own set fields (``uplinks.s1.delay_us``), a set mapping of models
    ``<field>.<key>.<sub>``; a set list or scalar is its own path."""
    out: list[str] = []
    for name in sorted(model.model_fields_set):
        value = getattr(model, name)
        path = f"{prefix}{name}"
        if isinstance(value, BaseModel):
            inner = set_paths(value, path + ".")
            out += inner or [path]
        elif isinstance(value, dict) and value and all(isinstance(v, BaseModel) for v in value.values()):
            for k, v in value.items():
                out += set_paths(v, f"{path}.{k}.") or [f"{path}.{k}"]
        else:
            out.append(path)
    return out


def refuse_shared_hosts(backend: str, plan: RunPlan, reason: str) -> None:
    """Raise :class:`PlanRefused` (field ``groups.<name>.workers_per_host``) if a group puts more
    than one worker on a host, which only the mininet backend's five-tuple identity emulates."""
    for g in plan.groups:
        if shares_hosts(g):
            raise PlanRefused(backend, f"groups.{g.name}.workers_per_host", reason)


def refuse_set(backend: str, plan: RunPlan, refused: dict[str, str]) -> None:
    """Raise :class:`PlanRefused` for the first set field that matches a key of ``refused``.

    ``refused`` maps a path pattern to the reason: ``"access"`` matches ``access`` and every
    path under it, ``"uplinks.*.delay_us"`` matches any key in the ``*`` position.

    Raises:
        PlanRefused: the first such field, in path order.
    """
    for path in set_paths(plan):
        parts = path.split(".")
        for pattern, reason in refused.items():
            pat = pattern.split(".")
            if len(parts) >= len(pat) and all(p in ("*", q) for p, q in zip(pat, parts)):
                raise PlanRefused(backend, path, reason)

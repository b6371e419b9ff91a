"""Generated files: copies of :mod:`olaf.constants` for P4 and C++, the JSON Schemas of
the configuration files and of the run directory (:mod:`olaf.rundir`: manifest, host log
records, summaries), the Wireshark dissector, and the RTL drift check.

``olaf codegen generate`` (``make generate``) writes the files of :data:`GENERATED`;
``olaf codegen check`` (and ``tests/test_constants.py``) fails if a committed copy
differs from what this module renders, or if the RTL's decision ``localparam``s differ
from :class:`olaf.constants.Decision`.
The RTL keeps its own ``localparam`` lines (Verilog include paths differ between
Verilator, Yosys and vendor tools), so it is checked rather than generated.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import click

from olaf.constants import ENUMS, HOST_ENUMS, Const, Decision, host_constants, shared_constants
from olaf.paths import require_source_root

P4_FILE = Path("p4src/include/constants.p4")
CPP_FILE = Path("p4src/extern/olaf_constants.hpp")
RTL_FILE = Path("verilog_queue/rtl/olaf_queue_ctrl.v")

_BANNER = "Generated from olaf/constants.py by `olaf codegen generate` (make generate). Do not edit."


def render_p4() -> str:
    """``p4src/include/constants.p4``: one ``const bit<N>`` per shared constant."""
    lines = [f"// {_BANNER}", "#ifndef OLAF_CONSTANTS_P4_", "#define OLAF_CONSTANTS_P4_", ""]
    for name, c in shared_constants().items():
        lines.append(f"const bit<{c.bits}> {name} = {_literal(name, c)};  // {c.doc}")
    lines += ["", "#endif", ""]
    return "\n".join(lines)


def _cpp_type(c: Const) -> str:
    return next(f"uint{w}_t" for w in (8, 16, 32, 64) if c.bits <= w)


def render_cpp() -> str:
    """``p4src/extern/olaf_constants.hpp``: ``constexpr`` in ``namespace olaf::constants`` (the P4 program's
    constants and the worker-side :data:`~olaf.constants.HOST_ENUMS` of the simulated workers)."""
    lines = [f"// {_BANNER}", "#ifndef OLAF_CONSTANTS_HPP_", "#define OLAF_CONSTANTS_HPP_", "",
             "#include <cstdint>", "", "namespace olaf::constants {", ""]
    for name, c in {**shared_constants(), **host_constants()}.items():
        lines.append(f"constexpr {_cpp_type(c)} {name} = {_literal(name, c)};  // {c.doc}")
    lines.append("")
    for prefix, en in [(p, e) for p, e, _bits in ENUMS] + HOST_ENUMS:
        labels = ", ".join(f'"{m.name.lower()}"' for m in en)
        lines.append(f"// Labels of {prefix}_* by code (counters, vectors, reports).")
        lines.append(f"constexpr const char *{prefix}_LABELS[NUM_{prefix}] = {{{labels}}};")
    lines += ["", "}  // namespace olaf::constants", "", "#endif  // OLAF_CONSTANTS_HPP_", ""]
    return "\n".join(lines)


def _literal(name: str, c: Const) -> str:
    """Flags and EtherTypes in hex, everything else in decimal."""
    return f"0x{c.value:02x}" if "FLAG" in name or name.startswith("ETHERTYPE") else str(c.value)


def _schema(module: str, model: str, title: str, description: str):
    def render() -> str:
        import importlib  # noqa: PLC0415 (the models import pydantic; keep this module light)

        from olaf.configfile import json_schema  # noqa: PLC0415

        return json_schema(getattr(importlib.import_module(module), model), title, description)
    return render


SCHEMAS = {
    Path("docs/schemas/network.schema.json"): _schema(
        "olaf.controller.config", "NetworkFile", "Olaf deployment (network.yaml)",
        "Switches, hosts, links, clusters and admission control of an Olaf deployment; docs/controller.md."),
    Path("docs/schemas/verify.schema.json"): _schema(
        "olaf.verifier.config", "VerifyFile", "Olaf AoM-fairness verifier config",
        "Clusters, engine, transmission model and query of `olaf verify`; docs/verifier.md."),
    Path("docs/schemas/experiment.schema.json"): _schema(
        "olaf.experiments.spec", "ExperimentSpec", "Olaf experiment spec (experiments/*.yaml)",
        "Base run plan, parameters, sweeps, seeds, per-backend settings and the paper's numbers of "
        "`olaf experiment`; docs/experiments.md."),
    Path("docs/schemas/plan.schema.json"): _schema(
        "olaf.plan.plan", "RunPlan", "Olaf run plan",
        "One run on any backend: topology, cluster groups, queues, links, workload, transmission control, "
        "faults, duration or updates, seed; docs/architecture.md."),
    Path("docs/schemas/run-manifest.schema.json"): _schema(
        "olaf.rundir.manifest", "RunManifest", "Olaf run manifest (run.json)",
        "Backend, metric window, plan, provenance, partial/incomplete state, faults and backend extras of a "
        "run directory, the same for every backend; olaf/rundir/manifest.py."),
    Path("docs/schemas/host-log.schema.json"): _schema(
        "olaf.rundir.records", "LogRecord", "Olaf host log record (hosts/<name>.jsonl, one per line)",
        "A record of a worker's or the PS's log, told apart by ev (and role for start); olaf/rundir/records.py, "
        "docs/hosts.md."),
    Path("docs/schemas/worker-summary.schema.json"): _schema(
        "olaf.rundir.records", "WorkerSummary", "Olaf worker summary (hosts/<name>.summary.json)",
        "A worker's counters and final state at shutdown; olaf/rundir/records.py, docs/hosts.md."),
    Path("docs/schemas/ps-summary.schema.json"): _schema(
        "olaf.rundir.records", "PsSummary", "Olaf PS summary (hosts/<name>.summary.json)",
        "The parameter server's counters, per-cluster counts and final model at shutdown; "
        "olaf/rundir/records.py, docs/hosts.md."),
    Path("docs/schemas/training.schema.json"): _schema(
        "olaf.rundir.training", "TrainingResult", "Olaf training result (training.json of a training run)",
        "Whether and when a training job reached its target and solved its task, its final reward, counts, "
        "errors and the evaluations of the global model; olaf/rundir/training.py, docs/training.md."),
    Path("docs/schemas/metrics.schema.json"): _schema(
        "olaf.experiments.metrics", "RunMetrics", "Olaf run metrics (metrics.json of each run of an experiment)",
        "One run's metric values, its aggregation histogram, whether it completed and whether its fates close; "
        "olaf/experiments/metrics.py, docs/experiments.md."),
    Path("docs/schemas/summary.schema.json"): _schema(
        "olaf.rundir.summary", "RunSummary", "Olaf run report (summary.json)",
        "Per-cluster and overall accounting, AoM, fates and chunk delivery, the window, the hosts' losses and "
        "the switch counters of one run; olaf/rundir/summary.py, olaf/report/report.py."),
    Path("docs/schemas/solve.schema.json"): _schema(
        "olaf.training.solve", "SolveRecord", "Olaf time-to-solved comparison (solve.json)",
        "Every run of `make bench-solve`: system, seed, whether and when it solved, its configuration and "
        "evaluations; olaf/training/solve.py, docs/training.md."),
    Path("docs/schemas/staleness.schema.json"): _schema(
        "olaf.training.staleness", "StalenessReport", "Olaf staleness report (staleness.json of a training run)",
        "The distribution of the updates' staleness (exact and the PS's estimate) and of the policy drift; "
        "olaf/training/staleness.py, docs/training.md."),
    Path("docs/schemas/regroups.schema.json"): _schema(
        "olaf.rundir.records", "RegroupRecord", "Olaf membership change (regroups.jsonl, one per line)",
        "Clusters (id -> worker names) from t_ns on, written by olafctl when the switches held the change; "
        "olaf/rundir/records.py."),
}

def _wireshark_lua() -> str:
    from olaf.wireshark import render_lua  # noqa: PLC0415 (imports scapy; keep this module light)

    return render_lua()


WIRESHARK_FILE = Path("docs/wireshark/olaf.lua")
"""The Wireshark dissector for users without Olaf installed (``olaf wireshark`` writes the same)."""

GENERATED = {P4_FILE: render_p4, CPP_FILE: render_cpp, **SCHEMAS, WIRESHARK_FILE: _wireshark_lua}

_RTL_DEC = re.compile(r"localparam\s+\[2:0\]\s+DEC_([A-Z_]+)\s*=\s*3'd(\d+)\s*;")


def rtl_decision_drift(text: str) -> list[str]:
    """Differences between the RTL's ``DEC_*`` localparams and :class:`Decision` (empty: none)."""
    found = {m.group(1): int(m.group(2)) for m in _RTL_DEC.finditer(text)}
    want = {d.name: int(d) for d in Decision}
    problems = [f"RTL DEC_{n} = {v}, olaf.constants.Decision.{n} = {want.get(n)}"
                for n, v in found.items() if want.get(n) != v]
    problems += [f"RTL has no DEC_{n} (Decision.{n} = {v})" for n, v in want.items() if n not in found]
    return problems


def generate(root: Optional[Path] = None) -> list[Path]:
    """Write every generated file under ``root`` (default: the source checkout); returns the files that changed."""
    root = root if root is not None else require_source_root("olaf codegen")
    changed = []
    for rel, render in GENERATED.items():
        path = root / rel
        text = render()
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changed.append(path)
    return changed


def check(root: Optional[Path] = None) -> list[str]:
    """Every drift between :mod:`olaf.constants` and the other languages' copies under ``root`` (default: the
    source checkout; empty: none)."""
    root = root if root is not None else require_source_root("olaf codegen")
    problems = []
    for rel, render in GENERATED.items():
        path = root / rel
        if not path.exists():
            problems.append(f"{rel} is missing: run `make generate`")
        elif path.read_text() != render():
            problems.append(f"{rel} differs from its source: run `make generate` and commit")
    problems += [f"{RTL_FILE}: {p}" for p in rtl_decision_drift((root / RTL_FILE).read_text())]
    return problems


@click.group("codegen")
def codegen_cmd() -> None:
    """Generated files: P4/C++ constants (olaf/constants.py), config JSON Schemas, the Wireshark dissector."""


@codegen_cmd.command("generate")
def generate_cmd() -> None:
    """Rewrite every generated file (constants.p4, olaf_constants.hpp, docs/schemas/*.json, docs/wireshark/olaf.lua)."""
    root = require_source_root("olaf codegen")
    changed = generate(root)
    click.echo("\n".join(f"wrote {p.relative_to(root)}" for p in changed) or "generated files are up to date")
    problems = check()
    if problems:
        raise click.ClickException("\n".join(problems))


@codegen_cmd.command("check")
def check_cmd() -> None:
    """Fail if a generated file or the RTL's decision codes drifted from their source."""
    problems = check()
    if problems:
        raise click.ClickException("generated files drifted:\n  " + "\n  ".join(problems))
    click.echo("generated files (P4/C++ constants, JSON Schemas, Wireshark dissector) and the RTL match their sources")

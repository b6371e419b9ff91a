"""What produced a run directory: the results schema version, the git commit, and the
versions of the tools and Python packages involved. Every run directory records it in
``run.json`` (key ``provenance``) so a result can be traced to the code and toolchain
that made it."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

from olaf.paths import source_root

RESULTS_SCHEMA_VERSION = 3
"""Version of the run-directory layout and of ``summary.json`` (README "Running Olaf").
2: ``run.json`` gained ``provenance``; ``switch_counters.json`` gained ``egress_errors``.
3: ``run.json`` is a :class:`~olaf.rundir.manifest.RunManifest` (``schema_version``, ``backend``,
``plan``, ``backend_info``) for every backend, and ``summary.json``'s ``run`` is that manifest;
:func:`olaf.rundir.manifest.read_manifest` converts the ``run.json`` of versions 1 and 2."""

PACKAGES = ("olaf-drl", "scapy", "numpy", "click", "p4runtime", "grpcio", "protobuf", "z3-solver", "torch",
            "gymnasium", "ns3", "matplotlib")
TOOLS = {"p4c": ["p4c-bm2-ss", "--version"], "bmv2": ["simple_switch_grpc", "--version"]}


def _first_line(cmd: list[str]) -> Optional[str]:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def git_commit(root: Optional[Path] = None) -> Optional[str]:
    """``<sha>`` of the checkout ``root`` (default: :func:`olaf.paths.source_root`; ``<sha>-dirty`` with
    uncommitted changes), None outside git or without a checkout."""
    root = root if root is not None else source_root()
    if root is None or not (root / ".git").exists() or shutil.which("git") is None:
        return None
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{sha}-dirty" if dirty else sha


def package_versions() -> dict[str, Optional[str]]:
    """Installed versions of the Python packages Olaf uses (None: not installed)."""
    out: dict[str, Optional[str]] = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def provenance() -> dict[str, Any]:
    """The record written into ``run.json``."""
    return {
        "results_schema_version": RESULTS_SCHEMA_VERSION,
        "git_commit": git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "tools": {name: _first_line(cmd) for name, cmd in TOOLS.items()},
        "packages": package_versions(),
    }

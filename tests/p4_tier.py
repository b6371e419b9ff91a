"""Shared checks for the tests that need the P4 toolchain (tier 2, README "Tests")."""

import os
import subprocess
from pathlib import Path

import pytest

from olaf.bmv2 import missing_p4_tools

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"


def require_p4_tools() -> None:
    """Skip (with the reason printed in pytest's summary) if p4c/BMv2 are not on PATH."""
    missing = missing_p4_tools()
    if missing:
        pytest.skip(f"P4 toolchain absent: {', '.join(missing)} not on PATH (README \"P4 toolchain\")")


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veth interfaces)")


def build_p4() -> Path:
    """`make build` (P4 program + extern .so); fails the test if compilation fails."""
    r = subprocess.run(["make", "-s", "build"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"make build failed:\n{r.stdout}\n{r.stderr}"
    return BUILD

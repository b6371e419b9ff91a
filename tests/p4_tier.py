"""Helpers of the tests that need the P4 toolchain and of the Mininet tests (the p4 and mininet
tiers, tests/tiers.py): the build, root, and what a run left behind."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"


def require_root() -> None:
    """Skip the test unless it runs as root."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veth interfaces)")


def build_p4() -> Path:
    """`make build` (P4 program + extern .so); fails the test if compilation fails."""
    r = subprocess.run(["make", "-s", "build"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"make build failed:\n{r.stdout}\n{r.stderr}"
    return BUILD


def leftovers(results: Path) -> list[str]:
    """Interfaces, namespaces and processes a Mininet run left behind (processes of the runs
    under ``results`` only: other jobs on the machine may run switches too)."""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    names = [line.split(": ")[1].split("@")[0] for line in links.splitlines()]
    procs = subprocess.run(["pgrep", "-af", "simple_switch_grpc|olaf (ps|worker)"],
                           capture_output=True, text=True).stdout.strip().splitlines()
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    # a management namespace is olafmgmt<pid of its run>: one whose run is alive belongs to another job
    return ([n for n in names if "-eth" in n] + [p for p in procs if str(results) in p]
            + [n for n in namespaces if n.startswith("olafmgmt") and not Path(f"/proc/{n[8:]}").exists()])

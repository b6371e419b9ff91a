"""scripts/check-system-deps.sh: installs once, re-checks once, and never loops when an
install does not satisfy its check."""

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check-system-deps.sh"


def _shim(d: Path, name: str, body: str) -> None:
    p = d / name
    p.write_text("#!/bin/bash\n" + body + "\n")
    p.chmod(0o755)


def test_failed_install_is_reported_once_not_looped(tmp_path):
    log = tmp_path / "apt.log"
    # A root shell on Debian whose apt-get "succeeds" but installs nothing: g++ stays missing.
    _shim(tmp_path, "id", 'echo 0')
    _shim(tmp_path, "apt-get", f'echo "$*" >> {log}; exit 0')
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    r = subprocess.run(["/bin/bash", str(SCRIPT), "cpp"], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    calls = log.read_text().splitlines()
    assert calls[0].startswith("update")
    installs = [c for c in calls if c.startswith("install")]
    assert len(installs) == 1 and "--no-install-recommends" in installs[0] and "g++" in installs[0]
    assert "Missing: g++" in r.stderr and "an install was attempted" in r.stderr


def test_not_root_prints_the_install_command(tmp_path):
    _shim(tmp_path, "id", 'echo 1000')
    log = tmp_path / "apt.log"
    _shim(tmp_path, "apt-get", f'echo "$*" >> {log}; exit 0')
    r = subprocess.run(["/bin/bash", str(SCRIPT), "cpp"], env={"PATH": str(tmp_path)}, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1 and not log.exists()
    assert "sudo apt-get install --no-install-recommends g++ make" in r.stderr


def test_this_machine_has_the_python_group():
    r = subprocess.run([str(SCRIPT), "python"], capture_output=True, text=True, env=dict(os.environ), timeout=60)
    assert r.returncode == 0, r.stderr


def test_tshark_is_installed_once_with_the_mininet_group_and_optional(tmp_path):
    """`make test` checks the mininet group: as root it installs tshark too (once); if tshark
    still is not there, that is a note, not a failure (the dissector test skips)."""
    log = tmp_path / "apt.log"
    _shim(tmp_path, "id", 'echo 0')
    _shim(tmp_path, "apt-get", f'echo "$*" >> {log}; exit 0')
    for tool in ("mnexec", "ip", "ethtool"):   # Mininet's tools present; tshark is not
        _shim(tmp_path, tool, "exit 0")
    (tmp_path / "mininet").mkdir()           # and Mininet's Python package (MININET_PY)
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "MININET_PY": str(tmp_path / "mininet")}
    r = subprocess.run(["/bin/bash", str(SCRIPT), "mininet"], env=env, capture_output=True, text=True, timeout=30)
    installs = [c for c in log.read_text().splitlines() if c.startswith("install")]
    assert len(installs) == 1 and installs[0].split()[-1:] == ["tshark"], installs
    assert "note: not installed: tshark" in r.stderr and "an install was attempted" in r.stderr
    assert not [ln for ln in r.stderr.splitlines() if ln.startswith("Missing:")], r.stderr
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["/bin/bash", str(SCRIPT), "wireshark"], env={"PATH": str(tmp_path)}, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1 and "Missing: tshark" in r.stderr


def test_mininet_group_checks_the_python_package_at_mininet_py(tmp_path):
    """Without Mininet's Python package at MININET_PY the group fails and asks for the mininet
    package, even with every Mininet tool on PATH."""
    log = tmp_path / "apt.log"
    _shim(tmp_path, "id", 'echo 0')
    _shim(tmp_path, "apt-get", f'echo "$*" >> {log}; exit 0')
    for tool in ("mnexec", "ip", "ethtool", "tshark"):
        _shim(tmp_path, tool, "exit 0")
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "MININET_PY": str(tmp_path / "absent")}
    r = subprocess.run(["/bin/bash", str(SCRIPT), "mininet"], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "Missing: mininet" in r.stderr, r.stderr
    installs = [c for c in log.read_text().splitlines() if c.startswith("install")]
    assert len(installs) == 1 and installs[0].split()[-1:] == ["mininet"], installs


def test_bare_image_gets_everything_in_one_install(tmp_path):
    """No python3 and no g++ (a bare container): one apt-get install asks for both groups'
    packages."""
    log = tmp_path / "apt.log"
    _shim(tmp_path, "id", "echo 0")
    _shim(tmp_path, "apt-get", f'echo "$*" >> {log}; exit 0')
    r = subprocess.run(["/bin/bash", str(SCRIPT), "python"], env={"PATH": str(tmp_path)}, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1
    install = [c for c in log.read_text().splitlines() if c.startswith("install")]
    assert len(install) == 1
    for pkg in ("python3", "python3-venv", "python3-dev", "g++"):
        assert pkg in install[0].split()

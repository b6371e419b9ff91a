"""pyproject.toml lists every package of the source tree: a wheel (not only an editable install)
carries each of them; the client and the integrations import without their frameworks, also from a
base install into a fresh venv (opt-in, `make test-install`)."""

from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_in_the_wheel():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = tool["package-dir"]
    found = set()
    for name, d in dirs.items():
        base = ROOT / d
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    missing = sorted(found - set(tool["packages"]))
    assert not missing, f"add to pyproject.toml's [tool.setuptools] packages: {', '.join(missing)}"


def test_the_architecture_doc_shows_the_current_package_graph():
    import runpy

    m = runpy.run_path(str(ROOT / "scripts" / "package-graph.py"))
    g = m["graph"](ROOT)
    assert m["both_ways"](g) == [], "two packages import each other"
    doc = (ROOT / "docs" / "architecture.md").read_text()
    shown = doc.split("<!-- package-graph -->\n", 1)[1].split("<!-- /package-graph -->", 1)[0]
    assert shown == m["markdown"](g), "docs/architecture.md's package graph is stale: paste scripts/package-graph.py's output"


def test_the_client_and_the_integrations_import_without_their_frameworks():
    """`import olaf.client`, `olaf.integrations`, `olaf.ps` and `olaf.launch` pull in no ML framework,
    no P4Runtime, Mininet or ns-3 (an RL user's base install; each integration imports its own)."""
    import subprocess
    import sys

    code = ("import sys; import olaf.client, olaf.client.log, olaf.integrations, olaf.ps, olaf.launch, olaf.launchenv; "
            "heavy = sorted(m for m in ('torch', 'gymnasium', 'stable_baselines3', 'ray', 'p4runtime_sh', 'mininet', "
            "'cppyy', 'grpc') if m in sys.modules); print(','.join(heavy))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "", r.stdout + r.stderr


def test_a_fresh_venv_with_the_base_install_runs_the_client_and_the_launcher(tmp_path):
    """What an ML user does (README "Install"): a new virtual environment, `pip install .` (the base:
    no P4, RTL, ns-3 or RL framework), then `import olaf.client`, `olaf.integrations`, `olaf.ps`,
    `olaf.launch` without any framework, an integration module whose framework is missing naming
    the extra to install, and `olaf launch --help`. Downloads the base's
    dependencies from the package index, so it is opt-in: OLAF_INSTALL_TEST=1 (`make test-install`)."""
    import os
    import subprocess
    import sys

    if not os.environ.get("OLAF_INSTALL_TEST"):
        pytest.skip("installs into a fresh venv from the package index: set OLAF_INSTALL_TEST=1 "
                    "(as `make test-install` does)")
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(ROOT)], capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    code = ("import sys; import olaf.client, olaf.client.log, olaf.integrations, olaf.ps, olaf.launch; "
            "from olaf.client import OlafClient, ModelRefused; "
            "heavy = sorted(m for m in ('torch', 'gymnasium', 'stable_baselines3', 'ray', 'p4runtime_sh', "
            "'mininet', 'cppyy', 'grpc') if m in sys.modules); print(','.join(heavy) or 'none')")
    r = subprocess.run([str(py), "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "none", r.stdout + r.stderr
    for mod in ("torch", "stable_baselines3", "ray"):  # the base install left the frameworks out
        r = subprocess.run([str(py), "-c", f"import {mod}"], capture_output=True, text=True, timeout=300)
        assert r.returncode != 0, f"{mod} is importable from a base install"
    # an integration without its framework says what to install
    for mod, extra in (("sb3", "train"), ("torch", "train"), ("rllib", "rllib")):
        r = subprocess.run([str(py), "-c", f"import olaf.integrations.{mod}"], capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)
        assert r.returncode != 0 and f"pip install 'olaf-drl[{extra}]'" in r.stderr, r.stderr[-2000:]
    r = subprocess.run([str(venv / "bin" / "olaf"), "launch", "--help"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "-n" in r.stdout, r.stdout + r.stderr

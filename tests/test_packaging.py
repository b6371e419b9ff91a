"""pyproject.toml lists every package of the source tree: a wheel (not only an editable install)
carries each of them."""

from pathlib import Path

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

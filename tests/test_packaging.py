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

#!/usr/bin/env python3
"""Print the package graph of the source tree: for each package (``olaf/<sub>/``, ``controller/`` as
``olaf.controller``, ``topologies/`` as ``olaf.topologies``; a top-level module of ``olaf/`` is its
own package) the packages it imports, lazily or not. ``docs/architecture.md`` holds this output
between its ``package-graph`` markers (``tests/test_packaging.py`` checks that it is current).

Usage: scripts/package-graph.py [REPO_ROOT]

Written here rather than taken from a library: pydeps and import-linter draw or check module
graphs but neither prints this per-package table with lazy imports counted, which is what the
layering rule ("no two packages import each other") is about.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

DIRS = {"olaf": "olaf", "controller": "olaf.controller", "topologies": "olaf.topologies"}


def _package(module: str) -> str | None:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "olaf" and len(parts) >= 2 else None


def graph(root: Path) -> dict[str, set[str]]:
    """Package → the packages it imports (not itself)."""
    out: dict[str, set[str]] = {}
    for d, prefix in DIRS.items():
        for f in sorted((root / d).rglob("*.py")):
            rel = f.relative_to(root / d).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            module = ".".join([prefix, *parts]) if parts else prefix
            src = prefix if prefix != "olaf" else _package(module)
            if src is None:  # olaf/__init__.py
                continue
            deps = out.setdefault(src, set())
            is_pkg = f.name == "__init__.py"
            for node in ast.walk(ast.parse(f.read_text())):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    if node.level:
                        base = module.split(".")
                        base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                        mod = ".".join(base + ([node.module] if node.module else []))
                    else:
                        mod = node.module or ""
                    names = [f"{mod}.{a.name}" if mod == "olaf" else mod for a in node.names]
                for n in names:
                    dst = _package(n)
                    if dst is not None and dst != src:
                        deps.add(dst)
    return out


def both_ways(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of packages that import each other."""
    return sorted((a, b) for a, deps in g.items() for b in deps if a < b and a in g.get(b, set()))


def markdown(g: dict[str, set[str]]) -> str:
    """The graph as a text block: one line per package, its imports sorted."""
    width = max(map(len, g))
    lines = [f"{p:<{width}} → {', '.join(sorted(d)) or '–'}" for p, d in sorted(g.items())]
    return "```text\n" + "\n".join(lines) + "\n```\n"


if __name__ == "__main__":
    print(markdown(graph(Path(sys.argv[1] if len(sys.argv) > 1 else "."))), end="")

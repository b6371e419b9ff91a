#!/usr/bin/env python3
"""Compare two sets of experiment results run by `olaf experiment` (e.g. before and after a change).

Usage: scripts/compare-experiment-results.py OLD_DIR NEW_DIR

Each directory holds one sub-directory per experiment with its results.json (`make reproduce`'s
results/paper/, or `olaf experiment SPEC --out DIR/<name>`). ns-3 runs are deterministic per seed,
so every run (point x seed) must have the same status, metrics and aggregation histogram in both.
Prints one line per experiment (identical runs / runs that differ, with the first differences) and
exits 1 if any run differs or is missing from either side.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _runs(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    doc = json.loads(path.read_text())
    return {(json.dumps(r["point"], sort_keys=True), r["seed"]): r for r in doc["runs"]}


def _diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    for key in ("status", "incomplete", "fates_consistent", "agg_hist"):
        if a.get(key) != b.get(key):
            out.append(f"{key}: {a.get(key)!r} -> {b.get(key)!r}")
    ma, mb = a.get("metrics", {}), b.get("metrics", {})
    for m in sorted(set(ma) | set(mb)):
        if ma.get(m) != mb.get(m):
            out.append(f"{m}: {ma.get(m)!r} -> {mb.get(m)!r}")
    return out


def main(old_dir: Path, new_dir: Path) -> int:
    bad = 0
    names = sorted({p.parent.name for d in (old_dir, new_dir) for p in d.glob("*/results.json")})
    if not names:
        print(f"no */results.json under {old_dir} or {new_dir}")
        return 1
    for name in names:
        old_p, new_p = old_dir / name / "results.json", new_dir / name / "results.json"
        if not old_p.exists() or not new_p.exists():
            print(f"{name}: only in {old_dir if old_p.exists() else new_dir}")
            bad += 1
            continue
        old, new = _runs(old_p), _runs(new_p)
        missing = sorted(set(old) ^ set(new))
        differ = {k: d for k in sorted(set(old) & set(new)) if (d := _diff(old[k], new[k]))}
        same = len(set(old) & set(new)) - len(differ)
        print(f"{name}: {same} of {len(old)} runs identical" + (f", {len(differ)} differ" if differ else "")
              + (f", {len(missing)} missing on one side" if missing else ""))
        for (point, seed), d in list(differ.items())[:5]:
            print(f"  {point} seed {seed}: " + "; ".join(d[:4]) + (" ..." if len(d) > 4 else ""))
        bad += len(differ) + len(missing)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))

"""Identity check of the ns-3 backend: digests of what every committed experiment spec simulates,
to show that a change to the simulation (a speed-up) leaves its results unchanged, seed by seed.

``record`` runs on ns-3, at the spec's own size, the first seed (``--all-seeds``: every seed) of
every point of every committed ``experiments/**/*.yaml`` spec that runs on the ns3 backend, plus
``bench/sim_scale.py``'s scenario (records off: the scale runs' code path) at 20 clusters for each
queue, and writes one SHA-256 per run file to a JSON file:

* ``metrics.json`` (the experiment's metrics, delivery histogram, ``incomplete``, fates check);
* ``switch_counters.json``, ``hosts/*.summary.json`` (every counter);
* ``deliveries.csv`` and the host logs ``hosts/*.jsonl`` (every generation, ACK and PS
  reception with its simulated time);
* from ``run.json``: the simulation's packets and end time and the chunk accounting
  (``backend_info``, without its cost: the wall times of set-up and event loop and the number of
  ns-3 events, which a faster link model lowers without changing what is simulated).

``compare A B`` prints every run and file whose digest differs (exit status 1 if any does, or if
the two files cover different runs).

    python bench/sim_identity.py record OUT.json [--all-seeds] [--spec experiments/table2.yaml ...]
    python bench/sim_identity.py compare BEFORE.json AFTER.json

A record of the committed specs' first seeds takes a few minutes on one core.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from olaf import backends
from olaf.backends.base import BackendOptions
from olaf.experiments.runner import _one
from olaf.experiments.spec import load_spec, sweep_of
from olaf.sim import run_ns3

ROOT = Path(__file__).resolve().parents[1]
BACKEND = "ns3"
SCALE_CLUSTERS = 20
"""Clusters of the records-off scale scenario (bench/sim_scale.py's network, 10 workers each)."""
SCALE_DURATION_S = 10.0
"""Simulated seconds of the records-off scale scenario."""
COST_KEYS = ("wall_s", "setup_s", "events")
"""Keys of ``run.json``'s ``backend_info.sim`` that measure the simulation's cost, not its result
(left out of the digest)."""


def committed_specs(root: Path) -> list[Path]:
    """The experiment specs git tracks under ``root/experiments`` (any depth)."""
    out = subprocess.run(["git", "ls-files", "experiments/*.yaml"], cwd=root, capture_output=True, text=True,
                         check=True).stdout
    return [root / p for p in out.split()]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canon(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def digest_run(run_dir: Path) -> dict[str, str]:
    """SHA-256 of each result file of ``run_dir`` (module docstring), by relative path."""
    d: dict[str, str] = {}
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir).as_posix()
        if p.is_file() and (rel in ("metrics.json", "switch_counters.json", "deliveries.csv")
                            or (rel.startswith("hosts/") and p.suffix in (".json", ".jsonl"))):
            d[rel] = _sha(p.read_bytes())
    info = json.loads((run_dir / "run.json").read_text())["backend_info"]
    sim = {k: v for k, v in info.get("sim", {}).items() if k not in COST_KEYS}
    d["run.json:backend_info"] = _sha(_canon({**{k: v for k, v in info.items() if k != "sim"}, "sim": sim}))
    return d


def record(specs: list[Path], all_seeds: bool) -> dict[str, dict[str, str]]:
    """Digests of every run (key ``spec:point-slug:seed``, and ``scale:<queue>``)."""
    from rich.console import Console

    runner = backends.get(BACKEND, BackendOptions(console=Console(stderr=True), quiet=True, progress=False,
                                                  report=False, plots=False))
    out: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="sim-identity-") as tmp:
        for spec_path in specs:
            spec = load_spec(spec_path)
            try:
                sweep = sweep_of(spec, BACKEND)
                planned = sweep.runs(BACKEND)
            except Exception as e:  # noqa: BLE001  (a spec that does not run on ns3)
                print(f"{spec_path.relative_to(ROOT)}: skipped ({e})", file=sys.stderr)
                continue
            if not all_seeds:
                first = sweep.seeds[0]
                planned = [pr for pr in planned if pr.seed == first]
            try:
                for pr in planned:
                    runner.check(pr.plan)
            except Exception as e:  # noqa: BLE001  (the backend refuses it: not an ns3 spec)
                print(f"{spec_path.relative_to(ROOT)}: skipped ({e})", file=sys.stderr)
                continue
            t0 = time.perf_counter()
            for pr in planned:
                run_dir = Path(tmp) / spec_path.stem / pr.slug / f"seed-{pr.seed}"
                rec = _one(runner, pr, run_dir, keep_logs=True)
                key = f"{spec_path.relative_to(ROOT).as_posix()}:{pr.slug}:{pr.seed}"
                out[key] = {"status": rec.status, **(digest_run(run_dir) if rec.status != "failed" else {})}
            print(f"{spec_path.relative_to(ROOT)}: {len(planned)} runs, {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)
        sys.path.insert(0, str(ROOT / "bench"))
        from sim_scale import scenario  # noqa: PLC0415 (the benchmark's own scenario)

        for queue in ("olaf", "olaf_tc", "fifo"):
            run_dir = run_ns3(scenario(SCALE_CLUSTERS, SCALE_DURATION_S, queue), Path(tmp) / "scale" / queue)
            out[f"scale:{queue}"] = digest_run(run_dir)
        print(f"scale scenario: {SCALE_CLUSTERS} clusters, 3 queues", file=sys.stderr)
    return out


def compare(a: dict[str, dict[str, str]], b: dict[str, dict[str, str]]) -> list[str]:
    """Every difference between two records, one line each (empty: identical)."""
    diffs = [f"only in the first: {k}" for k in a if k not in b] + [f"only in the second: {k}" for k in b if k not in a]
    for k in a:
        if k in b:
            for f in sorted(set(a[k]) | set(b[k])):
                if a[k].get(f) != b[k].get(f):
                    diffs.append(f"{k}: {f} differs")
    return diffs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="run the specs and write their digests")
    r.add_argument("out", type=Path)
    r.add_argument("--all-seeds", action="store_true", help="every seed of every point (default: the first seed)")
    r.add_argument("--spec", type=Path, nargs="+", help="these specs instead of every committed one")
    c = sub.add_parser("compare", help="compare two records")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "record":
        specs = [p.resolve() for p in args.spec] if args.spec else committed_specs(ROOT)
        res = record(specs, args.all_seeds)
        args.out.write_text(json.dumps({"runs": res}, indent=1, sort_keys=True) + "\n")
        print(f"{len(res)} runs -> {args.out}")
        return
    a = json.loads(args.a.read_text())["runs"]
    b = json.loads(args.b.read_text())["runs"]
    diffs = compare(a, b)
    for d in diffs:
        print(d)
    print(f"{len(a)} / {len(b)} runs, {len(diffs)} difference(s)")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()

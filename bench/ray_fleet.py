"""The ray backend against the mininet backend's worker processes: one training job, the same
plan and seed, run one after the other on this machine (never side by side).

For each backend it runs ``olaf train`` through Mininet + BMv2 and, while the job trains, samples
the memory (PSS, ``/proc/<pid>/smaps_rollup``) of

* the processes the workers run in (each worker's start record names its ``pid``: one per
  worker for ``mininet``, one per actor for ``ray``),
* the Ray node's own processes (``gcs_server``, ``raylet``, the dashboard agents; ``ray`` only),

and reads the job's time to its reward target (``training.json``). It prints one table: time
to target per backend and their ratio (ray / mininet), PSS per worker process, per actor and
per worker, and the node's PSS. A ratio is only taken within one invocation.

    sudo .venv/bin/python bench/ray_fleet.py --clusters 4 --workers-per-cluster 4 --workers-per-actor 4 \\
        --env CartPole-v1 --budget-s 300 --out build/ray-fleet
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Optional

import click

from olaf.rundir.training import read_training

OLAF = str(Path(sys.executable).parent / "olaf")
NODE_PROCESSES = ("gcs_server", "raylet", "dashboard", "runtime_env", "log_monitor", "monitor.py")
"""Command-line words of a Ray node's own processes (not its actors)."""


def pss_kib(pid: int) -> Optional[int]:
    """Proportional set size of ``pid``, KiB (None: the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def node_pids() -> list[int]:
    out = subprocess.run(["pgrep", "-f", "|".join(NODE_PROCESSES)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def worker_pids(run_dir: Path) -> dict[str, int]:
    """Worker name → the pid in its start record (the workers that have started)."""
    out = {}
    for f in (run_dir / "hosts").glob("w*.jsonl"):
        try:
            first = json.loads(f.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            continue
        if first.get("pid"):
            out[first["name"]] = first["pid"]
    return out


def latest_run(results: Path, before: set[Path]) -> Optional[Path]:
    new = [d for d in results.glob("*-train-*") if d not in before]
    return max(new, key=lambda d: d.stat().st_mtime) if new else None


def run_one(backend: str, args: list[str], results: Path) -> dict[str, Any]:
    """``olaf train --backend backend args`` into ``results``; memory sampled every 5 s once every
    worker has started (the largest sample of each process is kept)."""
    results.mkdir(parents=True, exist_ok=True)
    before = set(results.iterdir())
    p = subprocess.Popen([OLAF, "train", "--backend", backend, "--results", str(results), *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak: dict[int, int] = {}
    node_peak: dict[int, int] = {}
    pids: dict[str, int] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(5.0):
            d = latest_run(results, before)
            if d is None:
                continue
            pids.update(worker_pids(d))
            for pid in set(pids.values()):
                if (k := pss_kib(pid)) is not None:
                    peak[pid] = max(peak.get(pid, 0), k)
            if backend == "ray":
                for pid in node_pids():
                    if pid not in peak and (k := pss_kib(pid)) is not None:
                        node_peak[pid] = max(node_peak.get(pid, 0), k)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    _, err = p.communicate()
    stop.set()
    t.join()
    if p.returncode != 0:
        raise click.ClickException(f"olaf train --backend {backend} failed ({p.returncode}): {err[-2000:]}")
    d = latest_run(results, before)
    assert d is not None
    tr = read_training(d)
    procs = len(set(pids.values()))
    return {"backend": backend, "run": str(d), "workers": len(pids), "processes": procs,
            "time_to_target_s": tr.time_to_target_s, "reached": tr.reached,
            "pss_per_process_mib": sum(peak.values()) / 1024 / max(procs, 1),
            "pss_per_worker_mib": sum(peak.values()) / 1024 / max(len(pids), 1),
            "node_pss_mib": sum(node_peak.values()) / 1024}


@click.command()
@click.option("--env", default="CartPole-v1", show_default=True)
@click.option("--clusters", default=2, show_default=True, type=int)
@click.option("--workers-per-cluster", default=2, show_default=True, type=int)
@click.option("--workers-per-actor", default=1, show_default=True, type=int)
@click.option("--target", type=float, help="Mean worker reward that ends the job [default: the env's].")
@click.option("--budget-s", default=300.0, show_default=True, type=float)
@click.option("--seed", default=1, show_default=True, type=int)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("build/ray-fleet"),
              show_default=True)
def main(env: str, clusters: int, workers_per_cluster: int, workers_per_actor: int, target: Optional[float],
         budget_s: float, seed: int, out: Path) -> None:
    args = ["--env", env, "--clusters", str(clusters), "--workers-per-cluster", str(workers_per_cluster),
            "--budget-s", repr(budget_s), "--seed", str(seed), *(["--target", repr(target)] if target else [])]
    rows = [run_one("mininet", args, out / "mininet"),
            run_one("ray", [*args, "--workers-per-actor", str(workers_per_actor)], out / "ray")]
    base, ray = rows
    ratio = (ray["time_to_target_s"] / base["time_to_target_s"]
             if ray["time_to_target_s"] and base["time_to_target_s"] else None)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ray_fleet.json").write_text(json.dumps({"rows": rows, "ratio_ray_to_processes": ratio}, indent=1))
    print("| backend | workers | processes | time to target (s) | PSS per process (MiB) | PSS per worker (MiB) "
          "| Ray node PSS (MiB) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        ttt = f"{r['time_to_target_s']:.0f}" if r["time_to_target_s"] else "not reached"
        print(f"| {r['backend']} | {r['workers']} | {r['processes']} | {ttt} | {r['pss_per_process_mib']:.0f} | "
              f"{r['pss_per_worker_mib']:.0f} | {r['node_pss_mib']:.0f} |")
    print(f"time to target, ray / processes: {ratio:.2f}" if ratio else "time to target: a job did not reach it")


if __name__ == "__main__":
    main()

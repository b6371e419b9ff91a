"""Scale of the ns-3 backend: a Fig. 9-shaped network (S1 behind s1, S2 behind s2, s3 to
the PS) with 10, 100 and 1,000 clusters x 10 workers, 60 s simulated, no per-update logs.

Load as the paper's Table 2: every worker sends an update every 100 ms (jitter 10 ms);
queues 5 (s1, s2) and 8 (s3); each uplink carries 12 % of the offered load (12 update
frames/s per cluster of 10 workers; Table 2's FIFO loss of 88 %), so s3 is the bottleneck.
A deployment holds at most 62,500 workers (worker ids are 16 bits on the wire, and the
addressing 10.0.x.y has 250 x 250 hosts): 10,000 clusters run with ``--workers-per-cluster 6``.
Prints, per size, the wall time of the event loop and of the whole run (set-up and
writing included), the whole run's CPU time (this process's user + system seconds: on a
shared machine the wall times include waiting for a core, the CPU time does not), the
process's peak resident memory so far (the sizes run in the order given, so list them
smallest first), events and packets, and the delivered updates.

    python bench/sim_scale.py [--clusters 10 100 1000] [--duration 60] [--queue olaf]
    python bench/sim_scale.py --clusters 10000 --workers-per-cluster 6   # 60,000 workers
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from olaf.plan.plan import RunPlan
from olaf.rundir.manifest import read_manifest
from olaf.sim import run_ns3


def scenario(clusters: int, duration_s: float, queue: str, workers: int = 10) -> RunPlan:
    half = clusters // 2
    cap = {"pps": round(1.2 * clusters * workers)}  # 12 % of 10 updates/s per worker
    return RunPlan(topology="multihop", queue=queue, duration_s=duration_s, records=False,
                    groups=[{"name": "S1", "clusters": half, "workers_per_cluster": workers, "period_ms": 100,
                             "jitter_ms": 10, "switch": "s1"},
                            {"name": "S2", "clusters": clusters - half, "workers_per_cluster": workers, "period_ms": 100,
                             "jitter_ms": 10, "switch": "s2"}],
                    uplinks={"s1": cap, "s2": cap, "s3": cap})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clusters", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--duration", type=float, default=60.0, help="simulated seconds")
    ap.add_argument("--queue", default="olaf", choices=["olaf", "olaf_tc", "fifo"])
    ap.add_argument("--workers-per-cluster", type=int, default=10)
    a = ap.parse_args()
    print(f"{'clusters':>8} {'workers':>8} {'loop wall s':>11} {'total wall s':>12} {'total CPU s':>11} "
          f"{'peak RSS MiB':>12} {'events':>11} {'packets':>10} {'generated':>10} {'delivered':>10}")
    for c in a.clusters:
        with tempfile.TemporaryDirectory() as tmp:
            t0, c0 = time.perf_counter(), time.process_time()
            out = run_ns3(scenario(c, a.duration, a.queue, a.workers_per_cluster), Path(tmp) / "run")
            total, cpu = time.perf_counter() - t0, time.process_time() - c0
            rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # ru_maxrss: KiB on Linux
            sim = read_manifest(out).backend_info["sim"]
            w = json.loads((out / "hosts" / "workers.summary.json").read_text())
            ps = json.loads((out / "hosts" / "ps.summary.json").read_text())
        print(f"{c:8d} {a.workers_per_cluster * c:8d} {sim['wall_s']:11.1f} {total:12.1f} {cpu:11.1f} {rss_mib:12,.0f} "
              f"{sim['events']:11,d} {sim['packets']:10,d} "
              f"{w['generated']:10,d} {ps['updates']:10,d}", flush=True)


if __name__ == "__main__":
    main()

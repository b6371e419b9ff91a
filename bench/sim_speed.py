"""Simulated packets per wall second: the OlafQueue vs the FIFO QueueDisc in the same run.

One process, the same congested ToR scenario (paper §8.1 shape scaled up: 100 clusters x
10 workers at 10 updates/s into a bottleneck of 12 % of the offered load, queue 8) run
with each discipline back to back, several repetitions interleaved; reports the median
packets (every hop a host or switch hands to a link) and ns-3 events per wall second of
the event loop, and Olaf's rate relative to FIFO's.

    python bench/sim_speed.py [--duration 10] [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics

from olaf.plan.plan import RunPlan
from olaf.sim import simulate


def scenario(queue: str, duration_s: float) -> RunPlan:
    return RunPlan(topology="tor", queue=queue, duration_s=duration_s, records=False,
                    groups=[{"clusters": 100, "workers_per_cluster": 10, "period_ms": 100, "jitter_ms": 10}],
                    uplinks={"s1": {"pps": 1200}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=10.0, help="simulated seconds per run")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    rates: dict[str, list[tuple[float, float]]] = {"fifo": [], "olaf": []}
    for _ in range(a.reps):
        for q in rates:
            st = simulate(scenario(q, a.duration)).stats
            rates[q].append((st["packets"] / st["wall_s"], st["events"] / st["wall_s"]))
    print(f"{'queue':6} {'packets/s (wall)':>18} {'events/s (wall)':>17}")
    med = {}
    for q, r in rates.items():
        med[q] = statistics.median(p for p, _ in r)
        print(f"{q:6} {med[q]:18,.0f} {statistics.median(e for _, e in r):17,.0f}")
    print(f"olaf / fifo packet rate: {med['olaf'] / med['fifo']:.2f}")


if __name__ == "__main__":
    main()

"""The benchmark's verification problems (paper §6 cases, scaled to F clusters).

Case (i): every cluster generates an update every 100 ms; case (ii): half of
the clusters every 100 ms, the other half every 300 ms. As in the paper:
Δ̄_T = 400 ms, p/C = 2 ms; v = 1/Δ̄_T, 5 ms jitter, ε = 0.1 periods. Q_max =
F/2 keeps every configuration in the congested regime with the same base send
probability P_s = Q_max/N = 1/2 as the two-cluster case with Q_max = 1.

Phases: ``offset`` spreads the clusters' start windows (10 ms wide) evenly over
one 100 ms period, as the example configs do for two clusters (0 and 50 ms);
``free`` lets every phase range over its whole period.
"""

from __future__ import annotations

from olaf.verifier.config import VerifyConfig, from_mapping


def case(which: str, F: int, K: int, phases: str = "offset") -> VerifyConfig:
    clusters = []
    for u in range(F):
        period = 300 if which == "ii" and u >= F // 2 else 100
        if phases == "offset":
            lo = u * 100 // F
            ph = [lo, lo + 9]
        else:
            ph = [0, period - 1]
        clusters.append({"name": f"c{u}", "period_ms": period, "jitter_ms": 5, "delta_t_ms": 400,
                         "v": "1/400", "phase_ms": ph})
    return from_mapping({
        "horizon": K, "epsilon": 0.1, "epsilon_unit": "period",
        "engine": {"q_max": max(1, F // 2), "p_over_c_ms": 2, "ack_delay_ms": 1},
        "transmission": {"model": "envelope"}, "clusters": clusters,
    })

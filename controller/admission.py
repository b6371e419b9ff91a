"""Admission control of cluster changes (paper §6's envisioned use of the verifier).

Before ``olafctl create-cluster`` or ``add-worker`` writes anything, the new membership
is translated into a verifier problem and :func:`olaf.verifier.api.may_join` decides
whether the changed cluster may join the others while every pair stays AoM-fair
(``|avg Δp^u − avg Δp^v| ≤ ε``). The deployment file's ``admission`` section
(:class:`olaf.controller.config.AdmissionFile`) holds the traffic and
transmission-control parameters the switch cannot know:

* a cluster of ``k`` workers that each generate an update every ``worker_period_ms``
  (± ``worker_jitter_ms``) is one update stream of period ``max(1, round(worker_period_ms / k))``
  ms with jitter ``min(round(worker_jitter_ms), period − 1)`` ms (the verifier's cluster model,
  docs/verifier.md);
* the engine is the Olaf queue of the admission switch (default: the PS's switch):
  ``Q_max`` is its queue size and ``p/C`` the service time of its bottleneck,
  ``ceil(1000 / rate_pps)`` ms (1 ms when unlimited);
* transmission control (paper §5) with ``Δ̄_T = delta_t_ms`` and ``v = v_per_s / 1000``
  per ms when ``tc`` is on, under the workers' reading ``tc_reading`` (``probabilistic`` or
  ``backoff``, docs/verifier.md), else every update is sent (``always``).

The verifier needs the ``verify`` extra (z3-solver).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping, Optional

from olaf.controller.config import Admission, Deployment


@dataclass
class AdmissionResult:
    """What admission control decided.

    Attributes:
        admitted: True if the verifier proved the new membership AoM-fair.
        verdict: ``verified`` | ``violated`` | ``unknown`` (solver timeout) | ``off``.
        summary: one paragraph for the operator (the counterexample's gist when violated).
        solver_time_s: time the verifier took, s.
    """

    admitted: bool
    verdict: str
    summary: str
    solver_time_s: float = 0.0


def _engine_switch(d: Deployment, adm: Admission) -> str:
    return adm.switch or d.hosts[d.ps].switch


def verifier_problem(d: Deployment, clusters: Mapping[int, tuple[str, ...]], adm: Admission):
    """The verifier's clusters (one per non-empty cluster id, named ``c<id>``), engine and
    transmission model for membership ``clusters`` (see the module docstring)."""
    from olaf.verifier.config import Cluster, Engine, Transmission  # noqa: PLC0415 (extra 'verify')

    sw = d.switches[_engine_switch(d, adm)]
    engine = Engine(q_max=sw.queue.queue_size,
                    p_over_c_ms=max(1, math.ceil(1000 / sw.rate_pps)) if sw.rate_pps else 1)
    v = Fraction(adm.v_per_s).limit_denominator(10**6) / 1000
    out = []
    for cid, ws in sorted(clusters.items()):
        if not ws:
            continue
        period = max(1, round(adm.worker_period_ms / len(ws)))
        jitter = min(round(adm.worker_jitter_ms), period - 1)
        out.append(Cluster(f"c{cid}", period, jitter, round(adm.delta_t_ms), v, (0, period - 1), adm.horizon))
    return out, engine, Transmission(model="envelope" if adm.tc else "always", reading=adm.tc_reading)


def check(d: Deployment, clusters: Mapping[int, tuple[str, ...]], changed: int,
          timeout_s: Optional[float] = None) -> AdmissionResult:
    """May cluster ``changed`` (new, or with a new worker) join the others under membership
    ``clusters``? Raises ImportError if z3-solver is missing."""
    adm = d.admission
    if adm is None or not adm.enabled:
        return AdmissionResult(True, "off", "admission control is off (no enabled `admission` section in "
                                            "the network file)")
    from olaf.verifier.api import may_join  # noqa: PLC0415

    vclusters, engine, transmission = verifier_problem(d, clusters, adm)
    cand = next((c for c in vclusters if c.name == f"c{changed}"), None)
    others = [c for c in vclusters if c.name != f"c{changed}"]
    if cand is None or not others:
        return AdmissionResult(True, "verified", "nothing to compare: fewer than two non-empty clusters")
    v = may_join(others, cand, engine, adm.epsilon, adm.horizon, unit=adm.epsilon_unit, transmission=transmission,
                 timeout_s=timeout_s or adm.timeout_s)
    if v.verified:
        return AdmissionResult(True, v.verdict, f"AoM-fair over {adm.horizon} updates per cluster "
                                                f"(ε = {adm.epsilon} {adm.epsilon_unit})", v.solver_time_s)
    if v.verdict == "unknown":
        return AdmissionResult(False, v.verdict, f"the verifier could not decide within {timeout_s or adm.timeout_s:g} s "
                                                 f"({v.reason or 'timeout'}); raise admission.timeout_s, lower "
                                                 "admission.horizon, or pass --force", v.solver_time_s)
    return AdmissionResult(False, v.verdict, counterexample_summary(v.trace or {}), v.solver_time_s)


def counterexample_summary(trace: dict) -> str:
    """The gist of a verifier counterexample: which pair is unfair or starved, by how much,
    and each cluster's average peak AoM (ms)."""
    parts = []
    for viol in trace.get("violations", []):
        who = " vs ".join(viol["clusters"])
        gap = viol.get("gap_float")
        parts.append(f"{viol['kind']}: {who}" + (f" (gap {gap:.3g})" if gap is not None else ""))
    peaks = ", ".join(f"{c['name']} {float(c['avg_peak_ms']):.1f} ms" if c.get("avg_peak_ms") is not None
                      else f"{c['name']} no peak" for c in trace.get("clusters", []))
    return "; ".join(parts) + (f". Average peak AoM: {peaks}" if peaks else "")

"""Python API of the verifier: :func:`verify` a config, or ask :func:`may_join`
whether a candidate cluster can be admitted next to the existing ones.

Both return a :class:`Verdict`. ``verified`` means no admissible behaviour over
the horizon violates the AoM-fairness query (paper §6); ``violated`` comes with
a counterexample trace (:mod:`olaf.verifier.report`) that has been replayed
through the reference OlafQueue; ``unknown`` means the solver hit the timeout.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional, Sequence, Union

from olaf.verifier import model, report
from olaf.verifier.config import (
    Cluster,
    ConfigError,
    Engine,
    Query,
    Transmission,
    VerifyConfig,
)


@dataclass
class Verdict:
    """Answer of the verifier.

    Attributes:
        verdict: ``verified`` | ``violated`` | ``unknown``.
        solver_time_s: wall time of the satisfiability check(s), s.
        build_time_s: wall time to build the constraints, s.
        trace: the counterexample (trace format of :mod:`olaf.verifier.report`),
            with its ``replay`` section, if violated.
        reason: the solver's reason for ``unknown``.
    """

    verdict: str
    solver_time_s: float
    build_time_s: float
    trace: Optional[dict] = None
    reason: str = ""

    @property
    def verified(self) -> bool:
        return self.verdict == "verified"

    @property
    def reproduced(self) -> Optional[bool]:
        """For a violation: did the replay reproduce it? None otherwise."""
        return None if self.trace is None else bool(self.trace["replay"]["reproduced"])

    def to_json(self) -> dict:
        return {"verdict": self.verdict, "solver_time_s": round(self.solver_time_s, 4),
                "build_time_s": round(self.build_time_s, 4), "trace": self.trace,
                **({"reason": self.reason} if self.reason else {})}


def verify(cfg: VerifyConfig, *, timeout_s: Optional[float] = None,
           opts: model.Options = model.Options()) -> Verdict:
    """Decide the fairness query of ``cfg`` (see the module docstring).

    Raises ValueError for ``timeout_s <= 0``.
    """
    if timeout_s is not None and timeout_s <= 0:
        raise ValueError(f"timeout_s={timeout_s}: must be > 0 (or None for no timeout)")
    r = model.solve(cfg, timeout_s=timeout_s, opts=opts)
    trace = None
    if r.verdict == "violated":
        assert r.witness is not None
        trace = report.build_trace(cfg, r.witness)
        trace["replay"] = report.cross_check(cfg, trace)
    return Verdict(r.verdict, r.solver_time_s, r.build_time_s, trace, r.reason)


def may_join(
    existing: Sequence[Cluster],
    candidate: Cluster,
    engine: Engine,
    epsilon: Union[float, str, Fraction],
    horizon: int,
    *,
    unit: str = "period",
    transmission: Transmission = Transmission(),
    starvation: bool = True,
    timeout_s: Optional[float] = None,
) -> Verdict:
    """Admission control: may ``candidate`` join the clusters already sharing the engine?

    Verifies the fairness query for ``existing + [candidate]``; the candidate is
    admissible iff the verdict is ``verified``. Clusters are built with
    :func:`olaf.verifier.config.from_mapping` or :class:`Cluster` directly;
    ``horizon`` is the number of updates per cluster (each cluster's
    ``updates`` must match it unless set on purpose).

    Raises:
        ConfigError: duplicate names, fewer than one existing cluster, bad ε or unit.
    """
    clusters = list(existing) + [candidate]
    if len(existing) < 1:
        raise ConfigError("existing", "at least one cluster is needed to compare the candidate with")
    names = [c.name for c in clusters]
    if len(set(names)) != len(names):
        raise ConfigError("candidate.name", f"{candidate.name!r}: names must be unique among {names}")
    try:
        eps = Fraction(str(epsilon))
    except ValueError:
        raise ConfigError("epsilon", f"{epsilon!r}: must be a number") from None
    if eps < 0:
        raise ConfigError("epsilon", f"{epsilon}: must be >= 0")
    if unit not in ("period", "ms", "relative"):
        raise ConfigError("epsilon_unit", f"{unit!r}: must be one of period, ms, relative")
    if horizon < 2:
        raise ConfigError("horizon", f"{horizon}: must be >= 2")
    cfg = VerifyConfig(tuple(clusters), engine, transmission, Query(eps, unit, starvation), horizon)
    return verify(cfg, timeout_s=timeout_s)

"""Verifier input: clusters, engine, transmission model, query and horizon.

All times are integers in ms (the solver's time unit). A config is read from a
YAML or JSON mapping (:func:`load`, :func:`from_mapping`); every error names the
offending field, e.g. ``clusters[1].jitter_ms``, and says what would be valid.
The format is documented in ``docs/verifier.md``; example files are in
``examples/``.

Symbols (paper Tab. 4, §5): ``period_ms`` and ``jitter_ms`` bound the update
generation times of a cluster, ``delta_t_ms`` is the feedback threshold
``Δ̄_T``, ``v`` the slope of ``f(Δ̂) = v·(Δ̂ − Δ̄_T)`` in 1/ms; the engine has
``q_max`` segments (``Q_max``) and sends one update per ``p_over_c_ms`` (``p/C``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import yaml

EPSILON_UNITS = ("period", "ms", "relative")
SEND_MODELS = ("envelope", "free", "always")


class ConfigError(ValueError):
    """A verifier config is malformed; the message names the field and the fix."""


@dataclass(frozen=True)
class Cluster:
    """One cluster: a stream of model updates (its workers' updates, merged).

    Attributes:
        name: label used in traces and reports.
        period_ms: generation period ``T`` (ms, ≥ 1).
        jitter_ms: the k-th update is generated in ``[φ + k·T, φ + k·T + jitter]``
            (ms, ``0 ≤ jitter < period``).
        delta_t_ms: feedback threshold ``Δ̄_T`` of paper §5 (ms, ≥ 0).
        v: slope of ``f`` in 1/ms (≥ 0; paper §5 suggests ``1/Δ̄_T``).
        phase_ms: inclusive range of the phase ``φ`` (default ``(0, period−1)``).
        updates: updates generated in the horizon (default: the config's horizon).
    """

    name: str
    period_ms: int
    jitter_ms: int
    delta_t_ms: int
    v: Fraction
    phase_ms: tuple[int, int]
    updates: int

    def same_behaviour(self, other: "Cluster") -> bool:
        """True if the two clusters have identical parameters apart from the name."""
        return replace(self, name="") == replace(other, name="")

    def gen_bounds(self, k: int) -> tuple[int, int]:
        """Static bounds (ms) of the k-th generation time over all phases and jitters."""
        return (self.phase_ms[0] + k * self.period_ms,
                self.phase_ms[1] + k * self.period_ms + self.jitter_ms)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "period_ms": self.period_ms, "jitter_ms": self.jitter_ms,
            "delta_t_ms": self.delta_t_ms, "v": str(self.v), "phase_ms": list(self.phase_ms),
            "updates": self.updates,
        }


@dataclass(frozen=True)
class Engine:
    """The OlafQueue at the bottleneck (paper §4, §12.2).

    Attributes:
        q_max: queue size in segments ``Q_max`` (≥ 1).
        p_over_c_ms: service time of one update ``p/C`` (ms, ≥ 1): minimum spacing of departures.
        ack_delay_ms: ``R``, departure to ACK reception at the cluster (ms, ≥ 1).
    """

    q_max: int
    p_over_c_ms: int
    ack_delay_ms: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"q_max": self.q_max, "p_over_c_ms": self.p_over_c_ms, "ack_delay_ms": self.ack_delay_ms}


@dataclass(frozen=True)
class Transmission:
    """How the probabilistic send rule of paper §5 becomes nondeterminism.

    Attributes:
        model: ``envelope`` (run-length envelope around ``P_s``), ``free`` (any
            skip allowed while ``P_s < 1``) or ``always`` (no transmission
            control: every update is sent). See docs/verifier.md.
        max_skip_run: longest run of consecutive skips (None: derived from ``P_s``).
        max_send_run: longest run of consecutive sends at base probability
            (None: derived from ``P_s``).
    """

    model: str = "envelope"
    max_skip_run: Optional[int] = None
    max_send_run: Optional[int] = None

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "max_skip_run": self.max_skip_run, "max_send_run": self.max_send_run}


@dataclass(frozen=True)
class Query:
    """The AoM-fairness query of paper §6: is ``|avg Δp^u − avg Δp^v| > ε`` possible?

    Attributes:
        epsilon: ε (≥ 0), in the unit below.
        unit: ``period`` (each cluster's average peak AoM divided by its own
            period), ``ms`` (absolute) or ``relative`` (difference divided by the
            mean of the two averages).
        starvation: if True, a cluster with no peak AoM in the horizon (fewer
            than two receptions) is a violation as well.
    """

    epsilon: Fraction
    unit: str = "period"
    starvation: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"epsilon": str(self.epsilon), "unit": self.unit, "starvation": self.starvation}


@dataclass(frozen=True)
class VerifyConfig:
    """A complete verification problem (see :func:`from_mapping` for the file format)."""

    clusters: tuple[Cluster, ...]
    engine: Engine
    transmission: Transmission
    query: Query
    horizon: int

    @property
    def num_clusters(self) -> int:
        return len(self.clusters)

    @property
    def congested(self) -> bool:
        """True if ``N > Q_max`` (paper §5): the ACKs report N = number of clusters."""
        return self.num_clusters > self.engine.q_max

    def to_json(self) -> dict[str, Any]:
        return {
            "horizon": self.horizon,
            "clusters": [c.to_json() for c in self.clusters],
            "engine": self.engine.to_json(),
            "transmission": self.transmission.to_json(),
            "query": self.query.to_json(),
        }


# -- parsing -------------------------------------------------------------------

def _int(d: Mapping[str, Any], key: str, where: str, *, lo: Optional[int] = None,
         default: Any = ..., hint: str = "") -> Any:
    if key not in d:
        if default is ...:
            raise ConfigError(f"{where}{key}: missing (an integer{hint})")
        return default
    x = d[key]
    if isinstance(x, bool) or not isinstance(x, int):
        if isinstance(x, float) and x.is_integer():
            x = int(x)
        else:
            raise ConfigError(f"{where}{key}={x!r}: must be an integer{hint}")
    if lo is not None and x < lo:
        raise ConfigError(f"{where}{key}={x}: must be >= {lo}{hint}")
    return x


def _fraction(d: Mapping[str, Any], key: str, where: str, *, default: Any = ...) -> Fraction:
    if key not in d:
        if default is ...:
            raise ConfigError(f"{where}{key}: missing (a number >= 0)")
        return default
    x = d[key]
    try:
        if isinstance(x, bool):
            raise TypeError
        f = Fraction(str(x)) if isinstance(x, (int, float, str)) else Fraction(x)
    except (TypeError, ValueError, ZeroDivisionError):
        raise ConfigError(f"{where}{key}={x!r}: must be a number (e.g. 0.1 or \"1/400\")") from None
    if f < 0:
        raise ConfigError(f"{where}{key}={x}: must be >= 0")
    return f


def _choice(d: Mapping[str, Any], key: str, where: str, choices: Sequence[str], default: str) -> str:
    x = d.get(key, default)
    if x not in choices:
        raise ConfigError(f"{where}{key}={x!r}: must be one of {', '.join(choices)}")
    return x


def _mapping(x: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(x, Mapping):
        raise ConfigError(f"{where}: must be a mapping, got {type(x).__name__}")
    return x


def _unknown(d: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(d) - allowed)
    if extra:
        raise ConfigError(f"{where}{extra[0]}: unknown field; expected one of {', '.join(sorted(allowed))}")


def _cluster(d: Any, i: int, horizon: int) -> Cluster:
    where = f"clusters[{i}]."
    d = _mapping(d, f"clusters[{i}]")
    _unknown(d, {"name", "period_ms", "jitter_ms", "delta_t_ms", "v", "phase_ms", "updates"}, where)
    period = _int(d, "period_ms", where, lo=1, hint=" in ms")
    jitter = _int(d, "jitter_ms", where, lo=0, default=0, hint=" in ms")
    if jitter >= period:
        raise ConfigError(f"{where}jitter_ms={jitter}: must be < period_ms={period} "
                          "(generation times must stay in order)")
    delta_t = _int(d, "delta_t_ms", where, lo=0, hint=" in ms (Δ̄_T)")
    v = _fraction(d, "v", where, default=Fraction(1, delta_t) if delta_t else Fraction(0))
    phase = d.get("phase_ms", [0, period - 1])
    if isinstance(phase, int) and not isinstance(phase, bool):
        phase = [phase, phase]
    if (not isinstance(phase, (list, tuple)) or len(phase) != 2
            or not all(isinstance(p, int) and not isinstance(p, bool) for p in phase)):
        raise ConfigError(f"{where}phase_ms={phase!r}: must be an integer or [lo, hi] in ms")
    if not 0 <= phase[0] <= phase[1]:
        raise ConfigError(f"{where}phase_ms={list(phase)}: need 0 <= lo <= hi")
    updates = _int(d, "updates", where, lo=2, default=horizon, hint=" (updates in the horizon)")
    name = d.get("name", f"c{i}")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}name={name!r}: must be a non-empty string")
    return Cluster(name, period, jitter, delta_t, v, (phase[0], phase[1]), updates)


def from_mapping(d: Any) -> VerifyConfig:
    """Build and validate a config from a parsed YAML/JSON mapping.

    Format (ms everywhere)::

        horizon: 10                # updates per cluster (>= 2)
        epsilon: 0.1               # ε
        epsilon_unit: period       # period | ms | relative
        starvation: true           # a cluster with no peak is a violation
        engine: {q_max: 1, p_over_c_ms: 2, ack_delay_ms: 1}
        transmission: {model: envelope, max_skip_run: null, max_send_run: null}
        clusters:
          - {name: a, period_ms: 100, jitter_ms: 5, delta_t_ms: 400, v: 0.0025}

    Raises:
        ConfigError: naming the bad field.
    """
    d = _mapping(d, "config")
    _unknown(d, {"horizon", "epsilon", "epsilon_unit", "starvation", "engine", "transmission",
                 "clusters"}, "")
    horizon = _int(d, "horizon", "", lo=2, hint=" (updates per cluster)")
    if "engine" not in d:
        raise ConfigError("engine: missing (a mapping with q_max and p_over_c_ms)")
    eng = _mapping(d["engine"], "engine")
    _unknown(eng, {"q_max", "p_over_c_ms", "ack_delay_ms"}, "engine.")
    engine = Engine(
        q_max=_int(eng, "q_max", "engine.", lo=1, hint=" (segments)"),
        p_over_c_ms=_int(eng, "p_over_c_ms", "engine.", lo=1, hint=" in ms (p/C)"),
        ack_delay_ms=_int(eng, "ack_delay_ms", "engine.", lo=1, default=1, hint=" in ms"),
    )
    tr = _mapping(d.get("transmission", {}), "transmission")
    _unknown(tr, {"model", "max_skip_run", "max_send_run"}, "transmission.")
    transmission = Transmission(
        model=_choice(tr, "model", "transmission.", SEND_MODELS, "envelope"),
        max_skip_run=_int(tr, "max_skip_run", "transmission.", lo=0, default=None)
        if tr.get("max_skip_run") not in (None, "auto") else None,
        max_send_run=_int(tr, "max_send_run", "transmission.", lo=1, default=None)
        if tr.get("max_send_run") not in (None, "auto") else None,
    )
    starvation = d.get("starvation", True)
    if not isinstance(starvation, bool):
        raise ConfigError(f"starvation={starvation!r}: must be true or false")
    query = Query(
        epsilon=_fraction(d, "epsilon", ""),
        unit=_choice(d, "epsilon_unit", "", EPSILON_UNITS, "period"),
        starvation=starvation,
    )
    cl = d.get("clusters")
    if not isinstance(cl, list) or len(cl) < 2:
        raise ConfigError("clusters: must be a list of at least 2 clusters (fairness compares pairs)")
    clusters = tuple(_cluster(c, i, horizon) for i, c in enumerate(cl))
    names = [c.name for c in clusters]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ConfigError(f"clusters[{names.index(dup, names.index(dup) + 1)}].name={dup!r}: names must be unique")
    return VerifyConfig(clusters, engine, transmission, query, horizon)


def load(path: Union[str, Path], *, horizon: Optional[int] = None) -> VerifyConfig:
    """Read a YAML (``.yaml``/``.yml``) or JSON file and validate it.

    ``horizon`` overrides the file's horizon (clusters that set ``updates``
    keep theirs).

    Raises:
        ConfigError: unreadable file, syntax error, or a bad field (named).
    """
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"{p}: cannot read ({e.strerror})") from None
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"{p}: not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {e}") from None
    if horizon is not None and isinstance(data, dict):
        data = {**data, "horizon": horizon}
    return from_mapping(data)


def with_clusters(cfg: VerifyConfig, clusters: Sequence[Cluster]) -> VerifyConfig:
    """A copy of ``cfg`` with another cluster list (used by the admission API)."""
    return replace(cfg, clusters=tuple(clusters))


__all__ = [
    "Cluster", "ConfigError", "Engine", "EPSILON_UNITS", "Query", "SEND_MODELS", "Transmission",
    "VerifyConfig", "from_mapping", "load", "with_clusters",
]

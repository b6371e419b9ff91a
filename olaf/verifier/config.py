"""Verifier input: clusters, engine, transmission model, query and horizon.

All times are integers in ms (the solver's time unit). A config is read from a
YAML or JSON mapping (:func:`load`, :func:`from_mapping`) and validated by the pydantic
model :class:`VerifyFile` (JSON Schema: ``docs/schemas/verify.schema.json``); every
error is a :class:`~olaf.configfile.ConfigError` naming the offending field, e.g.
``clusters[1].jitter_ms``, and saying what would be valid.
The format is documented in ``docs/verifier.md``; example files are in
``examples/``.

Symbols (paper Tab. 4, §5): ``period_ms`` and ``jitter_ms`` bound the update
generation times of a cluster, ``delta_t_ms`` is the feedback threshold
``Δ̄_T``, ``v`` the slope of ``f(Δ̂) = v·(Δ̂ − Δ̄_T)`` in 1/ms; the engine has
``q_max`` segments (``Q_max``) and sends one update per ``p_over_c_ms`` (``p/C``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Sequence, Union

from pydantic import AfterValidator, Field, PlainSerializer, ValidationInfo, WithJsonSchema, field_validator

from olaf.configfile import ConfigError, FileModel, read_document
from olaf.configfile import validate as validate_model
from olaf.plan.tx import ReadingLabel

EPSILON_UNITS = ("period", "ms", "relative")
SEND_MODELS = ("envelope", "free", "always")


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
        reading: the workers' reading of the rule (:class:`olaf.constants.TxReading`):
            ``probabilistic`` (paper §5: every update draws) or ``backoff`` (paper §6: a
            skipped draw silences the cluster until its next ACK or ``Δ̄_T`` after the skip).
    """

    model: str = "envelope"
    max_skip_run: Optional[int] = None
    max_send_run: Optional[int] = None
    reading: str = "probabilistic"

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "max_skip_run": self.max_skip_run, "max_send_run": self.max_send_run,
                "reading": self.reading}


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
        average: ``delivery`` — ``avg Δp`` is the mean over the cluster's peaks
            (one per reception that refreshes the model); ``update`` — the mean of
            the paper's ``Δp(k) = (D(k) − A(l))·1{D(k) < A(k+1)}`` over *every*
            update k of the horizon, 0 for the ones that give no peak (skipped,
            aggregated, replaced, dropped): ``Σ peaks / K``. docs/verifier.md,
            "The paper's cases", has the measurements that separate the two.
    """

    epsilon: Fraction
    unit: str = "period"
    starvation: bool = True
    average: str = "delivery"

    def mean_peak(self, sum_peak: Fraction | int, n_peak: int, updates: int) -> Optional[Fraction]:
        """``avg Δp`` of a cluster with these peaks and ``updates`` updates in the horizon
        (None without a peak)."""
        if n_peak == 0:
            return None
        return Fraction(sum_peak) / (n_peak if self.average == "delivery" else updates)

    def to_json(self) -> dict[str, Any]:
        return {"epsilon": str(self.epsilon), "unit": self.unit, "starvation": self.starvation,
                "average": self.average}


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


# -- the file (pydantic models; JSON Schema in docs/schemas/verify.schema.json) -----------------


def _fraction(v: Any) -> Fraction:
    """A number given as int, float or a string such as ``"1/400"``, exactly, ≥ 0."""
    if isinstance(v, bool):
        raise ValueError("must be a number (e.g. 0.1 or \"1/400\")")
    try:
        f = Fraction(str(v)) if isinstance(v, (int, float, str)) else Fraction(v)
    except (TypeError, ValueError, ZeroDivisionError):
        raise ValueError("must be a number (e.g. 0.1 or \"1/400\")") from None
    if f < 0:
        raise ValueError("must be >= 0")
    return f


Number = Annotated[Union[int, float, str], AfterValidator(_fraction),
                   PlainSerializer(str), WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0},
                                                                   {"type": "string", "pattern": r"^\d+(/\d+)?$"}]})]


class ClusterFile(FileModel):
    """One cluster (ms everywhere)."""

    name: Optional[str] = Field(None, min_length=1, description="label in traces; default c<index>")
    period_ms: int = Field(ge=1, description="generation period T, ms")
    jitter_ms: int = Field(0, ge=0, description="generation jitter, ms (< period_ms)")
    delta_t_ms: int = Field(ge=0, description="feedback threshold Δ̄_T of paper §5, ms")
    v: Optional[Number] = Field(None, description="slope of f in 1/ms (default 1/Δ̄_T)")
    phase_ms: Optional[Union[int, tuple[int, int]]] = Field(None, description="phase φ or its range [lo, hi], ms")
    updates: Optional[int] = Field(None, ge=2, description="updates in the horizon (default: horizon)")

    @field_validator("jitter_ms")
    @classmethod
    def _jitter_below_period(cls, v: int, info: ValidationInfo) -> int:
        period = info.data.get("period_ms")
        if period is not None and v >= period:
            raise ValueError(f"must be < period_ms={period} (generation times must stay in order)")
        return v

    @field_validator("phase_ms")
    @classmethod
    def _phase_range(cls, v: Any) -> Any:
        if v is None:
            return v
        lo, hi = (v, v) if isinstance(v, int) else v
        if not 0 <= lo <= hi:
            raise ValueError("need 0 <= lo <= hi")
        return v


class EngineFile(FileModel):
    q_max: int = Field(ge=1, description="queue size Q_max, segments")
    p_over_c_ms: int = Field(ge=1, description="service time p/C of one update, ms")
    ack_delay_ms: int = Field(1, ge=1, description="departure to ACK reception R, ms")


class TransmissionFile(FileModel):
    model: Literal["envelope", "free", "always"] = "envelope"
    max_skip_run: Optional[Union[int, Literal["auto"]]] = Field(None, description="longest run of skips; "
                                                                "null/auto: derived from P_s")
    max_send_run: Optional[Union[int, Literal["auto"]]] = None
    reading: ReadingLabel = Field("probabilistic", description="probabilistic (paper §5: every update "  # type: ignore[valid-type]
                                  "draws) or backoff (paper §6: a skipped draw silences the cluster until its "
                                  "next ACK or Δ̄_T after the skip)")

    @field_validator("max_skip_run", "max_send_run")
    @classmethod
    def _runs(cls, v: Any, info: ValidationInfo) -> Any:
        lo = 0 if info.field_name == "max_skip_run" else 1
        if isinstance(v, int) and v < lo:
            raise ValueError(f"must be >= {lo}")
        return v


class VerifyFile(FileModel):
    """A verifier config file."""

    horizon: int = Field(ge=2, description="updates per cluster")
    epsilon: Number = Field(description="fairness bound ε")
    epsilon_unit: Literal["period", "ms", "relative"] = "period"
    starvation: bool = Field(True, description="a cluster with no peak AoM in the horizon is a violation")
    peak_average: Literal["delivery", "update"] = Field(
        "delivery", description="avg peak AoM over the cluster's peaks (delivery) or over all its updates, 0 for "
        "those without a peak (update: the paper's indicator formula averaged over k)")
    engine: EngineFile
    transmission: TransmissionFile = TransmissionFile()
    clusters: list[ClusterFile] = Field(min_length=2, description="at least 2 (fairness compares pairs)")


def _cluster(c: ClusterFile, i: int, horizon: int) -> Cluster:
    phase = c.phase_ms if c.phase_ms is not None else (0, c.period_ms - 1)
    lo, hi = (phase, phase) if isinstance(phase, int) else phase
    v = c.v if c.v is not None else (Fraction(1, c.delta_t_ms) if c.delta_t_ms else Fraction(0))
    return Cluster(c.name or f"c{i}", c.period_ms, c.jitter_ms, c.delta_t_ms, Fraction(v), (lo, hi),
                   c.updates if c.updates is not None else horizon)


def from_mapping(d: Any) -> VerifyConfig:
    """Build and validate a config from a parsed YAML/JSON mapping.

    Format (ms everywhere)::

        horizon: 10                # updates per cluster (>= 2)
        epsilon: 0.1               # ε
        epsilon_unit: period       # period | ms | relative
        starvation: true           # a cluster with no peak is a violation
        peak_average: delivery     # delivery | update (avg Δp over peaks, or over all K updates)
        engine: {q_max: 1, p_over_c_ms: 2, ack_delay_ms: 1}
        transmission: {model: envelope, max_skip_run: null, max_send_run: null, reading: probabilistic}
        clusters:
          - {name: a, period_ms: 100, jitter_ms: 5, delta_t_ms: 400, v: 0.0025}

    Raises:
        ConfigError: naming the bad field.
    """
    f = validate_model(VerifyFile, d)
    clusters = tuple(_cluster(c, i, f.horizon) for i, c in enumerate(f.clusters))
    names = [c.name for c in clusters]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ConfigError(f"clusters[{i}].name", f"{n!r}: names must be unique")
    tr = f.transmission
    transmission = Transmission(model=tr.model,
                                max_skip_run=tr.max_skip_run if isinstance(tr.max_skip_run, int) else None,
                                max_send_run=tr.max_send_run if isinstance(tr.max_send_run, int) else None,
                                reading=tr.reading)
    engine = Engine(q_max=f.engine.q_max, p_over_c_ms=f.engine.p_over_c_ms, ack_delay_ms=f.engine.ack_delay_ms)
    return VerifyConfig(clusters, engine, transmission,
                        Query(Fraction(f.epsilon), f.epsilon_unit, f.starvation, f.peak_average), f.horizon)


def load(path: Union[str, Path], *, horizon: Optional[int] = None) -> VerifyConfig:
    """Read a YAML (``.yaml``/``.yml``) or JSON file and validate it.

    ``horizon`` overrides the file's horizon (clusters that set ``updates``
    keep theirs).

    Raises:
        ConfigError: unreadable file, syntax error, or a bad field (named).
    """
    data = read_document(path)
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

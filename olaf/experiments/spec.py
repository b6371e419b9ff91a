"""The experiment spec (YAML): :class:`ExperimentSpec`, and its expansion into runs.

An experiment is a base run plan (``plan``, a :class:`~olaf.plan.plan.RunPlan`: topology, cluster
groups, queue discipline, queues, links, load, duration or updates per worker), parameters set on
it (``set``), sweeps (``sweep``: each parameter over a list; several sweeps form their
Cartesian product, the first varying slowest) and repetitions (``seeds``). Parameter names
are :mod:`olaf.experiments.params`'s. ``backends.<name>.set`` adapts the plan to
one backend (e.g. fewer workers per cluster for BMv2), applied *before* ``set``, so derived
parameters (``load.<switch>``, ``alpha``) scale the capacities to it; a key the backend sets
is not set again by ``set``; ``backends.<name>.unset`` leaves out plan fields that
backend cannot honour (it refuses them otherwise). ``paper`` holds the paper's numbers, ``table`` and ``figure``
what to print and plot beside them (:mod:`olaf.experiments.outputs`).

JSON Schema: ``docs/schemas/experiment.schema.json`` (``olaf codegen generate``). Every
problem raises :class:`~olaf.configfile.ConfigError` naming the field.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import Field, ValidationInfo, field_validator, model_validator

from olaf.backends import names as backend_names
from olaf.configfile import ConfigError, FileModel, load
from olaf.experiments.metrics import metric_names
from olaf.experiments.params import check_names
from olaf.experiments.sweep import PlannedRun, Scalar, Sweep, point_label, same_value  # noqa: F401  (re-exported)
from olaf.plan.plan import RunPlan


class BackendSetup(FileModel):
    """How the experiment runs on one backend."""

    set: dict[str, Scalar] = Field(default_factory=dict, description="parameters applied before the spec's `set`")
    unset: list[str] = Field(default_factory=list, description="plan fields this backend cannot honour, left out "
                             "of its runs (dotted paths, e.g. access or uplinks.s1.delay_us); say why in `note`")
    seeds: Optional[list[int]] = Field(default=None, min_length=1, description="replace the spec's seeds")
    note: str = Field(default="", description="how the plan is scaled for this backend")


class Column(FileModel):
    """A column of the results table: a metric, ours beside the paper's."""

    metric: str
    label: str
    digits: int = Field(default=1, ge=0, le=6, description="decimals shown")


class Table(FileModel):
    columns: list[Column] = Field(min_length=1)
    note: str = ""


class PaperRow(FileModel):
    """The paper's numbers for one sweep point (``point``: sweep parameter → value)."""

    label: str
    point: dict[str, Scalar] = Field(default_factory=dict)
    values: dict[str, Union[float, str, None]] = Field(default_factory=dict,
                                                        description="metric -> the paper's value (text if not a number)")


class Figure(FileModel):
    """The experiment's figure.

    * ``aggregation_cdf`` — CDF of aggregations per delivered update, one curve per point
      (paper Fig. 6), labelled by ``series``;
    * ``line`` — ``metrics`` over sweep parameter ``x``, one line per metric and value of
      ``series`` (paper Fig. 10; a list of parameters: one line per combination of their values),
      95 % intervals as error bars;
    * ``bars`` — ``metrics`` per point (paper Tables 2–3), ours with intervals and the paper's.
    """

    kind: Literal["aggregation_cdf", "line", "bars"]
    title: str
    x: Optional[str] = None
    series: Union[str, list[str], None] = Field(default=None, description="swept parameter(s) whose values "
                                                "make the series")
    metrics: list[str] = Field(default_factory=list)
    where: dict[str, Scalar] = Field(default_factory=dict, description="only the points with these values")
    labels: dict[str, str] = Field(default_factory=dict, description="legend label of a metric or series value")

    @property
    def series_params(self) -> list[str]:
        """``series`` as a list (empty: no series)."""
        return [] if self.series is None else [self.series] if isinstance(self.series, str) else list(self.series)
    xlabel: str = ""
    ylabel: str = ""
    logx: bool = False
    logy: bool = False


class ExperimentSpec(FileModel):
    """One experiment (module docstring)."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="results go to <out>/<name>")
    title: str
    reproduces: str = Field(default="", description="the paper's result, e.g. 'Table 1 and Fig. 6 (§8.1)'")
    description: str = ""
    scaling: str = Field(default="", description="how the paper's rates were scaled and which ratios are kept")
    plan: RunPlan = Field(description="the base run plan (docs/schemas/plan.schema.json)")
    set: dict[str, Scalar] = Field(default_factory=dict, description="parameters applied to the plan, in order")
    sweep: dict[str, list[Scalar]] = Field(default_factory=dict, description="parameter -> values (product of all)")
    exclude: list[dict[str, Scalar]] = Field(default_factory=list, description="points of the product not run: "
                                             "each entry leaves out every point with these values (e.g. "
                                             "{queue: fifo, tc.reading: backoff}, where the parameter does not act)")
    seeds: list[int] = Field(default_factory=lambda: [1], min_length=1, description="one run per seed and point")
    baseline: dict[str, Scalar] = Field(default_factory=lambda: dict[str, Scalar](queue="fifo"),
                                        description="the point that aom_reduction_pct compares with (one parameter)")
    backends: dict[str, BackendSetup] = Field(default_factory=dict, description="per backend (olaf.backends): "
                                              "settings, fields left out, seeds")
    table: Optional[Table] = None
    paper: list[PaperRow] = Field(default_factory=list)
    paper_claim: str = Field(default="", description="what the paper states where it gives no numbers (a figure "
                             "drawn without values), quoted under the table")
    figure: Optional[Figure] = None

    @field_validator("set", "sweep")
    @classmethod
    def _known_parameters(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        base = info.data.get("plan")
        if base is not None:
            check_names(base, list(v))
        if info.field_name == "sweep":
            for k, vals in v.items():
                if not vals:
                    raise ValueError(f"{k}: a sweep needs at least one value")
        return v

    @field_validator("backends")
    @classmethod
    def _backend_parameters(cls, v: dict[str, BackendSetup], info: ValidationInfo) -> dict[str, BackendSetup]:
        base = info.data.get("plan")
        for name, b in v.items():
            if name not in backend_names():
                raise ValueError(f"{name}: unknown backend; use one of {', '.join(backend_names())}")
            if base is not None:
                try:
                    check_names(base, list(b.set))
                except ValueError as e:
                    raise ValueError(f"{name}.set: {e}") from None
        return v

    @field_validator("seeds")
    @classmethod
    def _unique_seeds(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            raise ValueError("seeds must be distinct")
        return v

    @model_validator(mode="after")
    def _cross(self) -> ExperimentSpec:
        names = [g.name for g in self.plan.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"plan.groups: names must be unique (got {', '.join(names)}); "
                             "parameters name groups by them")
        metrics = metric_names(self.plan)
        if len(self.baseline) != 1:
            raise ValueError("baseline: give exactly one parameter and its baseline value, e.g. {queue: fifo}")
        for where, ms in [("table.columns", [c.metric for c in self.table.columns] if self.table else []),
                          ("figure.metrics", self.figure.metrics if self.figure else []),
                          *((f"paper[{i}].values", list(r.values)) for i, r in enumerate(self.paper))]:
            bad = [m for m in ms if m not in metrics]
            if bad:
                raise ValueError(f"{where}: unknown metric(s) {', '.join(bad)}; known: {', '.join(metrics)}")
        for i, ex in enumerate(self.exclude):
            bad = [k for k in ex if k not in self.sweep]
            if bad or not ex:
                raise ValueError(f"exclude[{i}]: {', '.join(bad) or 'an empty entry'} is not a swept parameter "
                                 f"(sweeps: {', '.join(self.sweep) or 'none'})")
            if not any(all(same_value(p[k], v) for k, v in ex.items()) for p in self._product()):
                raise ValueError(f"exclude[{i}]: matches no point of the sweep")
        if not self.points():
            raise ValueError("exclude: leaves no point to run")
        for i, r in enumerate(self.paper):
            bad = [k for k in r.point if k not in self.sweep]
            if bad:
                raise ValueError(f"paper[{i}].point: {', '.join(bad)} is not a swept parameter "
                                 f"(sweeps: {', '.join(self.sweep) or 'none'})")
        if self.figure is not None:
            f = self.figure
            for what, p in (("x", f.x), *(("series", k) for k in f.series_params), *(("where", k) for k in f.where)):
                if p is not None and p not in self.sweep:
                    raise ValueError(f"figure.{what}: {p!r} is not a swept parameter "
                                     f"(sweeps: {', '.join(self.sweep) or 'none'})")
            if f.kind == "line" and (f.x is None or not f.metrics):
                raise ValueError("figure: a line figure needs x (a swept parameter) and metrics")
            if f.kind == "bars" and not f.metrics:
                raise ValueError("figure: a bars figure needs metrics")
        return self

    def seeds_for(self, backend: str) -> list[int]:
        b = self.backends.get(backend)  # type: ignore[call-overload]
        return b.seeds if b is not None and b.seeds else self.seeds

    def _product(self) -> list[dict[str, Scalar]]:
        keys = list(self.sweep)
        return [dict(zip(keys, vals)) for vals in itertools.product(*self.sweep.values())] if keys else [{}]

    def points(self) -> list[dict[str, Scalar]]:
        """Every sweep point (parameter → value), the first sweep varying slowest, without the ``exclude``d ones."""
        return [p for p in self._product()
                if not any(all(same_value(p[k], v) for k, v in ex.items()) for ex in self.exclude)]


def sweep_of(spec: ExperimentSpec, backend: str) -> Sweep:
    """The sweep of ``spec`` on ``backend``: its base plan, the backend's settings and fields left
    out, then the spec's ``set``, over the sweep points and the backend's seeds.

    Raises:
        ConfigError: an unknown backend.
    """
    if backend not in backend_names():
        raise ConfigError("backend", f"{backend!r}: use one of {', '.join(backend_names())}")
    setup = spec.backends.get(backend, BackendSetup())  # type: ignore[call-overload]
    fixed = (*setup.set.items(), *((k, v) for k, v in spec.set.items() if k not in setup.set))
    return Sweep(spec.plan, spec.points(), spec.seeds_for(backend), fixed, tuple(setup.unset))


def plan(spec: ExperimentSpec, backend: str) -> list[PlannedRun]:
    """Every run of ``spec`` on ``backend`` (points × seeds, in order), each plan validated.

    Raises:
        ConfigError: a point gives an invalid plan; the message names the point and the
            plan field.
    """
    return sweep_of(spec, backend).runs(backend)


def load_spec(path: Union[str, Path]) -> ExperimentSpec:
    """Read and validate an experiment spec file.

    Raises:
        ConfigError: unreadable file, or a field out of range or unknown (named, with what
            is allowed).
    """
    try:
        return load(ExperimentSpec, path)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e.path}" if e.path else str(path), e.message) from None

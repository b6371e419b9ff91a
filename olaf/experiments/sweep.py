"""A sweep: one base run plan over parameter points and seeds — what an experiment spec and a
training figure both are (:func:`olaf.experiments.runner.run_sweep` runs one on a backend).

A point is a list of parameter settings (:mod:`olaf.experiments.params` names: ``queue``,
``uplinks.s1.pps``, ``groups.*.clusters``, ``job.mode`` …) applied to the base plan after the
sweep's fixed settings and without its ``unset`` fields; each point runs once per seed, with the
seed in the plan.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Optional, Union

from olaf.configfile import ConfigError
from olaf.experiments.params import plan_with
from olaf.plan.plan import RunPlan

Scalar = Union[bool, int, float, str, None]


@dataclass(frozen=True)
class PlannedRun:
    """One run of an experiment: its point (index and values), seed and plan."""

    index: int
    point: dict[str, Scalar]
    seed: int
    plan: RunPlan

    @property
    def slug(self) -> str:
        """Directory name of the point, e.g. ``p03-queue=olaf,load.s1=3``."""
        label = ",".join(f"{k}={_fmt(v)}" for k, v in self.point.items()) or "base"
        return f"p{self.index:02d}-" + re.sub(r"[^A-Za-z0-9=.,_*-]", "_", label)


def _fmt(v: Scalar) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def point_label(point: dict[str, Scalar]) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in point.items()) or "base"


def same_value(a: Scalar, b: Scalar) -> bool:
    """Equal sweep values (numbers compared with a relative tolerance of 1e-9)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


@dataclass(frozen=True)
class Sweep:
    """``base`` over ``points`` × ``seeds``.

    Attributes:
        base: the base plan.
        points: per point, parameter → value (applied in order; ``{}`` is the base itself).
        seeds: one run per point and seed (the plan's ``seed``).
        fixed: settings applied to every point first (an experiment's backend and spec ``set``).
        unset: plan fields left out of every run (dotted paths; they return to their defaults).
        labels: per point, its label in tables and figures (default: :func:`point_label`).
    """

    base: RunPlan
    points: list[dict[str, Scalar]]
    seeds: list[int]
    fixed: tuple[tuple[str, Scalar], ...] = ()
    unset: tuple[str, ...] = ()
    labels: Optional[list[str]] = field(default=None)

    def label(self, index: int) -> str:
        return self.labels[index] if self.labels else point_label(self.points[index])

    def runs(self, where: str = "") -> list[PlannedRun]:
        """Every run (points × seeds, in order), each plan validated.

        Raises:
            ConfigError: a point gives an invalid plan; the message names the point (and ``where``,
                e.g. the backend) and the plan field.
        """
        out = []
        for i, point in enumerate(self.points):
            try:
                p = plan_with(self.base, [*self.fixed, *point.items()], self.unset)
            except ConfigError as e:
                at = f" ({where})" if where else ""
                raise ConfigError(f"sweep point {point_label(point)}{at}", str(e)) from None
            for seed in self.seeds:
                out.append(PlannedRun(i, point, seed, p.model_copy(update={"seed": seed})))
        return out

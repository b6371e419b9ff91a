"""``summary.json``: the report of a run directory (``olaf report``, :func:`olaf.report.report.summarize`).

:class:`RunSummary` is its model: the report validates what it writes against it
(:func:`olaf.report.report.write_summary`), so the file and this model cannot drift, and every
reader outside the report goes through :func:`read_summary`. JSON Schema:
``docs/schemas/summary.schema.json``. AoM values are in ms, times since t0 in ms or s as named;
accounting columns count updates (K chunks each travel as one update here; the chunk accounting
of a K > 1 model is :class:`ChunkDelivery`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from olaf.rundir.modelfile import read_model_file

SUMMARY_FILE = "summary.json"


class SummaryFileError(ValueError):
    """A ``summary.json`` that cannot be read: missing, not JSON, or not a report (fields named)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChunkDelivery(_Model):
    """Chunk accounting of a model of K > 1 chunks (per update sent: its K chunks)."""

    k: int = Field(ge=2, description="chunks per update")
    sent: int = Field(ge=0, description="chunks the workers sent")
    received: int = Field(ge=0, description="chunk messages the PS received")
    content: int = Field(ge=0, description="chunks whose content reached the PS (Σ count: folded ones inside)")
    lost: int = Field(description="sent − content")
    fully_alone: int = Field(ge=0, description="updates whose K chunks all reached the PS under their own identity")
    partially_alone: int = Field(ge=0, description="updates with some of their chunks so")
    none_alone: int = Field(ge=0, description="updates with none so (folded or lost)")


class ClusterSummary(_Model):
    """One cluster's accounting and AoM (paper Table 1 columns, §3)."""

    workers: int = Field(ge=0)
    sent: int = Field(ge=0, description="updates its workers sent")
    delivered: int = Field(ge=0, description="PS receptions (aggregates count once)")
    aggregated: int = Field(ge=0, description="updates folded into another before the PS")
    dropped: int = Field(ge=0, description="updates that never reached the PS")
    loss_fraction: float = Field(ge=0, le=1)
    aom_avg_ms: Optional[float] = Field(description="time-average AoM, ms")
    aom_peak_ms: Optional[float] = Field(description="average peak AoM, ms")
    aom_peak_max_ms: Optional[float]
    aom_max_ms: Optional[float]
    aggregations_mean: Optional[float] = Field(description="worker updates per delivery")
    time_to_k_ms: Optional[float] = Field(description="until the PS had k updates per worker (params.k), ms")
    regroup_boundary_updates: int = Field(ge=0)
    unlogged_sent_packets: int = Field(ge=0, description="packets sent by workers lost with their machine, counted "
                                       "from the switch")
    generated: int = Field(ge=0)
    skipped: int = Field(ge=0, description="generated but not sent (transmission control)")
    accepted: int = Field(ge=0, description="updates the PS applied")
    fates: Optional[dict[str, Any]] = Field(default=None, description="hop-by-hop fates of its packets "
                                            "(olaf.report.fates; with switch counters)")


class OverallSummary(_Model):
    """Every cluster together."""

    workers: int = Field(ge=0)
    generated: int = Field(ge=0)
    sent: int = Field(ge=0)
    skipped: int = Field(ge=0)
    delivered: int = Field(ge=0)
    aggregated: int = Field(ge=0)
    dropped: int = Field(ge=0)
    loss_fraction: float = Field(ge=0, le=1)
    aom_avg_ms: Optional[float] = Field(description="mean over clusters of their time-average AoM, ms")
    aom_peak_ms: Optional[float]
    jain_fairness: Optional[float] = Field(description="Jain's index of the clusters' average AoM")
    time_to_k_ms: Optional[float]
    final_global_reward: Optional[float]
    time_to_reward_ms: Optional[float]
    fates: Optional[dict[str, int]] = Field(description="Σ of the clusters' integer fate counts")
    fates_consistent: Optional[bool] = Field(description="every cluster's fates close (None: no switch counters)")
    unlogged_sent_packets: int = Field(ge=0)
    chunks: Optional[ChunkDelivery] = Field(description="None for a model of one chunk")


class Window(_Model):
    """The metric window (CLOCK_REALTIME ns; simulated ns from 0 for ns-3)."""

    t_start_ns: int
    t_end_ns: int
    duration_s: float
    source: str = Field(description="where the window came from (run.json, the worker logs …)")


class RunSummary(_Model):
    """The report of one run (module docstring)."""

    clusters: dict[str, ClusterSummary] = Field(description="by cluster id")
    overall: OverallSummary
    window: Window
    params: dict[str, Optional[float]] = Field(description="k (updates per worker for time_to_k_ms) and "
                                               "reward_target, as the report was asked")
    ps: dict[str, Any] = Field(description="the PS's log, INITs, malformed datagrams, clean stop and host losses")
    bad_records: dict[str, int] = Field(description="log file → lines that are not valid records")
    socket_drops: dict[str, dict[str, Any]] = Field(description="host → datagrams its kernel dropped, its buffer "
                                                    "and what to change")
    partial: bool
    workers: dict[str, Any] = Field(description="count, unattributed, without a stop record, late starts, "
                                    "restarts, lost")
    run: dict[str, Any] = Field(description="the run's manifest (run.json)")
    switch: Optional[dict[str, Any]] = Field(description="the switches' counters (None: no switch)")
    regroups: list[dict[str, Any]] = Field(description="membership changes during the run")


def read_summary(run_dir: Path | str) -> RunSummary:
    """The report of the run directory ``run_dir`` (its ``summary.json``).

    Raises:
        SummaryFileError: missing (run ``olaf report`` on it), not JSON, or not a report.
    """
    return read_model_file(Path(run_dir) / SUMMARY_FILE, RunSummary, SummaryFileError, what="a report",
                           missing=f"write it with `olaf report {run_dir}`")

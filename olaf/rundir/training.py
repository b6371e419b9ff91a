"""``training.json``: the result of a training job's run directory (:class:`TrainingResult`).

Written once by the job's monitor (:func:`olaf.training.monitor.write_training_outputs`) with
:func:`write_training`; every reader goes through :func:`read_training`. JSON Schema:
``docs/schemas/training.schema.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from olaf.rundir.atomic import write_json
from olaf.rundir.modelfile import read_model_file

TRAINING_FILE = "training.json"


class TrainingFileError(ValueError):
    """A ``training.json`` that cannot be read: missing, not JSON or not a training result; the
    message names the file and the problem."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvalRow(_Model):
    """One evaluation of the global model (:mod:`olaf.training.evaluator`)."""

    t_s: float = Field(description="the evaluated checkpoint's time, s since t0")
    env_steps: Optional[int] = Field(description="the workers' environment steps then (None: before the first poll)")
    ps_updates: int = Field(ge=0, description="worker updates the PS had received by the checkpoint")
    episodes: int = Field(ge=1)
    mean: float = Field(description="mean episode return")
    std: float = Field(ge=0)
    eval_s: float = Field(ge=0, description="wall time of the evaluation, s")


class TrainingResult(_Model):
    """What a training job reached (``training.json``; :mod:`olaf.training.monitor`)."""

    job: dict[str, Any] = Field(description="the job's settings (environment, network, PS step and mode …)")
    target: float = Field(description="the mean worker reward that ends the job")
    reached: bool
    time_to_target_s: Optional[float] = Field(description="s from t0 to the target (None: not reached)")
    elapsed_s: float = Field(ge=0, description="s from t0 to the monitor's last poll")
    final_mean_worker_reward: Optional[float] = Field(description="None: no worker had a reward yet")
    workers_with_reward: int = Field(ge=0)
    env_steps: int = Field(ge=0, description="environment steps of all workers")
    iterations: int = Field(ge=0, description="PPO iterations of all workers")
    fewest_worker_iterations: int = Field(ge=0, description="iterations of the worker with fewest")
    ps_updates: int = Field(ge=0, description="worker updates the PS received (Σ count)")
    ps_messages: int = Field(ge=0, description="messages the PS received (updates and aggregates)")
    saturated_elements: int = Field(ge=0, description="fixed-point elements the workers saturated")
    worker_errors: dict[str, str] = Field(default_factory=dict, description="worker → the error that stopped it")
    lost_workers: list[str] = Field(default_factory=list, description="workers lost with their machine mid-run")
    corrupt_log_lines: dict[str, int] = Field(default_factory=dict, description="host → lines of its log that are "
                                              "not valid records")
    evaluations: list[EvalRow] = Field(default_factory=list)
    final_eval: Optional[EvalRow] = None
    best_eval: Optional[EvalRow] = None
    solve_at: Optional[float] = Field(default=None, description="the evaluation mean that solves the task (None: "
                                      "the job does not stop at a solve)")
    solved: bool = False
    solved_eval: Optional[EvalRow] = Field(default=None, description="the first evaluation ≥ solve_at that the "
                                           "next one confirmed")

    @property
    def time_or_elapsed_s(self) -> float:
        """Time to the target, or the job's whole time when it was not reached (a lower bound)."""
        return self.time_to_target_s if self.reached and self.time_to_target_s is not None else self.elapsed_s

    @property
    def time_to_solved_s(self) -> Optional[float]:
        """Time to the confirmed solved evaluation, s since t0, or None."""
        return self.solved_eval.t_s if self.solved and self.solved_eval is not None else None


def write_training(run_dir: Path | str, result: TrainingResult) -> Path:
    """Write ``run_dir/training.json`` atomically; returns its path."""
    return write_json(Path(run_dir) / TRAINING_FILE, result.model_dump(mode="json"), indent=1)


def read_training(run_dir: Path | str) -> TrainingResult:
    """The training result of the run directory ``run_dir``.

    Raises:
        TrainingFileError: no ``training.json``, not JSON, or not a training result (the fields named).
    """
    return read_model_file(Path(run_dir) / TRAINING_FILE, TrainingResult, TrainingFileError, what="a training result",
                           missing="not a training run, or it never started")

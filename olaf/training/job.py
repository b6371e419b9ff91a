"""A training job (``olaf train``): its plan from the command's options and its run with a
:class:`~olaf.rl.trainrun.TrainMonitor`.

:func:`build_spec` checks the environment before anything starts (unknown id, continuous
actions, a network that does not fit the frame, a missing ``train`` extra: each a one-line
error naming the option and the fix); :func:`run_training` runs it and writes the training
outputs (``training.json``, curves) beside the run's report.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import click
from rich.console import Console

from olaf.constants import MTU, max_model_elements
from olaf.hosts.modes import Mode
from olaf.plan.workload import PPOConfig, PPOTaskSpec, TrainJob
from olaf.topologies.spec import RunSpec, RunSpecError

DEFAULT_TARGETS = {"LunarLander-v3": 0.0, "CartPole-v1": 150.0}
"""Mean worker reward that ends a job when ``--target`` is not given (LunarLander: from about
−200 to 0, docs/training.md; CartPole: 150 of its 500)."""


def check_task(env_id: str, hidden: tuple[int, ...], mtu: int) -> int:
    """The PPO network's parameter count for ``env_id``, after checking that the task can run.

    Raises:
        click.ClickException: the ``train`` extra is missing, or the environment or network is
            unusable; the message names the option (``--env``, ``--hidden``) and the fix.
    """
    from olaf.rl.extra import TrainExtraMissing, require_train_extra  # noqa: PLC0415

    try:
        require_train_extra()
        from olaf.rl.envs import EnvError, env_shape  # noqa: PLC0415
        from olaf.rl.network import ModelTooLarge, check_fits, param_count  # noqa: PLC0415
    except TrainExtraMissing as e:
        raise click.ClickException(f"{e} (or: make train-deps)") from None
    try:
        shape = env_shape(env_id)
    except EnvError as e:
        raise click.BadParameter(str(e), param_hint="--env") from None
    except TrainExtraMissing as e:
        raise click.ClickException(str(e)) from None
    n = param_count(shape.obs_dim, shape.n_actions, hidden)
    try:
        check_fits(n, mtu)
    except ModelTooLarge:  # its jumbo-frame hint names `olaf worker --mtu`; the emulated links are not jumbo
        default = param_count(shape.obs_dim, shape.n_actions, PPOConfig().hidden)
        raise click.BadParameter(
            f"{','.join(map(str, hidden))}: the network of {env_id} has {n} parameters, but an update and its ACK "
            f"on the emulated links ({mtu} B MTU) carry at most {max_model_elements(mtu)} elements; choose smaller "
            f"layers (the default {','.join(map(str, PPOConfig().hidden))} has {default})", param_hint="--hidden") from None
    return n


def build_spec(*, env: str, hidden: tuple[int, ...], target: Optional[float], budget_s: float,
               stop_at_target: bool = True, **kw: Any) -> RunSpec:
    """The RunSpec of a training job from ``olaf train``'s options (also used by the figures).

    Raises:
        click.BadParameter / click.ClickException: as :func:`check_task`, or a run parameter
            out of range (naming its option).
    """
    n = check_task(env, hidden, MTU)
    tgt = DEFAULT_TARGETS.get(env, 0.0) if target is None else target
    try:
        job = TrainJob(task=PPOTaskSpec(env_id=env, ppo=PPOConfig(hidden=hidden, n_steps=kw.pop("n_steps"),
                                                                  n_envs=kw.pop("n_envs"))),
                       num_params=n, ps_step=kw.pop("ps_step"), ps_lr=kw.pop("ps_lr"), ps_gate=kw.pop("ps_gate"),
                       mode=kw.pop("mode"), ack_wait_ms=kw.pop("ack_wait_ms"), target=tgt, stop_at_target=stop_at_target)
        if job.mode == Mode.SYNC.value:  # workers wait for the round's ACK (docs/training.md)
            job = replace(job, ack_wait_ms=max(job.ack_wait_ms, job.round_timeout_ms))
        # back-to-back iterations: the period only spaces a worker's iterations, not its updates' due times
        return RunSpec(duration_s=budget_s, period_ms=1.0, jitter_ms=0.0, grads=n, training=job, **kw)
    except RunSpecError as e:
        raise click.BadParameter(str(e).split(": ", 1)[1], param_hint="--" + e.field.replace("_", "-")) from None
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def run_training(spec: RunSpec, out: Path, build: Path, console: Console, *, quiet: bool = False) -> dict[str, Any]:
    """One training job into the run directory ``out``; returns ``training.json``'s content.

    Raises:
        olaf.topologies.emulation.RunFailed: the run failed (a host, a switch); what was
            collected stays in ``out`` and its training files are written first.
    """
    from olaf.rl.trainrun import TrainMonitor, write_training_outputs  # noqa: PLC0415
    from olaf.topologies.emulation import RunFailed, run_once  # noqa: PLC0415

    assert spec.training is not None
    # one OpenMP/MKL thread per worker process (inherited through Mininet's hosts): 27 learners share 2 cores
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    workers = [w for ws in spec.deployment().clusters.values() for w in ws]
    monitor = TrainMonitor(out / "hosts", workers, spec.training.target, spec.training.window,
                           spec.training.stop_at_target)
    job = {"env": spec.training.task.env_id, "queue": spec.queue, "rate_pps": spec.rate_pps, "topo": spec.topo,
           "clusters": spec.clusters, "workers_per_cluster": spec.workers_per_cluster, "mode": spec.training.mode,
           "seed": spec.seed, "budget_s": spec.duration_s, "num_params": spec.training.num_params}
    try:
        run_once(spec, out, build, console, monitor=monitor, quiet=quiet)
    except RunFailed:
        if (out / "run.json").exists():
            write_training_outputs(out, monitor, job)
        raise
    result = write_training_outputs(out, monitor, job)
    if result["worker_errors"]:
        raise RunFailed("worker task errors: " + "; ".join(f"{w}: {e}" for w, e in result["worker_errors"].items())
                        + f" (what was collected is in {out})")
    return result

"""A training job (``olaf train``): its plan from the command's options and its run with a
:class:`~olaf.training.monitor.TrainMonitor` on any backend that runs a training workload
(``local``: the ideal network; ``mininet``: through the switches).

:func:`build_plan` checks the environment before anything starts (unknown id, continuous
actions, a network that does not fit the frame, a missing ``train`` extra: each a one-line
error naming the option and the fix); :func:`checked_backend` refuses, by option, what the chosen backend cannot
run; :func:`olaf.experiments.runner.run_plan` runs it and writes the training outputs.
"""

from __future__ import annotations

from typing import Any, Optional

import click

from olaf import backends
from olaf.backends.base import Backend, BackendOptions, PlanRefused
from olaf.configfile import ConfigError, validate
from olaf.constants import MTU, max_model_elements
from olaf.plan.plan import RunPlan
from olaf.plan.topology import DEFAULT_QUEUE_SIZE, EDGE_SWITCHES, PARENT
from olaf.plan.workload import PPOConfig, PPOTaskSpec, TrainJob

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


PLAN_OPTIONS = {"topology": "--topo", "groups": "--clusters/--workers-per-cluster", "queue": "--queue",
                "queue_size": "--queue-size", "uplinks": "--rate-pps", "tc": "--tc", "seed": "--seed",
                "duration_s": "--budget-s", "grads": "--hidden", "workload": "--backend"}
"""The ``olaf train`` option behind each plan field (errors name the option)."""


def option_of(field: str) -> str:
    """The option of plan field ``field`` (a dotted path), for error messages."""
    return PLAN_OPTIONS.get(field.split(".")[0].split("[")[0], field)


def build_plan(*, env: str, hidden: tuple[int, ...], target: Optional[float], budget_s: float,
               stop_at_target: bool = True, topo: str = "tor", clusters: int = 9, workers_per_cluster: int = 3,
               queue: str = "olaf", queue_size: Optional[int] = None, rate_pps: int = 0, tc: bool = False,
               seed: int = 1, n_steps: int = PPOConfig.n_steps, n_envs: int = PPOConfig.n_envs,
               ps_step: str = TrainJob.ps_step, ps_lr: float = TrainJob.ps_lr,
               ps_gate: Optional[bool] = TrainJob.ps_gate, mode: str = "async",
               ack_wait_ms: float = TrainJob.ack_wait_ms, iterations: Optional[int] = None,
               ps_updates: Optional[int] = None) -> RunPlan:
    """The run plan of a training job from ``olaf train``'s options (also used by the figures).

    Every worker iterates back to back (period 1 ms: the period only spaces a worker's
    iterations) for ``budget_s`` seconds at most; ``iterations`` and ``ps_updates`` end the job
    earlier (:class:`~olaf.plan.workload.TrainJob`); ``clusters`` is per edge switch (multihop: S1 behind
    s1, S2 behind s2). Only what differs from the plan's defaults is set in it (a bottleneck,
    FIFO, a queue size, transmission control, the multihop topology), so a backend without a
    network (``local``) refuses exactly those options.

    Raises:
        click.BadParameter / click.ClickException: as :func:`check_task`, or a value out of range
            (naming its option).
    """
    n = check_task(env, hidden, MTU)
    tgt = DEFAULT_TARGETS.get(env, 0.0) if target is None else target
    try:
        job = TrainJob(task=PPOTaskSpec(env_id=env, ppo=PPOConfig(hidden=hidden, n_steps=n_steps, n_envs=n_envs)),
                       num_params=n, ps_step=ps_step, ps_lr=ps_lr, ps_gate=ps_gate, mode=mode,
                       ack_wait_ms=ack_wait_ms, target=tgt, stop_at_target=stop_at_target, iterations=iterations,
                       ps_updates=ps_updates)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    raw: dict[str, Any] = {
        "duration_s": budget_s, "grads": n, "seed": seed, "workload": {"kind": "ppo", "job": job},
        "groups": [{"name": f"S{i + 1}", "clusters": clusters, "workers_per_cluster": workers_per_cluster,
                    "period_ms": 1.0, "jitter_ms": 0.0, "switch": sw} for i, sw in enumerate(EDGE_SWITCHES[topo])]}
    if topo != "tor":
        raw["topology"] = topo
    if queue != "olaf":
        raw["queue"] = queue
    root = next(sw for sw, up in PARENT[topo].items() if up is None)
    if queue_size is not None and queue_size != DEFAULT_QUEUE_SIZE[topo][root]:
        raw["queue_size"] = {root: queue_size}
    if rate_pps:
        raw["uplinks"] = {root: {"pps": rate_pps}}
    if tc:
        raw["tc"] = {"enabled": True}
    try:
        return validate(RunPlan, raw)
    except ConfigError as e:
        raise click.BadParameter(e.message, param_hint=option_of(e.path)) from None


def checked_backend(plan: RunPlan, backend: str, options: BackendOptions) -> Backend:
    """The backend ``backend`` with ``options``, after it checked ``plan``.

    Raises:
        click.BadParameter: the backend refuses the plan (naming the option behind the field).
    """
    runner = backends.get(backend, options)
    try:
        runner.check(plan)
    except PlanRefused as e:
        raise click.BadParameter(e.message, param_hint=option_of(e.path)) from None
    return runner

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

from olaf.backends.base import Backend, PlanRefused
from olaf.configfile import ConfigError, validate
from olaf.constants import IPV4_MAX_LEN, MTU
from olaf.plan.plan import RunPlan
from olaf.plan.topology import DEFAULT_CLUSTERS, DEFAULT_QUEUE_SIZES, DEFAULT_WORKERS_PER_CLUSTER, EDGE_SWITCHES, PARENT
from olaf.plan.workload import NETS, PPOConfig, PPOTaskSpec, TrainJob

DEFAULT_TARGETS = {"LunarLander-v3": 0.0, "CartPole-v1": 150.0}
"""Mean worker reward that ends a job when ``--target`` is not given (LunarLander: from about
−200 to 0, docs/training.md; CartPole: 150 of its 500)."""


def check_task(env_id: str, hidden: tuple[int, ...], mtu: int, arch: str = "shared") -> int:
    """The PPO network's parameter count for ``env_id``, after checking that the task can run
    with updates and ACKs in IPv4 packets of ``mtu`` bytes (in K chunks when it does not fit one,
    :mod:`olaf.chunks`).

    Raises:
        click.ClickException: the ``train`` extra is missing, or the environment or network is
            unusable; the message names the option (``--env``, ``--net``/``--hidden``) and the fix.
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
    n = param_count(shape.obs_dim, shape.n_actions, hidden, arch)
    try:
        check_fits(n, mtu)
    except ModelTooLarge as e:
        default = param_count(shape.obs_dim, shape.n_actions, PPOConfig().hidden)
        loopback = "" if mtu >= IPV4_MAX_LEN else "; or run it over loopback (--backend local)"
        raise click.BadParameter(
            f"{arch} {','.join(map(str, hidden))} on {env_id}: {e}; choose smaller layers (the default "
            f"{','.join(map(str, PPOConfig().hidden))} has {default}){loopback}",
            param_hint="--net/--hidden/--mtu") from None
    return n


def job_mtu(requested: Optional[int], backend_mtu: int, max_mtu: Optional[int] = None) -> int:
    """The MTU a job's hosts chunk their updates for: ``requested`` (``olaf train --mtu``: 1500 over
    loopback to exercise chunking, 9000 for jumbo frames through BMv2) or the backend's default.

    Args:
        requested: the job's MTU, bytes, or None for ``backend_mtu``.
        backend_mtu: the backend's default links' MTU (:attr:`Backend.mtu <olaf.backends.base.Backend.mtu>`).
        max_mtu: the largest its links can be set to (:attr:`Backend.max_mtu`); None: ``backend_mtu``.

    Raises:
        click.BadParameter: ``requested`` above ``max_mtu`` (naming ``--mtu``).
    """
    if requested is None:
        return backend_mtu
    limit = backend_mtu if max_mtu is None else max_mtu
    if requested > limit:
        raise click.BadParameter(f"{requested} B is above this backend's largest MTU ({limit} B): its links would "
                                 f"not carry such frames; give at most {limit}", param_hint="--mtu")
    return requested


DEFAULT_EVAL_EVERY_S = 30.0
"""Evaluation period of a job that ends when solved and gives none (``--eval-every-s``), s."""


def env_threshold(env_id: str) -> float:
    """Gymnasium's ``reward_threshold`` of ``env_id`` (its "solved").

    Raises:
        click.BadParameter: the environment registers none (naming ``--solve-at``).
    """
    import gymnasium as gym  # noqa: PLC0415

    t = gym.spec(env_id).reward_threshold
    if t is None:
        raise click.BadParameter(f"{env_id} registers no reward threshold: give one with --solve-at", param_hint="--solve")
    return float(t)


PLAN_OPTIONS = {"topology": "--topo", "groups": "--clusters/--workers-per-cluster", "queue": "--queue",
                "queue_size": "--queue-size", "uplinks": "--rate-pps", "tc": "--tc", "seed": "--seed",
                "duration_s": "--budget-s", "grads": "--net/--hidden", "workload": "--backend"}
"""The ``olaf train`` option behind each plan field (errors name the option)."""


def option_of(field: str) -> str:
    """The option of plan field ``field`` (a dotted path), for error messages."""
    if field.endswith(".workers_per_host"):
        return "--workers-per-host"
    if field.startswith("uplinks.") and field.endswith(".load"):
        return "--load"
    return PLAN_OPTIONS.get(field.split(".")[0].split("[")[0], field)


def build_plan(*, env: str, net: str = "olaf", hidden: Optional[tuple[int, ...]] = None, target: Optional[float],
               budget_s: float, mtu: int = MTU,
               stop_at_target: bool = True, topo: str = "tor", clusters: int = DEFAULT_CLUSTERS,
               workers_per_cluster: int = DEFAULT_WORKERS_PER_CLUSTER,
               workers_per_host: int = 1,
               queue: str = "olaf", queue_size: Optional[int] = None, rate_pps: float = 0, load: Optional[float] = None,
               tc: bool = False,
               seed: int = 1, n_steps: int = PPOConfig.n_steps, n_envs: int = PPOConfig.n_envs,
               ps_step: str = TrainJob.ps_step, ps_lr: float = TrainJob.ps_lr,
               ps_gate: Optional[bool] = TrainJob.ps_gate, ps_lr_final: Optional[float] = None,
               ps_lr_decay_updates: Optional[int] = None, mode: str = "async",
               ack_wait_ms: float = TrainJob.ack_wait_ms, apply_locally: bool = PPOTaskSpec.apply_locally,
               learner: str = PPOTaskSpec.learner, iterations: Optional[int] = None,
               ppo_set: Optional[dict[str, Any]] = None, stellaris_decay: float = TrainJob.stellaris_decay,
               beta_min: float = TrainJob.beta_min, ps_staleness_root: Optional[int] = None,
               round_timeout_ms: float = TrainJob.round_timeout_ms, ps_updates: Optional[int] = None,
               eval_every_s: Optional[float] = None,
               eval_episodes: int = TrainJob.eval_episodes, solve: bool = False,
               solve_at: Optional[float] = None) -> RunPlan:
    """The run plan of a training job from ``olaf train``'s options (also used by the figures).

    Every worker iterates back to back (period 1 ms: the period only spaces a worker's
    iterations) for ``budget_s`` seconds at most; ``iterations`` and ``ps_updates`` end the job
    earlier (:class:`~olaf.plan.workload.TrainJob`); ``net`` names the network (:data:`NETS`; ``hidden``
    overrides its widths) and ``mtu`` is the hosts' (:func:`job_mtu`: the backend's, :attr:`Backend.mtu
    <olaf.backends.base.Backend.mtu>`, or a smaller one given); a network larger than one frame travels as K
    chunks (:mod:`olaf.chunks`);
    ``ppo_set`` overrides worker PPO hyper-parameters (``olaf train --ppo KEY=VALUE``); ``stellaris_decay``,
    ``beta_min`` and ``ps_staleness_root`` are the PS's Stellaris settings and ``round_timeout_ms`` its sync
    mode's round cutoff (:class:`~olaf.plan.workload.TrainJob`);
    ``learner`` is who computes each worker's update (:data:`~olaf.plan.workload.LEARNERS`: Olaf's PPO or
    RLlib's, same network and hyper-parameters);
    ``rate_pps`` (updates/s) or ``load`` (offered / capacity, measured during the run:
    :mod:`olaf.plan.bottleneck`) is the root switch's bottleneck toward the PS;
    ``clusters`` is per edge switch (multihop: S1 behind
    s1, S2 behind s2). Only what differs from the plan's defaults is set in it (a bottleneck,
    FIFO, a queue size, transmission control, the multihop topology), so a backend without a
    network (``local``) refuses exactly those options.

    Raises:
        click.BadParameter / click.ClickException: as :func:`check_task`, or a value out of range
            (naming its option).
    """
    if net not in NETS:
        raise click.BadParameter(f"{net!r}: one of {', '.join(NETS)}", param_hint="--net")
    preset = NETS[net]
    widths = preset.hidden if hidden is None else hidden
    n = check_task(env, widths, mtu, preset.arch)
    tgt = DEFAULT_TARGETS.get(env, 0.0) if target is None else target
    if solve and solve_at is None:
        solve_at = env_threshold(env)
    if solve_at is not None and eval_every_s is None:
        eval_every_s = DEFAULT_EVAL_EVERY_S
    if learner == "rllib" and eval_every_s is not None:
        raise click.BadParameter("the evaluator runs the global model as Olaf's own network; with --learner rllib "
                                 "evaluate with RLlib (OlafPPO's algo.evaluate(), docs/rllib.md) and leave "
                                 "--eval-every-s and --solve out", param_hint="--learner")
    try:
        ppo = PPOConfig(hidden=widths, arch=preset.arch, reward_scale=preset.reward_scale, n_steps=n_steps,
                        n_envs=n_envs, **(ppo_set or {}))
        job = TrainJob(task=PPOTaskSpec(env_id=env, ppo=ppo, mtu=mtu, apply_locally=apply_locally, learner=learner),
                       num_params=n, ps_step=ps_step, ps_lr=ps_lr, ps_gate=ps_gate, ps_lr_final=ps_lr_final,
                       ps_lr_decay_updates=ps_lr_decay_updates, mode=mode, stellaris_decay=stellaris_decay,
                       beta_min=beta_min, ps_staleness_root=ps_staleness_root, round_timeout_ms=round_timeout_ms,
                       ack_wait_ms=ack_wait_ms, target=tgt, stop_at_target=stop_at_target, iterations=iterations,
                       ps_updates=ps_updates, eval_every_s=eval_every_s, eval_episodes=eval_episodes,
                       solve_at=solve_at)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    raw: dict[str, Any] = {
        "duration_s": budget_s, "grads": n, "seed": seed, "workload": {"kind": "ppo", "job": job},
        "groups": [{"name": f"S{i + 1}", "clusters": clusters, "workers_per_cluster": workers_per_cluster,
                    "period_ms": 1.0, "jitter_ms": 0.0, "switch": sw,
                    **({"workers_per_host": workers_per_host} if workers_per_host > 1 else {})}
                   for i, sw in enumerate(EDGE_SWITCHES[topo])]}
    if topo != "tor":
        raw["topology"] = topo
    if queue != "olaf":
        raw["queue"] = queue
    root = next(sw for sw, up in PARENT[topo].items() if up is None)
    if queue_size is not None and queue_size != DEFAULT_QUEUE_SIZES[topo][root]:
        raw["queue_size"] = {root: queue_size}
    if rate_pps:
        raw["uplinks"] = {root: {"pps": rate_pps}}
    elif load is not None:
        if tc:
            raise click.BadParameter(f"{load}: transmission control lowers the workers' sending when the queue fills, "
                                     "so a capacity measured from it would follow it down (olaf.plan.bottleneck); "
                                     "give --rate-pps with --tc", param_hint="--load")
        raw["uplinks"] = {root: {"load": load}}
    if tc:
        raw["tc"] = {"enabled": True}
    try:
        return validate(RunPlan, raw)
    except ConfigError as e:
        raise click.BadParameter(e.message, param_hint=option_of(e.path)) from None


def checked_backend(plan: RunPlan, runner: Backend) -> Backend:
    """``runner`` after it checked ``plan``.

    Raises:
        click.BadParameter: the backend refuses the plan (naming the option behind the field).
    """
    try:
        runner.check(plan)
    except PlanRefused as e:
        raise click.BadParameter(e.message, param_hint=option_of(e.path)) from None
    return runner

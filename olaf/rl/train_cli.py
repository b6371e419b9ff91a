"""``olaf train``: distributed PPO through the emulated Olaf network (``make train``), and
``olaf train compare FIG``: the paper's training figures (:mod:`olaf.rl.figures`).

The command-line layer only: options → :class:`~olaf.topologies.spec.RunSpec` with a
:class:`~olaf.rl.config.TrainJob` → the run (:func:`olaf.topologies.emulation.run_once`) with a
:class:`~olaf.rl.trainrun.TrainMonitor`. The environment is checked before anything starts
(unknown id, continuous actions, a network that does not fit the frame, a missing ``train``
extra: each a one-line error naming the option and the fix).
"""

from __future__ import annotations

import os
import signal
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import click
from rich.console import Console

from olaf.cli import FiniteFloat
from olaf.constants import MTU, SEGMENTS, max_model_elements
from olaf.hosts.modes import Mode
from olaf.rl.config import DEFAULT_ENV, PPOConfig, PPOTaskSpec, TrainJob
from olaf.topologies.spec import QUEUES, TOPOLOGIES, RunSpec, RunSpecError

ROOT = Path(__file__).resolve().parents[2]
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


def _hidden(value: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(x) for x in value.split(","))
    except ValueError:
        raise click.BadParameter(f"{value!r}: comma-separated layer widths, e.g. 24 or 32,32",
                                 param_hint="--hidden") from None
    if not widths or min(widths) < 1:
        raise click.BadParameter(f"{value!r}: every width must be >= 1", param_hint="--hidden")
    return widths


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


def train_options(f):
    """The job's options (shared by ``olaf train`` and ``olaf train compare``)."""
    opts = [
        click.option("--env", default=DEFAULT_ENV, show_default=True,
                     help="Gymnasium environment id with discrete actions (CartPole-v1 for quick runs)."),
        click.option("--hidden", default="24", show_default=True, callback=lambda c, p, v: _hidden(v),
                     help="Trunk widths of the shared actor-critic network (must fit a 1500 B frame)."),
        click.option("--n-steps", default=PPOConfig.n_steps, show_default=True, type=click.IntRange(1),
                     help="PPO rollout steps per environment and iteration."),
        click.option("--n-envs", default=PPOConfig.n_envs, show_default=True, type=click.IntRange(1),
                     help="Environments per worker."),
        click.option("--ps-step", type=click.Choice(["paper", "sgd", "adam"]), default=TrainJob.ps_step,
                     show_default=True, help="The PS's optimizer step (paper §2.1 or an alternative)."),
        click.option("--ps-lr", type=FiniteFloat(min=0, min_open=True), default=TrainJob.ps_lr, show_default=True,
                     help="The PS's step size γ."),
        click.option("--reward-gate/--no-reward-gate", "ps_gate", default=TrainJob.ps_gate, show_default=True,
                     help="Paper §2.1's reward gating at the PS."),
        click.option("--mode", type=click.Choice([m.value for m in Mode]), default="async", show_default=True,
                     help="Training mode (paper Fig. 2)."),
        click.option("--ack-wait-ms", type=FiniteFloat(min=0), default=TrainJob.ack_wait_ms, show_default=True,
                     help="How long a worker waits for the ACK's weights after an update, ms."),
        click.option("--topo", default="tor", show_default=True, type=click.Choice(TOPOLOGIES)),
        click.option("--clusters", default=9, show_default=True, type=click.IntRange(1, 100),
                     help="Clusters (multihop: per edge switch)."),
        click.option("--workers-per-cluster", default=3, show_default=True, type=click.IntRange(1, 16)),
        click.option("--queue-size", default=8, show_default=True, type=click.IntRange(1, SEGMENTS)),
        click.option("--tc/--no-tc", default=False, show_default=True, help="Worker transmission control (paper §5)."),
        click.option("--seed", default=1, show_default=True, type=int),
        click.option("--bmv2-log-level", default="warn", show_default=True,
                     type=click.Choice(["trace", "debug", "info", "warn", "error", "off"])),
        click.option("--build", type=click.Path(file_okay=False, path_type=Path), default=ROOT / "build",
                     show_default=True),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _term_as_interrupt(signum, frame):  # noqa: ARG001
    raise KeyboardInterrupt


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


@click.group("train", invoke_without_command=True)
@train_options
@click.option("--queue", default="olaf", show_default=True, type=click.Choice(QUEUES))
@click.option("--rate-pps", default=0, show_default=True, type=click.IntRange(min=0),
              help="Bottleneck toward the PS, packets/s (0 = none: the ideal reference).")
@click.option("--ideal", is_flag=True, help="The ideal reference job: no bottleneck (the same as --rate-pps 0).")
@click.option("--target", type=FiniteFloat(), help="Mean worker reward that ends the job [default: per env].")
@click.option("--budget-s", default=1800.0, show_default=True, type=FiniteFloat(min=0, min_open=True),
              help="Wall-time budget of the job, s.")
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True)
@click.pass_context
def train_cmd(ctx: click.Context, build: Path, results: Path, **kw: Any) -> None:
    """Train PPO workers through the Mininet + BMv2 network until a reward target or a budget (root).

    Writes a run directory (results/latest): the AoM report of `olaf run`, progress.csv,
    rewards.csv, training.json, reward_time.png, reward_updates.png.
    """
    if kw.pop("ideal"):
        if ctx.invoked_subcommand is not None:
            raise click.UsageError("--ideal sets one job's bottleneck; `compare` sets every job's (its figures have "
                                   "an ideal arm where the paper has one): drop --ideal")
        if kw["rate_pps"]:
            raise click.BadParameter(f"--ideal means no bottleneck, but --rate-pps is {kw['rate_pps']}: give one of "
                                     "them", param_hint="--ideal")
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"build": build, "results": results, **kw}
        return
    from olaf.topologies.emulation import preflight  # noqa: PLC0415
    from olaf.topologies.rundir import new_run_dir  # noqa: PLC0415

    spec = build_spec(**kw)
    preflight(build)
    signal.signal(signal.SIGTERM, _term_as_interrupt)
    console = Console()
    out = new_run_dir(results, f"train-{spec.topo}-{spec.queue}")
    r = run_training(spec, out, build, console)
    t = "not reached" if not r["reached"] else f"reached in {r['time_to_target_s']:.0f} s"
    console.print(f"target {r['target']:g} {t}; final mean worker reward {r['final_mean_worker_reward']}; "
                  f"{r['ps_updates']} worker updates at the PS; results: {out}")


def _register_compare() -> None:
    from olaf.rl.figures import compare_cmd  # noqa: PLC0415

    train_cmd.add_command(compare_cmd)


_register_compare()

"""``olaf train``: distributed PPO through the emulated Olaf network (``make train``), and
``olaf train compare FIG``: the paper's training figures (:mod:`olaf.experiments.train_figures`).

The command-line layer only: options → the job's run plan (:mod:`olaf.training.job`: a
:class:`~olaf.plan.plan.RunPlan` whose workload is a :class:`~olaf.plan.workload.TrainJob`) → its
run on the chosen backend (:func:`olaf.experiments.runner.run_plan`).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from olaf import backends
from olaf.backends.base import BackendOptions
from olaf.cliplan import plan_options
from olaf.clitypes import FiniteFloat
from olaf.constants import IPV4_MAX_LEN, WORKER_NICE
from olaf.hosts.global_model import Step
from olaf.hosts.modes import Mode
from olaf.plan.topology import QUEUES
from olaf.plan.workload import DEFAULT_ENV, LEARNERS, NETS, PPOConfig, PPOTaskSpec, TrainJob
from olaf.training.job import build_plan, checked_backend, job_mtu


def _term_as_interrupt(signum, frame):  # noqa: ARG001
    raise KeyboardInterrupt


def _hidden(value: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(x) for x in value.split(","))
    except ValueError:
        raise click.BadParameter(f"{value!r}: comma-separated layer widths, e.g. 24 or 32,32",
                                 param_hint="--hidden") from None
    if not widths or min(widths) < 1:
        raise click.BadParameter(f"{value!r}: every width must be >= 1", param_hint="--hidden")
    return widths


PPO_SET_FIELDS = ("n_epochs", "batch_size", "lr", "gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef",
                  "max_grad_norm", "target_kl", "target_drift")
"""PPOConfig fields ``--ppo KEY=VALUE`` sets (``--n-steps``, ``--n-envs``, ``--net``/``--hidden`` set the others)."""


def _ppo_settings(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v in values:
        key, sep, raw = v.partition("=")
        if not sep or key not in PPO_SET_FIELDS:
            raise click.BadParameter(f"{v!r}: KEY=VALUE with KEY one of {', '.join(PPO_SET_FIELDS)}", ctx, param)
        kind = int if key in ("n_epochs", "batch_size") else float
        try:
            out[key] = kind(raw)
        except ValueError:
            raise click.BadParameter(f"{v!r}: {key} takes {'an integer' if kind is int else 'a number'}",
                                     ctx, param) from None
    return out


def train_options(f):
    """The job's options (shared by ``olaf train`` and ``olaf train compare``)."""
    opts = [
        click.option("--env", default=DEFAULT_ENV, show_default=True,
                     help="Gymnasium environment id with discrete actions (CartPole-v1 for quick runs)."),
        click.option("--net", type=click.Choice(list(NETS)), default="olaf", show_default=True,
                     help="The network: " + "; ".join(f"{k}: {v.source}" for k, v in NETS.items())
                          + ". A network larger than one frame of the links (1500 B; loopback: 65535 B) is sent "
                          "as K chunks (docs/training.md)."),
        click.option("--hidden", default=None, callback=lambda c, p, v: None if v is None else _hidden(v),
                     help="Layer widths, comma-separated, instead of the --net's (e.g. 32,32)."),
        click.option("--n-steps", default=PPOConfig.n_steps, show_default=True, type=click.IntRange(1),
                     help="PPO rollout steps per environment and iteration."),
        click.option("--n-envs", default=PPOConfig.n_envs, show_default=True, type=click.IntRange(1),
                     help="Environments per worker."),
        click.option("--ppo", "ppo_set", multiple=True, callback=_ppo_settings, metavar="KEY=VALUE",
                     help="A worker PPO hyper-parameter (repeat): " + ", ".join(PPO_SET_FIELDS)
                          + " (defaults: docs/training.md)."),
        click.option("--ps-step", type=click.Choice([s.value for s in Step]), default=TrainJob.ps_step,
                     show_default=True, help="The PS's optimizer step (paper §2.1 or an alternative)."),
        click.option("--ps-lr", type=FiniteFloat(min=0, min_open=True), default=TrainJob.ps_lr, show_default=True,
                     help="The PS's step size γ."),
        click.option("--ps-lr-final", type=FiniteFloat(min=0, min_open=True), default=None,
                     help="Let the PS's γ fall linearly to this (with --ps-lr-decay-updates) [default: constant]."),
        click.option("--ps-lr-decay-updates", type=click.IntRange(1), default=None,
                     help="Worker updates at the PS over which γ falls to --ps-lr-final."),
        click.option("--reward-gate/--no-reward-gate", "ps_gate", default=TrainJob.ps_gate, show_default=True,
                     help="Paper §2.1's reward gating at the PS."),
        click.option("--mode", type=click.Choice([m.value for m in Mode]), default="async", show_default=True,
                     help="Training mode (paper Fig. 2), or Stellaris' staleness-aware aggregation (stellaris)."),
        click.option("--stellaris-decay", type=FiniteFloat(min=0, min_open=True, max=1),
                     default=TrainJob.stellaris_decay, show_default=True,
                     help="--mode stellaris: d of Stellaris Eq. 3 (rounds of one update per worker)."),
        click.option("--beta-min", type=FiniteFloat(min=0), default=TrainJob.beta_min, show_default=True,
                     help="--mode stellaris: the floor of the staleness threshold beta_k."),
        click.option("--round-timeout-ms", type=FiniteFloat(min=0, min_open=True), default=TrainJob.round_timeout_ms,
                     show_default=True, help="--mode sync: a round closes after this long without every worker's "
                     "update (the workers wait this long for its ACK), ms."),
        click.option("--ps-staleness-v", "ps_staleness_root", type=click.IntRange(1), default=None,
                     help="The PS scales each update by 1/staleness^(1/V) (Stellaris Eq. 4; 3 in its evaluation) "
                          "[default: off]."),
        click.option("--ack-wait-ms", type=FiniteFloat(min=0), default=TrainJob.ack_wait_ms, show_default=True,
                     help="How long a worker waits for the ACK's weights after an update, ms."),
        click.option("--apply-locally/--no-apply-locally", default=PPOTaskSpec.apply_locally, show_default=True,
                     help="A worker keeps its own step on its weights until it adopts newer global ones (off: every "
                          "iteration starts from the last global weights an ACK brought: a worker whose ACKs are "
                          "late or lost repeats rollouts of the same policy)."),
        click.option("--learner", type=click.Choice(LEARNERS), default=PPOTaskSpec.learner, show_default=True,
                     help="Who computes each worker's update: Olaf's PPO learner, or RLlib's PPO Learner and "
                          "EnvRunner with the same network and hyper-parameters (rllib extra; docs/rllib.md)."),
        click.option("--iterations", type=click.IntRange(1), default=None,
                     help="End the job once every worker has done this many PPO iterations (it still ends at "
                          "the target; --budget-s stays its wall-time limit)."),
        click.option("--eval-every-s", type=FiniteFloat(min=0, min_open=True), default=None,
                     help="Evaluate the PS's global model (deterministic episodes, beside the job) at most this "
                          "often, s [default: off; 30 with --solve/--solve-at]."),
        click.option("--eval-episodes", type=click.IntRange(1), default=TrainJob.eval_episodes, show_default=True,
                     help="Episodes per evaluation (100: the environment's definition of solved)."),
        click.option("--solve", is_flag=True,
                     help="End the job when the global model is solved: an evaluation of 100 episodes reaches the "
                          "environment's reward threshold (LunarLander-v3: 200)."),
        click.option("--solve-at", type=FiniteFloat(), default=None,
                     help="As --solve with this evaluation mean instead of the environment's threshold."),
        click.option("--ps-updates", type=click.IntRange(1), default=None,
                     help="End the job once the PS has received this many worker updates (an aggregate "
                          "counts the updates in it; it still ends at the target; --budget-s stays the limit)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return plan_options(f)


@click.group("train", invoke_without_command=True)
@train_options
@click.option("--queue", default="olaf", show_default=True, type=click.Choice(QUEUES))
@click.option("--rate-pps", default=0.0, show_default=True, type=FiniteFloat(min=0),
              help="Bottleneck toward the PS, updates/s, fractions allowed: K chunk packets each "
                   "(0 = none: the ideal reference).")
@click.option("--load", type=FiniteFloat(min=0, min_open=True), default=None,
              help="Bottleneck toward the PS as offered load / capacity (> 1 congests): its capacity is the "
                   "workers' update rate measured at the switch divided by this, tracked during the job "
                   "(olaf.plan.bottleneck), so it congests alike on a fast and on a busy machine. Instead of "
                   "--rate-pps; mininet and ray backends.")
@click.option("--ideal", is_flag=True, help="The ideal reference job: no bottleneck (the same as --rate-pps 0).")
@click.option("--target", type=FiniteFloat(), help="Mean worker reward that ends the job [default: per env].")
@click.option("--budget-s", default=1800.0, show_default=True, type=FiniteFloat(min=0, min_open=True),
              help="Wall-time budget of the job, s.")
@click.option("--backend", type=click.Choice(backends.names()), default="mininet", show_default=True,
              help="Where the job runs (olaf.backends); ns3 refuses it: its workers are synthetic; ray: the "
                   "mininet network with the workers as Ray actors (docs/ray.md).")
@click.option("--workers-per-actor", default=1, show_default=True, type=click.IntRange(min=1),
              help="--backend ray: workers that share one actor process (each in its own thread).")
@click.option("--ray-nodes", is_flag=True,
              help="--backend ray: one Ray node per Mininet host, joined to a head in the root namespace by a "
                   "management link off the data path: a cluster of machines, emulated (docs/ray.md).")
@click.option("--actor-restarts", default=1, show_default=True, type=click.IntRange(min=0),
              help="--backend ray: how often Ray restarts a dead actor; its workers come back with the same Olaf "
                   "identity and INIT again (the report counts restarts and their gap).")
@click.option("--pcap", is_flag=True, help="mininet, ray: capture every switch port into <run>/pcap/.")
@click.option("--worker-nice", default=WORKER_NICE, show_default=True, type=click.IntRange(0, 19),
              help="Nice value of the workers and the evaluator (0 = the harness's priority): the switch and the "
                   "PS, which share the machine's cores with them, are then not starved (docs/training.md).")
@click.option("--mtu", type=click.IntRange(68, IPV4_MAX_LEN), default=None,
              help="IPv4 MTU the hosts chunk their updates for, at most the backend's (e.g. 1500 over loopback: SB3's "
                   "network as 28 chunks) [default: the backend's: local 65535, mininet 1500].")
@click.pass_context
def train_cmd(ctx: click.Context, build: Path, results: Path, backend: str, **kw: Any) -> None:
    """Train PPO workers until a reward target or a budget: through the Mininet + BMv2 network
    (--backend mininet, root) or over loopback without a switch (--backend local: the ideal network).

    Writes a run directory (results/latest): the AoM report of `olaf run`, progress.csv,
    rewards.csv, training.json, reward_time.png, reward_updates.png.
    """
    if kw.pop("ideal"):
        if ctx.invoked_subcommand is not None:
            raise click.UsageError("--ideal sets one job's bottleneck; `compare` sets every job's (its figures have "
                                   "an ideal arm where the paper has one): drop --ideal")
        for opt in ("rate_pps", "load"):
            if kw[opt]:
                raise click.BadParameter(f"--ideal means no bottleneck, but --{opt.replace('_', '-')} is {kw[opt]}: "
                                         "give one of them", param_hint="--ideal")
    if kw["rate_pps"] and kw["load"]:
        raise click.BadParameter(f"a bottleneck of {kw['rate_pps']} updates/s and one of load {kw['load']}: give one "
                                 "of them", param_hint="--load")
    per_actor = kw.pop("workers_per_actor")
    if per_actor != 1 and backend != "ray":
        raise click.BadParameter(f"{per_actor}: workers share actors only with --backend ray",
                                 param_hint="--workers-per-actor")
    ray_nodes, pcap, restarts = kw.pop("ray_nodes"), kw.pop("pcap"), kw.pop("actor_restarts")
    if ray_nodes and backend != "ray":
        raise click.BadParameter("Ray nodes are the ray backend's: add --backend ray", param_hint="--ray-nodes")
    if pcap and backend not in ("mininet", "ray"):
        raise click.BadParameter(f"--backend {backend} has no switch ports to capture", param_hint="--pcap")
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"build": build, "results": results, "backend": backend, "workers_per_actor": per_actor, **kw}
        return
    from olaf.experiments.runner import run_plan  # noqa: PLC0415
    from olaf.topologies.rundir import new_run_dir  # noqa: PLC0415

    options = BackendOptions(console=Console(), build=build, quiet=False, progress=True, report=True, plots=True,
                             bmv2_log_level=kw.pop("bmv2_log_level"), workers_per_actor=per_actor,
                             ray_nodes=ray_nodes, pcap=pcap, actor_restarts=restarts,
                             worker_nice=kw.pop("worker_nice"))
    runner = backends.get(backend, options)
    mtu = job_mtu(kw.pop("mtu"), runner.mtu, runner.max_mtu)
    plan = build_plan(**kw, mtu=mtu)
    checked_backend(plan, runner)
    runner.preflight()
    signal.signal(signal.SIGTERM, _term_as_interrupt)
    console = options.console
    out = new_run_dir(results, f"train-{backend}-{plan.topology}-{plan.discipline}")
    r = run_plan(runner, plan, out)
    assert r is not None  # a training plan
    t = "not reached" if not r.reached else f"reached in {r.time_or_elapsed_s:.0f} s"
    console.print(f"target {r.target:g} {t}; final mean worker reward {r.final_mean_worker_reward}; "
                  f"{r.ps_updates} worker updates at the PS; results: {out}")


def _register_compare() -> None:
    from olaf.experiments.train_figures import compare_cmd  # noqa: PLC0415

    train_cmd.add_command(compare_cmd)


_register_compare()

"""Click commands ``olaf worker`` and ``olaf ps`` (registered in :mod:`olaf.cli`)."""

from __future__ import annotations

import ipaddress
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import click

from olaf.chunks import ChunkingError
from olaf.client import INIT_RETRY_MAX_S, INIT_RETRY_RANDOM_FACTOR, INIT_RETRY_S
from olaf.clitypes import FiniteFloat
from olaf.constants import ACK_PORT, IPV4_MAX_LEN, MAX_G, MTU, SOCKET_RCVBUF, UPDATE_PORT
from olaf.hosts.addr import parse_hostport
from olaf.hosts.checkpoint import CheckpointError
from olaf.hosts.global_model import Step
from olaf.hosts.learning import TaskUnavailable, task_kinds
from olaf.hosts.modes import Mode, ModeParams
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.hosts.runlog import StartFileError, stop_on_signals
from olaf.hosts.schedule import ScheduleSpec, TraceError, load_trace
from olaf.hosts.task import MAX_NUM_WEIGHTS, TaskParams
from olaf.hosts.trust import DEFAULT_GEN_TS_SLACK_S, DEFAULT_MAX_ABS_REWARD, TrustPolicy
from olaf.hosts.worker import TaskFailed, Worker, WorkerConfig
from olaf.plan.tx import READINGS, TxParams
from olaf.plan.workload import ARCHS, DEFAULT_ENV, LEARNERS, STELLARIS_DECAY, UPDATE_KINDS, PPOConfig, PPOTaskSpec

_PPO_DEFAULTS = PPOConfig()
_PPO_OPTIONS = {  # click parameter name -> PPOConfig field
    "ppo_n_steps": "n_steps", "ppo_n_envs": "n_envs", "ppo_epochs": "n_epochs", "ppo_batch": "batch_size",
    "ppo_lr": "lr", "ppo_gamma": "gamma", "ppo_gae_lambda": "gae_lambda", "ppo_clip": "clip_range",
    "ppo_ent_coef": "ent_coef", "ppo_vf_coef": "vf_coef", "ppo_max_grad_norm": "max_grad_norm",
    "ppo_reward_scale": "reward_scale", "arch": "arch", "ppo_target_kl": "target_kl",
    "ppo_target_drift": "target_drift",
}


def _hostport(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[tuple[str, int]]:
    if value is None:
        return None
    try:
        return parse_hostport(value, UPDATE_PORT)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from None


def _hidden(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(x) for x in value.split(","))
    except ValueError:
        widths = ()
    if not widths or min(widths) < 1:
        raise click.BadParameter(f"{value!r}: give the trunk's layer widths as comma-separated positive integers, "
                                 "e.g. 32,32", ctx=ctx, param=param)
    return widths


PROGRESS_S = 10.0
"""``olaf ps --progress-s``'s default: a progress line every 10 s."""


def _run_until_signal(make: Callable[[threading.Event], Any], what: str,
                      setup: Optional[Callable[[Any], None]] = None) -> dict[str, Any]:
    """Create a host (``make(stop)`` binds its socket) with SIGTERM/SIGINT setting ``stop``,
    ``setup(host)`` if given, run it and return its summary; a bind error exits 1 with a message
    naming the fix."""
    stop = threading.Event()
    stop_on_signals(stop)
    try:
        host = make(stop)
    except OSError as e:
        raise click.ClickException(
            f"cannot bind the {what} socket: {e.strerror}. Check that the address is one of this "
            f"host's (e.g. `ip addr`) and that no other process uses the port.") from None
    if setup is not None:
        setup(host)
    return host.run()


@click.command("worker")
@click.option("--ps", "ps_addr", required=True, callback=_hostport,
              help="PS address IP[:PORT] (port 50100 by default).")
@click.option("--bind", "bind_ip", required=True,
              help=f"This worker's IPv4 address IP[:PORT]: its updates leave from UDP PORT (default {ACK_PORT}) and "
                   "its ACKs arrive there (workers sharing an address behind an Olaf switch: one PORT each, "
                   "identity five_tuple).")
@click.option("--period-ms", type=FiniteFloat(), default=100.0, show_default=True,
              help="Mean time between generated updates, ms.")
@click.option("--jitter-ms", type=FiniteFloat(), default=0.0, show_default=True,
              help="Each gap is period ± U(0, jitter) ms; 0 <= jitter <= period.")
@click.option("--burst", type=click.IntRange(min=1), default=1, show_default=True,
              help="On/off arrivals: this many updates back to back, one burst every burst x period +- jitter "
                   "(the same mean rate; 1: periodic).")
@click.option("--start-phase-ns", "phase_ns", type=click.IntRange(min=0), default=0, show_default=True,
              help="Start this long after the start time (its own phase within the period; olaf.plan.arrivals), ns.")
@click.option("--trace", "trace_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Generation times instead of --period-ms/--jitter-ms: CSV with a 't_ms' or 'interval_ms' "
                   "column, or JSON (see olaf.hosts.schedule).")
@click.option("--trace-scale", type=FiniteFloat(), default=1.0, show_default=True,
              help="Multiply trace times by this (0.5 = twice as fast).")
@click.option("--duration", "duration_s", type=FiniteFloat(min=0, min_open=True),
              help="Generate updates for this many seconds after the start.")
@click.option("--updates", "max_updates", type=click.IntRange(min=1), help="Generate this many updates.")
@click.option("--start-at-ns", type=click.IntRange(min=0),
              help="Common start time t0, CLOCK_REALTIME ns (e.g. $(date +%s%N) + 2e9); default: now.")
@click.option("--start-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Wait until this file exists, then start at the time in it (CLOCK_REALTIME ns; empty: now). "
                   "Write it atomically once all processes are up (their logs have a start record).")
@click.option("--task", "task_kind", type=click.Choice(task_kinds()), default="bandit", show_default=True,
              help="Learning task: the numpy contextual bandit (cheap) or PPO on a Gymnasium environment "
                   "(needs the train extra; docs/training.md).")
@click.option("--env", "env_id", default=DEFAULT_ENV, show_default=True,
              help="PPO: Gymnasium environment id with a discrete action space (CartPole-v1 for quick runs).")
@click.option("--hidden", default=",".join(map(str, _PPO_DEFAULTS.hidden)), show_default=True, callback=_hidden,
              help="PPO: layer widths, comma-separated: of the shared policy/value trunk (--arch shared) or "
                   "of each of the policy and value MLPs (--arch separate).")
@click.option("--arch", type=click.Choice(ARCHS), default=_PPO_DEFAULTS.arch, show_default=True,
              help="PPO: one trunk for policy and value (shared) or two MLPs (separate, as Stable-Baselines3).")
@click.option("--update", "update_kind", type=click.Choice(UPDATE_KINDS), default="delta", show_default=True,
              help="PPO: what an update carries: the parameter change of the iteration's local PPO epochs "
                   "(delta) or one full-batch PPO gradient (grad).")
@click.option("--apply-locally/--no-apply-locally", default=True, show_default=True,
              help="PPO: keep training from the worker's own result until new global weights arrive.")
@click.option("--learner", type=click.Choice(LEARNERS), default="olaf", show_default=True,
              help="PPO: who computes the update: Olaf's own PPO learner, or RLlib's PPO Learner and EnvRunner "
                   "with the same network and hyper-parameters (needs the rllib extra; docs/rllib.md).")
@click.option("--mtu", type=click.IntRange(68, IPV4_MAX_LEN),
              help="IPv4 MTU of the links: a model larger than one update of it is sent as K chunks "
                   f"(docs/hosts.md; the PS needs the same --mtu and --num-params; {IPV4_MAX_LEN}: loopback) "
                   f"[default: PPO {MTU}; bandit: one message per update].")
@click.option("--ppo-n-steps", type=click.IntRange(min=1), default=_PPO_DEFAULTS.n_steps, show_default=True,
              help="PPO: steps per environment per rollout.")
@click.option("--ppo-n-envs", type=click.IntRange(min=1), default=_PPO_DEFAULTS.n_envs, show_default=True,
              help="PPO: environments per worker.")
@click.option("--ppo-epochs", type=click.IntRange(min=1), default=_PPO_DEFAULTS.n_epochs, show_default=True,
              help="PPO: passes over each rollout (update delta).")
@click.option("--ppo-batch", type=click.IntRange(min=1), default=_PPO_DEFAULTS.batch_size, show_default=True,
              help="PPO: minibatch size (update delta).")
@click.option("--ppo-lr", type=FiniteFloat(min=0, min_open=True), default=_PPO_DEFAULTS.lr, show_default=True,
              help="PPO: the worker's local Adam learning rate.")
@click.option("--ppo-gamma", type=FiniteFloat(min=0, max=1, min_open=True), default=_PPO_DEFAULTS.gamma,
              show_default=True, help="PPO: discount factor.")
@click.option("--ppo-gae-lambda", type=FiniteFloat(min=0, max=1), default=_PPO_DEFAULTS.gae_lambda,
              show_default=True, help="PPO: GAE lambda.")
@click.option("--ppo-clip", type=FiniteFloat(min=0, min_open=True), default=_PPO_DEFAULTS.clip_range,
              show_default=True, help="PPO: clip range of the surrogate objective.")
@click.option("--ppo-ent-coef", type=FiniteFloat(min=0), default=_PPO_DEFAULTS.ent_coef, show_default=True,
              help="PPO: entropy bonus coefficient.")
@click.option("--ppo-vf-coef", type=FiniteFloat(min=0), default=_PPO_DEFAULTS.vf_coef, show_default=True,
              help="PPO: value-loss coefficient.")
@click.option("--ppo-max-grad-norm", type=FiniteFloat(min=0, min_open=True), default=_PPO_DEFAULTS.max_grad_norm,
              show_default=True, help="PPO: gradients are clipped to this global L2 norm.")
@click.option("--ppo-reward-scale", type=FiniteFloat(min=0, min_open=True), default=_PPO_DEFAULTS.reward_scale,
              show_default=True, help="PPO: rewards are multiplied by this before GAE (reported returns are not).")
@click.option("--ppo-target-drift", type=FiniteFloat(min=0, min_open=True), default=_PPO_DEFAULTS.target_drift,
              help="PPO: scale the update sent so that the global policy drifts about this far (KL, nats) between "
                   "the worker's iterations (docs/training.md \"Drift control\") [default: off].")
@click.option("--ppo-target-kl", type=FiniteFloat(min=0, min_open=True), default=_PPO_DEFAULTS.target_kl,
              help="PPO: stop an iteration's epochs once a minibatch's approximate KL exceeds 1.5 x this "
                   "(Stable-Baselines3's target_kl) [default: never].")
@click.option("--ack-wait-ms", type=FiniteFloat(min=0), default=0.0, show_default=True,
              help="After each sent update wait at most this long for an ACK with weights before iterating again, "
                   "ms (0: no wait; PPO jobs: 100; sync training: the round cutoff).")
@click.option("--grads", "num_grads", type=click.IntRange(1, MAX_NUM_WEIGHTS), default=32, show_default=True,
              help=f"Bandit: gradient elements G per update (> {MAX_G}: in chunks with --mtu, or one jumbo frame).")
@click.option("--batch", type=click.IntRange(min=1), default=1024, show_default=True,
              help="Bandit: episodes per generated update.")
@click.option("--reward-scale", type=FiniteFloat(min=0, min_open=True), default=10.0, show_default=True,
              help="Task reward scale K (olaf.hosts.task).")
@click.option("--sigma", type=FiniteFloat(min=0, min_open=True), default=0.1, show_default=True,
              help="Exploration noise of the Gaussian policy.")
@click.option("--task-seed", type=int, default=0, show_default=True,
              help="Seed of the task's target; the same for all workers of a training job.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of this worker's RNGs (initial weights, episodes, jitter, transmission draws).")
@click.option("--tc/--no-tc", "tc", default=False, show_default=True,
              help="Transmission control of paper §5.")
@click.option("--tc-delta-t-ms", type=FiniteFloat(min=0, min_open=True), default=400.0, show_default=True,
              help="Timer threshold Δ̄_T, ms.")
@click.option("--tc-v-per-s", type=FiniteFloat(min=0), default=2.5, show_default=True,
              help="Slope v of f(Δ̂) = v·(Δ̂ − Δ̄_T), per second (1/Δ̄_T = 2.5 for 400 ms).")
@click.option("--tc-reading", type=click.Choice(READINGS), default=READINGS[0], show_default=True,
              help="probabilistic: paper §5, every update draws; backoff: §6, a skipped draw silences the worker "
                   "until its next ACK or Δ̄_T.")
@click.option("--tc-q-max", type=click.IntRange(min=1),
              help="Use this Q_max instead of the queue size reported in ACKs.")
@click.option("--cluster-id", type=click.IntRange(0, 0xFFFF),
              help="Cluster id written in the header (an Olaf switch overwrites it); also tells the report "
                   "which cluster this worker belongs to.")
@click.option("--worker-id", type=click.IntRange(0, 0xFFFF), help="Worker id written in the header (as --cluster-id).")
@click.option("--init-retry-ms", type=FiniteFloat(min=0, min_open=True), default=INIT_RETRY_S * 1000,
              show_default=True,
              help="First delay before the INIT's missing chunks are sent again, ms; later repetitions back off "
                   f"exponentially up to {INIT_RETRY_MAX_S:g} s, each delay times a random factor in "
                   f"[1, {INIT_RETRY_RANDOM_FACTOR:g}), until every slice of the global model has come back.")
@click.option("--linger-ms", type=FiniteFloat(min=0), default=500.0, show_default=True,
              help="Keep receiving ACKs this long after the last update.")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="Directory for NAME.jsonl (log) and NAME.summary.json.")
@click.option("--name", help="File name stem of the log and summary [default: worker-<bind IP>].")
def worker_cmd(**params: Any) -> None:
    """A DRL worker: sends Olaf updates to the PS, receives ACKs, optional transmission control.

    Stops at the end of its schedule or on SIGTERM/SIGINT (log flushed, summary
    written, exit 0).
    """
    ctx = click.get_current_context()
    explicit = {p for p in ("period_ms", "jitter_ms", "burst", "num_grads", "batch", "reward_scale", "sigma", "task_seed")
                if ctx.get_parameter_source(p) is click.core.ParameterSource.COMMANDLINE}
    cfg = worker_config(params, explicit)
    bind_ip = cfg.bind_ip
    try:
        s = _run_until_signal(lambda stop: Worker(cfg, stop), f"worker ({bind_ip}:{cfg.ack_port})")
    except (StartFileError, TaskFailed, TaskUnavailable) as e:
        raise click.ClickException(str(e)) from None
    except ValueError as e:  # EnvError, ModelTooLarge: the task cannot be built from these options
        raise click.UsageError(f"{e} (options --task, --env, --hidden, --mtu)") from None
    click.echo(f"{cfg.name}: generated {s['generated']}, sent {s['sent']}, skipped {s['skipped']}, "
               f"acks {s['acks']} ({s['stop_reason']}); log {cfg.log_path}", err=True)


def worker_config(params: dict[str, Any], explicit: frozenset[str] | set[str] = frozenset()) -> WorkerConfig:
    """The :class:`WorkerConfig` that ``olaf worker`` options ``params`` (click parameter
    names) describe; ``explicit`` names the options given on the command line.

    Raises click.UsageError / click.BadParameter naming the option at fault.
    """
    p = dict(params)
    try:
        bind_ip, ack_port = parse_hostport(p["bind_ip"], ACK_PORT)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--bind") from None
    trace_ms = None
    if p["trace_file"] is not None:
        periodic = {"period_ms", "jitter_ms", "burst"}
        if explicit & periodic:
            given = " and ".join(f"--{o.replace('_', '-')}" for o in sorted(explicit & periodic))
            raise click.UsageError(f"--trace replaces {given}; give one or the other.")
        try:
            trace_ms = load_trace(p["trace_file"])
        except TraceError as e:
            raise click.BadParameter(str(e), param_hint="--trace") from None
    elif p["duration_s"] is None and p["max_updates"] is None:
        raise click.UsageError("say how long to run: --duration SECONDS or --updates N (or use --trace FILE).")
    bandit_only = explicit & {"num_grads", "batch", "reward_scale", "sigma", "task_seed"}
    if p.get("task_kind", "bandit") == "ppo" and bandit_only:
        given = ", ".join(f"--{o.replace('_', '-').replace('num-grads', 'grads')}" for o in sorted(bandit_only))
        raise click.UsageError(f"{given}: bandit options; with --task ppo the model size is the network's "
                               "(--hidden) and the batch is --ppo-n-steps x --ppo-n-envs.")
    if p["start_file"] is not None and p["start_at_ns"] is not None:
        raise click.UsageError("--start-file and --start-at-ns both set the start; give one of them.")
    try:
        schedule = ScheduleSpec(period_ms=p["period_ms"], jitter_ms=p["jitter_ms"], burst=p["burst"],
                                phase_ns=p["phase_ns"], trace_ms=trace_ms, trace_scale=p["trace_scale"],
                                trace_path=p["trace_file"], duration_s=p["duration_s"], max_updates=p["max_updates"])
    except ValueError as e:
        raise click.UsageError(f"{e} (options --period-ms, --jitter-ms, --burst, --trace-scale)") from None
    try:
        ppo = PPOTaskSpec(env_id=p["env_id"], update=p["update_kind"], apply_locally=p["apply_locally"],
                          mtu=MTU if p["mtu"] is None else p["mtu"], learner=p["learner"],
                          ppo=PPOConfig(hidden=p["hidden"], **{f: p[o] for o, f in _PPO_OPTIONS.items()}))
    except ValueError as e:
        raise click.UsageError(f"{e} (options --ppo-*)") from None
    ps_ip, ps_port = p["ps_addr"]
    return WorkerConfig(
        ps_ip=ps_ip, ps_port=ps_port, bind_ip=bind_ip, ack_port=ack_port, schedule=schedule, task_kind=p["task_kind"], ppo=ppo,
        ack_wait_ms=p["ack_wait_ms"], mtu=None if p["task_kind"] == "ppo" else p["mtu"],
        task=TaskParams(num_weights=p["num_grads"], batch=p["batch"], reward_scale=p["reward_scale"],
                        sigma=p["sigma"], task_seed=p["task_seed"]),
        tx=TxParams(enabled=p["tc"], delta_t_ms=p["tc_delta_t_ms"], v_per_s=p["tc_v_per_s"], q_max=p["tc_q_max"],
                    reading=p["tc_reading"]),
        seed=p["seed"], cluster_id=p["cluster_id"], worker_id=p["worker_id"], start_at_ns=p["start_at_ns"],
        start_file=p["start_file"], init_retry_ms=p["init_retry_ms"], linger_ms=p["linger_ms"],
        out_dir=p["out_dir"], name=p["name"] or f"worker-{bind_ip}")


@click.command("ps")
@click.option("--bind", "bind_addr", default="0.0.0.0", show_default=True, callback=_hostport,
              help="Listen address IP[:PORT] for updates (port 50100 by default).")
@click.option("--lr", type=FiniteFloat(min=0, min_open=True), default=0.001, show_default=True,
              help="Learning rate γ of the step (paper §2.1: w ← w + γ·g_a).")
@click.option("--lr-final", type=FiniteFloat(min=0, min_open=True),
              help="Let γ fall linearly to this over --lr-decay-updates worker updates [default: constant].")
@click.option("--lr-decay-updates", type=click.IntRange(min=1),
              help="Worker updates (Σ count of applied updates) over which γ falls to --lr-final.")
@click.option("--step", type=click.Choice([s.value for s in Step]), default=Step.PAPER.value, show_default=True,
              help="Optimizer step: paper (averaged gradient g_a = avg(g_a, g), paper §2.1), sgd (w ← w + γ·g) "
                   "or adam.")
@click.option("--reward-gate/--no-reward-gate", "gate", default=None,
              help="Apply an update only if its mean reward beats the global reward (paper §2.1) "
                   "[default: on for --step paper, off otherwise].")
@click.option("--mode", type=click.Choice([m.value for m in Mode]), default=Mode.ASYNC.value, show_default=True,
              help="Training mode (paper Fig. 2): async = apply and ACK every update at once; async_with_aggr = "
                   "aggregate every --aggr-k updates or --aggr-t-ms, then ACK every cluster; sync = rounds of "
                   "--sync-workers updates, then ACK every cluster; stellaris = aggregate until the window's mean "
                   "staleness is at most beta_k = max(--beta-min, delta_max * --stellaris-decay^k) (Stellaris Eq. 3, "
                   "rounds of --round-updates worker updates), then ACK every cluster.")
@click.option("--aggr-k", type=click.IntRange(min=1), default=8, show_default=True,
              help="async_with_aggr: worker updates per aggregate.")
@click.option("--aggr-t-ms", type=FiniteFloat(min=0, min_open=True), default=100.0, show_default=True,
              help="async_with_aggr: flush a window this long after its first update at the latest, ms.")
@click.option("--sync-workers", type=click.IntRange(min=1),
              help="sync: worker updates per round (the number of workers); required with --mode sync.")
@click.option("--round-timeout-ms", type=FiniteFloat(min=0, min_open=True), default=5000.0, show_default=True,
              help="sync: close a round this long after its first update even if updates are missing; "
                   "stellaris: flush a window this long after its first update at the latest, ms.")
@click.option("--round-updates", type=click.IntRange(min=1),
              help="stellaris: worker updates per round (the number of workers); required with --mode stellaris.")
@click.option("--stellaris-decay", type=FiniteFloat(min=0, min_open=True, max=1), default=STELLARIS_DECAY,
              show_default=True, help="stellaris: d of Eq. 3 (1: pure asynchrony after the first round).")
@click.option("--beta-min", type=FiniteFloat(min=0), default=1.0, show_default=True,
              help="stellaris: the floor of the staleness threshold beta_k (docs/hosts.md).")
@click.option("--staleness-v", "staleness_root", type=click.IntRange(min=1),
              help="Scale each update by 1/staleness^(1/V) (Stellaris Eq. 4; 3 in its evaluation) [default: off].")
@click.option("--worker-ack-wait-ms", type=FiniteFloat(min=0), default=0.0, show_default=True,
              help="The workers' --ack-wait-ms: an ACK sent to a worker this soon after its update is the base "
                   "of its next one (the staleness estimate, docs/hosts.md).")
@click.option("--ack-each-worker", is_flag=True,
              help="Aggregating modes: answer every worker heard from, not one per cluster (no Olaf switch in "
                   "front to multicast a cluster's ACK: loopback).")
@click.option("--duration", "duration_s", type=FiniteFloat(min=0, min_open=True),
              help="Stop after this many seconds [default: run until SIGTERM/SIGINT].")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="Directory for NAME.jsonl (log) and NAME.summary.json.")
@click.option("--name", default="ps", show_default=True, help="File name stem of the log and summary.")
@click.option("--flush-ms", type=FiniteFloat(min=0), default=500.0, show_default=True,
              help="Flush the log at least this often.")
@click.option("--rcvbuf", type=click.IntRange(min=4096), default=SOCKET_RCVBUF, show_default=True,
              help="Socket receive buffer, bytes (capped by net.core.rmem_max).")
@click.option("--allow", "allow", multiple=True, metavar="IP",
              help="Accept updates and INITs only from these addresses (repeat; default: any).")
@click.option("--init-from", metavar="IP", help="Only this worker's INIT sets the initial weights (default: the first).")
@click.option("--max-abs-reward", type=FiniteFloat(min=0, min_open=True), default=DEFAULT_MAX_ABS_REWARD,
              show_default=True, help="Reject updates whose mean reward exceeds this in magnitude.")
@click.option("--gen-ts-slack-s", type=FiniteFloat(min=0), default=DEFAULT_GEN_TS_SLACK_S, show_default=True,
              help="Reject updates whose gen_ts lies this far outside [PS start, now], s.")
@click.option("--checkpoint-s", type=FiniteFloat(min=0, min_open=True),
              help="Write NAME.checkpoint.npz (weights and optimizer state) this often, s [default: only "
                   "when stopping].")
@click.option("--snapshot-s", type=FiniteFloat(min=0, min_open=True),
              help="Also keep a checkpoint every this many seconds as NAME.snapshots/<k>.npz (an evaluator's "
                   "fixed schedule) [default: none].")
@click.option("--resume", "resume_from", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Continue from a checkpoint (NAME.checkpoint.npz of an earlier PS).")
@click.option("--num-params", type=click.IntRange(min=1),
              help="The model's parameter count P: with --mtu it fixes the chunks K every worker must send "
                   "(docs/hosts.md) [default: one message per update, P from the first INIT].")
@click.option("--mtu", "ps_mtu", type=click.IntRange(68, IPV4_MAX_LEN), default=MTU, show_default=True,
              help="IPv4 MTU of the links, with --num-params: K = ceil(P / L_max(MTU)) chunks per update.")
@click.option("--progress-s", type=FiniteFloat(min=0), default=PROGRESS_S, show_default=True,
              help="Print a progress line (updates, accepted, refused by reason, INITs) this often, s; 0: only "
                   "the summary line at the end.")
def ps_cmd(progress_s: float, **params: Any) -> None:
    """The parameter server: reward-gated averaged-gradient updates (or SGD/Adam), ACKs with the global weights.

    Stops after --duration or on SIGTERM/SIGINT (log flushed, summary written, exit 0).
    """
    cfg = ps_config(params)
    t0 = time.monotonic()

    def progress(host: ParameterServer) -> None:
        if progress_s > 0:
            host.progress_s = progress_s
            host.on_progress = lambda s: click.echo(f"ps: {time.monotonic() - t0:.0f} s: {ps_summary_line(s)}", err=True)

    try:
        s = _run_until_signal(lambda stop: ParameterServer(cfg, stop), f"PS ({cfg.bind_ip}:{cfg.port})", progress)
    except CheckpointError as e:  # includes a checkpoint of another model size
        raise click.BadParameter(str(e), param_hint="--resume") from None
    click.echo(f"ps: {ps_summary_line(s)}; log {cfg.log_path}", err=True)


REFUSALS = (("rejected", "rejected by the reward gate"), ("wrong_size", "of another model size"),
            ("before_init", "before the model's INIT"), ("untrusted", "untrusted"))
"""The summary counters of updates the PS did not apply, as its console line names them."""


def ps_summary_line(s: dict[str, Any]) -> str:
    """The PS's summary (:class:`~olaf.rundir.records.PsSummary` as a dict) in one line: worker updates
    apart from the messages (chunks) that carried them, what was applied, each reason an update was
    not (only those that happened: reward gate, model size, before INIT, untrusted with its reasons),
    INITs, malformed datagrams, the refusals sent by reason (docs/protocol.md "Refusal") and why the
    PS stopped."""
    k = s.get("num_chunks") or 1
    worker_updates = sum(c.get("worker_updates", 0) for c in s.get("per_cluster", {}).values())
    head = (f"{worker_updates} worker updates in {s['updates']} chunk messages ({k} per update), of them"
            if k > 1 else f"{s['updates']} updates, of them")
    parts = [f"{s['accepted']} accepted"]
    for key, what in REFUSALS:
        if s.get(key):
            reasons = s.get("untrusted_reasons") if key == "untrusted" else s.get("wrong_size_reasons")
            detail = f": {', '.join(f'{r} {n}' for r, n in sorted(reasons.items()))}" if reasons and key in (
                "untrusted", "wrong_size") else ""
            parts.append(f"{s[key]} {what}{detail}")
    refused = s.get("refusal_reasons") or {}
    answered = (f"; {s['refusals_sent']} refusals sent ({', '.join(f'{r} {n}' for r, n in sorted(refused.items()))})"
                if s.get("refusals_sent") else "")
    return (f"{head} {'; '.join(parts)}; {s['inits']} INIT, {s['malformed']} malformed{answered} "
            f"({s['stop_reason']})")


def ps_config(params: dict[str, Any]) -> PsConfig:
    """The :class:`PsConfig` that ``olaf ps`` options ``params`` (click parameter names) describe."""
    p = params
    try:
        modes = ModeParams(mode=Mode(p["mode"]), aggr_k=p["aggr_k"], aggr_t_ms=p["aggr_t_ms"],
                           sync_workers=p["sync_workers"], round_timeout_ms=p["round_timeout_ms"],
                           round_updates=p["round_updates"], stellaris_decay=p["stellaris_decay"],
                           beta_min=p["beta_min"])
    except ValueError as e:
        raise click.UsageError(f"{e} (options --mode, --aggr-k, --aggr-t-ms, --sync-workers, --round-updates, "
                               f"--stellaris-decay, --beta-min)") from None
    for ip in (*p["allow"], *([p["init_from"]] if p["init_from"] else [])):
        try:
            ipaddress.IPv4Address(ip)
        except ValueError:
            raise click.BadParameter(f"{ip!r} is not an IPv4 address", param_hint="--allow / --init-from") from None
    trust = TrustPolicy(allowed_sources=frozenset(p["allow"]) if p["allow"] else None, init_from=p["init_from"],
                        max_abs_reward=p["max_abs_reward"], gen_ts_slack_s=p["gen_ts_slack_s"])
    if (p["lr_final"] is None) != (p["lr_decay_updates"] is None):
        raise click.UsageError("a step-size schedule needs both --lr-final and --lr-decay-updates")
    try:
        return PsConfig(bind_ip=p["bind_addr"][0], port=p["bind_addr"][1], lr=p["lr"], step=p["step"],
                        gate=p["gate"], lr_final=p["lr_final"], lr_decay_updates=p["lr_decay_updates"],
                        modes=modes, duration_s=p["duration_s"], out_dir=p["out_dir"], name=p["name"],
                        flush_s=p["flush_ms"] / 1000, rcvbuf=p["rcvbuf"], trust=trust,
                        checkpoint_s=p["checkpoint_s"], snapshot_s=p["snapshot_s"], resume_from=p["resume_from"],
                        num_params=p["num_params"],
                        mtu=p["ps_mtu"], staleness_root=p["staleness_root"], ack_each_worker=p["ack_each_worker"],
                        worker_ack_wait_ms=p["worker_ack_wait_ms"])
    except ChunkingError as e:
        raise click.BadParameter(str(e), param_hint="--num-params/--mtu") from None

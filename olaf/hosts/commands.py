"""Click commands ``olaf worker`` and ``olaf ps`` (registered in :mod:`olaf.cli`)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Optional

import click

from olaf.cli import FiniteFloat
from olaf.constants import MAX_G, MAX_G_JUMBO, UPDATE_PORT
from olaf.hosts.addr import parse_hostport
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.hosts.runlog import StartFileError, stop_on_signals
from olaf.hosts.schedule import ScheduleSpec, TraceError, load_trace
from olaf.hosts.task import TaskParams
from olaf.hosts.txcontrol import TxParams
from olaf.hosts.worker import Worker, WorkerConfig


def _hostport(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[tuple[str, int]]:
    if value is None:
        return None
    try:
        return parse_hostport(value, UPDATE_PORT)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from None


def _run_until_signal(make: Callable[[threading.Event], Any], what: str) -> dict[str, Any]:
    """Create a host (``make(stop)`` binds its socket) with SIGTERM/SIGINT setting ``stop``,
    run it and return its summary; a bind error exits 1 with a message naming the fix."""
    stop = threading.Event()
    stop_on_signals(stop)
    try:
        host = make(stop)
    except OSError as e:
        raise click.ClickException(
            f"cannot bind the {what} socket: {e.strerror}. Check that the address is one of this "
            f"host's (e.g. `ip addr`) and that no other process uses the port.") from None
    return host.run()


@click.command("worker")
@click.option("--ps", "ps_addr", required=True, callback=_hostport,
              help="PS address IP[:PORT] (port 50100 by default).")
@click.option("--bind", "bind_ip", required=True,
              help="This worker's IPv4 address; ACKs arrive on UDP 50101 there, updates leave from it.")
@click.option("--period-ms", type=FiniteFloat(), default=100.0, show_default=True,
              help="Mean time between generated updates, ms.")
@click.option("--jitter-ms", type=FiniteFloat(), default=0.0, show_default=True,
              help="Each gap is period ± U(0, jitter) ms; 0 <= jitter <= period.")
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
@click.option("--grads", "num_grads", type=click.IntRange(1, MAX_G_JUMBO), default=32, show_default=True,
              help=f"Gradient elements G per update (> {MAX_G} needs 9000 B jumbo frames).")
@click.option("--batch", type=click.IntRange(min=1), default=1024, show_default=True,
              help="Episodes per generated update.")
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
@click.option("--tc-q-max", type=click.IntRange(min=1),
              help="Use this Q_max instead of the queue size reported in ACKs.")
@click.option("--cluster-id", type=click.IntRange(0, 0xFFFF),
              help="Cluster id written in the header (an Olaf switch overwrites it); also tells the report "
                   "which cluster this worker belongs to.")
@click.option("--worker-id", type=click.IntRange(0, 0xFFFF), help="Worker id written in the header (as --cluster-id).")
@click.option("--init-retry-ms", type=FiniteFloat(min=0, min_open=True), default=1000.0, show_default=True,
              help="Repeat the INIT update this often until the PS acknowledges a model.")
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
    explicit = {p for p in ("period_ms", "jitter_ms")
                if ctx.get_parameter_source(p) is click.core.ParameterSource.COMMANDLINE}
    cfg = worker_config(params, explicit)
    bind_ip = cfg.bind_ip
    try:
        s = _run_until_signal(lambda stop: Worker(cfg, stop), f"worker ({bind_ip}:{cfg.ack_port})")
    except StartFileError as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"{cfg.name}: generated {s['generated']}, sent {s['sent']}, skipped {s['skipped']}, "
               f"acks {s['acks']} ({s['stop_reason']}); log {cfg.log_path}", err=True)


def worker_config(params: dict[str, Any], explicit: frozenset[str] | set[str] = frozenset()) -> WorkerConfig:
    """The :class:`WorkerConfig` that ``olaf worker`` options ``params`` (click parameter
    names) describe; ``explicit`` names the options given on the command line.

    Raises click.UsageError / click.BadParameter naming the option at fault.
    """
    p = dict(params)
    try:
        bind_ip, _ = parse_hostport(p["bind_ip"], 0)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--bind") from None
    trace_ms = None
    if p["trace_file"] is not None:
        if explicit & {"period_ms", "jitter_ms"}:
            given = " and ".join(f"--{o.replace('_', '-')}" for o in sorted(explicit & {"period_ms", "jitter_ms"}))
            raise click.UsageError(f"--trace replaces {given}; give one or the other.")
        try:
            trace_ms = load_trace(p["trace_file"])
        except TraceError as e:
            raise click.BadParameter(str(e), param_hint="--trace") from None
    elif p["duration_s"] is None and p["max_updates"] is None:
        raise click.UsageError("say how long to run: --duration SECONDS or --updates N (or use --trace FILE).")
    if p["start_file"] is not None and p["start_at_ns"] is not None:
        raise click.UsageError("--start-file and --start-at-ns both set the start; give one of them.")
    try:
        schedule = ScheduleSpec(period_ms=p["period_ms"], jitter_ms=p["jitter_ms"], trace_ms=trace_ms,
                                trace_scale=p["trace_scale"], duration_s=p["duration_s"],
                                max_updates=p["max_updates"])
    except ValueError as e:
        raise click.UsageError(f"{e} (options --period-ms, --jitter-ms, --trace-scale)") from None
    ps_ip, ps_port = p["ps_addr"]
    return WorkerConfig(
        ps_ip=ps_ip, ps_port=ps_port, bind_ip=bind_ip, schedule=schedule,
        task=TaskParams(num_weights=p["num_grads"], batch=p["batch"], reward_scale=p["reward_scale"],
                        sigma=p["sigma"], task_seed=p["task_seed"]),
        tx=TxParams(enabled=p["tc"], delta_t_ms=p["tc_delta_t_ms"], v_per_s=p["tc_v_per_s"], q_max=p["tc_q_max"]),
        seed=p["seed"], cluster_id=p["cluster_id"], worker_id=p["worker_id"], start_at_ns=p["start_at_ns"],
        start_file=p["start_file"], init_retry_ms=p["init_retry_ms"], linger_ms=p["linger_ms"],
        out_dir=p["out_dir"], name=p["name"] or f"worker-{bind_ip}")


@click.command("ps")
@click.option("--bind", "bind_addr", default="0.0.0.0", show_default=True, callback=_hostport,
              help="Listen address IP[:PORT] for updates (port 50100 by default).")
@click.option("--lr", type=FiniteFloat(min=0, min_open=True), default=0.001, show_default=True,
              help="Learning rate γ of w ← w + γ·g_a (paper §2.1).")
@click.option("--duration", "duration_s", type=FiniteFloat(min=0, min_open=True),
              help="Stop after this many seconds [default: run until SIGTERM/SIGINT].")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="Directory for NAME.jsonl (log) and NAME.summary.json.")
@click.option("--name", default="ps", show_default=True, help="File name stem of the log and summary.")
@click.option("--flush-ms", type=FiniteFloat(min=0), default=500.0, show_default=True,
              help="Flush the log at least this often.")
@click.option("--rcvbuf", type=click.IntRange(min=4096), default=4 << 20, show_default=True,
              help="Socket receive buffer, bytes (capped by net.core.rmem_max).")
def ps_cmd(**params: Any) -> None:
    """The asynchronous parameter server: reward-gated averaged-gradient updates, ACK with the global weights.

    Stops after --duration or on SIGTERM/SIGINT (log flushed, summary written, exit 0).
    """
    cfg = ps_config(params)
    s = _run_until_signal(lambda stop: ParameterServer(cfg, stop), f"PS ({cfg.bind_ip}:{cfg.port})")
    click.echo(f"ps: {s['updates']} updates ({s['accepted']} accepted), {s['inits']} INIT, "
               f"{s['malformed']} malformed ({s['stop_reason']}); log {cfg.log_path}", err=True)


def ps_config(params: dict[str, Any]) -> PsConfig:
    """The :class:`PsConfig` that ``olaf ps`` options ``params`` (click parameter names) describe."""
    p = params
    return PsConfig(bind_ip=p["bind_addr"][0], port=p["bind_addr"][1], lr=p["lr"], duration_s=p["duration_s"],
                    out_dir=p["out_dir"], name=p["name"], flush_s=p["flush_ms"] / 1000, rcvbuf=p["rcvbuf"])

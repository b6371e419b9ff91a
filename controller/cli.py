"""``olafctl``: regroup clusters and tune the queue on running Olaf switches.

The network (switches, hosts, links) comes from ``--network`` (``make run``
writes ``results/latest/network.yaml``); the current cluster membership is
read from the switches themselves, so ``olafctl`` works whoever changed them
last. Every command checks its arguments before writing anything, applies the
change to every switch and returns when the switches hold it; it then records
the new membership in the network file.
"""

from __future__ import annotations

import fcntl
import functools
import math
import os
import time
from pathlib import Path
from typing import Any, Optional

import click
from rich.console import Console
from rich.table import Table

from olaf.clitypes import FiniteFloat, logging_options, setup_logging
from olaf.constants import SEGMENTS, Decision
from olaf.controller import admission
from olaf.controller import config as cfgmod
from olaf.controller.config import ConfigError
from olaf.controller.controller import OlafController, RegroupFailed
from olaf.controller.p4rt import P4RuntimeWriteError, SwitchUnavailable
from olaf.controller.tm import ThriftError
from olaf.fixedpoint import reward_to_fixed
from olaf.paths import build_dir
from olaf.rundir import REGROUPS_FILE
from olaf.rundir.jsonl import write_jsonl
from olaf.rundir.records import RegroupRecord

DEFAULT_NETWORK = Path("results/latest/network.yaml")


class CommandError(click.ClickException):
    """Bad input: nothing was written."""


def program_file(explicit: Optional[Path], network: Path, name: str) -> Path:
    """``--p4info``/``--bmv2-json`` if given, else the copy ``olaf run`` keeps next to the
    network file, else ``build/`` of this checkout."""
    if explicit is not None:
        return explicit
    beside = network.parent / name
    return beside if beside.exists() else build_dir() / name


class NetworkLock:
    """One olafctl at a time per network: an exclusive ``flock`` on ``.olafctl.lock`` next
    to the network file (released by the kernel if olafctl dies)."""

    def __init__(self, network: Path):
        self.path = network.parent / ".olafctl.lock"
        self.fd: Optional[int] = None

    def acquire(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            raise CommandError(f"cannot open {self.path}: {e.strerror} (run olafctl as the user who owns "
                               f"{self.path.parent}, or with sudo)") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise CommandError(f"another olafctl (pid {holder}) is changing this network; wait for it to "
                               "finish and try again") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Ctx:
    """The running network: its deployment file and a controller attached to every switch."""

    def __init__(self, network: Path, p4info: Optional[Path], bmv2_json: Optional[Path], election_id: int,
                 rpc_timeout_s: float = 10.0):
        self.network = network
        self.rpc_timeout_s = rpc_timeout_s
        if not network.exists():
            raise CommandError(f"{network} not found: start a network with `make run DURATION=0` "
                               "or pass --network FILE")
        self.lock = NetworkLock(network)
        self.lock.acquire()
        try:
            self._attach(network, p4info, bmv2_json, election_id)
        except BaseException:
            self.close()
            raise

    def _attach(self, network: Path, p4info: Optional[Path], bmv2_json: Optional[Path], election_id: int) -> None:
        try:
            self.d = cfgmod.load(network)
        except ConfigError as e:
            raise CommandError(f"{network}: {e}") from None
        p4info = program_file(p4info, network, "olaf.p4info.txt")
        if not p4info.exists():
            raise CommandError(f"P4Info {p4info} not found: pass --p4info FILE or run `make build`")
        self.ctl = OlafController(self.d, p4info, program_file(bmv2_json, network, "olaf.json"),
                                  election_id=(0, election_id), rpc_timeout_s=self.rpc_timeout_s)
        try:
            for name in self.ctl.attach(timeout_s=5):
                click.echo(f"{name} had no pipeline (restarted?): pushed and reprogrammed it", err=True)
        except SwitchUnavailable as e:
            raise CommandError(f"{e} — is the network running?") from None
        self.ctl.d = self.d.with_clusters(self.live_clusters())

    def live_clusters(self) -> dict[int, tuple[str, ...]]:
        """Membership as the first switch holds it (:meth:`OlafController.live_membership`)."""
        try:
            return self.ctl.live_membership()
        except ConfigError as e:
            raise CommandError(f"{self.network}: {e.message}") from None

    def regroup(self, clusters: dict[int, tuple[str, ...]]) -> None:
        try:
            changes = self.ctl.regroup(clusters)
        except ConfigError as e:
            raise CommandError(str(e)) from None
        except RegroupFailed as e:
            raise click.ClickException(f"regroup failed, membership unchanged: {e}") from None
        for name, ch in changes.items():
            click.echo(f"{name}: {ch}")
        cfgmod.save(self.ctl.d, self.network)
        # For the run's report: from now on, each worker's updates count for its new cluster.
        record = RegroupRecord(t_ns=time.time_ns(), clusters={str(c): list(ws) for c, ws in self.ctl.d.clusters.items()})
        write_jsonl(self.network.parent / REGROUPS_FILE, [record], append=True)

    def close(self) -> None:
        if hasattr(self, "ctl"):
            self.ctl.close()
        self.lock.release()


class LazyCtx:
    """Holds the group's options; connects to the switches only when a command runs (so
    ``olafctl CMD --help`` works without a network or a build)."""

    def __init__(self, *args: Any):
        self.args = args
        self.ctx: Optional[Ctx] = None

    def get(self) -> Ctx:
        if self.ctx is None:
            self.ctx = Ctx(*self.args)
        return self.ctx

    def close(self) -> None:
        if self.ctx is not None:
            self.ctx.close()


def pass_ctx(f):
    """Decorator: call the command with the connected :class:`Ctx` as first argument."""
    @click.pass_obj
    @functools.wraps(f)
    def wrapper(lazy: LazyCtx, *args, **kwargs):
        return f(lazy.get(), *args, **kwargs)
    return wrapper


class _Olafctl(click.Group):
    """Turns switch-side failures of any command into one-line errors (exit 1), also when the
    group is invoked in-process (tests, other tools) rather than through :func:`run`."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (SwitchUnavailable, P4RuntimeWriteError, ThriftError) as e:
            raise click.ClickException(str(e)) from None


@click.group(cls=_Olafctl, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--network", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_NETWORK,
              show_default=True, help="Deployment file of the running network.")
@click.option("--p4info", type=click.Path(dir_okay=False, path_type=Path),
              help="P4Info of the running program [default: the run's copy next to --network, else build/].")
@click.option("--bmv2-json", type=click.Path(dir_okay=False, path_type=Path),
              help="BMv2 JSON, pushed only to a switch that lost its pipeline [default: as --p4info].")
@click.option("--election-id", type=click.IntRange(min=1), default=2, show_default=True,
              help="P4Runtime election id; above the running controller's (1) so olafctl may write.")
@click.option("--rpc-timeout", type=FiniteFloat(min=0, min_open=True), default=10.0, show_default=True,
              help="Deadline of every P4Runtime call, s (a stalled switch is an error, not a hang).")
@logging_options
@click.pass_context
def main(ctx: click.Context, network: Path, p4info: Optional[Path], bmv2_json: Optional[Path], election_id: int,
         rpc_timeout: float, verbose: int, log_level: Optional[str]) -> None:
    """Regroup Olaf clusters and tune the queue at runtime."""
    setup_logging(verbose, log_level)
    ctx.obj = LazyCtx(network, p4info, bmv2_json, election_id, rpc_timeout)
    ctx.call_on_close(ctx.obj.close)


def _worker_arg(c: Ctx, worker: str) -> Optional[int]:
    """Check WORKER is a worker host of the network; return its cluster (None: in none)."""
    try:
        c.d.worker(worker)
    except ConfigError as e:
        raise CommandError(str(e)) from None
    return c.ctl.d.cluster_of(worker)


def _cluster_arg(c: Ctx, cluster: int, must_exist: bool = True) -> None:
    if must_exist and cluster not in c.ctl.d.clusters:
        raise CommandError(f"cluster {cluster} does not exist (clusters: "
                           f"{', '.join(map(str, sorted(c.ctl.d.clusters))) or 'none'})")


@main.command("clusters")
@pass_ctx
def list_clusters(c: Ctx) -> None:
    """List clusters, their workers and live per-cluster counters on every switch."""
    counters = c.ctl.cluster_counters()
    con = Console()
    for sw, per in counters.items():
        t = Table(title=f"{sw}: clusters")
        t.add_column("cluster", justify="right")
        t.add_column("workers")
        for d in Decision:
            t.add_column(d.label, justify="right")
        t.add_column("departures", justify="right")
        for cid, ws in sorted(c.ctl.d.clusters.items()):
            k = per[cid]
            t.add_row(str(cid), " ".join(f"{w}({c.d.hosts[w].worker_id})" for w in ws),
                      *(str(k.decisions[d.label]) for d in Decision), str(k.departures))
        con.print(t)
    unassigned = [n for n, h in c.d.hosts.items() if h.worker_id is not None and c.ctl.d.cluster_of(n) is None]
    if unassigned:
        con.print(f"workers in no cluster (their updates bypass the queue): {' '.join(unassigned)}")


@main.command()
@click.argument("worker")
@click.option("--to", "cluster", type=int, required=True, help="Destination cluster id.")
@pass_ctx
def move(c: Ctx, worker: str, cluster: int) -> None:
    """Move WORKER to another cluster (its next update aggregates there; ACKs follow)."""
    src = _worker_arg(c, worker)
    if src is None:
        raise CommandError(f"{worker} is in no cluster; use add-worker")
    _cluster_arg(c, cluster)
    if src == cluster:
        raise CommandError(f"{worker} is already in cluster {cluster}")
    new = {k: tuple(w for w in ws if w != worker) for k, ws in c.ctl.d.clusters.items()}
    new[cluster] = new[cluster] + (worker,)
    c.regroup(new)
    click.echo(f"moved {worker} from cluster {src} to cluster {cluster}")


def _admit(c: Ctx, new: dict[int, tuple[str, ...]], changed: int, force: bool) -> None:
    """Admission control (controller/admission.py): refuse, naming why, unless --force."""
    try:
        res = admission.check(c.ctl.d, new, changed)
    except ImportError as e:
        raise CommandError(f"admission control needs the verifier ({e}); install the 'verify' extra "
                           "(`make setup`) or pass --force") from None
    if res.admitted:
        click.echo(f"admission: {res.verdict}: {res.summary}", err=True)
        return
    if force:
        click.echo(f"admission: {res.verdict} ({res.summary}); applied anyway (--force)", err=True)
        return
    raise CommandError(f"refused by admission control ({res.verdict}, {res.solver_time_s:.1f} s): {res.summary}. "
                       "Nothing was written; --force applies it anyway.")


@main.command("add-worker")
@click.argument("worker")
@click.option("--cluster", type=int, required=True)
@click.option("--force", is_flag=True, help="Apply even if admission control refuses.")
@pass_ctx
def add_worker(c: Ctx, worker: str, cluster: int, force: bool) -> None:
    """Add a worker host that is in no cluster to CLUSTER (checked by admission control)."""
    src = _worker_arg(c, worker)
    if src is not None:
        raise CommandError(f"{worker} is already in cluster {src}; use move")
    _cluster_arg(c, cluster)
    new = dict(c.ctl.d.clusters)
    new[cluster] = new[cluster] + (worker,)
    _admit(c, new, cluster, force)
    c.regroup(new)


@main.command("remove-worker")
@click.argument("worker")
@pass_ctx
def remove_worker(c: Ctx, worker: str) -> None:
    """Remove WORKER from its cluster (its updates then bypass the queue)."""
    if _worker_arg(c, worker) is None:
        raise CommandError(f"{worker} is in no cluster")
    c.regroup({k: tuple(w for w in ws if w != worker) for k, ws in c.ctl.d.clusters.items()})


@main.command("create-cluster")
@click.argument("cluster", type=int)
@click.argument("workers", nargs=-1)
@click.option("--force", is_flag=True, help="Apply even if admission control refuses.")
@pass_ctx
def create_cluster(c: Ctx, cluster: int, workers: tuple[str, ...], force: bool) -> None:
    """Create CLUSTER, optionally moving WORKERS into it (checked by admission control)."""
    if cluster in c.ctl.d.clusters:
        raise CommandError(f"cluster {cluster} already exists")
    for w in workers:
        _worker_arg(c, w)
    new = {k: tuple(w for w in ws if w not in workers) for k, ws in c.ctl.d.clusters.items()}
    new[cluster] = tuple(workers)
    _admit(c, new, cluster, force)
    c.regroup(new)


@main.command("delete-cluster")
@click.argument("cluster", type=int)
@click.option("--force", is_flag=True, help="Also remove its workers from every cluster.")
@pass_ctx
def delete_cluster(c: Ctx, cluster: int, force: bool) -> None:
    """Delete CLUSTER (must be empty unless --force)."""
    _cluster_arg(c, cluster)
    if c.ctl.d.clusters[cluster] and not force:
        raise CommandError(f"cluster {cluster} has workers {', '.join(c.ctl.d.clusters[cluster])}; "
                           "move them first or pass --force")
    c.regroup({k: ws for k, ws in c.ctl.d.clusters.items() if k != cluster})


@main.command("set-queue")
@click.option("--switch", help="Only this switch (default: all).")
@click.option("--size", type=click.IntRange(1, SEGMENTS),
              help="Queue size Q_max in segments (at least the deployment's num_chunks).")
@click.option("--reward-threshold", help="Threshold T in reward units, or 'off'.")
@click.option("--activity-window-ms", type=FiniteFloat(min=0), help="Window for active clusters, ms.")
@pass_ctx
def set_queue(c: Ctx, switch: Optional[str], size: Optional[int], reward_threshold: Optional[str],
              activity_window_ms: Optional[float]) -> None:
    """Change queue size, reward threshold or activity window at runtime (queue kept)."""
    if switch is not None and switch not in c.d.switches:
        raise CommandError(f"--switch: unknown switch {switch!r} ({', '.join(c.d.switches)})")
    changes: dict = {}
    if size is not None:
        changes["queue_size"] = size
    if reward_threshold is not None:
        if reward_threshold == "off":
            changes["reward_threshold"] = None
        else:
            try:
                t = float(reward_threshold)
            except ValueError:
                raise CommandError(f"--reward-threshold: {reward_threshold!r} is not a number or 'off'") from None
            if not math.isfinite(t) or t < 0:
                raise CommandError(f"--reward-threshold: {reward_threshold!r} must be a finite number >= 0 or 'off'")
            changes["reward_threshold"] = reward_to_fixed(t)
    if activity_window_ms is not None:
        changes["activity_window_ns"] = int(activity_window_ms * 1e6)
    if not changes:
        raise CommandError("nothing to change: give --size, --reward-threshold or --activity-window-ms")
    try:
        c.ctl.set_queue(switch, **changes)
    except ValueError as e:
        raise CommandError(str(e)) from None
    cfgmod.save(c.ctl.d, c.network)
    click.echo("queue parameters updated")


@main.command("set-bottleneck")
@click.argument("switch")
@click.option("--rate-pps", type=click.IntRange(min=0), help="Egress rate toward the PS, packets/s (0 = unlimited).")
@click.option("--depth", type=click.IntRange(min=1), help="Egress queue depth toward the PS, packets.")
@pass_ctx
def set_bottleneck(c: Ctx, switch: str, rate_pps: Optional[int], depth: Optional[int]) -> None:
    """Change the bottleneck (rate/depth of the queue toward the PS) of SWITCH."""
    if switch not in c.d.switches:
        raise CommandError(f"unknown switch {switch!r} ({', '.join(c.d.switches)})")
    if rate_pps is None and depth is None:
        raise CommandError("nothing to change: give --rate-pps or --depth")
    try:
        c.ctl.set_bottleneck(switch, rate_pps, depth)
    except ValueError as e:
        raise CommandError(str(e)) from None
    cfgmod.save(c.ctl.d, c.network)


@main.command()
@pass_ctx
def counters(c: Ctx) -> None:
    """Decision, malformed and traffic counters of every switch."""
    for name, sc in c.ctl.switches.items():
        click.echo(f"{name}: decisions {sc.counters.decisions()}")
        click.echo(f"{name}: malformed {sc.counters.malformed()}")
        click.echo(f"{name}: traffic {sc.counters.traffic()}")


def run() -> None:
    """Entry point (``olafctl``); switch-side failures end as one-line errors (exit 1)."""
    main(standalone_mode=True)


if __name__ == "__main__":
    run()

"""``olaf launch -n N [options] -- CMD ...``: a PS and N copies of a training script over loopback,
in the shape of ``torchrun``.

Each copy runs with the launch's environment (:mod:`olaf.launchenv`): its own loopback address
``127.a.b.<rank + 1>`` (Linux routes all of 127/8 to ``lo``; ``a.b`` drawn per launch so
concurrent launches do not collide), the PS at ``127.a.b.100``, its rank, cluster and worker ids
and the MTU, so a script only calls :meth:`olaf.client.OlafClient.from_env` (or passes no
address to an integration, e.g. ``OlafCallback()``). The PS (``olaf ps``, with ``--ps-arg``
options passed through) starts once the first worker has told the launcher its model's size,
with ``--num-params`` set to it; a worker with another size is refused by name.

Each worker's output lines are printed with a ``[rank]`` prefix and kept in the run directory
(``logs/rank-<i>.out``), beside the PS's log and summary (``hosts/``) and ``launch.json`` (the
command, the addresses, each rank's exit code). The launch ends when every worker has exited;
the PS is stopped then. A worker that fails stops the others (as ``torchrun`` does) and the
launch exits with its code; Ctrl-C or SIGTERM stops every worker, then the PS (exit 130).
One OpenMP/MKL thread per worker unless the caller's environment says otherwise.

Written here rather than with ``torchrun``: torchrun's rendezvous and its ``MASTER_ADDR``
contract are for torch.distributed process groups, and it has no place for a server process
that must start after the workers have reported the model's size.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Optional

import click

from olaf import launchenv as le
from olaf.client.log import ENV_LOG_DIR
from olaf.constants import MTU
from olaf.rundir.atomic import write_json
from olaf.wire import UPDATE_PORT

MAX_WORKERS = 99
"""Workers of one launch: ``127.a.b.1`` … ``127.a.b.99`` (the PS is ``.100``)."""
PS_UP_S = 60.0
"""Hang guard: the PS writes its log within this long of its start, s."""
STOP_S = 30.0
"""A process asked to stop (SIGTERM) is killed after this long, s."""


class LaunchFailed(click.ClickException):
    """The launch could not run as asked; the message says what and where its logs are."""


def _pump(stream: IO[str], prefix: str, log: IO[str], lock: threading.Lock) -> None:
    for line in iter(stream.readline, ""):
        with lock:
            log.write(line)
            log.flush()
            sys.stdout.write(f"{prefix} {line}" if line.endswith("\n") else f"{prefix} {line}\n")
            sys.stdout.flush()


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Launch:
    """One launch (module docstring): :meth:`run` returns the exit code."""

    def __init__(self, cmd: list[str], n: int, out: Path, mtu: int = MTU, ps_args: tuple[str, ...] = ()) -> None:
        if not cmd:
            raise click.UsageError("give the command to launch after `--`: olaf launch -n 3 -- python train.py")
        if not 1 <= n <= MAX_WORKERS:
            raise click.BadParameter(f"{n}: must be in 1..{MAX_WORKERS}", param_hint="-n")
        self.cmd, self.n, self.out, self.mtu, self.ps_args = cmd, n, out, mtu, ps_args
        a, b = random.randrange(32, 250), random.randrange(1, 250)
        self.net = f"127.{a}.{b}"
        self.ps_ip = f"{self.net}.100"
        self.launch_dir = out / "launch"
        self.hosts_dir, self.logs_dir = out / "hosts", out / "logs"
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def worker_env(self, rank: int) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        env.setdefault("MKL_NUM_THREADS", "1")
        env.update({le.ENV_PS: f"{self.ps_ip}:{UPDATE_PORT}", le.ENV_BIND: f"{self.net}.{rank + 1}",
                    le.ENV_RANK: str(rank), le.ENV_WORLD_SIZE: str(self.n), le.ENV_CLUSTER_ID: str(rank),
                    le.ENV_WORKER_ID: str(rank + 1), le.ENV_MTU: str(self.mtu), le.ENV_LAUNCH_DIR: str(self.launch_dir),
                    ENV_LOG_DIR: str(self.hosts_dir)})
        return env

    def run(self) -> int:
        for d in (self.launch_dir, self.hosts_dir, self.logs_dir):
            d.mkdir(parents=True, exist_ok=True)
        handler = lambda signum, frame: self._stop.set()  # noqa: E731
        old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        workers: list[subprocess.Popen[str]] = []
        ps: Optional[subprocess.Popen[str]] = None
        codes: dict[int, Optional[int]] = {}
        first_failure: Optional[tuple[int, int]] = None
        model: Optional[dict[str, int]] = None
        models: dict[int, dict[str, int]] = {}  # each rank's model size, read once when its file appears
        try:
            for rank in range(self.n):
                log = (self.logs_dir / f"rank-{rank}.out").open("w")
                p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=self.worker_env(rank), bufsize=1)
                assert p.stdout is not None
                threading.Thread(target=_pump, args=(p.stdout, f"[{rank}]", log, self._lock), daemon=True).start()
                workers.append(p)
            while not self._stop.is_set():
                for rank, p in enumerate(workers):
                    if rank not in codes and p.poll() is not None:
                        codes[rank] = p.returncode
                        if p.returncode != 0 and first_failure is None:
                            first_failure = (rank, p.returncode)
                if first_failure is not None or len(codes) == self.n:
                    break
                models.update({r: json.loads(f.read_text()) for r in range(self.n)
                               if r not in models and (f := le.model_file(self.launch_dir, r)).exists()})
                if models and ps is None:
                    rank0 = min(models)
                    model = models[rank0]
                    ps = self._start_ps(model["num_params"], model["mtu"])
                bad = {r: m for r, m in models.items() if m != model}
                if model is not None and bad:
                    r, m = next(iter(bad.items()))
                    raise LaunchFailed(f"rank {r}'s model has P={m['num_params']} parameters at MTU {m['mtu']}, the PS "
                                       f"was started for P={model['num_params']} at MTU {model['mtu']} (the first "
                                       f"worker's): every worker of a launch must train the same model (logs in "
                                       f"{self.logs_dir})")
                if ps is not None and ps.poll() is not None:
                    raise LaunchFailed(f"the PS exited with status {ps.returncode} during the launch "
                                       f"(log: {self.logs_dir / 'ps.out'})")
                time.sleep(0.05)
        finally:
            _stop(workers)
            for rank, p in enumerate(workers):
                codes.setdefault(rank, p.returncode)
            if ps is not None:
                _stop([ps])
            for s, h in old.items():
                signal.signal(s, h)
            write_json(self.out / "launch.json", {
                "cmd": self.cmd, "workers": self.n, "ps": f"{self.ps_ip}:{UPDATE_PORT}", "mtu": self.mtu,
                "ps_args": list(self.ps_args), "model": model, "interrupted": self._stop.is_set(),
                "exit_codes": {str(r): c for r, c in sorted(codes.items())}})
        if self._stop.is_set():
            click.echo(f"launch: interrupted; workers and PS stopped (run directory {self.out})", err=True)
            return 130
        if first_failure is not None:
            rank, code = first_failure
            click.echo(f"launch: rank {rank} exited with {code}; the others were stopped "
                       f"(its output: {self.logs_dir / f'rank-{rank}.out'})", err=True)
            return code
        click.echo(f"launch: {self.n} workers done; PS log and summary in {self.hosts_dir}", err=True)
        return 0

    def _start_ps(self, num_params: int, mtu: int) -> subprocess.Popen[str]:
        """``olaf ps`` for the model of ``num_params`` at ``mtu``, with the launch's ``--ps-args`` options;
        returns once it listens (its log is written), after writing the rendezvous's ready file."""
        argv = [sys.executable, "-m", "olaf.cli", "ps", "--bind", self.ps_ip, "--out-dir", str(self.hosts_dir),
                "--num-params", str(num_params), "--mtu", str(mtu), *self.ps_args]
        ps = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=(self.logs_dir / "ps.out").open("w"), text=True)
        deadline = time.monotonic() + PS_UP_S
        while not (self.hosts_dir / "ps.jsonl").exists():
            if ps.poll() is not None:
                raise LaunchFailed(f"the PS did not start (exit {ps.returncode}): "
                                   f"{(self.logs_dir / 'ps.out').read_text()[-1500:]}")
            if time.monotonic() > deadline:
                raise LaunchFailed(f"the PS did not start within {PS_UP_S:g} s (log: {self.logs_dir / 'ps.out'})")
            time.sleep(0.05)
        write_json(self.launch_dir / le.READY_FILE, {"num_params": num_params, "mtu": mtu})
        click.echo(f"launch: PS at {self.ps_ip}:{UPDATE_PORT} for P={num_params} at MTU {mtu}", err=True)
        return ps


@click.command("launch", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-n", "--nproc", "n", type=int, required=True, help=f"Workers to start (1..{MAX_WORKERS}).")
@click.option("--mtu", type=click.IntRange(68, 65535), default=MTU, show_default=True,
              help="The links' MTU, bytes: updates travel in chunks of it.")
@click.option("--ps-args", "ps_args", default="", metavar="ARGS",
              help="`olaf ps` options, one string (e.g. --ps-args '--step sgd --lr 1 --no-reward-gate'); "
                   "--bind, --out-dir, --num-params and --mtu are the launch's.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Run directory [default: results/<stamp>-launch].")
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED)
def launch_cmd(n: int, mtu: int, ps_args: str, out: Optional[Path], cmd: tuple[str, ...]) -> None:
    """Start a PS and N copies of CMD over loopback (torchrun's shape; docs/client.md)."""
    args = tuple(shlex.split(ps_args))
    taken = sorted({a.split("=")[0] for a in args} & {"--bind", "--out-dir", "--num-params", "--mtu"})
    if taken:
        raise click.BadParameter(f"{', '.join(taken)}: set by the launch (the PS's address, run directory and the "
                                 "first worker's model); give the launch's --mtu instead of the PS's", param_hint="--ps-args")
    if out is None:
        from olaf.topologies.rundir import new_run_dir  # noqa: PLC0415

        out = new_run_dir(Path("results"), "launch")
    sys.exit(Launch(list(cmd), n, out, mtu, args).run())

"""The ``ray`` backend: the mininet backend's network — BMv2 switches with the OlafQueue extern,
the P4Runtime controller, the PS — with every worker inside a Ray actor (Ray Core, ``ray``
extra, pinned to :data:`RAY_VERSION`).

On one machine the Ray cluster (GCS, raylet, the actor processes) runs in the root network
namespace (:class:`LocalRayHead`), so none of Ray's own traffic crosses BMv2. Each worker runs
in a thread of its actor that first joins its Mininet host's network namespace
(:func:`olaf.netns.join_netns` on ``/proc/<host pid>/ns/net``) and then opens its Olaf socket
there: only Olaf updates and ACKs cross the switch, with the identity of the host (address, and
the UDP port of :attr:`~olaf.plan.topology.LayoutHost.udp_port`). A worker is the same
:class:`olaf.hosts.worker.Worker` an ``olaf worker`` process runs (same log, summary, report);
``workers_per_actor`` of them share an actor process (:class:`BackendOptions`), each actor
asking Ray for an equal share of the machine's CPUs (Ray's default of one CPU per actor would
schedule only as many actors as cores). The Ray cluster is started for the run and stopped by
its process group (:class:`RayProcesses`); ``ray stop``, which kills every Ray process on the
machine, is never used.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Optional

from olaf.backends.base import RunResult
from olaf.backends.mininet import MininetBackend, run_spec
from olaf.harness import RunFailed, RunMonitor
from olaf.hosts.runlog import wait_for_start_file, wait_until
from olaf.hosts.worker import Worker, WorkerConfig
from olaf.netns import host_netns_path, join_netns
from olaf.paths import build_dir
from olaf.plan.plan import RunPlan
from olaf.priority import lower_priority, set_session_nice
from olaf.rl.extra import RAY_VERSION
from olaf.rundir.atomic import write_json
from olaf.rundir.manifest import read_manifest

ACTOR_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""Environment of the actor processes: one math thread per worker, as the worker processes have."""


def require_ray() -> Any:
    """The ``ray`` module at :data:`RAY_VERSION`.

    Raises:
        RunFailed: Ray is not installed, or another version is (the message says how to install it).
    """
    try:
        import ray  # noqa: PLC0415
    except ImportError:
        raise RunFailed(f"the ray backend needs Ray: pip install -e '.[ray]' (ray=={RAY_VERSION})") from None
    if ray.__version__ != RAY_VERSION:
        raise RunFailed(f"ray {ray.__version__} is installed; the ray backend is tested with {RAY_VERSION}: "
                        f"pip install ray=={RAY_VERSION}")
    return ray


Assignment = tuple[str, Optional[str], WorkerConfig, str]
"""One worker of an actor: ``(name, network namespace handle or None, config, path of its output)``."""


class WorkerHost:
    """The body of one Ray actor: Olaf workers, each in its own thread inside its Mininet host's
    network namespace. Methods return at once; :meth:`codes` reports who has finished.

    The workers are the constructor's ``assignments``, so that when Ray restarts a dead actor
    (``max_restarts``) it runs the constructor again and every worker comes back with the same
    Olaf identity (namespace, address, UDP port): a restarted incarnation (``resume``) appends to
    its log, INITs again (the PS answers with the global model) and generates until the run's end;
    the report counts the restart and the gap (``summary.json`` ``workers.restarts``)."""

    def __init__(self, assignments: Optional[list[Assignment]] = None, nice: int = 0) -> None:
        self._stops: dict[str, threading.Event] = {}
        self._codes: dict[str, int] = {}
        self._nice = nice
        self.restarted = False
        if nice and os.getsid(0) == os.getpid():  # a session of its own: lower its autogroup too
            set_session_nice(os.getpid(), nice)
        if assignments:
            import ray  # noqa: PLC0415 (inside the actor)

            self.restarted = bool(ray.get_runtime_context().was_current_actor_reconstructed)
            for name, netns, cfg, log_path in assignments:
                self.start(name, netns, replace(cfg, resume=True) if self.restarted else cfg, log_path)

    def start(self, name: str, netns: Optional[str], cfg: WorkerConfig, log_path: str) -> None:
        """Run worker ``name`` (``cfg``) in a new thread joined to ``netns`` (None: the actor's own,
        e.g. on a Ray node that runs inside the worker's host) at the actor's nice value; a failure's
        traceback goes to ``log_path`` and its code is 1 (0: its schedule ended or it was stopped)."""
        stop = threading.Event()

        def body() -> None:
            try:
                lower_priority(self._nice)
                if netns is not None:
                    join_netns(netns)
                Worker(cfg, stop).run()
                self._codes[name] = 0
            except BaseException:  # noqa: BLE001 (reported as the worker's exit code and log)
                with open(log_path, "a") as f:
                    f.write(traceback.format_exc())
                self._codes[name] = 1

        self._stops[name] = stop
        threading.Thread(target=body, name=f"olaf-{name}", daemon=True).start()

    def stop(self, name: str) -> None:
        """Ask worker ``name`` to stop (as SIGTERM asks an ``olaf worker``: it writes its summary)."""
        self._stops[name].set()

    def codes(self) -> dict[str, int]:
        """Exit codes of the workers that have finished."""
        return dict(self._codes)

    def node_ip(self) -> str:
        """The address of the Ray node this actor runs on."""
        import ray  # noqa: PLC0415 (inside the actor)

        return str(ray.util.get_node_ip_address())


POLL_S = 0.1
"""Age after which an actor's exit codes are asked for again (one call answers for all its workers)."""


RESTART_GRACE_S = 120.0
"""How long an actor may stay unreachable (Ray restarting it: a new process imports torch and
Gymnasium) before its workers are reported failed."""


class ActorCodes:
    """The exit codes of one actor's workers (:meth:`WorkerHost.codes`), asked for at most every
    :data:`POLL_S` whoever of its workers is polled, without ever blocking the caller (the
    harness's progress loop): a call is sent and its answer taken when it is ready. ``died`` is set
    when the actor is gone: no answer, or only errors, for :data:`RESTART_GRACE_S` (a restarting
    actor answers again; one whose node is lost never does). With ``node_lost`` (a callable
    that names why the actor's node is gone, or None while it is up: :meth:`RayNodes.lost`), a lost
    node ends the actor at once: ``lost`` and ``died`` say why, and the actor is killed without a
    restart (its workers' identity lived on that machine)."""

    def __init__(self, ray: Any, actor: Any, node_lost: Optional[Callable[[], Optional[str]]] = None) -> None:
        self.ray, self.actor, self.node_lost = ray, actor, node_lost
        self.codes: dict[str, int] = {}
        self.died: Optional[str] = None
        self.lost: Optional[str] = None
        self._asked = float("-inf")
        self._pending: Any = None
        self._answered = time.monotonic()

    def get(self, name: str) -> Optional[int]:
        if name in self.codes or self.died is not None:
            return self.codes.get(name)
        if self.node_lost is not None and (why := self.node_lost()) is not None:
            self.lost = self.died = why
            with contextlib.suppress(Exception):  # already gone with its node
                self.ray.kill(self.actor, no_restart=True)
            return self.codes.get(name)
        now = time.monotonic()
        if self._pending is None and now - self._asked >= POLL_S:
            self._pending, self._asked = self.actor.codes.remote(), now
        if self._pending is not None:
            ready, _ = self.ray.wait([self._pending], timeout=0)
            if ready:
                try:
                    self.codes = self.ray.get(self._pending)
                    self._answered = now
                except self.ray.exceptions.RayActorError as e:  # dead, or restarting: ask again
                    if now - self._answered > RESTART_GRACE_S:
                        self.died = str(e)
                self._pending = None
        if self.died is None and now - self._answered > RESTART_GRACE_S:
            self.died = f"no answer for {RESTART_GRACE_S:.0f} s (its node lost, or it could not be restarted)"
        return self.codes.get(name)


class ActorWorker:
    """One worker inside an actor, seen as a process (``poll``, ``wait``, ``returncode``,
    ``terminate``, ``kill``: what the emulation and :meth:`OlafNetwork.stop_procs` use). ``lost``
    says why, when the worker was lost with its Ray node (the run goes on without it)."""

    def __init__(self, ray: Any, actor: Any, codes: ActorCodes, name: str, log_path: Path) -> None:
        self.ray, self.actor, self.codes, self.name, self.log_path = ray, actor, codes, name, log_path
        self.returncode: Optional[int] = None
        self.lost: Optional[str] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self.returncode = self.codes.get(self.name)
            if self.returncode is None and self.codes.died is not None:
                with open(self.log_path, "a") as f:
                    f.write(f"its Ray actor died: {self.codes.died}\n")
                self.lost = self.codes.lost
                self.returncode = 1
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.name, timeout or 0)
            time.sleep(0.05)
        return code

    def terminate(self) -> None:
        self.actor.stop.remote(self.name)

    def kill(self) -> None:
        self.ray.kill(self.actor)
        self.returncode = -9


class RLlibDriver:
    """A training job whose workers all use RLlib's learner, run as one RLlib algorithm
    (:class:`olaf.rl.rllib.OlafPPO`): one EnvRunner actor per worker, each with its Olaf socket in
    its Mininet host's namespace, and this thread calling ``algo.train()`` from the run's start
    (the start file) until its generation limit or :meth:`stop`. The job's PPO hyper-parameters map
    onto RLlib's (:func:`olaf.rl.rllib.rllib_ppo_config`); the workers must share their settings
    (one ``AlgorithmConfig``).

    Raises (from the constructor):
        RunFailed: the workers' settings differ (seed aside), or RLlib is missing.
    """

    def __init__(self, net: Any, configs: dict[str, WorkerConfig], logs_dir: Path) -> None:
        from olaf.rl.extra import RLlibExtraMissing, require_rllib  # noqa: PLC0415

        try:
            require_rllib()
        except RLlibExtraMissing as e:
            raise RunFailed(str(e)) from None
        from olaf.rl.rllib import OlafEndpoint, OlafPPOConfig, rllib_ppo_config  # noqa: PLC0415

        first = next(iter(configs.values()))
        shared = ("ps_ip", "ps_port", "ppo", "tx", "ack_wait_ms", "linger_ms", "out_dir", "start_file")
        for name, c in configs.items():
            differ = [f for f in shared if getattr(c, f) != getattr(first, f)]
            if c.schedule.duration_s != first.schedule.duration_s:
                differ.append("schedule.duration_s")
            if differ:
                raise RunFailed(f"the RLlib learner runs a job as one RLlib algorithm: worker {name} differs from the "
                                f"others in {', '.join(differ)}")
        self.names = list(configs)
        self.logs = [logs_dir / f"{n}.out" for n in self.names]
        self.start_file, self.duration_s = first.start_file, first.schedule.duration_s
        n = len(configs)
        spec = first.ppo
        base: Any = rllib_ppo_config(spec, first.seed, cls=OlafPPOConfig)
        self.config = (base
                       .env_runners(num_env_runners=n, num_cpus_per_env_runner=(os.cpu_count() or 1) / n)
                       .fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=False)
                       .olaf(ps=f"{first.ps_ip}:{first.ps_port}", mtu=spec.mtu, tx=first.tx,
                             ack_wait_s=first.ack_wait_ms / 1000, linger_s=first.linger_ms / 1000,
                             log_dir=first.out_dir,
                             endpoints=[OlafEndpoint(bind=f"{c.bind_ip}:{c.ack_port}", name=name,
                                                     netns=str(host_netns_path(net.host(name).pid)))
                                        for name, c in configs.items()]))
        self._stop = threading.Event()
        self.code: Optional[int] = None
        for log in self.logs:
            log.write_text("")
        self._thread = threading.Thread(target=self._run, name="olaf-rllib-driver", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        algo = None
        try:
            algo = self.config.build_algo()
            algo.env_runner_group.foreach_env_runner("olaf_announce", local_env_runner=False)  # start records
            t0 = wait_for_start_file(self.start_file, self._stop) if self.start_file is not None else time.time_ns()
            if t0 is not None and wait_until(t0, self._stop):
                end = None if self.duration_s is None else t0 + int(self.duration_s * 1e9)
                while not self._stop.is_set() and (end is None or time.time_ns() < end):
                    algo.train()
            algo.stop()  # every EnvRunner lingers and writes its summary
            algo = None
            self.code = 0
        except BaseException:  # noqa: BLE001 (reported as every worker's exit code and log)
            text = traceback.format_exc()
            for log in self.logs:
                log.write_text(text)
            self.code = 1
        finally:
            if algo is not None:
                try:
                    algo.stop()
                except Exception:  # noqa: BLE001 (already failed; its traceback is in the logs)
                    pass

    def stop(self) -> None:
        """End the job after the current training step (the EnvRunners then write their summaries)."""
        self._stop.set()


class DriverWorker:
    """One worker of an :class:`RLlibDriver`'s job seen as a process (``poll``, ``wait``,
    ``returncode``, ``terminate``, ``kill``); stopping one stops the job."""

    def __init__(self, driver: RLlibDriver, name: str) -> None:
        self.driver, self.name = driver, name
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self.returncode = self.driver.code
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        self.driver._thread.join(timeout)
        if self.poll() is None:
            raise subprocess.TimeoutExpired(self.name, timeout or 0)
        return self.returncode  # type: ignore[return-value]

    def terminate(self) -> None:
        self.driver.stop()

    def kill(self) -> None:
        self.driver.stop()


def rllib_job(configs: dict[str, WorkerConfig]) -> bool:
    """Every worker is a PPO worker with RLlib's learner (``--learner rllib``)."""
    return bool(configs) and all(c.task_kind == "ppo" and c.ppo.learner == "rllib" for c in configs.values())


MGMT_BRIDGE = "olafray0"
"""The root namespace's bridge of the Ray management network (``--ray-nodes``)."""
MGMT_HEAD_IP = "10.254.0.1"
"""The Ray head's address on the management network (prefix :data:`MGMT_PREFIX`)."""
MGMT_PREFIX = 16
HEAD_PORT = 6390
"""The head's GCS port."""
CURRENT_CLUSTER_FILE = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
"""Where ``ray start --head`` records the cluster a later ``ray.init()`` joins (Ray 2.60)."""
NODE_START_S = 120.0
"""How long the nodes may take to join the head (importing Ray on a busy 2-core machine)."""
NODE_CHECK_S = 1.0
"""Age after which the head is asked again which nodes are alive (:meth:`RayNodes.lost`)."""
AGENT_PORT_OPTIONS = ("--dashboard-agent-grpc-port", "--dashboard-agent-listen-port", "--runtime-env-agent-port",
                      "--metrics-export-port")
"""The ports of a node's agents, which every ``ray start`` here is given. A raylet left to port 0
waits a fixed 15 s (Ray 2.60, not configurable) for its dashboard agent to report the port it bound,
through a file in the session directory, and aborts itself when the agent is slower ("Timed out
waiting for file …/metrics_agent_port_…" in ``raylet.err``): a Python process importing Ray's
dashboard on a busy machine is (seen beside ``make test-under-load``'s competing processes, three
starts in a row). Given its ports, the raylet does not wait."""


def free_tcp_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on this machine now (bound to port 0 together, then released)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            sock = socket.socket()
            socks.append(sock)
            sock.bind(("", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def _reload_ray_config() -> None:
    """Make this process's Ray read ``RAY_AUTH_*`` again: Ray reads its configuration from the
    environment once, at import, so a process that set the token afterwards would connect without
    it (what Ray 2.60's own ``_enable_token_auth`` does; :data:`RAY_VERSION` is pinned)."""
    from ray._raylet import Config  # type: ignore[attr-defined]  # noqa: PLC0415

    Config.initialize("")


def _ray_bin() -> str:
    return str(Path(sys.executable).parent / "ray")


def _ip(*args: str, netns_pid: Optional[int] = None) -> None:
    cmd = ["ip", *args] if netns_pid is None else ["nsenter", f"--net=/proc/{netns_pid}/ns/net", "ip", *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RunFailed(f"`{' '.join(cmd)}` failed: {r.stderr.strip()}")


class RayProcesses:
    """``ray start --block`` processes of one run, each in a process group of its own (its raylet,
    GCS and agents with it), every agent port given (:data:`AGENT_PORT_OPTIONS`), and stopped by
    their process groups: never ``ray stop``, which would kill every Ray process on the machine.
    The cluster uses Ray's token authentication (on by default for ``ray start`` in Ray 2.60) with
    a token made for the run and handed to every node and to this process in the environment
    (``RAY_AUTH_MODE=token``, ``RAY_AUTH_TOKEN``; restored by :meth:`close`), as a deployment across
    machines must."""

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        self.procs: list[subprocess.Popen[bytes]] = []
        self._address: Optional[str] = None
        self.auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        self._saved_env = {k: os.environ.get(k) for k in self.auth}
        os.environ.update(self.auth)  # ray.init of this process presents the token too
        _reload_ray_config()

    def _start(self, args: list[str], netns_pid: Optional[int], log: Path) -> None:
        """``ray start --block ARGS`` with every agent port, in ``netns_pid``'s namespace if given."""
        ns = None if netns_pid is None else str(host_netns_path(netns_pid))
        ports = [a for opt, port in zip(AGENT_PORT_OPTIONS, free_tcp_ports(len(AGENT_PORT_OPTIONS)))
                 for a in (opt, str(port))]
        with open(log, "wb") as out:
            self.procs.append(subprocess.Popen(
                [_ray_bin(), "start", "--block", "--disable-usage-stats", *args, *ports], stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **ACTOR_ENV, **self.auth},
                preexec_fn=None if ns is None else (lambda: join_netns(ns))))

    def _wait_started(self, log: Path) -> None:
        """Until the node just started says so in ``log`` (``ray start`` prints "Ray runtime
        started"); at most :data:`NODE_START_S`.

        Raises:
            RunFailed: it exited, or did not start in time (the message names its log).
        """
        deadline = time.monotonic() + NODE_START_S
        while "Ray runtime started" not in log.read_text(errors="replace"):
            if self.procs[-1].poll() is not None:
                raise RunFailed(f"a Ray node exited ({self.procs[-1].returncode}) while starting: see {log}")
            if time.monotonic() > deadline:
                raise RunFailed(f"a Ray node did not start within {NODE_START_S:.0f} s: see {log}")
            time.sleep(0.2)

    def close(self) -> None:
        """Disconnect, then stop the processes (the last started first) by their process groups:
        SIGTERM (``ray start --block`` stops its node), SIGKILL after 30 s."""
        if self.ray.is_initialized():
            self.ray.shutdown()
        for p in reversed(self.procs):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        # `ray start --head` leaves its address for later ray.init() calls to join: not a dead head's
        if self._address is not None:
            with contextlib.suppress(OSError):
                if CURRENT_CLUSTER_FILE.read_text().strip() == self._address:
                    CURRENT_CLUSTER_FILE.unlink()
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _reload_ray_config()


class LocalRayHead(RayProcesses):
    """A Ray cluster of this machine for one run: one head node (``ray start --head``, its GCS on a
    free port, ``num_cpus`` CPUs, no dashboard), in the root namespace, joined by this process
    (``ray.init``; its tasks and actors get ``env_vars``, :data:`ACTOR_ENV` by default). Every
    agent port is given, so a busy machine delays its start and does not abort it
    (:data:`AGENT_PORT_OPTIONS`); :meth:`close` stops it.

    Raises (from the constructor):
        RunFailed: the head exited or did not start within :data:`NODE_START_S` (the message names
            its log, ``log``).
    """

    def __init__(self, ray: Any, log: Path, num_cpus: int, env_vars: Optional[dict[str, str]] = None) -> None:
        super().__init__(ray)
        port = free_tcp_ports(1)[0]
        try:
            self._start(["--head", "--port", str(port), "--num-cpus", str(num_cpus), "--include-dashboard=false"],
                        None, log)
            self._wait_started(log)
            node_ip = ray.util.get_node_ip_address()
            self._address = f"{node_ip}:{port}"
            ray.init(address=self._address, log_to_driver=False, logging_level="ERROR",
                     runtime_env={"env_vars": ACTOR_ENV if env_vars is None else env_vars})
        except BaseException:
            self.close()
            raise


class RayNodes(RayProcesses):
    """A Ray cluster laid out as on several machines (``--ray-nodes``): the head in the root
    namespace, one Ray node inside each Mininet host's namespace, joined to the head by a
    management link (a veth from the host to the root namespace's bridge :data:`MGMT_BRIDGE`,
    ``10.254.0.0/16``) that is not on the data path. Each node's raylet and worker processes live
    in the host, so an actor placed on that node (``resources={"node:<ip>": …}``) opens its Olaf
    socket on the host's data-plane interface as a process on a real worker machine would; Ray's
    own traffic (GCS, raylet, object transfers) stays on the management link, which no switch
    port is on. Nodes and head run ``ray start --block`` in their own process groups and are
    stopped by PID, with the run's token (:class:`RayProcesses`).

    Raises (from the constructor):
        RunFailed: the management network or a node could not be set up (the message says which).
    """

    def __init__(self, ray: Any, net: Any, hosts: list[str], logs_dir: Path) -> None:
        super().__init__(ray)
        self._address = f"{MGMT_HEAD_IP}:{HEAD_PORT}"
        self.node_ip: dict[str, str] = {}
        self._node_proc: dict[str, subprocess.Popen[bytes]] = {}
        self._lost: dict[str, str] = {}
        self._alive: set[str] = set()
        self._checked = float("-inf")
        self._links: list[str] = []
        try:
            _ip("link", "add", MGMT_BRIDGE, "type", "bridge")
            _ip("addr", "add", f"{MGMT_HEAD_IP}/{MGMT_PREFIX}", "dev", MGMT_BRIDGE)
            _ip("link", "set", MGMT_BRIDGE, "up")
            self._start(["--head", "--port", str(HEAD_PORT), "--node-ip-address", MGMT_HEAD_IP, "--num-cpus", "0",
                         "--include-dashboard=false"], None, logs_dir / "ray-head.out")
            self._wait_for_gcs(logs_dir)
            cpus = max(1, (os.cpu_count() or 1) // max(1, len(hosts)))
            for i, h in enumerate(hosts):
                pid = net.host(h).pid
                ip = f"10.254.{1 + i // 250}.{1 + i % 250}"
                root_end, host_end = f"olafr{i}", f"olafrh{i}"
                _ip("link", "add", root_end, "type", "veth", "peer", "name", host_end)
                self._links.append(root_end)
                _ip("link", "set", host_end, "netns", str(pid))
                _ip("link", "set", root_end, "master", MGMT_BRIDGE, "up")
                _ip("addr", "add", f"{ip}/{MGMT_PREFIX}", "dev", host_end, netns_pid=pid)
                _ip("link", "set", host_end, "up", netns_pid=pid)
                # one node at a time: the nodes share the head's session directory (the hosts share
                # the file system), and raylets starting side by side can pick the same socket name
                log = logs_dir / f"ray-node-{h}.out"
                self._start(["--address", f"{MGMT_HEAD_IP}:{HEAD_PORT}", "--node-ip-address", ip,
                             "--num-cpus", str(cpus)], pid, log)
                self._wait_started(log)
                self.node_ip[h] = ip
                self._node_proc[h] = self.procs[-1]
            ray.init(address=f"{MGMT_HEAD_IP}:{HEAD_PORT}", log_to_driver=False, logging_level="ERROR",
                     runtime_env={"env_vars": ACTOR_ENV})
            deadline = time.monotonic() + NODE_START_S
            while {n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]} != {MGMT_HEAD_IP, *self.node_ip.values()}:
                for p in self.procs:
                    if p.poll() is not None:
                        raise RunFailed(f"a Ray node exited ({p.returncode}) before joining: see {logs_dir}/ray-*.out")
                if time.monotonic() > deadline:
                    raise RunFailed(f"the Ray nodes did not all join the head within {NODE_START_S:.0f} s")
                time.sleep(0.2)
        except BaseException:
            self.close()
            raise

    def lost(self, host: str) -> Optional[str]:
        """Why the Ray node of Mininet host ``host`` is gone, or None while it is up: its ``ray start``
        process exited (the node's machine died: its raylet, its actors), or the head reports the
        node dead (asked at most every :data:`NODE_CHECK_S`; what a deployment across machines
        sees). Once lost, always lost: Ray gives a node that comes back a new identity."""
        if host in self._lost:
            return self._lost[host]
        ip, proc = self.node_ip[host], self._node_proc[host]
        why = None
        if proc.poll() is not None:
            why = f"its Ray node {ip} (host {host}) was lost: the node's processes exited ({proc.returncode})"
        else:
            now = time.monotonic()
            if now - self._checked >= NODE_CHECK_S:
                self._checked = now
                with contextlib.suppress(Exception):  # the head unreachable for a moment: ask again later
                    self._alive = {n["NodeManagerAddress"] for n in self.ray.nodes() if n["Alive"]}
            if self._alive and ip not in self._alive:
                why = f"its Ray node {ip} (host {host}) was lost: the head reports it dead"
        if why is not None:
            self._lost[host] = why
        return why

    def _wait_for_gcs(self, logs_dir: Path) -> None:
        """Until the head's GCS accepts connections (its process alive; at most :data:`NODE_START_S`)."""
        deadline = time.monotonic() + NODE_START_S
        while True:
            with contextlib.suppress(OSError), socket.create_connection((MGMT_HEAD_IP, HEAD_PORT), timeout=1):
                return
            if self.procs[0].poll() is not None:
                raise RunFailed(f"the Ray head exited ({self.procs[0].returncode}): see {logs_dir}/ray-head.out")
            if time.monotonic() > deadline:
                raise RunFailed(f"the Ray head's GCS did not listen on {MGMT_HEAD_IP}:{HEAD_PORT} within "
                                f"{NODE_START_S:.0f} s: see {logs_dir}/ray-head.out")
            time.sleep(0.2)

    def close(self) -> None:
        """Disconnect, stop every node and the head by their process groups, remove the links."""
        super().close()
        for link in self._links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        subprocess.run(["ip", "link", "del", MGMT_BRIDGE], capture_output=True)


class RayLauncher:
    """A :data:`olaf.topologies.emulation.WorkerLauncher` that puts the workers into Ray actors,
    ``per_actor`` workers each (in the order of the run's clusters); a job of RLlib-learner workers
    is one RLlib algorithm instead (:class:`RLlibDriver`: one EnvRunner actor per worker).

    With ``nodes`` (``--ray-nodes``) it first lays out a Ray cluster of one node per Mininet host
    (:class:`RayNodes`) and places each actor on the node of its workers' host; ``placement``
    then records, for ``<run>/ray_nodes.json``, the management address of every node and the node
    each worker ran on (as the actor itself reports it). Each worker's thread runs at nice value
    ``nice`` (:data:`olaf.constants.WORKER_NICE`); RLlib's EnvRunners and learner keep Ray's priority."""

    def __init__(self, ray: Any, per_actor: int, nodes: bool = False, restarts: int = 0, nice: int = 0) -> None:
        self.ray, self.per_actor, self.nodes, self.restarts, self.nice = ray, per_actor, nodes, restarts, nice
        self.cluster: Optional[RayNodes] = None
        self.placement: dict[str, Any] = {}

    def __call__(self, net: Any, configs: dict[str, WorkerConfig], logs_dir: Path) -> dict[str, Any]:
        if rllib_job(configs):
            if self.nodes:
                raise RunFailed("--ray-nodes places Olaf's own workers on their hosts' nodes; RLlib places its "
                                "EnvRunners itself: run --learner rllib without --ray-nodes")
            driver = RLlibDriver(net, configs, logs_dir)
            driven: dict[str, Any] = {name: DriverWorker(driver, name) for name in configs}
            for h in driven.values():
                net.track(h)
            return driven
        # the actors: per_actor workers each, never mixing hosts when each host is a node
        groups: list[list[str]] = []
        by_host: dict[str, list[str]] = {}
        for name in configs:
            by_host.setdefault(net.node_of.get(name, name) if self.nodes else "", []).append(name)
        for members in by_host.values():
            groups += [members[i:i + self.per_actor] for i in range(0, len(members), self.per_actor)]
        if self.nodes:
            self.cluster = RayNodes(self.ray, net, list(by_host), logs_dir)
        handles: dict[str, Any] = {}
        node_of_worker: dict[str, Any] = {}
        for members in groups:
            if self.cluster is not None:
                host = net.node_of.get(members[0], members[0])
                cls = self.ray.remote(num_cpus=0, max_restarts=self.restarts,
                                      resources={f"node:{self.cluster.node_ip[host]}": 0.001})(WorkerHost)
            else:
                cls = self.ray.remote(num_cpus=(os.cpu_count() or 1) / len(groups),
                                      max_restarts=self.restarts)(WorkerHost)
            assignments: list[Assignment] = []
            for name in members:
                log = logs_dir / f"{name}.out"
                log.write_text("")
                netns = None if self.cluster is not None else str(host_netns_path(net.host(name).pid))
                assignments.append((name, netns, configs[name], str(log)))
            actor = cls.remote(assignments, self.nice)
            node_lost = None if self.cluster is None else partial(self.cluster.lost, net.node_of.get(members[0], members[0]))
            codes = ActorCodes(self.ray, actor, node_lost)
            ip_ref = actor.node_ip.remote()
            for name, *_ in assignments:
                handles[name] = h = ActorWorker(self.ray, actor, codes, name, logs_dir / f"{name}.out")
                net.track(h)
                node_of_worker[name] = ip_ref
        if self.cluster is not None:
            self.placement = {"head": MGMT_HEAD_IP, "nodes": dict(self.cluster.node_ip),
                              "workers": {n: self.ray.get(r, timeout=NODE_START_S) for n, r in node_of_worker.items()}}
        return handles

    def close(self) -> None:
        """Stop the Ray nodes and the head of ``--ray-nodes`` (by PID) and remove their links."""
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


class RayBackend(MininetBackend):
    """Mininet + BMv2 as the mininet backend, the workers as Ray actors (module docstring)."""

    name = "ray"
    description = "Mininet + BMv2 as mininet, the workers as Ray actors joined to the hosts' namespaces (ray extra)"

    def preflight(self) -> None:
        """The mininet backend's needs and Ray at :data:`RAY_VERSION`.

        Raises:
            RunFailed: what is missing and how to get it.
        """
        super().preflight()
        require_ray()

    def run(self, plan: RunPlan, out: Path, monitor: Optional[RunMonitor] = None) -> RunResult:
        """Emulate ``plan`` into ``out`` with the workers in Ray actors (a Ray cluster of this
        machine, started for the run on the loopback address and shut down after it).

        Raises:
            PlanRefused: see :meth:`check`.
            RunFailed: Ray is missing, or the run failed.
        """
        from olaf.topologies.emulation import run_once  # noqa: PLC0415 (Mininet on first use)

        ray = require_ray()
        spec = run_spec(plan, self.options)
        out.mkdir(parents=True, exist_ok=True)
        t = time.monotonic()
        nodes = self.options.ray_nodes
        head = None if nodes else LocalRayHead(ray, out / "ray-head.out", num_cpus=os.cpu_count() or 1)
        launcher = RayLauncher(ray, self.options.workers_per_actor, nodes=nodes, restarts=self.options.actor_restarts,
                               nice=self.options.worker_nice)
        try:
            summary = run_once(spec, out, self.options.build or build_dir(), self.options.console,
                               progress=self.options.progress, quiet=self.options.quiet, monitor=monitor,
                               launch=launcher)
        finally:
            ray.shutdown()
            launcher.close()
            if head is not None:
                head.close()
        if launcher.placement:
            write_json(out / "ray_nodes.json", launcher.placement, indent=1)
        m = read_manifest(out)
        status = "incomplete" if m.incomplete else "stopped" if m.stopped_early_s is not None else "ok"
        return RunResult(self.name, out, status, time.monotonic() - t, summary)

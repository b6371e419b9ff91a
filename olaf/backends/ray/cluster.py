"""The Ray cluster of a run: Ray itself at the pinned version (:func:`require_ray`), a head in the
root namespace (:class:`LocalRayHead`) or one node per Mininet host on a management bridge off
the data path (:class:`RayNodes`), each a ``ray start --block`` stopped by its process group
(:class:`RayProcesses`); ``ray stop`` is never used.
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
import time
from pathlib import Path
from typing import Any, Optional

from olaf.harness import RunFailed
from olaf.netns import host_netns_path, join_netns
from olaf.rl.extra import RAY_VERSION

ACTOR_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""Environment of the actor processes: one math thread per worker, as the worker processes have."""

NODE_ENV = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}
"""Environment of every ``ray start`` here. On SIGTERM a Ray 2.60 node first asks the GCS to mark it
draining and waits up to ``RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S`` (30 s by default; for Ray Serve
replicas behind a proxy, which these clusters do not run). Stopped by process group, the GCS gets
the same SIGTERM and is gone, so every stop waited the full 30 s for an RPC that cannot succeed
("Failed to mark the local node as draining" in the node's log); 0 turns the drain off."""


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
                stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **ACTOR_ENV, **NODE_ENV, **self.auth},
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

"""Olaf workers in Ray actors: the actor body (:class:`WorkerHost`: each worker in a thread that
joins its Mininet host's network namespace), the handles the emulation polls and stops
(:class:`ActorCodes`, :class:`ActorWorker`) and the launcher that places them (:class:`RayLauncher`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
import traceback
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Optional

from olaf.backends.ray.cluster import MGMT_HEAD_IP, NODE_START_S, RayNodes
from olaf.backends.ray.driver import DriverWorker, RLlibDriver, rllib_job
from olaf.harness import RunFailed
from olaf.hosts.worker import Worker, WorkerConfig
from olaf.netns import host_netns_path, join_netns
from olaf.priority import lower_priority, set_session_nice

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

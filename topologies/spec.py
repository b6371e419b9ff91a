"""What one emulated run is: :class:`RunSpec` (topology, load, queue, bottleneck, logging)
and the host configurations it implies.

The flat fields (``clusters``, ``period_ms``, ``queue_size``, ``rate_pps`` …) are what
``olaf run`` exposes; an experiment (``olaf experiment``, :mod:`olaf.experiments`) needs
more and sets the general ones: cluster groups with their own period, jitter and start
(:class:`WorkerGroup`, paper Table 3's 100/300 ms groups), every switch's queue size and
rate toward the PS (``queue_sizes``, ``rates_pps``: Fig. 10's α = x1/x2), and a number of
updates per worker (``updates_per_worker``, Table 1's 500).

Pure data and checks, no Mininet or P4Runtime import, so ``olaf run --help`` and the
tests of the spec work on a base install.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Optional

from olaf.bmv2 import BMV2_LOG_LEVELS
from olaf.chunks import Chunking, ChunkingError
from olaf.constants import DEFAULT_ACTIVITY_WINDOW_MS, DEFAULT_QUEUE_SIZE, JUMBO_MTU, MAX_CHUNKS, MTU, SEGMENTS
from olaf.controller import config as cfgmod
from olaf.fixedpoint import reward_to_fixed
from olaf.hosts import jobconfig
from olaf.hosts.ps import PsConfig
from olaf.hosts.runlog import group_start_file
from olaf.hosts.schedule import worker_schedule
from olaf.hosts.task import weights_problem
from olaf.hosts.worker import WorkerConfig
from olaf.plan.arrivals import ARRIVALS, START_PHASES
from olaf.plan.faults import parse_fault
from olaf.plan.plan import RunPlan
from olaf.plan.topology import (
    DEFAULT_CLUSTERS,
    DEFAULT_WORKERS_PER_CLUSTER,
    EDGE_QUEUE_SIZE,
    EDGE_SWITCHES,
    SWITCHES,
    TOPOLOGIES,
    Placement,
    worker_seed,
)
from olaf.plan.tx import DEFAULT_DELTA_T_MS, DEFAULT_V_PER_S, READINGS, TxParams
from olaf.plan.workload import TrainJob
from olaf.topologies.build import QueueSetup, deployment

INTERACTIVE_DURATION_S = 10 * 24 * 3600
"""How long workers run in interactive mode (``duration_s = 0``): until the CLI exits."""

QUEUES = ("olaf", "fifo")


def _segments_hint(k: int) -> str:
    """What a queue size (updates) may be when every update is ``k`` chunks (``k`` segments)."""
    return (f"must be in 1..{SEGMENTS // k} updates: each update is {k} chunk(s), one segment each, and the P4 "
            f"build has {SEGMENTS} segments")


class RunSpecError(ValueError):
    """A bad run parameter; ``field`` names it (the CLI option is ``--<field with dashes>``), ``message``
    says what is wrong with it."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class WorkerGroup:
    """Clusters with the same workers and schedule behind one edge switch.

    Attributes:
        name: label (paper §8.3: S1, S2).
        clusters, workers_per_cluster: its size.
        period_ms, jitter_ms: each worker's update period and jitter, ms.
        switch: the edge switch (tor: s1; multihop: s1 or s2).
        start_ms: the group's workers start this long after the run's t0, ms.
        start_phase, arrivals, burst: the group's arrival model (:class:`olaf.plan.plan.ClusterGroup`,
            :mod:`olaf.plan.arrivals`).
        workers_per_host: a cluster's workers share a Mininet host (one address and switch port,
            a UDP port each) in runs of this many.
    """

    name: str
    clusters: int
    workers_per_cluster: int
    period_ms: float
    jitter_ms: float = 0.0
    switch: str = "s1"
    start_ms: float = 0.0
    start_phase: str = "random"
    arrivals: str = "periodic"
    burst: int = 1
    workers_per_host: int = 1


@dataclass
class RunSpec:
    """Parameters of one run (defaults: paper §8.1 microbenchmark shape, congested).

    Attributes:
        topo: "tor" (one switch) or "multihop" (paper Fig. 9).
        queue: "olaf" or "fifo" (the FIFO baseline of the same switch and size).
        duration_s: seconds of update generation; 0 = interactive (Mininet CLI).
        clusters: tor: clusters; multihop: clusters per edge switch.
        workers_per_cluster: workers per cluster.
        workers_per_host: a cluster's workers share a Mininet host in runs of this many (one
            address and switch port, a UDP port each: the five-tuple identity, paper §7).
        period_ms / jitter_ms: each worker's update period and its jitter, ms.
        groups: cluster groups (:class:`WorkerGroup`); when given they replace
            ``clusters``, ``workers_per_cluster``, ``period_ms`` and ``jitter_ms``.
        updates_per_worker: each worker stops after this many updates (None: at
            ``duration_s``); ``duration_s`` is then the deadline, and a run whose workers
            are not done by it is stopped and marked incomplete.
        queue_size: Q_max in updates (tor and multihop core; multihop edges use edge_queue_size); a
            switch's queue gets Q_max · K segments when updates travel in K chunks (:attr:`chunking`).
        edge_queue_size: multihop only: Q_max of s1 and s2.
        rate_pps: bottleneck (egress toward the PS) in packets/s, 0 = unlimited.
        edge_rate_pps: multihop only: rate of s1/s2 toward s3 (0 = unlimited).
        queue_sizes / rates_pps: per switch, replace the four above for that switch.
        grads: model parameters per update (P); sent in K chunks when it does not fit a 1500 B frame.
        reward_threshold: reward filter T in reward units, None = off.
        activity_window_ms: window for the active-cluster count in ACKs, ms.
        tc: worker transmission control (paper §5), with tc_delta_t_ms, tc_v_per_s and
            tc_q_max (Q_max instead of the ACK's; None: the ACK's) and tc_reading (``probabilistic``,
            paper §5, or ``backoff``, §6: :class:`olaf.plan.tx.TxParams`).
        seed: task seed (worker i uses ``worker_seed(seed, i)`` for its own draws).
        bmv2_log_level: log level of every BMv2 switch (``warn`` keeps a loaded switch fast).
        pcap: capture every switch port to ``<run>/pcap/`` (BMv2 ``--pcap``).
        admission: enable admission control of ``olafctl create-cluster``/``add-worker``
            (the network file's ``admission`` section carries this run's traffic and
            transmission-control parameters either way; controller/admission.py).
        faults: faults injected during the run (``topologies/faults.py``): ``switch-restart:s1@5``,
            ``ps-kill@3``.
        plan: the run plan these parameters emulate (the mininet backend sets it), recorded in
            ``run.json``; None: :meth:`to_plan`.
        training: a training job (``olaf train``): workers run PPO (:class:`~olaf.plan.workload.TrainJob`),
            ``grads`` must be its parameter count; None: the bandit task of ``olaf run``.

    Raises:
        RunSpecError: a value out of range; the message names the field.
    """

    topo: str = "tor"
    queue: str = "olaf"
    duration_s: float = 30.0
    clusters: int = DEFAULT_CLUSTERS
    workers_per_cluster: int = DEFAULT_WORKERS_PER_CLUSTER
    workers_per_host: int = 1
    period_ms: float = 50.0
    jitter_ms: float = 10.0
    queue_size: int = DEFAULT_QUEUE_SIZE
    edge_queue_size: int = EDGE_QUEUE_SIZE
    rate_pps: int = 200
    edge_rate_pps: int = 0
    grads: int = 16
    reward_threshold: Optional[float] = None
    activity_window_ms: float = DEFAULT_ACTIVITY_WINDOW_MS
    tc: bool = False
    tc_delta_t_ms: float = DEFAULT_DELTA_T_MS
    tc_v_per_s: float = DEFAULT_V_PER_S
    tc_q_max: Optional[int] = None
    tc_reading: str = READINGS[0]
    groups: tuple[WorkerGroup, ...] = ()
    updates_per_worker: Optional[int] = None
    queue_sizes: Mapping[str, int] = field(default_factory=dict)
    rates_pps: Mapping[str, int] = field(default_factory=dict)
    seed: int = 1
    bmv2_log_level: str = "warn"
    pcap: bool = False
    admission: bool = False
    training: Optional[TrainJob] = None
    faults: tuple[str, ...] = ()
    plan: Optional[RunPlan] = None

    def __post_init__(self) -> None:
        def need(ok: bool, field: str, message: str) -> None:
            if not ok:
                raise RunSpecError(field, f"{getattr(self, field)!r}: {message}")

        need(self.topo in TOPOLOGIES, "topo", f"use one of {', '.join(TOPOLOGIES)}")
        need(self.queue in QUEUES, "queue", f"use one of {', '.join(QUEUES)}")
        need(self.duration_s >= 0, "duration_s", "must be >= 0 seconds (0: interactive)")
        need(self.clusters >= 1, "clusters", "must be >= 1")
        need(self.workers_per_cluster >= 1, "workers_per_cluster", "must be >= 1")
        need(self.workers_per_host >= 1, "workers_per_host", "must be >= 1")
        need(self.period_ms > 0, "period_ms", "must be > 0 ms")
        need(0 <= self.jitter_ms <= self.period_ms, "jitter_ms", "must be in 0..period_ms")
        try:
            k = self.chunking.num_chunks
        except ChunkingError as e:
            raise RunSpecError("grads", f"{self.grads!r}: {e}") from None
        for sw in SWITCHES.get(self.topo, ()):   # the flat sizes count only where queue_sizes leaves them in use
            f = "edge_queue_size" if self.topo == "multihop" and sw != "s3" else "queue_size"
            if sw not in self.queue_sizes:
                need(1 <= getattr(self, f) * k <= SEGMENTS, f, _segments_hint(k))
        for f in ("rate_pps", "edge_rate_pps"):
            need(getattr(self, f) >= 0, f, "must be >= 0 packets/s (0: unlimited)")
        need(self.reward_threshold is None or self.reward_threshold >= 0, "reward_threshold", "must be >= 0")
        need(self.activity_window_ms >= 0, "activity_window_ms", "must be >= 0 ms")
        need(self.tc_delta_t_ms > 0, "tc_delta_t_ms", "must be > 0 ms")
        need(self.tc_v_per_s >= 0, "tc_v_per_s", "must be >= 0")
        need(self.bmv2_log_level in BMV2_LOG_LEVELS, "bmv2_log_level", f"use one of {', '.join(BMV2_LOG_LEVELS)}")
        need(self.tc_q_max is None or self.tc_q_max >= 1, "tc_q_max", "must be >= 1 (or None: the ACK's Q_max)")
        need(self.tc_reading in READINGS, "tc_reading", f"use one of {', '.join(READINGS)}")
        need(self.updates_per_worker is None or self.updates_per_worker >= 1, "updates_per_worker", "must be >= 1")
        need(self.updates_per_worker is None or self.duration_s > 0, "duration_s",
             "must be > 0 s with updates_per_worker (it is the run's deadline)")
        if self.training is not None:
            if self.hosts_mtu > JUMBO_MTU:
                raise RunSpecError("training.task.mtu", f"{self.hosts_mtu} B: the emulated veths carry at most "
                                   f"{JUMBO_MTU} B frames; give at most that")
            need(self.grads == self.training.num_params, "grads",
                 f"a training job's updates carry its {self.training.num_params} parameters: set grads to that")
        elif (problem := weights_problem(self.grads)) is not None:
            raise RunSpecError("grads", problem)
        switches = SWITCHES[self.topo]
        for text in self.faults:
            try:
                fault = parse_fault(text)
            except ValueError as e:
                raise RunSpecError("faults", str(e)) from None
            if fault.switch is not None and fault.switch not in switches:
                raise RunSpecError("faults", f"{text}: {self.topo} has switches {', '.join(switches)}")
            if self.duration_s > 0 and fault.at_s >= self.duration_s:
                raise RunSpecError("faults", f"{text}: must happen within the run's {self.duration_s:g} s")
        for f in ("queue_sizes", "rates_pps"):
            unknown = sorted(set(getattr(self, f)) - set(switches))
            need(not unknown, f, f"unknown switch(es) {', '.join(unknown)}; {self.topo} has {', '.join(switches)}")
        for sw, q in self.queue_sizes.items():
            need(1 <= q * k <= SEGMENTS, "queue_sizes", f"{sw}: {_segments_hint(k)}")
        for sw, r in self.rates_pps.items():
            need(r >= 0, "rates_pps", f"{sw}: must be >= 0 packets/s (0: unlimited)")
        names = [g.name for g in self.groups]
        need(len(set(names)) == len(names), "groups", "group names must be unique")
        for g in self.groups:
            need(g.switch in EDGE_SWITCHES[self.topo], "groups", f"{g.name}: switch {g.switch!r} is not an edge switch of "
                 f"{self.topo}; use one of {', '.join(EDGE_SWITCHES[self.topo])}")
            need(g.clusters >= 1 and g.workers_per_cluster >= 1, "groups", f"{g.name}: clusters and "
                 "workers_per_cluster must be >= 1")
            need(g.period_ms > 0 and 0 <= g.jitter_ms <= g.period_ms, "groups", f"{g.name}: need period_ms > 0 and "
                 "0 <= jitter_ms <= period_ms")
            need(g.start_ms >= 0, "groups", f"{g.name}: start_ms must be >= 0")
            need(g.start_phase in START_PHASES, "groups", f"{g.name}: start_phase {g.start_phase!r}: use one of "
                 f"{', '.join(START_PHASES)}")
            need(g.arrivals in ARRIVALS, "groups", f"{g.name}: arrivals {g.arrivals!r}: use one of {', '.join(ARRIVALS)}")
            need(g.burst == 1 or (g.burst > 1 and g.arrivals == "onoff"), "groups", f"{g.name}: burst {g.burst}: "
                 "must be >= 1, and above 1 only with arrivals onoff")

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @property
    def interactive(self) -> bool:
        return self.duration_s == 0

    def cluster_groups(self) -> tuple[WorkerGroup, ...]:
        """``groups``, or the one (tor) or two (multihop: S1 behind s1, S2 behind s2) groups of the
        flat fields."""
        if self.groups:
            return self.groups
        return tuple(WorkerGroup(f"S{i + 1}", self.clusters, self.workers_per_cluster, self.period_ms,
                                 self.jitter_ms, sw, workers_per_host=self.workers_per_host)
                     for i, sw in enumerate(EDGE_SWITCHES[self.topo]))

    def group_of_cluster(self, cluster_id: int) -> tuple[int, WorkerGroup]:
        """Index and group of ``cluster_id`` (clusters are numbered in group order)."""
        first = 0
        for i, g in enumerate(self.cluster_groups()):
            if cluster_id < first + g.clusters:
                return i, g
            first += g.clusters
        raise ValueError(f"cluster {cluster_id} is in no group (the run has {first} clusters)")

    def to_plan(self) -> RunPlan:
        """The run plan of these emulation parameters (what ``olaf run`` hands the mininet backend,
        which maps it back with :func:`olaf.backends.mininet.run_spec`): the cluster groups, every
        switch's queue size and (when limited) its uplink rate in packets/s, transmission control,
        faults and the workload. An interactive run (``duration_s = 0``) gets
        :data:`INTERACTIVE_DURATION_S` here; the backend's ``interactive`` option opens the CLI."""
        queues = self.switch_queues()
        raw: dict[str, Any] = {
            "topology": self.topo, "queue": self.queue, "grads": self.grads, "seed": self.seed,
            "duration_s": self.duration_s or INTERACTIVE_DURATION_S,
            "groups": [{"name": g.name, "clusters": g.clusters, "workers_per_cluster": g.workers_per_cluster,
                        "period_ms": g.period_ms, "jitter_ms": g.jitter_ms, "switch": g.switch, "start_ms": g.start_ms,
                        "start_phase": g.start_phase, "arrivals": g.arrivals, "burst": g.burst,
                        "workers_per_host": g.workers_per_host}
                       for g in self.cluster_groups()],
            "queue_size": {sw: q.size for sw, q in queues.items()},
            "activity_window_ms": self.activity_window_ms,
            "tc": {"enabled": self.tc, "delta_t_ms": self.tc_delta_t_ms, "v_per_s": self.tc_v_per_s,
                   "q_max": self.tc_q_max, "reading": self.tc_reading}}
        uplinks = {sw: {"pps": q.rate_pps} for sw, q in queues.items() if q.rate_pps}
        if uplinks:
            raw["uplinks"] = uplinks
        if self.reward_threshold is not None:
            raw["reward_threshold"] = self.reward_threshold
        if self.updates_per_worker is not None:
            raw["updates_per_worker"] = self.updates_per_worker
        if self.faults:
            raw["faults"] = list(self.faults)
        if self.training is not None:
            raw["workload"] = {"kind": "ppo", "job": self.training}
        return RunPlan.model_validate(raw)

    @property
    def chunking(self) -> Chunking:
        """How an update of ``grads`` parameters crosses the emulated links (:attr:`hosts_mtu`): K
        chunks of L elements (:mod:`olaf.chunks`), K at most the P4 build's ``MAX_CHUNKS``.

        Raises:
            olaf.chunks.ChunkingError: K above ``MAX_CHUNKS`` (the message names P, K and the limit).
        """
        return Chunking.for_model(self.grads, self.hosts_mtu, max_chunks=MAX_CHUNKS)

    @property
    def hosts_mtu(self) -> int:
        """The MTU the hosts chunk for, bytes: a training job's (``olaf train --mtu``), else 1500."""
        return MTU if self.training is None else self.training.task.mtu

    @property
    def links_mtu(self) -> int:
        """The veths' MTU, bytes: 1500, raised to :attr:`hosts_mtu` for jumbo frames (at most 9000)."""
        return max(MTU, self.hosts_mtu)

    def switch_queues(self) -> dict[str, QueueSetup]:
        """Each switch's queue size (updates) and rate toward the PS (``queue_sizes``/``rates_pps`` over the
        flat fields: the switch attached to the PS has ``queue_size``/``rate_pps``, multihop edges
        ``edge_queue_size``/``edge_rate_pps``)."""
        out = {}
        for sw in SWITCHES[self.topo]:
            edge = self.topo == "multihop" and sw != "s3"
            size = self.queue_sizes.get(sw, self.edge_queue_size if edge else self.queue_size)
            rate = self.rates_pps.get(sw, self.edge_rate_pps if edge else self.rate_pps)
            out[sw] = QueueSetup(size, rate)
        return out

    @cached_property
    def run_plan(self) -> RunPlan:
        """The plan these parameters run: ``plan`` (the mininet backend's), else :meth:`to_plan`."""
        return self.plan if self.plan is not None else self.to_plan()

    def generation_limit_s(self) -> float:
        """Seconds from t0 by which every worker's schedule has ended: the latest worker start (its
        group's start and start phase) + ``duration_s`` (0: interactive); with ``updates_per_worker``
        (or a replayed trace) the plan's :meth:`~olaf.plan.plan.RunPlan.updates_end_ns`, capped by
        ``duration_s`` (the deadline)."""
        p = self.run_plan
        latest_start = max(p.latest_start_ms(g) for g in p.groups) / 1000
        need_ns = p.updates_end_ns() if self.updates_per_worker is not None or p.trace is not None else None
        if need_ns is None:
            return self.duration_s + latest_start if self.duration_s > 0 else 0.0
        return min(need_ns / 1e9, self.duration_s) if self.duration_s > 0 else need_ns / 1e9

    def deployment(self) -> cfgmod.Deployment:
        """The network of this run (raises RunSpecError for sizes the builders refuse)."""
        thr = None if self.reward_threshold is None else reward_to_fixed(self.reward_threshold)
        window_ns = int(self.activity_window_ms * 1e6)
        try:
            d = self._topology(thr, window_ns)
        except ValueError as e:
            field = "groups" if self.groups else "workers_per_cluster" if "workers_per_cluster" in str(e) else "clusters"
            raise RunSpecError(field, str(e)) from None
        g0 = self.cluster_groups()[0]
        adm = cfgmod.AdmissionFile(enabled=self.admission, worker_period_ms=g0.period_ms,
                                   worker_jitter_ms=g0.jitter_ms, tc=self.tc, delta_t_ms=self.tc_delta_t_ms,
                                   v_per_s=self.tc_v_per_s, tc_reading=self.tc_reading)
        return replace(d, admission=adm)

    def _topology(self, thr: Optional[int], window_ns: int) -> cfgmod.Deployment:
        if not self.groups and self.topo == "multihop" and self.clusters > 100:
            raise ValueError(f"clusters={self.clusters} per edge switch must be in 1..100")
        placements = [Placement(g.switch, g.clusters, g.workers_per_cluster, g.workers_per_host)
                      for g in self.cluster_groups()]
        ch = self.chunking
        return deployment(self.topo, placements, self.switch_queues(), num_grads=ch.chunk_len, num_chunks=ch.num_chunks,
                          discipline=self.queue, reward_threshold=thr, activity_window_ns=window_ns)

    def ps_config(self, d: cfgmod.Deployment, hosts_dir: Path) -> PsConfig:
        """The PS of deployment ``d``, logging into ``hosts_dir`` (:func:`olaf.hosts.jobconfig.ps_config`)."""
        workers = sorted((h for n, h in d.hosts.items() if h.worker_id is not None), key=lambda h: h.worker_id or 0)
        return jobconfig.ps_config(self.training, bind_ip=d.hosts[d.ps].ip, worker_ips=[h.ip for h in workers],
                                   out_dir=hosts_dir)

    def worker_config(self, d: cfgmod.Deployment, worker: str, cluster_id: int, hosts_dir: Path,
                      start_file: Path) -> WorkerConfig:
        """Worker host ``worker`` of deployment ``d`` in ``cluster_id``; starts at ``start_file``
        (for a group with ``start_ms`` > 0, at ``start_file(start_file, group index)``) plus its start
        phase, on the plan's arrival model (:func:`olaf.hosts.schedule.worker_schedule`; a replayed
        trace is written to ``hosts_dir/<worker>.trace.json``)."""
        h = d.hosts[worker]
        gi, g = self.group_of_cluster(cluster_id)
        if self.updates_per_worker is not None:  # stops after its updates; the harness enforces the deadline
            duration: Optional[float] = None if not self.interactive else INTERACTIVE_DURATION_S
        else:
            duration = INTERACTIVE_DURATION_S if self.interactive else self.duration_s
        return jobconfig.worker_config(
            self.training, ps_ip=d.hosts[d.ps].ip, bind_ip=h.ip,
            schedule=worker_schedule(self.run_plan, gi, h.worker_id or 0, duration_s=duration,
                                     max_updates=self.updates_per_worker, trace_dir=hosts_dir, name=worker),
            num_weights=self.grads, task_seed=self.seed,
            tx=TxParams(enabled=self.tc, delta_t_ms=self.tc_delta_t_ms, v_per_s=self.tc_v_per_s, q_max=self.tc_q_max,
                        reading=self.tc_reading),
            seed=worker_seed(self.seed, h.worker_id or 0), cluster_id=cluster_id, worker_id=h.worker_id,
            start_file=group_start_file(start_file, gi) if g.start_ms > 0 else start_file,
            out_dir=hosts_dir, name=worker, ack_port=h.udp_port)

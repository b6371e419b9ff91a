"""The emulated run of a plan: what the Mininet harness (:func:`olaf.topologies.emulation.run_once`)
builds from a :class:`~olaf.plan.plan.RunPlan` — the network (:meth:`EmulatedRun.deployment`), each
switch's queue and BMv2 egress rate, the PS's and the workers' configurations and the schedule.

The plan is the run; it validates itself (:class:`~olaf.plan.plan.RunPlan`). What only the
emulation limits is checked here, naming the plan field (:func:`emulation_problem`): K chunks
within the P4 build's ``MAX_CHUNKS``, Q_max · K segments within its ``SEGMENTS``, frames within
jumbo frames, the bandit task's largest model, faults within the run, the builders' host limits.
The ``mininet`` backend (:mod:`olaf.backends.mininet`) converts the plan's link capacities to
packets/s and turns these problems into its refusals.

Pure data and checks, no Mininet or P4Runtime import, so the CLI's ``--help`` and the tests of
the emulation's configuration work on a base install.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Optional

from olaf.bmv2 import BMV2_LOG_LEVEL, BMV2_LOG_LEVELS
from olaf.chunks import Chunking, ChunkingError
from olaf.configfile import ConfigError
from olaf.constants import JUMBO_MTU, MAX_CHUNKS, MTU, SEGMENTS
from olaf.controller import config as cfgmod
from olaf.fixedpoint import reward_to_fixed
from olaf.hosts import jobconfig
from olaf.hosts.ps import PsConfig
from olaf.hosts.runlog import group_start_file
from olaf.hosts.schedule import worker_schedule
from olaf.hosts.task import weights_problem
from olaf.hosts.worker import WorkerConfig
from olaf.plan.faults import parse_fault
from olaf.plan.plan import ClusterGroup, PPOWorkload, RunPlan
from olaf.plan.topology import Placement, worker_seed
from olaf.plan.workload import TrainJob
from olaf.topologies.build import QueueSetup, deployment

INTERACTIVE_DURATION_S = 10 * 24 * 3600
"""How long workers run in an interactive run (the Mininet CLI): until the CLI exits."""


def _segments_hint(k: int) -> str:
    """What a queue size (updates) may be when every update is ``k`` chunks (``k`` segments)."""
    return (f"must be in 1..{SEGMENTS // k} updates: each update is {k} chunk(s), one segment each, and the P4 "
            f"build has {SEGMENTS} segments")


@dataclass(frozen=True)
class EmulatedRun:
    """Plan ``plan`` as the Mininet harness runs it.

    Attributes:
        plan: the run (validated by its model).
        rates_pps: each switch's BMv2 egress rate toward the PS, packets/s (0 or absent: unlimited);
            the ``mininet`` backend converts the plan's ``uplinks`` (updates/s of K frames, Gbit/s)
            to them (:func:`olaf.backends.mininet.egress_rates_pps`).
        interactive: the network stays up with the Mininet CLI until it exits; the workers run
            until then (:data:`INTERACTIVE_DURATION_S`).
        bmv2_log_level: log level of every BMv2 switch (``warn`` keeps a loaded switch fast).
        pcap: capture every switch port into ``<run>/pcap/`` (BMv2 ``--pcap``).
        admission: ``olafctl create-cluster``/``add-worker`` ask the AoM verifier first (the network
            file's ``admission`` section carries the run's traffic and transmission control either way).

    Raises:
        olaf.configfile.ConfigError: what the emulation cannot build (:func:`emulation_problem`),
            the path naming the plan field.
    """

    plan: RunPlan
    rates_pps: Mapping[str, int] = field(default_factory=dict)
    interactive: bool = False
    bmv2_log_level: str = BMV2_LOG_LEVEL
    pcap: bool = False
    admission: bool = False

    def __post_init__(self) -> None:
        problem = emulation_problem(self)
        if problem is not None:
            raise ConfigError(*problem)

    # -- what the plan says, as the harness reads it --------------------------------------------
    @property
    def topo(self) -> str:
        return self.plan.topology

    @property
    def queue(self) -> str:
        """The switches' queue discipline: ``olaf`` or ``fifo``."""
        return self.plan.discipline

    @property
    def duration_s(self) -> float:
        """The run's deadline, s after t0 (:meth:`~olaf.plan.plan.RunPlan.deadline_s`); 0 when interactive."""
        return 0.0 if self.interactive else self.plan.deadline_s()

    @property
    def updates_per_worker(self) -> Optional[int]:
        return self.plan.updates_per_worker

    @property
    def faults(self) -> tuple[str, ...]:
        return tuple(self.plan.faults)

    @property
    def training(self) -> Optional[TrainJob]:
        """The training job (workers run PPO), None for the bandit task."""
        return self.plan.workload.job if isinstance(self.plan.workload, PPOWorkload) else None

    @property
    def tx(self):
        """The workers' transmission control (:class:`olaf.plan.tx.TxParams`), enabled by ``queue:
        olaf_tc`` or ``tc.enabled``."""
        return self.plan.tc.model_copy(update={"enabled": self.plan.transmission_control})

    @property
    def chunking(self) -> Chunking:
        """How an update of ``grads`` parameters crosses the emulated links (:attr:`hosts_mtu`): K
        chunks of L elements (:mod:`olaf.chunks`), K at most the P4 build's ``MAX_CHUNKS``.

        Raises:
            olaf.chunks.ChunkingError: K above ``MAX_CHUNKS`` (the message names P, K and the limit).
        """
        return self.plan.chunking(self.hosts_mtu, MAX_CHUNKS)

    @property
    def hosts_mtu(self) -> int:
        """The MTU the hosts chunk for, bytes: a training job's (``olaf train --mtu``), else 1500."""
        return self.plan.hosts_mtu(MTU)

    @property
    def links_mtu(self) -> int:
        """The veths' MTU, bytes: 1500, raised to :attr:`hosts_mtu` for jumbo frames (at most 9000)."""
        return max(MTU, self.hosts_mtu)

    def cluster_groups(self) -> list[ClusterGroup]:
        return self.plan.groups

    def group_of_cluster(self, cluster_id: int) -> tuple[int, ClusterGroup]:
        """Index and group of ``cluster_id`` (clusters are numbered in group order).

        Raises:
            ValueError: no group has it."""
        gi = self.plan.group_of_cluster(cluster_id)
        return gi, self.plan.groups[gi]

    def switch_queues(self) -> dict[str, QueueSetup]:
        """Each switch's Q_max (updates, the plan's ``queue_sizes``) and egress rate toward the PS
        (packets/s, :attr:`rates_pps`)."""
        return {sw: QueueSetup(size, self.rates_pps.get(sw, 0)) for sw, size in self.plan.queue_sizes.items()}

    def generation_limit_s(self) -> float:
        """Seconds from t0 by which every worker's schedule has ended: the latest worker start (its
        group's start and start phase) + the deadline (0: interactive); with ``updates_per_worker``
        (or a replayed trace) the plan's :meth:`~olaf.plan.plan.RunPlan.updates_end_ns`, capped by
        the deadline."""
        p, duration = self.plan, self.duration_s
        latest_start = max(p.latest_start_ms(g) for g in p.groups) / 1000
        need_ns = p.updates_end_ns() if p.updates_per_worker is not None or p.trace is not None else None
        if need_ns is None:
            return duration + latest_start if duration > 0 else 0.0
        return min(need_ns / 1e9, duration) if duration > 0 else need_ns / 1e9

    # -- what the harness builds ---------------------------------------------------------------
    def deployment(self) -> cfgmod.Deployment:
        """The network of this run: switches, hosts, links, clusters and the admission section.

        Raises:
            ValueError: sizes the builders refuse (:func:`olaf.topologies.build.deployment`)."""
        p = self.plan
        thr = None if p.reward_threshold is None else reward_to_fixed(p.reward_threshold)
        ch = self.chunking
        d = deployment(p.topology, [Placement(g.switch, g.clusters, g.workers_per_cluster, g.workers_per_host)
                                    for g in p.groups],
                       self.switch_queues(), num_grads=ch.chunk_len, num_chunks=ch.num_chunks,
                       discipline=self.queue, reward_threshold=thr, activity_window_ns=int(p.activity_window_ms * 1e6))
        g0, tx = p.groups[0], self.tx
        adm = cfgmod.AdmissionFile(enabled=self.admission, worker_period_ms=g0.period_ms,
                                   worker_jitter_ms=g0.jitter_ms, tc=tx.enabled, delta_t_ms=tx.delta_t_ms,
                                   v_per_s=tx.v_per_s, tc_reading=tx.reading)
        return replace(d, admission=adm)

    def ps_config(self, d: cfgmod.Deployment, hosts_dir: Path) -> PsConfig:
        """The PS of deployment ``d``, logging into ``hosts_dir`` (:func:`olaf.hosts.jobconfig.ps_config`)."""
        workers = sorted((h for h in d.hosts.values() if h.worker_id is not None), key=lambda h: h.worker_id or 0)
        return jobconfig.ps_config(self.training, bind_ip=d.hosts[d.ps].ip, worker_ips=[h.ip for h in workers],
                                   out_dir=hosts_dir)

    def worker_config(self, d: cfgmod.Deployment, worker: str, cluster_id: int, hosts_dir: Path,
                      start_file: Path) -> WorkerConfig:
        """Worker host ``worker`` of deployment ``d`` in ``cluster_id``; starts at ``start_file``
        (for a group with ``start_ms`` > 0, at ``start_file(start_file, group index)``) plus its start
        phase, on the plan's arrival model (:func:`olaf.hosts.schedule.worker_schedule`; a replayed
        trace is written to ``hosts_dir/<worker>.trace.json``)."""
        h, p = d.hosts[worker], self.plan
        gi, g = self.group_of_cluster(cluster_id)
        duration: Optional[float]
        if self.interactive:
            duration = INTERACTIVE_DURATION_S
        else:  # with updates_per_worker the worker stops after them; the harness enforces the deadline
            duration = None if p.updates_per_worker is not None else self.duration_s
        return jobconfig.worker_config(
            self.training, ps_ip=d.hosts[d.ps].ip, bind_ip=h.ip,
            schedule=worker_schedule(p, gi, h.worker_id or 0, duration_s=duration,
                                     max_updates=p.updates_per_worker, trace_dir=hosts_dir, name=worker),
            num_weights=p.grads, task_seed=p.seed, tx=self.tx,
            seed=worker_seed(p.seed, h.worker_id or 0), cluster_id=cluster_id, worker_id=h.worker_id,
            start_file=group_start_file(start_file, gi) if g.start_ms > 0 else start_file,
            out_dir=hosts_dir, name=worker, ack_port=h.udp_port)

    def backend_info(self) -> dict[str, object]:
        """What ``run.json``'s ``backend_info.emulation`` records beside the plan: the BMv2 rates
        (packets/s), the links' MTU (bytes), K and L, and the options."""
        ch = self.chunking
        return {"rates_pps": {sw: q.rate_pps for sw, q in self.switch_queues().items()},
                "links_mtu": self.links_mtu, "num_chunks": ch.num_chunks, "chunk_len": ch.chunk_len,
                "interactive": self.interactive, "bmv2_log_level": self.bmv2_log_level, "pcap": self.pcap,
                "admission": self.admission}


def emulation_problem(run: EmulatedRun) -> Optional[tuple[str, str]]:
    """What the emulation cannot build of ``run``, as ``(plan field path, message)``, or None."""
    p = run.plan
    if run.bmv2_log_level not in BMV2_LOG_LEVELS:
        return "bmv2_log_level", f"{run.bmv2_log_level!r}: use one of {', '.join(BMV2_LOG_LEVELS)}"
    job = run.training
    if job is not None and job.task.mtu > JUMBO_MTU:
        return "workload.job.task.mtu", (f"{job.task.mtu} B: the emulated veths carry at most {JUMBO_MTU} B "
                                         "frames; give at most that")
    if job is None and (problem := weights_problem(p.grads)) is not None:
        return "grads", problem
    try:
        k = run.chunking.num_chunks
    except ChunkingError as e:
        return "grads", f"{p.grads}: {e}"
    for sw, q in p.queue_sizes.items():
        if not 1 <= q * k <= SEGMENTS:
            return f"queue_size.{sw}", f"{q}: {_segments_hint(k)}"
    for sw, r in run.rates_pps.items():
        if sw not in p.switches or r < 0:
            return f"uplinks.{sw}", f"{r} packets/s: a rate of one of {', '.join(p.switches)}, >= 0 (0: unlimited)"
    if p.duration_s is not None and not run.interactive:
        for i, text in enumerate(p.faults):
            if parse_fault(text).at_s >= p.duration_s:
                return f"faults[{i}]", f"{text}: must happen within the run's {p.duration_s:g} s"
    try:
        run.deployment()
    except ValueError as e:
        return "groups", str(e)
    return None

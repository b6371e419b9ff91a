"""What one run is, on any backend: :class:`RunPlan` (topology, cluster groups, queues, links,
load, workload, transmission control, faults, seed). JSON Schema: ``docs/schemas/plan.schema.json``.

Topologies (paper §8, :mod:`olaf.plan.topology`): ``tor`` (every cluster behind ``s1``, whose
uplink to the PS is the bottleneck) and ``multihop`` (paper Fig. 9: groups behind the edge
switches ``s1`` and ``s2``, uplinked to the core ``s3``, which connects the PS).

A backend (:mod:`olaf.backends`) runs a plan; a field *set* in a plan that the backend cannot
honour (pydantic's ``model_fields_set``, not a default) is refused by the backend's ``check``
with the field's path, never dropped.

Every switch runs the queue discipline on its port toward the PS with its own
queue size (``queue_size``, segments) and its own uplink (``uplinks``: capacity
toward the PS and propagation delay), so Fig. 10's ``α = x1/x2`` is
``uplinks.s1.pps / uplinks.s2.pps`` and Table 3's per-group periods are the
groups' ``period_ms``. A capacity is given in Gbit/s or in packets/s of update
frames (``pps``: converted with the on-wire size of an update, see
:func:`update_frame_bytes`). The reverse direction of every link (ACKs) runs
at ``access.gbps``.

Queue disciplines: ``olaf`` (the OlafQueue), ``olaf_tc`` (the OlafQueue and the
workers' transmission control, paper §5), ``fifo`` (the tail-drop FIFO baseline
of the same size).

Arrivals (:mod:`olaf.plan.arrivals`): each group's workers generate periodically
(``arrivals: periodic``) or in line-rate bursts of ``burst`` updates at the same mean rate
(``arrivals: onoff``), and start at phases drawn over one whole period (``start_phase:
random``, the default) or together at the group's ``start_ms`` (``aligned``); or the plan
replays per-worker generation times from a trace file (``trace``: a training run's, ``olaf
trace extract``).

Workloads (``workload.kind``): ``bandit`` (the numpy contextual bandit of every worker:
the network experiments) and ``ppo`` (PPO on a Gymnasium environment: a training job,
:class:`~olaf.plan.workload.TrainJob`; ``grads`` must be its parameter count).

Model size and chunks: ``grads`` is the model's parameter count P. A backend derives from its
links' MTU how the update travels (:meth:`RunPlan.chunking`: K chunks of L elements,
:mod:`olaf.chunks`); ``queue_size`` is in *updates*, so a switch's queue gets ``queue_size · K``
segments and the status it reports (paper §5) means the same for every K.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from pydantic import Field, PrivateAttr, model_validator

from olaf.chunks import Chunking
from olaf.configfile import ConfigError, FileModel
from olaf.constants import (
    DEFAULT_ACTIVITY_WINDOW_MS,
    ELEMENT_LEN,
    IPV4_HEADER_LEN,
    MAX_CHUNKS_WIRE,
    MAX_ELEMENTS,
    SEGMENTS,
    UDP_HEADER_LEN,
    UPDATE_HEADER_LEN,
)
from olaf.plan.arrivals import TraceFileError, WorkerTrace, read_traces, repeat_times, start_phase_ns
from olaf.plan.faults import parse_fault
from olaf.plan.topology import DEFAULT_QUEUE_SIZES, EDGE_SWITCHES, PARENT, SWITCHES
from olaf.plan.tx import TxParams
from olaf.plan.workload import TrainJob

MAX_MODEL_PARAMS = MAX_CHUNKS_WIRE * MAX_ELEMENTS
"""Largest ``grads``: 65535 chunks of 65535 elements (the 16-bit wire fields)."""

DEADLINE_SLACK = 1.25
"""A run of ``updates_per_worker`` without a duration gets this many times its nominal schedule
(plus :data:`DEADLINE_EXTRA_S`) before it is stopped as incomplete (:meth:`RunPlan.deadline_s`)."""
DEADLINE_EXTRA_S = 5.0
"""Seconds added to a deadline of :data:`DEADLINE_SLACK` × the schedule: the hosts' start-up."""

PPP_HEADER_LEN = 2
"""Bytes ns-3's point-to-point device puts in front of an IPv4 datagram (PPP)."""

def update_frame_bytes(grads: int) -> int:
    """On-wire bytes of one update frame on a simulated link: PPP (2) + IPv4 (20) + UDP (8) + 30 + 4·G
    (G: the frame's elements, the chunk length L when updates travel in chunks)."""
    return PPP_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN + UPDATE_HEADER_LEN + ELEMENT_LEN * grads


class Link(FileModel):
    """A link toward the PS: capacity (exactly one of ``gbps``, ``pps``, ``load``) and delay.

    ``pps``: updates/s, i.e. ``pps · K`` frames of an update's K chunks (:func:`update_frame_bytes`
    of the chunk length L each): ``pps · K · frame · 8`` bit/s. So a ``pps`` bottleneck is the same
    fraction of the offered update rate for every K.

    ``load``: the capacity is the offered rate measured at the switch divided by ``load`` (the
    paper's "offered load / capacity", §8.1 Table 1), tracked while the run goes
    (:mod:`olaf.plan.bottleneck`). For workers whose update rate is not known in advance — a
    training job's send as fast as they iterate, which depends on the machine — so that the link
    congests by the same factor on a fast machine and on a busy one. A backend that cannot
    change a link's rate during a run refuses it.
    """

    gbps: Optional[float] = Field(default=None, gt=0, description="capacity, Gbit/s")
    pps: Optional[float] = Field(default=None, gt=0, description="capacity, updates per second (K chunk frames each)")
    load: Optional[float] = Field(default=None, gt=0, description="capacity = the measured offered rate / load "
                                  "(> 1 congests), tracked during the run")
    delay_us: float = Field(default=10.0, ge=0, description="propagation delay, µs")

    @model_validator(mode="after")
    def _one_rate(self) -> Link:
        if sum(x is not None for x in (self.gbps, self.pps, self.load)) != 1:
            raise ValueError("give exactly one of gbps, pps and load")
        return self

    def bps(self, grads: int, num_chunks: int = 1) -> float:
        """Capacity in bit/s for updates of ``num_chunks`` frames of ``grads`` elements each.

        Raises:
            ValueError: a ``load`` link, whose capacity is only known during the run.
        """
        if self.gbps is not None:
            return self.gbps * 1e9
        if self.pps is None:
            raise ValueError(f"a link of load {self.load} has its capacity measured during the run, not a fixed one")
        return self.pps * num_chunks * update_frame_bytes(grads) * 8


class ClusterGroup(FileModel):
    """Clusters with the same workers, schedule and edge switch (paper §8.3's S1, S2)."""

    name: str = Field(default="S1", description="label in results")
    clusters: int = Field(ge=1, description="clusters in this group")
    workers_per_cluster: int = Field(ge=1, le=0xFFFF)
    period_ms: float = Field(default=100.0, gt=0, description="update period of each worker, ms")
    jitter_ms: float = Field(default=0.0, ge=0, description="gap = period + U(-jitter, +jitter), ms")
    switch: str = Field(default="s1", description="edge switch: s1 (tor); s1 or s2 (multihop)")
    start_ms: float = Field(default=0.0, ge=0, description="the group's workers start this long after t0, ms "
                            "(the first update comes one gap later)")
    start_phase: Literal["random", "aligned"] = Field(
        default="random", description="random: each worker starts a phase U[0, period_ms * burst) after start_ms, "
        "drawn from its own seeded stream (olaf.plan.arrivals); aligned: every worker at start_ms")
    arrivals: Literal["periodic", "onoff"] = Field(
        default="periodic", description="periodic: one update per gap period +- jitter; onoff: bursts of `burst` "
        "updates back to back (line rate), one burst per gap burst * period +- jitter (the same mean rate)")
    burst: int = Field(default=1, ge=1, le=0xFFFF, description="updates per burst (arrivals: onoff)")
    workers_per_host: int = Field(default=1, ge=1, le=0xFFFF, description="a cluster's workers share hosts in "
                                  "runs of this many: one address and switch port, a UDP port each (the "
                                  "five-tuple identity, paper §7; mininet backend)")

    @model_validator(mode="after")
    def _jitter(self) -> ClusterGroup:
        if self.jitter_ms > self.period_ms:
            raise ValueError(f"jitter_ms ({self.jitter_ms}) must be <= period_ms ({self.period_ms})")
        if self.burst > 1 and self.arrivals != "onoff":
            raise ValueError(f"burst: {self.burst} updates per burst needs arrivals: onoff")
        return self

    @property
    def cycle_ms(self) -> float:
        """One period of the group's arrival pattern, ms: ``period_ms · burst`` (``burst`` is 1 when periodic)."""
        return self.period_ms * self.burst

    @property
    def phase_span_ms(self) -> float:
        """Largest start phase of the group's workers, ms: one cycle when random, 0 when aligned."""
        return self.cycle_ms if self.start_phase == "random" else 0.0


class TraceReplay(FileModel):
    """Per-worker generation times replayed instead of the groups' arrival models
    (:mod:`olaf.plan.arrivals`): worker ``i`` of the plan generates at the ``i``-th trace worker's
    times, offsets from its start (its group's ``start_ms``; no start phase)."""

    file: str = Field(description="trace file (JSON, olaf.plan.arrivals; `olaf trace extract RUN_DIR -o FILE` "
                      "writes one from a run directory); {seed} in it is replaced by the plan's seed (one recorded "
                      "job per seed)")
    scale: float = Field(default=1.0, gt=0, description="multiplies every time (0.5 replays twice as fast)")
    repeat: bool = Field(default=False, description="replay each worker's times again and again until duration_s "
                         "(olaf.plan.arrivals.repeat_times)")


class BanditWorkload(FileModel):
    """Every worker runs the numpy contextual bandit (:mod:`olaf.hosts.task`) with ``grads`` weights."""

    kind: Literal["bandit"] = "bandit"


class PPOWorkload(FileModel):
    """Every worker runs PPO (:mod:`olaf.rl`, the ``ppo`` task), the PS the job's step and mode."""

    kind: Literal["ppo"] = "ppo"
    job: TrainJob = Field(default_factory=TrainJob, description="the training job (olaf.plan.workload.TrainJob)")


Workload = Annotated[Union[BanditWorkload, PPOWorkload], Field(discriminator="kind")]
"""What the workers run (``kind``: ``bandit`` or ``ppo``)."""


class RunPlan(FileModel):
    """One run. Bad values raise :class:`olaf.configfile.ConfigError` through
    :func:`olaf.configfile.validate` (or pydantic's ValidationError when built directly).

    At least one of ``duration_s`` (generation window from each worker's start, s) and
    ``updates_per_worker`` (or a ``trace``, which ends); with several, a worker stops at whichever comes first (a run
    whose workers cannot generate their updates in the window is incomplete, and its
    results say how many they generated).
    """

    topology: Literal["tor", "multihop"] = "tor"
    queue: Literal["olaf", "olaf_tc", "fifo"] = "olaf"
    groups: list[ClusterGroup] = Field(min_length=1)
    grads: int = Field(default=16, ge=1, le=MAX_MODEL_PARAMS,
                       description="model parameters per update (P); a backend sends an update that does not fit "
                       "its frame as K chunks (olaf.chunks) and refuses a K above its build limit")
    duration_s: Optional[float] = Field(default=None, gt=0)
    updates_per_worker: Optional[int] = Field(default=None, ge=1)
    queue_size: dict[str, int] = Field(default_factory=dict, description="Q_max per switch, updates (K segments "
                                       "each when updates travel in K chunks)")
    uplinks: dict[str, Link] = Field(default_factory=dict, description="each switch's link toward the PS")
    access: Link = Field(default=Link(gbps=1.0), description="worker links; also every link's ACK direction")
    tc: TxParams = Field(default=TxParams(), description="transmission control (paper §5): on with queue olaf_tc or "
                         "tc.enabled")
    activity_window_ms: float = Field(default=DEFAULT_ACTIVITY_WINDOW_MS, ge=0, description="window for counting active "
                                      "clusters, ms")
    reward_threshold: Optional[float] = Field(default=None, ge=0, description="reward filter T; None = off")
    segments: int = Field(default=SEGMENTS, ge=1, le=0xFFFF, description="physical segments per switch")
    device_queue_packets: int = Field(default=100, ge=1, description="DropTail of every device (not the Olaf queue)")
    linger_ms: float = Field(default=500.0, ge=0, description="simulated time after the last generation")
    seed: int = Field(default=1, ge=0)
    records: bool = Field(default=True, description="per-update logs (off: counters only, for scale runs)")
    updates_from_each: list[int] = Field(default_factory=list, description="report, for each N, the time until the "
                                         "PS has received N updates from every worker (aggregated ones counted per "
                                         "contributing worker; paper §8.2, Fig. 7): metric time_to_each_ms.<N>")
    workload: Workload = Field(default_factory=BanditWorkload, description="what the workers run")
    faults: list[str] = Field(default_factory=list, description="faults injected during the run: "
                              "switch-restart:<switch>@<s>, ps-kill@<s> (olaf.plan.faults)")
    trace: Optional[TraceReplay] = Field(default=None, description="replay per-worker generation times from a "
                                         "trace file instead of the groups' arrival models")

    _traces: Optional[list[WorkerTrace]] = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self) -> RunPlan:
        if self.duration_s is None and self.updates_per_worker is None and self.trace is None:
            raise ValueError("give duration_s or updates_per_worker (or both: updates within a time limit)")
        switches, edges = SWITCHES[self.topology], EDGE_SWITCHES[self.topology]
        for i, g in enumerate(self.groups):
            if g.switch not in edges:
                raise ValueError(f"groups[{i}].switch: {g.switch!r} is not an edge switch of "
                                 f"{self.topology}; use one of {', '.join(edges)}")
        for field in ("queue_size", "uplinks"):
            unknown = set(getattr(self, field)) - set(switches)
            if unknown:
                raise ValueError(f"{field}: unknown switch(es) {', '.join(sorted(unknown))}; "
                                 f"{self.topology} has {', '.join(switches)}")
        if self.access.load is not None:
            raise ValueError(f"access.load: {self.access.load}: a measured capacity is for a link toward the PS "
                             "(uplinks.<switch>.load); give the access links gbps or pps")
        measured = [sw for sw, link in self.uplinks.items() if link.load is not None]
        if measured and self.transmission_control:
            raise ValueError(f"uplinks.{measured[0]}.load: transmission control lowers the workers' sending when "
                             "the queue fills, so a capacity measured from it would follow it down "
                             "(olaf.plan.bottleneck); give pps or gbps, or turn transmission control off")
        for sw, q in self.queue_sizes.items():
            if not 1 <= q <= self.segments:
                raise ValueError(f"queue_size.{sw}: {q} must be in 1..segments ({self.segments})")
        if self.num_clusters > 0xFFFF:
            raise ValueError(f"{self.num_clusters} clusters: cluster ids are 16 bit (at most 65535)")
        for i, text in enumerate(self.faults):
            fault = parse_fault(text)
            if fault.switch is not None and fault.switch not in switches:
                raise ValueError(f"faults[{i}]: {text}: {self.topology} has switches {', '.join(switches)}")
        if isinstance(self.workload, PPOWorkload) and self.grads != self.workload.job.num_params:
            raise ValueError(f"grads: {self.grads}, but the training job's updates carry its "
                             f"{self.workload.job.num_params} parameters: set grads to that")
        if any(n < 1 for n in self.updates_from_each):
            raise ValueError(f"updates_from_each: {self.updates_from_each}: each N must be >= 1")
        if self.updates_from_each and not self.records:
            raise ValueError("updates_from_each needs records: true (per-update logs)")
        if self.num_workers > 250 * 250:
            raise ValueError(f"{self.num_workers} workers: at most {250 * 250} (addressing 10.0.x.y)")
        if self.trace is not None and self.trace.repeat and self.duration_s is None:
            raise ValueError("trace.repeat: a repeated trace never ends; give duration_s")
        if self.trace is not None:
            for i, g in enumerate(self.groups):
                for f in ("start_phase", "arrivals", "burst"):
                    if f in g.model_fields_set and getattr(g, f) != ClusterGroup.model_fields[f].default:
                        raise ValueError(f"groups[{i}].{f}: {getattr(g, f)!r}, but the plan replays a trace "
                                         "(trace.file): its workers generate at the trace's times; remove one")
        return self

    @property
    def trace_file(self) -> str:
        """``trace.file`` with ``{seed}`` replaced by the plan's seed.

        Raises:
            olaf.configfile.ConfigError: no ``trace``."""
        if self.trace is None:
            raise ConfigError("trace", "the plan replays no trace")
        return self.trace.file.replace("{seed}", str(self.seed))

    def traces(self) -> list[WorkerTrace]:
        """The replayed generation times of the plan's workers 1..N, in order (read once, from
        ``trace.file``).

        Raises:
            olaf.configfile.ConfigError: no ``trace``; or the file cannot be read, has no workers,
                a worker with no or bad times, or fewer workers than the plan (the message names
                ``trace.file`` and the fix).
        """
        if self.trace is None:
            raise ConfigError("trace", "the plan replays no trace")
        if self._traces is None:
            try:
                got = read_traces(self.trace_file)
            except TraceFileError as e:
                raise ConfigError(str(e)) from None
            if len(got) < self.num_workers:
                raise ConfigError("trace.file", f"{self.trace_file}: {len(got)} workers' traces for a plan of "
                                  f"{self.num_workers} workers; give a trace of at least {self.num_workers} workers "
                                  "or fewer workers (groups[*].clusters, workers_per_cluster)")
            got = got[:self.num_workers]
            if self.trace.repeat:
                assert self.duration_s is not None  # _check refuses trace.repeat without it
                until = self.duration_s * 1000 / self.trace.scale
                try:
                    got = [WorkerTrace(w.name, repeat_times(w.t_ms, until)) for w in got]
                except ValueError as e:
                    raise ConfigError("trace.repeat", f"{self.trace_file}: {e}") from None
            self._traces = got
        return self._traces

    def start_phase_ns(self, group: int, worker_id: int) -> int:
        """Worker ``worker_id``'s (of ``groups[group]``) start after its group's ``start_ms``, ns: its
        random phase (:func:`olaf.plan.arrivals.start_phase_ns`), 0 when aligned or replaying a trace."""
        g = self.groups[group]
        if self.trace is not None or g.start_phase == "aligned":
            return 0
        return start_phase_ns(self.seed, worker_id, g.cycle_ms)

    def chunking(self, mtu: int, max_chunks: int = MAX_CHUNKS_WIRE) -> Chunking:
        """How an update of ``grads`` parameters travels on links of ``mtu`` bytes (:mod:`olaf.chunks`).

        Raises:
            olaf.chunks.ChunkingError: K above ``max_chunks`` (the message names P, K and the limit).
        """
        return Chunking.for_model(self.grads, mtu, max_chunks=max_chunks)

    def hosts_mtu(self, links_mtu: int) -> int:
        """The IPv4 MTU the hosts chunk their updates for, bytes: a training job's own
        (``job.task.mtu``, ``olaf train --mtu``), else ``links_mtu`` (the backend's links')."""
        if isinstance(self.workload, PPOWorkload):
            return self.workload.job.task.mtu
        return links_mtu

    def queue_segments(self, chunking: Chunking) -> dict[str, int]:
        """Segments of every switch's queue: ``queue_size · K`` (Q_max updates of K chunks each)."""
        return {sw: q * chunking.num_chunks for sw, q in self.queue_sizes.items()}

    @property
    def num_clusters(self) -> int:
        return sum(g.clusters for g in self.groups)

    @property
    def num_workers(self) -> int:
        return sum(g.clusters * g.workers_per_cluster for g in self.groups)

    @property
    def switches(self) -> tuple[str, ...]:
        return SWITCHES[self.topology]

    @property
    def queue_sizes(self) -> dict[str, int]:
        """Q_max of every switch (paper defaults for the ones not given)."""
        return {**DEFAULT_QUEUE_SIZES[self.topology], **self.queue_size}

    def uplink(self, switch: str) -> Link:
        """``switch``'s link toward the PS (the access link's if not given)."""
        return self.uplinks.get(switch, self.access)

    def path_to_ps(self, switch: str) -> list[str]:
        """Switches from ``switch`` up to the one attached to the PS."""
        out = [switch]
        while (nxt := PARENT[self.topology][out[-1]]) is not None:
            out.append(nxt)
        return out

    @property
    def root_switch(self) -> str:
        """The switch attached to the PS (its uplink is the last hop)."""
        return next(sw for sw, up in PARENT[self.topology].items() if up is None)

    def offered_pps(self, switch: str) -> float:
        """Updates generated per second by the workers whose path crosses ``switch``
        (``Σ clusters · workers_per_cluster · 1000 / period_ms``; skipped ones included)."""
        return sum(g.clusters * g.workers_per_cluster * 1000.0 / g.period_ms
                   for g in self.groups if switch in self.path_to_ps(g.switch))

    @property
    def discipline(self) -> str:
        """The switches' queue: ``olaf`` or ``fifo`` (``olaf_tc`` is the OlafQueue)."""
        return "fifo" if self.queue == "fifo" else "olaf"

    @property
    def transmission_control(self) -> bool:
        """Workers apply paper §5: ``queue: olaf_tc`` or ``tc.enabled``."""
        return self.queue == "olaf_tc" or self.tc.enabled

    def latest_start_ms(self, g: ClusterGroup) -> float:
        """The latest start of a worker of group ``g`` after t0, ms (its ``start_ms`` and largest phase)."""
        return g.start_ms + (0.0 if self.trace is not None else g.phase_span_ms)

    @property
    def generation_end_ns(self) -> Optional[int]:
        """End of the generation window (t0 = 0: the latest worker start + ``duration_s``; a worker
        with a random start phase starts up to one cycle after its group), None without a duration."""
        if self.duration_s is None:
            return None
        return round((max(self.latest_start_ms(g) for g in self.groups) / 1000 + self.duration_s) * 1e9)

    def deadline_s(self) -> float:
        """When a run of this plan is stopped, s after t0: ``duration_s``, or for a run of
        ``updates_per_worker`` alone :data:`DEADLINE_SLACK` × :meth:`schedule_end_ns` + 5 s (a
        worker not done by then makes the run incomplete)."""
        if self.duration_s is not None:
            return self.duration_s
        return DEADLINE_SLACK * self.schedule_end_ns() / 1e9 + DEADLINE_EXTRA_S

    def schedule_end_ns(self) -> int:
        """When every worker has surely finished generating (t0 = 0): the generation window's end,
        or :meth:`updates_end_ns` if earlier."""
        ends = [e for e in (self.generation_end_ns, self.updates_end_ns()) if e is not None]
        return min(ends)

    def updates_end_ns(self) -> Optional[int]:
        """When every worker has surely generated its updates (t0 = 0), None when only ``duration_s``
        limits them: with ``updates_per_worker`` n, the latest ``start + ⌈n/burst⌉ × (burst · period +
        jitter)``; replaying a trace, its workers' last replayed time (at most n of them)."""
        n = self.updates_per_worker
        if self.trace is not None:
            return max(round(self.latest_start_ms(self.groups[gi]) * 1e6) + round(t.t_ms[:n][-1] * self.trace.scale * 1e6)
                       for gi, t in zip(self.worker_groups(), self.traces()))
        if n is None:
            return None
        return max(round((self.latest_start_ms(g) + -(-n // g.burst) * (g.cycle_ms + g.jitter_ms)) * 1e6)
                   for g in self.groups)

    def group_clusters(self) -> list[range]:
        """The cluster ids of each group, in group order: clusters are numbered 0.. in group order
        on every backend (the one cluster → group walk)."""
        out, first = [], 0
        for g in self.groups:
            out.append(range(first, first + g.clusters))
            first += g.clusters
        return out

    def group_of_cluster(self, cluster_id: int) -> int:
        """The index of the group of cluster ``cluster_id``.

        Raises:
            ValueError: no group has it (the message gives the plan's number of clusters)."""
        for gi, ids in enumerate(self.group_clusters()):
            if cluster_id in ids:
                return gi
        raise ValueError(f"cluster {cluster_id} is in no group (the plan has {self.num_clusters} clusters)")

    def worker_groups(self) -> list[int]:
        """The group index of every worker 1..N (workers are numbered in group order)."""
        return [gi for gi, g in enumerate(self.groups) for _ in range(g.clusters * g.workers_per_cluster)]

"""What one emulated run is: :class:`RunSpec` (topology, load, queue, bottleneck, logging)
and the host configurations it implies.

Pure data and checks, no Mininet or P4Runtime import, so ``olaf run --help`` and the
tests of the spec work on a base install.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Optional

from olaf.constants import MAX_G_JUMBO, SEGMENTS
from olaf.controller import config as cfgmod
from olaf.fixedpoint import reward_to_fixed
from olaf.hosts.ps import PsConfig
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.task import TaskParams
from olaf.hosts.txcontrol import TxParams
from olaf.hosts.worker import WorkerConfig
from olaf.topologies.build import QueueSetup, multihop, tor

INTERACTIVE_DURATION_S = 10 * 24 * 3600
"""How long workers run in interactive mode (``duration_s = 0``): until the CLI exits."""

TOPOLOGIES = ("tor", "multihop")
QUEUES = ("olaf", "fifo")
BMV2_LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")


class RunSpecError(ValueError):
    """A bad run parameter; ``field`` names it (the CLI option is ``--<field with dashes>``)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass
class RunSpec:
    """Parameters of one run (defaults: paper §8.1 microbenchmark shape, congested).

    Attributes:
        topo: "tor" (one switch) or "multihop" (paper Fig. 9).
        queue: "olaf" or "fifo" (the FIFO baseline of the same switch and size).
        duration_s: seconds of update generation; 0 = interactive (Mininet CLI).
        clusters: tor: clusters; multihop: clusters per edge switch.
        workers_per_cluster: workers per cluster.
        period_ms / jitter_ms: each worker's update period and its jitter, ms.
        queue_size: Q_max in segments (tor and multihop core; multihop edges use edge_queue_size).
        edge_queue_size: multihop only: Q_max of s1 and s2.
        rate_pps: bottleneck (egress toward the PS) in packets/s, 0 = unlimited.
        edge_rate_pps: multihop only: rate of s1/s2 toward s3 (0 = unlimited).
        grads: gradient elements per update.
        reward_threshold: reward filter T in reward units, None = off.
        activity_window_ms: window for the active-cluster count in ACKs, ms.
        tc: worker transmission control (paper §5), with tc_delta_t_ms and tc_v_per_s.
        seed: task seed (worker i uses seed + i for its own draws).
        bmv2_log_level: log level of every BMv2 switch (``warn`` keeps a loaded switch fast).
        pcap: capture every switch port to ``<run>/pcap/`` (BMv2 ``--pcap``).
        admission: enable admission control of ``olafctl create-cluster``/``add-worker``
            (the network file's ``admission`` section carries this run's traffic and
            transmission-control parameters either way; controller/admission.py).

    Raises:
        RunSpecError: a value out of range; the message names the field.
    """

    topo: str = "tor"
    queue: str = "olaf"
    duration_s: float = 30.0
    clusters: int = 9
    workers_per_cluster: int = 3
    period_ms: float = 50.0
    jitter_ms: float = 10.0
    queue_size: int = 8
    edge_queue_size: int = 5
    rate_pps: int = 200
    edge_rate_pps: int = 0
    grads: int = 16
    reward_threshold: Optional[float] = None
    activity_window_ms: float = 200.0
    tc: bool = False
    tc_delta_t_ms: float = 400.0
    tc_v_per_s: float = 2.5
    seed: int = 1
    bmv2_log_level: str = "warn"
    pcap: bool = False
    admission: bool = False

    def __post_init__(self) -> None:
        def need(ok: bool, field: str, message: str) -> None:
            if not ok:
                raise RunSpecError(field, f"{getattr(self, field)!r}: {message}")

        need(self.topo in TOPOLOGIES, "topo", f"use one of {', '.join(TOPOLOGIES)}")
        need(self.queue in QUEUES, "queue", f"use one of {', '.join(QUEUES)}")
        need(self.duration_s >= 0, "duration_s", "must be >= 0 seconds (0: interactive)")
        need(self.clusters >= 1, "clusters", "must be >= 1")
        need(self.workers_per_cluster >= 1, "workers_per_cluster", "must be >= 1")
        need(self.period_ms > 0, "period_ms", "must be > 0 ms")
        need(0 <= self.jitter_ms <= self.period_ms, "jitter_ms", "must be in 0..period_ms")
        for f in ("queue_size", "edge_queue_size"):
            need(1 <= getattr(self, f) <= SEGMENTS, f, f"must be in 1..{SEGMENTS} (segments of the P4 build)")
        for f in ("rate_pps", "edge_rate_pps"):
            need(getattr(self, f) >= 0, f, "must be >= 0 packets/s (0: unlimited)")
        need(1 <= self.grads <= MAX_G_JUMBO, "grads", f"must be in 1..{MAX_G_JUMBO}")
        need(self.reward_threshold is None or self.reward_threshold >= 0, "reward_threshold", "must be >= 0")
        need(self.activity_window_ms >= 0, "activity_window_ms", "must be >= 0 ms")
        need(self.tc_delta_t_ms > 0, "tc_delta_t_ms", "must be > 0 ms")
        need(self.tc_v_per_s >= 0, "tc_v_per_s", "must be >= 0")
        need(self.bmv2_log_level in BMV2_LOG_LEVELS, "bmv2_log_level", f"use one of {', '.join(BMV2_LOG_LEVELS)}")

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @property
    def interactive(self) -> bool:
        return self.duration_s == 0

    def deployment(self) -> cfgmod.Deployment:
        """The network of this run (raises RunSpecError for sizes the builders refuse)."""
        thr = None if self.reward_threshold is None else reward_to_fixed(self.reward_threshold)
        window_ns = int(self.activity_window_ms * 1e6)
        try:
            d = self._topology(thr, window_ns)
        except ValueError as e:
            field = "workers_per_cluster" if "workers_per_cluster" in str(e) else "clusters"
            raise RunSpecError(field, str(e)) from None
        adm = cfgmod.AdmissionFile(enabled=self.admission, worker_period_ms=self.period_ms,
                                   worker_jitter_ms=self.jitter_ms, tc=self.tc, delta_t_ms=self.tc_delta_t_ms,
                                   v_per_s=self.tc_v_per_s)
        return replace(d, admission=adm)

    def _topology(self, thr: Optional[int], window_ns: int) -> cfgmod.Deployment:
        if self.topo == "tor":
            return tor(self.clusters, self.workers_per_cluster,
                       queue=QueueSetup(self.queue_size, self.rate_pps), num_grads=self.grads,
                       discipline=self.queue, reward_threshold=thr, activity_window_ns=window_ns)
        return multihop(self.clusters, self.workers_per_cluster,
                        edge_queue=QueueSetup(self.edge_queue_size, self.edge_rate_pps),
                        core_queue=QueueSetup(self.queue_size, self.rate_pps), num_grads=self.grads,
                        discipline=self.queue, reward_threshold=thr, activity_window_ns=window_ns)

    def ps_config(self, d: cfgmod.Deployment, hosts_dir: Path) -> PsConfig:
        """The PS of deployment ``d``, logging into ``hosts_dir``."""
        return PsConfig(bind_ip=d.hosts[d.ps].ip, out_dir=hosts_dir, name="ps")

    def worker_config(self, d: cfgmod.Deployment, worker: str, cluster_id: int, hosts_dir: Path,
                      start_file: Path) -> WorkerConfig:
        """Worker host ``worker`` of deployment ``d`` in ``cluster_id``; starts at ``start_file``."""
        h = d.hosts[worker]
        duration = INTERACTIVE_DURATION_S if self.interactive else self.duration_s
        return WorkerConfig(
            ps_ip=d.hosts[d.ps].ip, bind_ip=h.ip,
            schedule=ScheduleSpec(period_ms=self.period_ms, jitter_ms=self.jitter_ms, duration_s=duration),
            task=TaskParams(num_weights=self.grads, task_seed=self.seed),
            tx=TxParams(enabled=self.tc, delta_t_ms=self.tc_delta_t_ms, v_per_s=self.tc_v_per_s),
            seed=self.seed + (h.worker_id or 0), cluster_id=cluster_id, worker_id=h.worker_id,
            start_file=start_file, out_dir=hosts_dir, name=worker)

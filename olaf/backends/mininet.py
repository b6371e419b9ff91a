"""The ``mininet`` backend: the plan emulated with Mininet and BMv2 switches running the Olaf
P4 program, the P4Runtime controller and real ``olaf ps`` / ``olaf worker`` processes
(:func:`olaf.topologies.emulation.run_once`, root and the P4 toolchain).

The plan runs as an :class:`~olaf.topologies.emulated.EmulatedRun` (:func:`emulated_run`):
its cluster groups, per-switch queue sizes and uplink rates (BMv2 egress rates in packets/s:
a capacity in Gbit/s is converted with the Ethernet frame of an update; a capacity given as
``load`` follows the offered rate measured during the run, :mod:`olaf.plan.bottleneck`), the workload
(a training job), transmission control and faults. What the emulation cannot express is
refused by the field's name when it is set in the plan (:data:`REFUSED`): veth links are not
shaped and add no delay (``uplinks.*.delay_us``, ``access``); ns-3's device queues, its
linger time and counters-only mode have no equivalent; the P4 build's number of segments is
fixed. An experiment that runs on both backends says in its spec which of these the Mininet
runs leave out (``backends.mininet.unset``).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Optional

from olaf.backends.base import Backend, BackendOptions, PlanRefused, RunResult, refuse_set
from olaf.chunks import ChunkingError
from olaf.configfile import ConfigError
from olaf.constants import (
    ELEMENT_LEN,
    ETH_HEADER_LEN,
    IPV4_HEADER_LEN,
    JUMBO_MTU,
    MAX_CHUNKS,
    MTU,
    SEGMENTS,
    UDP_HEADER_LEN,
    UPDATE_HEADER_LEN,
)
from olaf.harness import RunMonitor
from olaf.paths import build_dir
from olaf.plan.plan import RunPlan

REFUSED = {
    "uplinks.*.delay_us": "veth links add no propagation delay",
    "access": "veth links are not shaped (the access links' capacity and delay)",
    "device_queue_packets": "BMv2's egress queue toward the PS is the rate-limited one; there are no device queues",
    "linger_ms": "an emulated run ends when its workers stopped and their last ACKs came back",
}


def ethernet_frame_bytes(grads: int) -> int:
    """Bytes of an update frame on a veth link: Ethernet 14 + IPv4 20 + UDP 8 + 30 + 4·G (G: the
    elements of one frame, the chunk length L when updates travel in chunks)."""
    return ETH_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN + UPDATE_HEADER_LEN + ELEMENT_LEN * grads


def egress_rates_pps(p: RunPlan) -> dict[str, int]:
    """Each switch's BMv2 egress rate toward the PS, packets/s (0: unlimited), from the plan's
    ``uplinks``: ``updates_per_s`` · K chunk frames, or Gbit/s over the Ethernet frame of a chunk
    (:func:`ethernet_frame_bytes`), rounded to whole packets/s; a ``load`` link starts unlimited
    and follows the offered rate measured during the run (:mod:`olaf.plan.bottleneck`); a switch
    without an uplink has the unshaped access link.

    Raises:
        PlanRefused: a rate below 1 packet/s, or a model of more chunks than the P4 build takes.
    """
    try:
        ch = p.chunking(p.hosts_mtu(MTU), MAX_CHUNKS)
    except ChunkingError as e:
        raise PlanRefused("mininet", "grads", str(e)) from None
    rates = {}
    for switch in p.switches:
        link = p.uplinks.get(switch)
        if link is None or link.load is not None:
            rates[switch] = 0
            continue
        # BMv2 limits packets/s: a plan's pps is updates/s of K chunk frames (olaf.plan.plan.Link)
        pps = (link.pps * ch.num_chunks if link.pps is not None
               else link.gbps * 1e9 / (8 * ethernet_frame_bytes(ch.chunk_len)))  # type: ignore[operator]
        if pps < 1:
            raise PlanRefused("mininet", f"uplinks.{switch}", f"{pps:.3g} packets/s: BMv2 rates are whole packets/s "
                              "(>= 1); scale the plan (an experiment: backends.mininet.set)")
        rates[switch] = round(pps)
    return rates


def emulated_run(p: RunPlan, options: Optional[BackendOptions] = None):
    """Plan ``p`` as the Mininet harness runs it (an :class:`~olaf.topologies.emulated.EmulatedRun`), checked.

    Raises:
        PlanRefused: a field the emulation cannot express (named), or sizes its builders refuse.
    """
    from olaf.topologies.emulated import EmulatedRun  # noqa: PLC0415

    o = options or BackendOptions()
    refuse_set("mininet", p, REFUSED)
    if p.segments != SEGMENTS:
        raise PlanRefused("mininet", "segments", f"{p.segments}: the P4 build has {SEGMENTS} segments")
    if not p.records:
        raise PlanRefused("mininet", "records", "the hosts always log every update")
    if p.trace is not None:
        p.traces()  # raises ConfigError naming trace.file
    try:
        return EmulatedRun(p, egress_rates_pps(p), interactive=o.interactive, bmv2_log_level=o.bmv2_log_level,
                           pcap=o.pcap, admission=o.admission)
    except PlanRefused:
        raise
    except ConfigError as e:
        raise PlanRefused("mininet", e.path, e.message) from None


class MininetBackend(Backend):
    """Mininet + BMv2: the real data plane and host programs, on this machine."""

    name = "mininet"
    description = "Mininet + BMv2 switches with the OlafQueue extern, P4Runtime controller, real hosts (root)"
    mtu = MTU
    max_mtu = JUMBO_MTU
    """Jumbo frames: the veths (hosts' and switches' ports) are set to the job's MTU when it is
    above 1500 B; BMv2 reads frames of any size (its packet buffer is the frame + 512 B)."""

    def __init__(self, options: BackendOptions) -> None:
        self.options = options

    def preflight(self) -> None:
        """Root, the P4 tools, the build outputs and Mininet.

        Raises:
            olaf.topologies.emulation.RunFailed: what is missing and how to get it.
        """
        from olaf.topologies.emulation import preflight  # noqa: PLC0415

        preflight(self.options.build or build_dir())

    def check(self, plan: RunPlan) -> None:
        emulated_run(plan, self.options)

    def run(self, plan: RunPlan, out: Path, monitor: Optional[RunMonitor] = None) -> RunResult:
        """Emulate ``plan`` into ``out`` (after :meth:`preflight`, as every backend's run).

        Raises:
            PlanRefused: see :meth:`check`.
            olaf.topologies.emulation.RunFailed: cannot start (what is missing) or the run failed.
        """
        import time  # noqa: PLC0415

        from olaf.topologies.emulation import launch_processes, run_once  # noqa: PLC0415 (Mininet on first use)

        run = emulated_run(plan, self.options)
        out.mkdir(parents=True, exist_ok=True)
        t = time.monotonic()
        summary = run_once(run, out, self.options.build or build_dir(), self.options.console,
                           progress=self.options.progress, quiet=self.options.quiet, monitor=monitor,
                           launch=partial(launch_processes, nice=self.options.worker_nice))
        return RunResult.of_run(self.name, out, time.monotonic() - t, summary)


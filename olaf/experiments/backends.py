"""Run one scenario of an experiment on a backend, into a run directory ``olaf report`` reads.

* ``ns3`` — :func:`olaf.sim.backend.run_ns3` (the scenario as it is);
* ``mininet`` — the scenario mapped onto the emulation (:func:`run_spec`: a
  :class:`~olaf.topologies.spec.RunSpec` with the scenario's cluster groups, per-switch
  queue sizes and rates, updates per worker) and run by
  :func:`olaf.topologies.emulation.run_once`.

What the emulation does not model is refused with a :class:`~olaf.configfile.ConfigError`
naming the field (a number of segments other than the P4 build's, a capacity below BMv2's
1 packet/s) or ignored and said so in :data:`MININET_IGNORES` (link delays, the access
links' capacity: veth links are not shaped; ns-3's device queues).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from rich.console import Console

from olaf.configfile import ConfigError
from olaf.constants import ELEMENT_LEN, IPV4_HEADER_LEN, SEGMENTS, UDP_HEADER_LEN, UPDATE_HEADER_LEN
from olaf.sim.scenario import Scenario

ETHERNET_HEADER_LEN = 14
MININET_IGNORES = ("uplinks.*.delay_us", "access", "device_queue_packets", "linger_ms")
"""Scenario fields without an equivalent in the emulation (veth links have no delay or shaping;
BMv2's egress queue toward the PS is the rate-limited one)."""
DEADLINE_SLACK = 1.25
"""A Mininet run of ``updates_per_worker`` without a duration gets this many times its
nominal schedule (plus 5 s) before it is stopped as incomplete."""


def ethernet_frame_bytes(grads: int) -> int:
    """Bytes of an update frame on a veth link: Ethernet 14 + IPv4 20 + UDP 8 + 26 + 4·G."""
    return ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN + UPDATE_HEADER_LEN + ELEMENT_LEN * grads


def _rate_pps(s: Scenario, switch: str) -> int:
    if switch not in s.uplinks:
        return 0  # the access link's capacity: unshaped veth, unlimited
    link = s.uplinks[switch]
    pps = link.pps if link.pps is not None else link.gbps * 1e9 / (8 * ethernet_frame_bytes(s.grads))  # type: ignore[operator]
    if pps < 1:
        raise ConfigError(f"uplinks.{switch}", f"{pps:.3g} packets/s: BMv2 rates are whole packets/s (>= 1); "
                          "scale the scenario for the mininet backend (backends.mininet.set)")
    return round(pps)


def run_spec(s: Scenario, *, bmv2_log_level: str = "warn"):
    """The emulated run of scenario ``s`` (a :class:`~olaf.topologies.spec.RunSpec`).

    Raises:
        ConfigError: a field the emulation cannot express (named).
    """
    from olaf.topologies.spec import RunSpec, RunSpecError, WorkerGroup  # noqa: PLC0415

    if s.segments != SEGMENTS:
        raise ConfigError("segments", f"{s.segments}: the P4 build has {SEGMENTS} segments; the mininet backend "
                          "cannot change them")
    groups = tuple(WorkerGroup(g.name, g.clusters, g.workers_per_cluster, g.period_ms, g.jitter_ms, g.switch,
                               g.start_ms) for g in s.groups)
    if s.updates_per_worker is not None and s.duration_s is None:
        duration = DEADLINE_SLACK * s.schedule_end_ns() / 1e9 + 5
    else:
        assert s.duration_s is not None
        duration = s.duration_s
    try:
        return RunSpec(topo=s.topology, queue=s.discipline, duration_s=duration, groups=groups,
                       updates_per_worker=s.updates_per_worker, queue_sizes=dict(s.queue_sizes),
                       rates_pps={sw: _rate_pps(s, sw) for sw in s.switches}, grads=s.grads,
                       reward_threshold=s.reward_threshold, activity_window_ms=s.activity_window_ms,
                       tc=s.transmission_control, tc_delta_t_ms=s.tc.delta_t_ms, tc_v_per_s=s.tc.v_per_s,
                       tc_q_max=s.tc.q_max, seed=s.seed, bmv2_log_level=bmv2_log_level)
    except RunSpecError as e:
        raise ConfigError(e.field, str(e).split(": ", 1)[1]) from None


def check_mininet(s: Scenario) -> None:
    """Raise ConfigError if ``s`` cannot be emulated (mapping and topology sizes)."""
    from olaf.topologies.spec import RunSpecError  # noqa: PLC0415

    spec = run_spec(s)
    try:
        spec.deployment()
    except RunSpecError as e:
        raise ConfigError(e.field, str(e).split(": ", 1)[1]) from None


def run(backend: str, s: Scenario, out: Path, *, console: Console, build: Optional[Path] = None) -> None:
    """Run ``s`` on ``backend`` into the run directory ``out`` (report written, no plots).

    Raises:
        olaf.sim.build.SimUnavailable: ns3 missing (message with the install command).
        olaf.topologies.emulation.RunFailed: the emulated run failed (message says where).
    """
    if backend == "ns3":
        from olaf.sim.backend import run_ns3  # noqa: PLC0415

        run_ns3(s, out, report=False)
        return
    from olaf.topologies.emulation import run_once  # noqa: PLC0415

    assert build is not None
    out.mkdir(parents=True, exist_ok=True)
    run_once(run_spec(s), out, build, console, progress=False, quiet=True)

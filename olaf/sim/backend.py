"""Run a :class:`~olaf.sim.scenario.Scenario` in ns-3: :func:`run_ns3`.

Python is the control plane here, C++ the data plane (:mod:`olaf.sim.build`):
this module creates the switches, hosts and links of the scenario's network
(:mod:`olaf.sim.topology`) in the C++ simulation, writes the switch tables
(worker table, routes, multicast groups — what the P4Runtime controller writes
on BMv2), runs it and hands the results to :mod:`olaf.sim.rundir`, which
writes a run directory that ``olaf report`` reads like an emulated run's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from olaf.fixedpoint import GRAD_FRAC_BITS, REWARD_FRAC_BITS, reward_to_fixed
from olaf.sim import build, rundir
from olaf.sim.scenario import Scenario
from olaf.sim.simrun import SimRun
from olaf.sim.topology import PS_IP, Network, WorkerHost, ip_int, network
from olaf.topologies.build import worker_seed

NS_PER_MS = 1_000_000
DEFAULT_SCHEDULER = "ns3::PriorityQueueScheduler"
"""ns-3 event scheduler (bench/sim_speed.py compares them)."""


def _queue_params(ns: Any, s: Scenario, switch: str) -> Any:
    q = ns.QueueParams()
    q.discipline = s.discipline
    q.segments = s.segments
    q.num_clusters = s.num_clusters
    q.queue_size = s.queue_sizes[switch]
    q.reward_threshold = -1 if s.reward_threshold is None else reward_to_fixed(s.reward_threshold)
    q.activity_window_ns = round(s.activity_window_ms * NS_PER_MS)
    return q


def _link(ns: Any, s: Scenario, up_bps: float, delay_us: float) -> Any:
    lp = ns.LinkParams()
    lp.up_bps = up_bps
    lp.down_bps = s.access.bps(s.grads)
    lp.delay_ns = round(delay_us * 1000)
    lp.device_queue_packets = s.device_queue_packets
    return lp


def _worker_params(ns: Any, s: Scenario, w: WorkerHost) -> Any:
    g = s.groups[w.group]
    p = ns.WorkerParams()
    p.ip = ip_int(w.ip)
    p.ps_ip = ip_int(PS_IP)
    p.start_ns = round(g.start_ms * NS_PER_MS)
    p.period_ns = round(g.period_ms * NS_PER_MS)
    p.jitter_ns = round(g.jitter_ms * NS_PER_MS)
    p.duration_ns = 0 if s.duration_s is None else round(s.duration_s * 1e9)
    p.max_updates = s.updates_per_worker or 0
    p.tc = s.transmission_control
    p.tc_delta_t_ms = s.tc.delta_t_ms
    p.tc_v_per_s = s.tc.v_per_s
    p.tc_q_max = s.tc.q_max or 0
    p.seed = worker_seed(s.seed, w.worker_id)  # as olaf run seeds its workers
    p.grad_frac_bits = GRAD_FRAC_BITS
    p.reward_frac_bits = REWARD_FRAC_BITS
    return p


def stop_time_ns(s: Scenario) -> int:
    """Simulated time to run: the end of every worker's schedule (:meth:`Scenario.schedule_end_ns`)
    plus ``linger_ms`` for the last ACKs."""
    return s.schedule_end_ns() + round(s.linger_ms * NS_PER_MS)


def simulate(s: Scenario, scheduler: str = DEFAULT_SCHEDULER) -> SimRun:
    """Build and run ``s``; the results stay in the returned :class:`SimRun`.

    Raises:
        olaf.sim.build.SimUnavailable: ns3 missing or the library cannot be built.
    """
    import time

    ns = build.load()
    t0 = time.perf_counter()
    net = network(s)
    sim = ns.Simulation(s.seed, s.grads, s.records)
    sw = {name: sim.AddSwitch(name, _queue_params(ns, s, name)) for name in net.switches}
    ps = sim.AddPs("ps", ip_int(PS_IP))
    up_port: dict[str, int] = {}
    child_port: dict[tuple[str, str], int] = {}
    for name in net.switches:
        link = s.uplink(name)
        parent = net.parent[name]
        ports = sim.Connect(sw[name], ps if parent is None else sw[parent], _link(ns, s, link.bps(s.grads), link.delay_us))
        up_port[name] = ports & 0xFFFF
        if parent is not None:
            child_port[(parent, name)] = ports >> 16
        sim.SetQueuePort(sw[name], up_port[name])
        sim.AddRoute(sw[name], ip_int(PS_IP), 32, up_port[name])
    workers: dict[str, int] = {}
    access_port: dict[str, int] = {}
    for w in net.workers:
        workers[w.name] = sim.AddWorker(w.name, _worker_params(ns, s, w))
        access_port[w.name] = sim.Connect(workers[w.name], sw[w.switch], _link(ns, s, s.access.bps(s.grads),
                                                                                s.access.delay_us)) >> 16
    for name in net.switches:
        _write_tables(sim, s, net, name, sw[name], up_port, child_port, access_port)
    sim.SetScheduler(scheduler)
    setup_s = time.perf_counter() - t0
    st = sim.Run(stop_time_ns(s))
    stats = {"wall_s": st.wall_s, "events": int(st.events), "packets": int(st.packets), "sim_end_ns": int(st.sim_end_ns)}
    return SimRun(s, net, sim, sw, workers, ps, stats, setup_s)


def _write_tables(sim: Any, s: Scenario, net: Network, name: str, idx: int, up_port: dict[str, int],
                  child_port: dict[tuple[str, str], int], access_port: dict[str, int]) -> None:
    """Worker table, routes and multicast groups of switch ``name`` (module docstring of
    :mod:`olaf.sim.topology`)."""

    def port_toward(w: WorkerHost) -> tuple[int, bool]:
        if w.switch == name:
            return access_port[w.name], True
        path = net.path_to_ps(w.switch)
        if name in path:  # w is below this switch: go down toward its edge
            return child_port[(name, path[path.index(name) - 1])], False
        return up_port[name], False

    for cid, members in net.clusters.items():
        down: set[int] = set()
        for w in members:
            sim.AddWorkerEntry(idx, ip_int(w.ip), w.worker_id, cid)
            port, direct = port_toward(w)
            sim.AddRoute(idx, ip_int(w.ip), 32, port)
            if direct:
                sim.AddReplica(idx, cid, port, ip_int(w.ip))
            elif port != up_port[name] and port not in down:
                down.add(port)
                sim.AddReplica(idx, cid, port, 0)


def run_ns3(scenario: Scenario, out_dir: Path | str, *, report: bool = True, plots: bool = True) -> Path:
    """Simulate ``scenario`` and write its run directory ``out_dir`` (created if missing).

    The directory has the layout of an emulated run (:mod:`olaf.sim.rundir`), so
    ``olaf report out_dir`` works unchanged; with ``report`` the report is written too
    (``summary.json``, ``summary.csv``, plots unless ``plots`` is False). With
    ``scenario.records`` off only counters are written (no per-update logs, no report).

    Raises:
        olaf.sim.build.SimUnavailable: the ``ns3`` package is missing (the message
            has the install command) or the simulation library cannot be built.
    """
    out = Path(out_dir)
    run = simulate(scenario)
    rundir.write(run, out)
    if report and scenario.records:
        report_run(out, plots=plots)
    return out


def report_run(run_dir: Path, plots: bool = True) -> Optional[dict[str, Any]]:
    """``olaf report`` on a simulated run directory (the report's public entry point)."""
    from olaf.report.commands import report_run as _report_run

    return _report_run(run_dir, plots=plots)

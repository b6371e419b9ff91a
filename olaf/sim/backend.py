"""Run a :class:`~olaf.plan.plan.RunPlan` in ns-3: :func:`run_ns3`.

Python is the control plane here, C++ the data plane (:mod:`olaf.sim.build`):
this module creates the switches, hosts and links of the scenario's network
(:mod:`olaf.sim.topology`) in the C++ simulation, writes the switch tables
(worker table, routes, multicast groups — what the P4Runtime controller writes
on BMv2), runs it and hands the results to :mod:`olaf.sim.rundir`, which
writes a run directory that ``olaf report`` reads like an emulated run's.

Model size: the plan's ``grads`` is the model's parameter count P; on the backend's links of
``mtu`` bytes an update travels as K chunks of L elements (:meth:`RunPlan.chunking`,
:mod:`olaf.chunks`). A switch's queue then has ``queue_size · K`` segments (``queue_size`` is in
updates), and a link given in ``pps`` (updates/s) carries ``pps · K`` chunk frames per second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from olaf.chunks import Chunking
from olaf.configfile import ConfigError
from olaf.constants import JUMBO_MTU, TxReading
from olaf.controller.state import SwitchState, desired_state
from olaf.fixedpoint import GRAD_FRAC_BITS, REWARD_FRAC_BITS, reward_to_fixed
from olaf.plan.arrivals import trace_gaps_ns
from olaf.plan.plan import Link, RunPlan
from olaf.plan.topology import worker_seed
from olaf.sim import build, rundir
from olaf.sim.simrun import SimRun
from olaf.sim.topology import PS_IP, WorkerHost, ip_int, network, worker_schedule_of, worker_start_ns

NS_PER_MS = 1_000_000
MTU = JUMBO_MTU
"""IPv4 MTU of every simulated link, bytes (the ns3 backend's ``mtu``): it decides K and L."""


def chunking(s: RunPlan) -> Chunking:
    """How an update of ``s.grads`` parameters travels on the simulated links (:data:`MTU`).

    Raises:
        olaf.chunks.ChunkingError: more than 65535 chunks.
    """
    return s.chunking(MTU)


DEFAULT_SCHEDULER = "ns3::PriorityQueueScheduler"
"""ns-3 event scheduler (bench/sim_speed.py compares them)."""


def _queue_params(ns: Any, s: RunPlan, switch: str, ch: Chunking) -> Any:
    q = ns.QueueParams()
    q.discipline = s.discipline
    q.segments = s.segments
    q.num_clusters = s.num_clusters
    q.queue_size = s.queue_segments(ch)[switch]  # Q_max updates of K segments each
    q.reward_threshold = -1 if s.reward_threshold is None else reward_to_fixed(s.reward_threshold)
    q.activity_window_ns = round(s.activity_window_ms * NS_PER_MS)
    return q


def _link(ns: Any, s: RunPlan, up: Link, ch: Chunking) -> Any:
    """ns-3 parameters of a link whose direction toward the PS is ``up`` (capacity for updates of K
    chunk frames of L elements) and whose reverse direction (ACKs) runs at ``access``'s capacity."""
    lp = ns.LinkParams()
    lp.up_bps = up.bps(ch.chunk_len, ch.num_chunks)
    lp.down_bps = s.access.bps(ch.chunk_len, ch.num_chunks)
    lp.delay_ns = round(up.delay_us * 1000)
    lp.device_queue_packets = s.device_queue_packets
    return lp


def check_arrivals(s: RunPlan, ch: Chunking) -> None:
    """Refuse what the simulated workers cannot generate as the plan says.

    Raises:
        olaf.configfile.ConfigError: a trace that cannot be replayed (``trace.file``), or an on/off
            burst of more chunk frames than a worker's device queue holds (``groups[i].burst``).
    """
    if s.trace is not None:
        s.traces()
    for i, g in enumerate(s.groups):
        if g.burst * ch.num_chunks > s.device_queue_packets:
            raise ConfigError(f"groups[{i}].burst", f"{g.burst} updates of K = {ch.num_chunks} chunks back to back "
                              f"exceed a worker's device queue of {s.device_queue_packets} packets "
                              "(device_queue_packets); lower the burst or raise device_queue_packets")


def _worker_params(ns: Any, s: RunPlan, w: WorkerHost) -> Any:
    g = s.groups[w.group]
    sched = worker_schedule_of(s, w)
    p = ns.WorkerParams()
    p.ip = ip_int(w.ip)
    p.ps_ip = ip_int(PS_IP)
    p.start_ns = worker_start_ns(s, w, sched.phase_ns)
    p.period_ns = round(g.period_ms * NS_PER_MS)
    p.jitter_ns = round(g.jitter_ms * NS_PER_MS)
    p.burst = sched.burst
    if sched.trace_ms is not None:
        import cppyy  # noqa: PLC0415 (loaded with the simulation library)

        p.trace_gaps_ns = cppyy.gbl.std.vector["int64_t"](list(trace_gaps_ns(sched.trace_ms, sched.trace_scale)))
    p.duration_ns = 0 if s.duration_s is None else round(s.duration_s * 1e9)
    p.max_updates = s.updates_per_worker or 0
    p.tc = s.transmission_control
    p.tc_delta_t_ms = s.tc.delta_t_ms
    p.tc_v_per_s = s.tc.v_per_s
    p.tc_q_max = s.tc.q_max or 0
    p.tc_reading = int(TxReading.from_label(s.tc.reading))
    p.seed = worker_seed(s.seed, w.worker_id)  # as olaf run seeds its workers
    p.grad_frac_bits = GRAD_FRAC_BITS
    p.reward_frac_bits = REWARD_FRAC_BITS
    return p


def stop_time_ns(s: RunPlan) -> int:
    """Simulated time to run: the end of every worker's schedule (:meth:`RunPlan.schedule_end_ns`)
    plus ``linger_ms`` for the last ACKs."""
    return s.schedule_end_ns() + round(s.linger_ms * NS_PER_MS)


def simulate(s: RunPlan, scheduler: str = DEFAULT_SCHEDULER) -> SimRun:
    """Build and run ``s``; the results stay in the returned :class:`SimRun`.

    Raises:
        olaf.sim.build.SimUnavailable: ns3 missing or the library cannot be built.
        olaf.chunks.ChunkingError: an update needs more than 65535 chunks.
        ValueError: a queue of ``queue_size · K`` segments exceeds the switch's ``segments``.
    """
    import time

    ch = chunking(s)
    check_arrivals(s, ch)
    for name, segs in s.queue_segments(ch).items():
        if segs > s.segments:
            raise ValueError(f"queue_size.{name}: {segs // ch.num_chunks} updates of K = {ch.num_chunks} chunks need "
                             f"{segs} segments; the switch has {s.segments} (raise segments or lower queue_size)")
    ns = build.load()
    t0 = time.perf_counter()
    net = network(s)
    sim = ns.Simulation(s.seed, ch.num_params, ch.chunk_len, ch.num_chunks, s.records)
    sw = {name: sim.AddSwitch(name, _queue_params(ns, s, name, ch)) for name in net.switches}
    ps = sim.AddPs("ps", ip_int(PS_IP))
    up_port: dict[str, int] = {}
    child_port: dict[tuple[str, str], int] = {}
    for name in net.switches:
        link = s.uplink(name)
        parent = net.parent[name]
        ports = sim.Connect(sw[name], ps if parent is None else sw[parent], _link(ns, s, link, ch))
        up_port[name] = ports & 0xFFFF
        if parent is not None:
            child_port[(parent, name)] = ports >> 16
        sim.SetQueuePort(sw[name], up_port[name])
    workers: dict[str, int] = {}
    # the layout's port numbers (BMv2's) -> the simulated switch's ports, per switch
    port_of: dict[str, dict[int, int]] = {name: {} for name in net.switches}
    lay = net.layout
    for name in net.switches:
        parent = net.parent[name]
        if parent is None:
            port_of[name][lay.hosts[lay.ps].port] = up_port[name]
        else:
            hop = next(x for x in lay.links if x.a == name and x.b == parent)
            port_of[name][hop.port_a] = up_port[name]
            port_of[parent][hop.port_b] = child_port[(parent, name)]
    for w in net.workers:
        workers[w.name] = sim.AddWorker(w.name, _worker_params(ns, s, w))
        port_of[w.switch][lay.hosts[w.name].port] = sim.Connect(workers[w.name], sw[w.switch],
                                                                _link(ns, s, s.access, ch)) >> 16
    for name in net.switches:
        _write_tables(sim, desired_state(lay, name), sw[name], port_of[name])
    sim.SetScheduler(scheduler)
    setup_s = time.perf_counter() - t0
    st = sim.Run(stop_time_ns(s))
    stats = {"wall_s": st.wall_s, "events": int(st.events), "packets": int(st.packets), "sim_end_ns": int(st.sim_end_ns)}
    return SimRun(s, net, sim, sw, workers, ps, stats, setup_s, ch)


def _write_tables(sim: Any, st: SwitchState, idx: int, port_of: dict[int, int]) -> None:
    """Program switch ``idx`` with the controller's desired state ``st``
    (:func:`olaf.controller.state.desired_state`): worker table, /32 routes and, per cluster, the
    multicast group's replicas — toward a worker rewritten to its address (``ack_rewrite``),
    toward a switch unchanged. ``port_of`` maps the layout's ports to the simulated switch's."""
    for (ip, _udp_port), e in st.workers.items():   # one worker per address in a simulated layout
        sim.AddWorkerEntry(idx, ip_int(ip), e.worker_id, e.cluster_id)
    for ip, r in st.routes.items():
        sim.AddRoute(idx, ip_int(ip), 32, port_of[r.port])
    for cid, replicas in st.groups.items():
        for rep in replicas:
            rewrite = st.rewrites.get(rep.rid) if rep.rid else None
            sim.AddReplica(idx, cid, port_of[rep.port], ip_int(rewrite.dst_ip) if rewrite else 0)


def run_ns3(scenario: RunPlan, out_dir: Path | str, *, report: bool = True, plots: bool = True) -> Path:
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

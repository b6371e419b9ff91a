"""The simulation's point-to-point link model (``olaf/sim/cpp/olaf_link.hpp``), through the
simulation API: a frame takes ``(size + 2 B PPP header) · 8 / rate`` on the wire plus the link's
delay, frames that arrive while the link is busy wait in a drop-tail FIFO of
``device_queue_packets`` and leave back to back, and a full FIFO refuses the next frame. Times
are exact integers of simulated ns; no wall clock is involved."""

from __future__ import annotations

import pytest

from olaf.fixedpoint import GRAD_FRAC_BITS, REWARD_FRAC_BITS
from olaf.wire import ETH_HEADER_LEN, update_frame_len

PPP_BYTES = 2
"""ns-3's PPP header (ns3::PppHeader), counted in every frame's serialisation time."""
WORKER_IP, PS_IP = 0x0A000001, 0x0A0000FE  # 10.0.0.1, 10.0.0.254
L, K = 16, 4  # a model of 64 parameters in 4 chunks of 16


def tx_ns(size_bytes: int, bps: float) -> int:
    """Serialisation time of a datagram of ``size_bytes`` (ns-3's DataRate rounds to the ns)."""
    return round((size_bytes + PPP_BYTES) * 8 / bps * 1e9)


def run_one_worker(sim, *, up_bps: float, queue_packets: int, delay_ns: int) -> tuple:
    """A worker -> switch -> PS line; the worker sends one update of K chunks at t = 1 ms.
    The worker's access link runs at ``up_bps`` toward the switch; every other direction at 1 Gbit/s."""
    s = sim.Simulation(1, L * K, L, K, True)
    q = sim.QueueParams()
    q.queue_size = 8 * K
    q.segments = 8 * K
    sw = s.AddSwitch("s1", q)
    ps = s.AddPs("ps", PS_IP)
    wp = sim.WorkerParams()
    wp.ip, wp.ps_ip = WORKER_IP, PS_IP
    wp.start_ns, wp.period_ns, wp.max_updates, wp.seed = 1_000_000, 10_000_000, 1, 7
    wp.grad_frac_bits, wp.reward_frac_bits = GRAD_FRAC_BITS, REWARD_FRAC_BITS
    w = s.AddWorker("w1", wp)
    fast = sim.LinkParams()
    fast.up_bps = fast.down_bps = 1e9
    fast.delay_ns = delay_ns
    fast.device_queue_packets = 100
    ports = s.Connect(sw, ps, fast)
    ps_port = ports & 0xFFFF
    access = sim.LinkParams()  # the worker is `a`: `up` is its direction toward the switch
    access.up_bps, access.down_bps, access.delay_ns = up_bps, 1e9, delay_ns
    access.device_queue_packets = queue_packets
    w_port = s.Connect(w, sw, access) >> 16
    s.SetQueuePort(sw, ps_port)
    s.AddRoute(sw, PS_IP, 32, ps_port)
    s.AddRoute(sw, WORKER_IP, 32, w_port)
    s.AddWorkerEntry(sw, WORKER_IP, 1, 0)
    s.AddReplica(sw, 0, w_port, WORKER_IP)
    s.Run(50_000_000)
    gens = list(s.Gens(w))
    return s, w, ps, gens


@pytest.mark.ns3
def test_chunks_serialise_back_to_back_on_a_slow_link(sim) -> None:
    up, delay = 10e6, 5_000
    s, w, ps, gens = run_one_worker(sim, up_bps=up, queue_packets=K, delay_ns=delay)
    assert len(gens) == 1 and gens[0].chunks_sent == K
    size = update_frame_len(L) - ETH_HEADER_LEN  # the IPv4 datagram the link carries
    t_up, t_fast = tx_ns(size, up), tx_ns(size, 1e9)
    got = sorted((r.chunk, r.t_ns) for r in s.PsUpdates(ps))
    # chunk i leaves the worker after i + 1 frames on its slow link (the first on the wire at once,
    # the others waiting in its FIFO), crosses the switch with nothing ahead of it on the fast
    # queue port, and arrives a serialisation and a delay later
    want = [(i, gens[0].t_ns + (i + 1) * t_up + delay + t_fast + delay) for i in range(K)]
    assert got == want
    # the PS answers each chunk: K ACK slices reach the worker, spaced as the chunks reached the PS
    acks = sorted(a.t_ns for a in s.Acks(w))
    assert len(acks) == K
    assert [b - a for a, b in zip(acks, acks[1:], strict=False)] == [t_up] * (K - 1)
    c = s.GetWorkerCounters(w)
    assert (c.chunks_sent, c.send_errors) == (K, 0)


@pytest.mark.ns3
def test_a_full_device_fifo_refuses_the_next_frame(sim) -> None:
    queue = 2  # one chunk on the wire, two waiting: the fourth is refused
    s, w, ps, gens = run_one_worker(sim, up_bps=10e6, queue_packets=queue, delay_ns=0)
    c = s.GetWorkerCounters(w)
    assert (c.chunks_sent, c.send_errors) == (queue + 1, K - queue - 1)
    assert sorted(r.chunk for r in s.PsUpdates(ps)) == list(range(queue + 1))
    assert gens[0].chunks_sent == queue + 1

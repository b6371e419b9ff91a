"""The simulated workers' transmission control (olaf/sim/cpp/txcontrol.hpp) gives the same
send probability P_s as olaf.hosts.txcontrol (paper §5) for the same status and Δ̂."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olaf.hosts.txcontrol import send_probability, staleness_boost

pytestmark = pytest.mark.ns3


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 5000), q=st.integers(1, 64), dh=st.floats(0, 5000), dt=st.floats(1, 2000),
       v=st.floats(0, 50))
def test_send_probability_agrees(sim, n: int, q: int, dh: float, dt: float, v: float) -> None:
    assert sim.send_probability(n, q, dh, dt, v) == pytest.approx(float(send_probability(n, q, dh, dt, v)), abs=1e-12)
    assert sim.staleness_boost(dh, dt, v) == pytest.approx(float(staleness_boost(dh, dt, v)), abs=1e-12)


def test_decide_regimes(sim) -> None:
    """tc off / no status / uncongested always send; congested draws with P_s (paper §5)."""
    p = sim.TxParams()
    assert sim.TransmissionControl(p, sim.Xoshiro256(1, 3)).decide(0).reason == 0  # tc_off
    p.enabled = True
    tc = sim.TransmissionControl(p, sim.Xoshiro256(1, 3))
    d = tc.decide(0)
    assert d.send and d.reason == 1  # no_status
    tc.on_ack(0, True, 4, 8)
    d = tc.decide(10**6)
    assert d.send and d.reason == 3 and d.delta_hat_ms == pytest.approx(1.0)  # uncongested
    tc.on_ack(0, True, 32, 8)
    sends = sum(tc.decide(100 * 10**6).send for _ in range(20000))  # Δ̂ = 100 ms < Δ̄_T: P_s = 8/32
    assert abs(sends / 20000 - 0.25) < 0.02
    d = tc.decide(900 * 10**6)  # Δ̂ = 900 ms: f = 2.5 * 0.5 -> P_s = 1
    assert d.reason == 4 and d.p_send == 1.0 and d.send

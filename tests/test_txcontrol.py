"""Transmission control (paper §5) against hand-computed probabilities and seeded draws."""

import numpy as np
import pytest

from olaf.plan.tx import TxParams
from olaf.txcontrol import TransmissionControl, send_probability, staleness_boost
from olaf.wire import QueueStatus

MS = 1_000_000


def test_boost_is_zero_until_the_threshold_then_linear():
    assert staleness_boost(399.0, 400.0, 2.5) == 0.0
    assert staleness_boost(400.0, 400.0, 2.5) == 0.0
    # v = 2.5 /s, 200 ms over the threshold -> 0.5
    assert staleness_boost(600.0, 400.0, 2.5) == pytest.approx(0.5)
    assert staleness_boost(500.0, 400.0, 0.4) == pytest.approx(0.04)


@pytest.mark.parametrize(
    "n, q_max, dh, expected",
    [
        (9, 8, 0.0, 8 / 9),  # congested, fresh feedback: Q_max/N
        (16, 8, 100.0, 0.5),
        (16, 8, 500.0, 0.5 + 0.25),  # 100 ms stale at v=2.5/s -> +0.25
        (16, 8, 700.0, 1.0),  # 0.5 + 0.75 capped at 1
        (8, 8, 0.0, 1.0),  # N <= Q_max: send at will
        (3, 8, 9999.0, 1.0),
    ],
)
def test_send_probability_by_hand(n, q_max, dh, expected):
    assert send_probability(n, q_max, dh, 400.0, 2.5) == pytest.approx(expected)


def test_send_probability_needs_a_queue_size():
    with pytest.raises(ValueError, match="Q_max"):
        send_probability(5, 0, 0.0, 400.0, 2.5)


def test_params_are_checked():
    with pytest.raises(ValueError, match="delta_t_ms"):
        TxParams(enabled=True, delta_t_ms=0)
    with pytest.raises(ValueError, match="v_per_s"):
        TxParams(enabled=True, v_per_s=-1)
    with pytest.raises(ValueError, match="q_max"):
        TxParams(enabled=True, q_max=0)


def test_decisions_follow_the_regimes():
    tc = TransmissionControl(TxParams(enabled=True), np.random.default_rng(1))
    d = tc.decide(0)
    assert (d.send, d.reason, d.delta_hat_ms) == (True, "no_status", None)
    tc.on_ack(10 * MS, None)  # an ACK without status (no Olaf switch) still restarts the timer
    assert tc.decide(12 * MS).reason == "no_status"
    tc.on_ack(20 * MS, QueueStatus(queue_util=2, active_clusters=4, queue_size=8))
    d = tc.decide(25 * MS)
    assert (d.send, d.reason, d.delta_hat_ms, d.active_clusters, d.queue_size) == (True, "uncongested", 5.0, 4, 8)
    tc.on_ack(30 * MS, QueueStatus(queue_util=8, active_clusters=32, queue_size=8))
    d = tc.decide(130 * MS)
    assert d.reason == "draw" and d.p_send == pytest.approx(0.25) and d.delta_hat_ms == 100.0


def test_a_congested_status_before_any_ack_event_sends_as_without_status():
    """A refusal (docs/protocol.md "Refusal") carries a switch's status but is no ACK event: with no
    ACK yet there is no Δ̂ to weigh the congestion with, so the update goes as before any status."""
    tc = TransmissionControl(TxParams(enabled=True), np.random.default_rng(1))
    tc.on_status(QueueStatus(queue_util=8, active_clusters=32, queue_size=8))
    d = tc.decide(5 * MS)
    assert (d.send, d.reason, d.delta_hat_ms) == (True, "no_status", None)
    tc.on_ack(10 * MS, None)  # the first ACK event: the status seen before now counts
    assert tc.decide(110 * MS).reason == "draw"


def test_congested_draws_are_seeded_and_compared_with_p_send():
    def run(seed):
        tc = TransmissionControl(TxParams(enabled=True, delta_t_ms=400.0, v_per_s=2.5), np.random.default_rng(seed))
        tc.on_ack(0, QueueStatus(0, 10, 2))
        return [tc.decide(t * MS) for t in range(0, 1000, 10)]

    ds = run(7)
    assert [d.draw for d in ds] == [d.draw for d in run(7)]
    u = np.random.default_rng(7).random(len(ds))
    for d, ui, t in zip(ds, u, range(0, 1000, 10)):
        p = min(0.2 + (2.5 * (t - 400) / 1000 if t > 400 else 0.0), 1.0)
        assert d.p_send == pytest.approx(p)
        assert d.draw == ui and d.send == (ui < p)
    # P_s = 0.2 until 400 ms: about a fifth of those sent; from 720 ms P_s = 1: all sent
    early = [d.send for d, t in zip(ds, range(0, 1000, 10)) if t <= 400]
    assert 0.05 < np.mean(early) < 0.4
    assert all(d.send for d, t in zip(ds, range(0, 1000, 10)) if t >= 720)


def test_off_or_overridden_q_max():
    tc = TransmissionControl(TxParams(enabled=False), np.random.default_rng(0))
    tc.on_ack(0, QueueStatus(0, 100, 1))
    assert tc.decide(1).reason == "tc_off" and tc.decide(1).send
    tc = TransmissionControl(TxParams(enabled=True, q_max=4), np.random.default_rng(0))
    tc.on_ack(0, QueueStatus(0, 16, 0))  # switch reported no queue size: the override is used
    d = tc.decide(MS)
    assert d.queue_size == 4 and d.p_send == pytest.approx(0.25)
    tc = TransmissionControl(TxParams(enabled=True), np.random.default_rng(0))
    tc.on_ack(0, QueueStatus(0, 16, 0))
    assert tc.decide(MS).reason == "no_qmax"


class Draws:
    """A fixed sequence of uniform draws in the rng's place (``random()``), to put each draw
    exactly where a test needs it; running out is an error (a decision drew that should not)."""

    def __init__(self, *u: float) -> None:
        self.left = list(u)

    def random(self) -> float:
        return self.left.pop(0)


CONGESTED = QueueStatus(queue_util=8, active_clusters=10, queue_size=2)  # P_s = 0.2 while Δ̂ ≤ Δ̄_T


def test_backoff_after_a_skip_until_the_threshold():
    """Reading backoff (paper §6): a skipped draw silences the worker for Δ̄_T, drawing nothing."""
    rng = Draws(0.9, 0.1)
    tc = TransmissionControl(TxParams(enabled=True, delta_t_ms=400.0, reading="backoff"), rng)  # type: ignore[arg-type]
    tc.on_ack(0, CONGESTED)
    d = tc.decide(10 * MS)
    assert (d.send, d.reason, d.draw) == (False, "draw", 0.9)
    for t in (10 * MS + 1, 110 * MS, 410 * MS - 1):
        d = tc.decide(t)
        assert (d.send, d.reason, d.p_send, d.draw) == (False, "backoff", 0.0, None)
        assert tc.in_backoff(t)
    assert len(rng.left) == 2 - 1  # the back-off drew nothing
    d = tc.decide(410 * MS)  # Δ̄_T after the skip: the back-off is over, the worker draws again
    assert (d.send, d.reason, d.draw) == (True, "draw", 0.1)
    assert d.p_send == pytest.approx(0.2 + 2.5 * 0.010)  # Δ̂ = 410 ms: f = v·10 ms


def test_backoff_ends_at_the_next_ack_event_only():
    tc = TransmissionControl(TxParams(enabled=True, reading="backoff"), Draws(0.5, 0.5, 0.05))  # type: ignore[arg-type]
    tc.on_ack(0, CONGESTED)
    assert tc.decide(100 * MS).reason == "draw"  # skipped (0.5 ≥ 0.2)
    tc.on_status(CONGESTED)  # another slice of an answered update: not an ACK event
    assert tc.decide(150 * MS).reason == "backoff"
    tc.on_ack(160 * MS, CONGESTED)
    d = tc.decide(170 * MS)
    assert (d.reason, d.send) == ("draw", False)  # drew 0.5 again: a new back-off from 170 ms
    assert tc.decide(569 * MS).reason == "backoff"
    d = tc.decide(570 * MS)
    assert (d.reason, d.send) == ("draw", True)


def test_backoff_only_in_the_congestion_regime():
    tc = TransmissionControl(TxParams(enabled=True, reading="backoff"), Draws(0.9))  # type: ignore[arg-type]
    tc.on_ack(0, CONGESTED)
    assert not tc.decide(MS).send
    tc.on_status(QueueStatus(queue_util=0, active_clusters=2, queue_size=2))  # N ≤ Q_max: send at will
    assert tc.decide(2 * MS).reason == "uncongested"
    tc.on_status(CONGESTED)
    assert tc.decide(3 * MS).reason == "backoff"  # still within Δ̄_T of the skip, no ACK event since


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_probabilistic_reading_never_backs_off_and_is_the_default(seed):
    def run(params):
        tc = TransmissionControl(params, np.random.default_rng(seed))
        tc.on_ack(0, CONGESTED)
        return [tc.decide(t * MS) for t in range(0, 1000, 10)]

    default = run(TxParams(enabled=True))
    assert TxParams().reading == "probabilistic"
    assert default == run(TxParams(enabled=True, reading="probabilistic"))
    assert {d.reason for d in default} == {"draw"} and not all(d.send for d in default)
    backoff = run(TxParams(enabled=True, reading="backoff"))
    assert "backoff" in {d.reason for d in backoff}
    assert sum(d.send for d in backoff) < sum(d.send for d in default)


def test_reading_is_checked():
    with pytest.raises(ValueError, match="reading"):
        TxParams(reading="back-off")  # type: ignore[arg-type]

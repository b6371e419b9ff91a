"""The send rule of paper §5 as the verifier uses it, by hand."""

from fractions import Fraction as Fr

import pytest

from olaf.verifier.config import Transmission
from olaf.verifier.sendrule import (
    Kind,
    Rule,
    base_probability,
    classify,
    in_backoff,
    run_bounds,
    send_probability,
    stale_threshold_ms,
)


def test_send_probability_by_hand():
    # Q_max = 1, N = 2: P_s = 1/2 until Δ̂ > Δ̄_T = 400, then + v (Δ̂ - 400) with v = 1/400
    assert send_probability(1, 2, 400, 400, Fr(1, 400)) == Fr(1, 2)
    assert send_probability(1, 2, 500, 400, Fr(1, 400)) == Fr(1, 2) + Fr(100, 400)
    assert send_probability(1, 2, 599, 400, Fr(1, 400)) == Fr(1, 2) + Fr(199, 400)
    assert send_probability(1, 2, 600, 400, Fr(1, 400)) == 1
    assert send_probability(1, 2, 10_000, 400, Fr(1, 400)) == 1
    assert send_probability(3, 2, 0, 400, Fr(0)) == 1  # N <= Q_max: send every update
    assert base_probability(2, 8) == Fr(1, 4)
    with pytest.raises(ValueError):
        base_probability(0, 2)


def test_stale_threshold_is_the_first_ms_with_ps_one():
    for q, n, dt, v in [(1, 2, 400, Fr(1, 400)), (1, 3, 100, Fr(1, 7)), (2, 8, 50, Fr(3)), (1, 2, 0, Fr(1))]:
        th = stale_threshold_ms(q, n, dt, v)
        assert send_probability(q, n, th, dt, v) == 1
        assert send_probability(q, n, th - 1, dt, v) < 1
    assert stale_threshold_ms(1, 2, 400, Fr(1, 400)) == 600
    assert stale_threshold_ms(1, 2, 400, Fr(0)) is None
    assert stale_threshold_ms(2, 2, 400, Fr(0)) == 0


def test_classify():
    kw = dict(congested=True, delta_t_ms=400, stale_ms=600)
    assert classify(400, **kw) is Kind.BASE
    assert classify(401, **kw) is Kind.BOOSTED
    assert classify(600, **kw) is Kind.STALE and Kind.STALE.forced
    assert classify(5, congested=False, delta_t_ms=400, stale_ms=0) is Kind.UNCONGESTED
    assert classify(10**6, congested=True, delta_t_ms=400, stale_ms=None) is Kind.BOOSTED
    assert not Kind.BASE.forced and not Kind.BOOSTED.forced


def test_run_bounds():
    env = Transmission("envelope")
    assert run_bounds(Fr(1, 2), env) == (1, 1)
    assert run_bounds(Fr(1, 3), env) == (2, 1)
    assert run_bounds(Fr(2, 3), env) == (1, 2)
    assert run_bounds(Fr(1, 8), env) == (7, 1)
    assert run_bounds(Fr(1, 2), Transmission("envelope", max_skip_run=3)) == (3, 1)
    assert run_bounds(Fr(1, 2), Transmission("free")) == (None, None)
    assert run_bounds(Fr(1, 2), Transmission("always")) == (0, None)
    assert run_bounds(Fr(1), env) == (0, None)


def test_in_backoff_by_hand():
    # a skipped draw at 100 ms, Δ̄_T = 400: silent until 499 ms, drawing again at 500 ms
    assert in_backoff(101, 100, 0, 400) and in_backoff(499, 100, 0, 400)
    assert not in_backoff(500, 100, 0, 400)
    assert in_backoff(300, 100, 100, 400)       # an ACK at the skip's instant came before it
    assert not in_backoff(300, 100, 101, 400)   # an ACK after the skip ends the back-off
    assert not in_backoff(300, None, 0, 400)    # no skip yet


def test_rule_kind_backoff_only_under_its_reading():
    from olaf.verifier.config import from_mapping

    def rule(reading, model="envelope"):
        return Rule(from_mapping({
            "horizon": 3, "epsilon": "1/10", "engine": {"q_max": 1, "p_over_c_ms": 2},
            "transmission": {"model": model, "reading": reading},
            "clusters": [{"period_ms": 100, "delta_t_ms": 400}, {"period_ms": 300, "delta_t_ms": 400}]}))

    assert rule("backoff").kind(0, 700, backing_off=True) is Kind.BACKOFF  # before the stale check
    assert Kind.BACKOFF.forced_skip and not Kind.BACKOFF.forced
    assert rule("probabilistic").kind(0, 700, backing_off=True) is Kind.STALE
    assert rule("backoff", "always").kind(0, 100, backing_off=True) is Kind.ALWAYS
    with pytest.raises(ValueError, match="reading"):
        rule("back-off")

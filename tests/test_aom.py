"""AoM metrics against hand-computed sawtooths (paper §2.2, §6, Fig. 5)."""

import numpy as np
import pytest

from olaf.aom import (
    Delivery,
    accounting,
    aggregations_per_delivery,
    average_peak_aom,
    ecdf,
    jain_fairness,
    peak_aoms,
    sawtooth,
    time_average_aom,
    time_to_updates,
)

# Receptions at t=10, 30, 35, 60 of updates generated at 5, 20, 15 (older: no refresh), 50.
DS = [Delivery(10, 5), Delivery(30, 20, count=3), Delivery(35, 15), Delivery(60, 50, count=2)]


def test_sawtooth_breakpoints():
    t, a = sawtooth(DS, 70)
    assert t.tolist() == [10, 30, 30, 60, 60, 70]
    assert a.tolist() == [5, 25, 10, 40, 10, 20]


def test_time_average_by_hand():
    # [10,30]: 5->25 area 300; [30,60]: 10->40 area 750; [60,70]: 10->20 area 150 => 1200/60
    assert time_average_aom(DS, 70) == pytest.approx(20.0)
    # default end = last reception: (300 + 750) / 50
    assert time_average_aom(DS) == pytest.approx(21.0)


def test_window_start_with_initial_age():
    # from t=0 with the model as of t=0: [0,10]: 0->10 area 50; then as above to 60: 50+300+750 over 60
    assert time_average_aom(DS, 60, t_start_ns=0) == pytest.approx(1100 / 60)
    assert peak_aoms(DS, t_start_ns=0) == [(10, 10), (30, 25), (60, 40)]


def test_peaks_skip_non_refreshing_receptions():
    assert peak_aoms(DS) == [(30, 25), (60, 40)]
    assert average_peak_aom(DS) == pytest.approx(32.5)
    assert average_peak_aom([Delivery(1, 0)]) is None


def test_single_instant_and_errors():
    assert time_average_aom([Delivery(10, 4)]) == 6.0
    with pytest.raises(ValueError, match="no deliveries"):
        time_average_aom([])
    with pytest.raises(ValueError, match="before the start"):
        sawtooth(DS, 5)


def test_accounting_matches_paper_table_1_arithmetic():
    # Olaf 40 Gbit/s row: 27 workers x 500 updates, 4823 received, 7204 aggregated -> 10.9 % lost
    ds = [Delivery(i, i, count=1) for i in range(4823 - 1)] + [Delivery(9999, 9999, count=1 + 7204)]
    acc = accounting(13500, ds)
    assert (acc.delivered, acc.aggregated, acc.lost) == (4823, 7204, 1473)
    assert acc.loss_fraction == pytest.approx(0.109, abs=1e-3)
    with pytest.raises(ValueError, match="only 3 were sent"):
        accounting(3, DS)


def test_aggregations_and_cdf():
    assert aggregations_per_delivery(DS).tolist() == [0, 2, 0, 1]
    x, f = ecdf([0, 2, 0, 1])
    assert x.tolist() == [0, 0, 1, 2] and f.tolist() == [0.25, 0.5, 0.75, 1.0]


def test_jain_fairness():
    assert jain_fairness([5, 5, 5]) == 1.0
    assert jain_fairness([1, 0, 0, 0]) == pytest.approx(0.25)
    # paper's form mu^2/(mu^2+sigma^2) with population sigma
    x = np.array([245.0, 244, 1714, 1710])
    assert jain_fairness(x) == pytest.approx(x.mean() ** 2 / (x.mean() ** 2 + x.var()))
    assert jain_fairness([0, 0]) == 1.0
    with pytest.raises(ValueError):
        jain_fairness([])


def test_time_to_updates():
    assert time_to_updates(DS, 4) == 30
    assert time_to_updates(DS, 7) == 60
    assert time_to_updates(DS, 8) is None


def test_starved_cluster_ages_over_the_window():
    t, a = sawtooth([], 100, t_start_ns=40)
    assert t.tolist() == [40, 100] and a.tolist() == [0, 60]
    assert time_average_aom([], 100, t_start_ns=40) == pytest.approx(30.0)
    assert peak_aoms([], t_start_ns=40) == [] and average_peak_aom([], t_start_ns=40) is None
    with pytest.raises(ValueError, match="no deliveries"):
        sawtooth([], 100)
def test_peak_sum_and_gap_by_hand():
    from fractions import Fraction

    from olaf.aom import peak_aom_gap, peak_aom_sum

    # peaks of DS: 25 and 40 (the reception at 35 does not refresh)
    assert peak_aom_sum(DS) == (65, 2)
    assert peak_aom_sum(DS, t_start_ns=0) == (75, 3)
    assert peak_aom_sum([Delivery(1, 0)]) == (0, 0)
    a, b = Fraction(65, 2), Fraction(200)  # 32.5 and 200
    assert peak_aom_gap(a, b) == Fraction(335, 2)
    assert peak_aom_gap(a, b, "period", period_a=10, period_b=100) == Fraction(125, 100)
    assert peak_aom_gap(a, b, "relative") == Fraction(335, 2) / Fraction(465, 4)
    assert peak_aom_gap(0, 0, "relative") == 0
    with pytest.raises(ValueError, match="period_a"):
        peak_aom_gap(a, b, "period")
    with pytest.raises(ValueError, match="unit"):
        peak_aom_gap(a, b, "s")
    with pytest.raises(ValueError, match=">= 0"):
        peak_aom_gap(-1, b)

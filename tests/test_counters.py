"""The controller's reading of the token-ledger counters (controller/counters.py)."""

import pytest

pytest.importorskip("p4.v1", reason="the P4Runtime packages (the 'p4' extra) are not installed")

from olaf.constants import RECLAIM_SLOTS, SEGMENTS, Reclaim  # noqa: E402
from olaf.controller.counters import OlafCounters, reclaimed_segments  # noqa: E402


def test_reclaimed_histogram_gives_segments_by_kind():
    """Index kind * RECLAIM_SLOTS + n counts calls that reclaimed n segments: Σ n · count."""
    lost, expired = int(Reclaim.LOST) * RECLAIM_SLOTS, int(Reclaim.EXPIRED) * RECLAIM_SLOTS
    h = {lost + 1: 3, lost + 5: 2, expired + 2: 4, expired + SEGMENTS: 1, expired: 9}
    assert reclaimed_segments(h) == {"lost": 13, "expired": 8 + SEGMENTS}
    assert reclaimed_segments({}) == {"lost": 0, "expired": 0}


class _Switch:
    """Answers read_counter like SwitchConnection, from fixed arrays."""

    def __init__(self, counters):
        self.counters = counters

    def read_counter(self, name):
        return self.counters.get(name, {})


def test_reclaimed_sums_the_ingress_and_egress_histograms_and_snapshot_has_the_ledger():
    e = int(Reclaim.EXPIRED) * RECLAIM_SLOTS
    sw = _Switch({"OlafIngress.reclaimed": {e + 2: 1}, "OlafEgress.reclaimed": {1: 2, e + 1: 1},
                  "OlafEgress.token_fates": {0: 5, 1: 2, 2: 1}})
    c = OlafCounters(sw)  # type: ignore[arg-type]
    assert c.reclaimed() == {"lost": 2, "expired": 3}
    assert c.token_fates() == {"departed": 5, "departed_after_loss": 2, "stale": 1}
    snap = c.snapshot([0])
    assert snap["reclaimed"] == {"lost": 2, "expired": 3} and "egress_errors" not in snap

"""Olaf counters over P4Runtime: ingress ``decisions``, ``cluster_decisions``,
``malformed``, ``traffic``, ``reclaimed``; egress ``cluster_departures``, ``token_fates``
and ``reclaimed`` (p4src/olaf.p4). Counter indices are :mod:`olaf.constants`' enums.

The token ledger (docs/dataplane.md "The token ledger"): every token reaching egress is
counted once in ``token_fates``; the ``reclaimed`` counters are histograms — index
``kind * RECLAIM_SLOTS + n`` counts the extern calls that reclaimed ``n`` segments of
that :class:`~olaf.constants.Reclaim` kind at once (a P4 counter can only add one per
call), so the segments reclaimed are Σ n · count over both controls. With them the
segments are conserved: Σ decisions[append] = Σ cluster_departures + lost + expired +
occupancy (the queue_util of an ACK; 0 when idle).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable

from olaf.constants import DECISION_SLOTS, RECLAIM_SLOTS, Decision, Malformed, Reclaim, TokenFate, Traffic
from olaf.controller.p4rt import SwitchConnection


def _labels(enum_cls) -> list[str]:
    return [m.name.lower() for m in enum_cls]


MALFORMED_REASONS = _labels(Malformed)
TRAFFIC_KINDS = _labels(Traffic)
TOKEN_FATES = _labels(TokenFate)
RECLAIM_KINDS = _labels(Reclaim)


@dataclass
class ClusterCounters:
    """Decisions (by label) and departures of one cluster, in packets."""

    decisions: dict[str, int] = field(default_factory=dict)
    departures: int = 0


def reclaimed_segments(histogram: dict[int, int]) -> dict[str, int]:
    """Segments reclaimed by kind from a ``reclaimed`` histogram counter (index
    ``kind * RECLAIM_SLOTS + n`` → calls that reclaimed ``n`` at once): Σ n · count."""
    out = {r.label: 0 for r in Reclaim}
    for index, calls in histogram.items():
        kind, n = divmod(index, RECLAIM_SLOTS)
        out[Reclaim(kind).label] += n * calls
    return out


class OlafCounters:
    """Reads the data plane's counters (packet counts) of one switch."""

    DECISIONS = "OlafIngress.decisions"
    CLUSTER_DECISIONS = "OlafIngress.cluster_decisions"
    MALFORMED = "OlafIngress.malformed"
    TRAFFIC = "OlafIngress.traffic"
    DEPARTURES = "OlafEgress.cluster_departures"
    TOKEN_FATES = "OlafEgress.token_fates"
    RECLAIMED = ("OlafIngress.reclaimed", "OlafEgress.reclaimed")

    def __init__(self, sw: SwitchConnection):
        self.sw = sw

    def _by_label(self, counter: str, enum_cls) -> dict[str, int]:
        c = self.sw.read_counter(counter)
        return {m.name.lower(): c.get(int(m), 0) for m in enum_cls}

    def decisions(self) -> dict[str, int]:
        return self._by_label(self.DECISIONS, Decision)

    def malformed(self) -> dict[str, int]:
        return self._by_label(self.MALFORMED, Malformed)

    def traffic(self) -> dict[str, int]:
        return self._by_label(self.TRAFFIC, Traffic)

    def token_fates(self) -> dict[str, int]:
        """Tokens that reached egress, by :class:`~olaf.constants.TokenFate` label."""
        return self._by_label(self.TOKEN_FATES, TokenFate)

    def reclaimed(self) -> dict[str, int]:
        """Segments reclaimed without departing, by :class:`~olaf.constants.Reclaim` label
        (``lost``, ``expired``), summed over the ingress and egress histograms."""
        total = {r.label: 0 for r in Reclaim}
        for name in self.RECLAIMED:
            for k, v in reclaimed_segments(self.sw.read_counter(name)).items():
                total[k] += v
        return total

    def cluster(self, cluster_id: int) -> ClusterCounters:
        """One cluster's counters, read entry by entry (cheaper than whole arrays)."""
        dep = self.sw.read_counter(self.DEPARTURES, cluster_id).get(cluster_id, 0)
        return ClusterCounters({d.label: self.cluster_decision(cluster_id, d) for d in Decision}, dep)

    def cluster_decision(self, cluster_id: int, decision: Decision) -> int:
        """How many of ``cluster_id``'s updates got ``decision`` (one counter entry)."""
        i = cluster_id * DECISION_SLOTS + int(decision)
        return self.sw.read_counter(self.CLUSTER_DECISIONS, i).get(i, 0)

    def clusters(self, cluster_ids: Iterable[int]) -> dict[int, ClusterCounters]:
        """Counters of several clusters with two reads (whole arrays).

        Departures are read first, so a live snapshot never shows more departures
        than appends.
        """
        dep = self.sw.read_counter(self.DEPARTURES)
        dec = self.sw.read_counter(self.CLUSTER_DECISIONS)
        return {
            c: ClusterCounters({d.label: dec.get(c * DECISION_SLOTS + int(d), 0) for d in Decision}, dep.get(c, 0))
            for c in cluster_ids
        }

    def snapshot(self, cluster_ids: Iterable[int]) -> dict:
        """Every counter of the switch as JSON-ready dicts (``switch_counters.json``)."""
        return {"decisions": self.decisions(), "malformed": self.malformed(), "traffic": self.traffic(),
                "token_fates": self.token_fates(), "reclaimed": self.reclaimed(),
                "clusters": {c: asdict(k) for c, k in self.clusters(cluster_ids).items()}}

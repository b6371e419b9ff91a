"""Olaf counters over P4Runtime (p4src/olaf.p4 ``decisions``, ``cluster_decisions``,
``malformed``, ``traffic``, ``cluster_departures``, ``egress_errors``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from olaf.controller.p4rt import SwitchConnection
from olaf.queue_model import Decision

MALFORMED_REASONS = ["version", "msg_type", "length", "num_grads", "count", "extern"]
TRAFFIC_KINDS = ["bypass", "unknown_source", "init", "ack_multicast", "ack_unicast",
                 "non_ipv4", "dequeue_error", "no_route"]


@dataclass
class ClusterCounters:
    """Decisions (by label) and departures of one cluster, in packets."""

    decisions: dict[str, int] = field(default_factory=dict)
    departures: int = 0


class OlafCounters:
    """Reads the data plane's counters (packet counts)."""

    DECISIONS = "OlafIngress.decisions"
    CLUSTER_DECISIONS = "OlafIngress.cluster_decisions"
    MALFORMED = "OlafIngress.malformed"
    TRAFFIC = "OlafIngress.traffic"
    DEPARTURES = "OlafEgress.cluster_departures"

    def __init__(self, sw: SwitchConnection):
        self.sw = sw

    def decisions(self) -> dict[str, int]:
        c = self.sw.read_counter(self.DECISIONS)
        return {d.label: c.get(int(d), 0) for d in Decision}

    def malformed(self) -> dict[str, int]:
        c = self.sw.read_counter(self.MALFORMED)
        return {name: c.get(i, 0) for i, name in enumerate(MALFORMED_REASONS)}

    def traffic(self) -> dict[str, int]:
        c = self.sw.read_counter(self.TRAFFIC)
        return {name: c.get(i, 0) for i, name in enumerate(TRAFFIC_KINDS)}

    def cluster(self, cluster_id: int) -> ClusterCounters:
        out = ClusterCounters()
        for d in Decision:
            out.decisions[d.label] = self.sw.read_counter(self.CLUSTER_DECISIONS, cluster_id * 8 + int(d)).get(
                cluster_id * 8 + int(d), 0)
        out.departures = self.sw.read_counter(self.DEPARTURES, cluster_id).get(cluster_id, 0)
        return out

    def clusters(self, cluster_ids) -> dict[int, ClusterCounters]:
        """Counters of several clusters with two reads (whole arrays).

        Departures are read first, so a live snapshot never shows more departures
        than appends.
        """
        dep = self.sw.read_counter(self.DEPARTURES)
        dec = self.sw.read_counter(self.CLUSTER_DECISIONS)
        return {
            c: ClusterCounters({d.label: dec.get(c * 8 + int(d), 0) for d in Decision}, dep.get(c, 0))
            for c in cluster_ids
        }

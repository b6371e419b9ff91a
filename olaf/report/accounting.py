"""Where every sent update went, per cluster, hop by hop (packets).

A worker's update packet meets the Olaf switches on its path to the PS (the run's
``network.yaml``, :func:`olaf.controller.routing.switch_path`). At each switch it gets
exactly one enqueue decision (paper Alg. 1): it is *appended* (its packet goes on, as the
token of a queue segment), *aggregated* or *replaces* the waiting update of its cluster
(it goes on inside that segment), or is *dropped* (queue full, reward filter). An
appended segment either departs toward the next hop or is *lost in the traffic manager*
(its token was dropped and the segment reclaimed, or it was still queued at the end).
Departures of one switch are the arrivals of the next; departures of the last switch
reach the PS host, which receives them or *loses* them (socket buffer, checksum).

With ``sent`` (worker logs), the switches' per-cluster counters (``switch_counters.json``:
``decisions`` and ``departures``) and ``delivered`` (PS log), per cluster:

* ``sent = not_decided + Σ_decisions(first switch)``; ``not_decided`` counts packets that
  never got a decision at the first switch (dropped as malformed, unknown, …; normally 0);
* at every switch ``h``: ``arrivals_h = append + aggregate + replace + drop_full + drop_reward``
  and ``append = departures + lost_in_tm``;
* between switches: ``departures_h = arrivals_{h+1} + lost_on_link``;
* at the PS: ``departures_last = delivered + lost_at_host``.

The fates (delivered, aggregated, replaced, dropped by reason, lost in the TM, on a link,
at the host, not decided) sum to ``sent`` exactly. The losses are differences of counts
measured at both ends, so each must be ≥ 0: a negative one means a counter is missing or
a regroup moved packets between clusters, and is listed under ``inconsistent``. The
report cross-checks them where an independent measure exists (the extern's reclaimed
segments, the PS kernel's receive drops).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from olaf.constants import Decision


@dataclass
class HopAccount:
    """One switch's share of a cluster's packets."""

    switch: str
    arrivals: int
    append: int
    aggregate: int
    replace: int
    drop_full: int
    drop_reward: int
    departures: int

    @property
    def lost_in_tm(self) -> int:
        return self.append - self.departures

    def to_json(self) -> dict[str, Any]:
        return {"switch": self.switch, "arrivals": self.arrivals, "append": self.append, "aggregate": self.aggregate,
                "replace": self.replace, "drop_full": self.drop_full, "drop_reward": self.drop_reward,
                "departures": self.departures, "lost_in_tm": self.lost_in_tm}


@dataclass
class ClusterAccount:
    """The fate of one cluster's sent update packets (see the module docstring)."""

    sent: int
    delivered: int
    hops: list[HopAccount] = field(default_factory=list)

    @property
    def not_decided(self) -> int:
        return self.sent - (self.hops[0].arrivals if self.hops else self.delivered)

    @property
    def lost_on_links(self) -> int:
        return sum(a.departures - b.arrivals for a, b in zip(self.hops, self.hops[1:]))

    @property
    def lost_at_host(self) -> int:
        return (self.hops[-1].departures if self.hops else self.sent) - self.delivered

    def totals(self) -> dict[str, int]:
        """Every packet's fate summed over the hops; ``Σ`` of these equals ``sent``."""
        return {
            "delivered": self.delivered,
            "aggregated": sum(h.aggregate for h in self.hops),
            "replaced": sum(h.replace for h in self.hops),
            "dropped_full": sum(h.drop_full for h in self.hops),
            "dropped_reward": sum(h.drop_reward for h in self.hops),
            "lost_in_tm": sum(h.lost_in_tm for h in self.hops),
            "lost_on_links": self.lost_on_links,
            "lost_at_host": self.lost_at_host,
            "not_decided": self.not_decided,
        }

    def problems(self) -> list[str]:
        """Negative residuals: counts that cannot all be right."""
        out = [f"{k} = {v}" for k, v in self.totals().items() if v < 0]
        out += [f"{h.switch}: arrivals {h.arrivals} != decisions" for h in self.hops
                if h.arrivals != h.append + h.aggregate + h.replace + h.drop_full + h.drop_reward]
        return out

    def to_json(self) -> dict[str, Any]:
        """``sent``, the fates of :meth:`totals` (they sum to ``sent`` by construction), the
        ``inconsistent`` residuals (empty when every derived count is ≥ 0) and the hops."""
        return {"sent": self.sent, **self.totals(), "inconsistent": self.problems(),
                "hops": [h.to_json() for h in self.hops]}


def hop_account(switch: str, cluster_counters: Mapping[str, Any]) -> HopAccount:
    """A :class:`HopAccount` from one switch's ``clusters[c]`` record of ``switch_counters.json``."""
    d = cluster_counters.get("decisions", {})
    get = lambda dec: int(d.get(dec.label, 0))  # noqa: E731
    acc = HopAccount(switch, 0, get(Decision.APPEND), get(Decision.AGGREGATE),
                     get(Decision.REPLACE_WORKER) + get(Decision.REPLACE_REWARD), get(Decision.DROP_FULL),
                     get(Decision.DROP_REWARD), int(cluster_counters.get("departures", 0)))
    acc.arrivals = acc.append + acc.aggregate + acc.replace + acc.drop_full + acc.drop_reward
    return acc


def cluster_account(sent: int, delivered: int, path: Sequence[str],
                    switch_counters: Mapping[str, Any], cluster: int) -> ClusterAccount:
    """The account of ``cluster`` whose packets cross the switches ``path`` (in order).

    ``switch_counters`` is ``switch_counters.json`` (switch → ``{"clusters": {id: …}}``);
    a switch missing from it, or without the cluster, counts zero packets."""
    hops = []
    for s in path:
        per = (switch_counters.get(s) or {}).get("clusters", {})
        hops.append(hop_account(s, per.get(str(cluster), per.get(cluster, {}))))
    return ClusterAccount(sent, delivered, hops)

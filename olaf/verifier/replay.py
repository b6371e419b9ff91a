"""Executable cross-check: replay a behaviour through the reference OlafQueue.

A behaviour is what the solver chooses: each cluster's generation times and send
decisions, and the priority order of clusters for simultaneous arrivals.
:func:`replay` runs it through a small discrete-event simulation of the engine
whose queue is :class:`olaf.queue_model.OlafQueue` (the project's executable
specification) and whose metrics are :mod:`olaf.aom`; it does not look at the
solver's departures, outcomes or peaks. The event semantics are those of
docs/verifier.md ("Engine semantics"):

* time is integer ms; at one instant, ACK receptions come first, then
  arrivals in priority order, then at most one departure;
* a departure dequeues the head (locking and removing it at once) when the
  queue is not empty and the link is free; the link is then busy for ``p/C``;
* the ACK of a departure at ``D`` reaches the cluster at ``D + R`` and carries
  the queue utilisation right after the departure; every cluster also has an
  ACK at t = 0 (the initial model);
* a send decision is classified by :mod:`olaf.verifier.sendrule` from the
  time since the worker's last ACK and checked against the rule.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional, Sequence

from olaf import aom
from olaf.queue_model import Decision, OlafQueue, QueueConfig
from olaf.update import Update
from olaf.verifier import sendrule
from olaf.verifier.config import VerifyConfig

NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class Behaviour:
    """Nondeterministic choices of one run.

    Attributes:
        gen_ms: per cluster, the generation (= arrival) time of each update, ms.
        sent: per cluster, the send decision of each update.
        priority: cluster indices in tie-break order (first = served first).
    """

    gen_ms: tuple[tuple[int, ...], ...]
    sent: tuple[tuple[bool, ...], ...]
    priority: tuple[int, ...]


@dataclass
class UpdateOutcome:
    """What happened to one update in the replay."""

    gen_ms: int
    kind: str              # sendrule.Kind value of the send decision
    sent: bool
    outcome: str           # skip | append | aggregate | replace_worker | drop_full
    departure_ms: Optional[int] = None
    ack_q: Optional[int] = None  # queue utilisation in the ACK of its departure (appended only)


@dataclass
class ClusterResult:
    updates: list[UpdateOutcome]
    deliveries: list[aom.Delivery]      # ns, as the PS sees them
    sum_peak_ms: Fraction
    n_peak: int

    @property
    def avg_peak_ms(self) -> Optional[Fraction]:
        return self.sum_peak_ms / self.n_peak if self.n_peak else None


@dataclass
class ReplayResult:
    """Replay of one behaviour.

    ``inadmissible`` lists rule violations of the behaviour itself (a skip where
    ``P_s = 1``, a run longer than the envelope, times outside the period/jitter
    bounds); ``violations`` the query's failures, as ``(kind, clusters, gap)``.
    """

    clusters: list[ClusterResult]
    inadmissible: list[str] = field(default_factory=list)
    violations: list[tuple[str, tuple[int, ...], Optional[Fraction]]] = field(default_factory=list)

    @property
    def violated(self) -> bool:
        return bool(self.violations)


def check_admissible(cfg: VerifyConfig, b: Behaviour) -> list[str]:
    """Generation times against each cluster's phase/period/jitter bounds (ms)."""
    errs = []
    if sorted(b.priority) != list(range(cfg.num_clusters)):
        errs.append(f"priority {list(b.priority)} is not a permutation of the clusters")
    for u, cl in enumerate(cfg.clusters):
        gs = b.gen_ms[u]
        if len(gs) != cl.updates or len(b.sent[u]) != cl.updates:
            errs.append(f"cluster {cl.name}: expected {cl.updates} updates, got {len(gs)}")
            continue
        phases = [g - k * cl.period_ms for k, g in enumerate(gs)]
        lo = max(max(p - cl.jitter_ms for p in phases), cl.phase_ms[0])
        hi = min(min(phases), cl.phase_ms[1])
        if lo > hi:
            errs.append(f"cluster {cl.name}: generation times {list(gs)} fit no phase in "
                        f"{list(cl.phase_ms)} with jitter {cl.jitter_ms} ms")
    return errs


def replay(cfg: VerifyConfig, b: Behaviour) -> ReplayResult:
    """Simulate ``b`` (see the module docstring) and evaluate the fairness query."""
    F = cfg.num_clusters
    S, R = cfg.engine.p_over_c_ms, cfg.engine.ack_delay_ms
    inadmissible = check_admissible(cfg, b)
    if inadmissible:
        return ReplayResult([], inadmissible)
    q = OlafQueue(QueueConfig(segments=cfg.engine.q_max, num_clusters=F, num_grads=0))
    rank = {u: i for i, u in enumerate(b.priority)}
    rule = sendrule.Rule(cfg)

    # arrivals in processing order: time, then priority
    arrivals = sorted(((g, rank[u], u, k) for u in range(F) for k, g in enumerate(b.gen_ms[u])))
    outcomes: list[list[Optional[UpdateOutcome]]] = [[None] * len(b.gen_ms[u]) for u in range(F)]
    seg_of: dict[int, tuple[int, int]] = {}   # segment -> (u, k) of the appended update
    holder: list[Optional[int]] = [None] * F  # u -> k of its waiting segment's opener
    acks: list[tuple[int, int]] = []          # heap of (reception ms, cluster)
    last_ack = [0] * F                        # the initial model at t = 0
    skip_at: list[Optional[int]] = [None] * F  # reading backoff: the last skipped draw
    deliveries: list[list[aom.Delivery]] = [[] for _ in range(F)]
    free_at = now = 0
    i = 0
    while i < len(arrivals) or q.occupancy:
        t_arr = arrivals[i][0] if i < len(arrivals) else None
        t_dep = max(free_at, now) if q.occupancy else None
        t = now = min(x for x in (t_arr, t_dep) if x is not None)
        while acks and acks[0][0] <= t:
            ta, u = heapq.heappop(acks)
            last_ack[u] = max(last_ack[u], ta)
        while i < len(arrivals) and arrivals[i][0] == t:
            _, _, u, k = arrivals[i]
            i += 1
            cl = cfg.clusters[u]
            kind = rule.kind(u, t - last_ack[u], sendrule.in_backoff(t, skip_at[u], last_ack[u], cl.delta_t_ms))
            sent = b.sent[u][k]
            if kind.forced and not sent:
                inadmissible.append(f"{cl.name}[{k}] skipped at t={t} ms although P_s = 1 ({kind.value})")
            if kind.forced_skip and sent:
                inadmissible.append(f"{cl.name}[{k}] sent at t={t} ms within a back-off (skip at {skip_at[u]} ms)")
            if rule.backoff and not sent and not kind.forced_skip:
                skip_at[u] = t
            o = UpdateOutcome(gen_ms=t, kind=kind.value, sent=sent, outcome="skip")
            outcomes[u][k] = o
            if not sent:
                continue
            upd = Update(cluster_id=u, worker_id=k % 65536, seq=k, gen_ts=t * NS_PER_MS)
            res = q.enqueue(upd, t * NS_PER_MS)
            o.outcome = res.decision.label
            if res.decision is Decision.APPEND:
                assert res.segment is not None
                seg_of[res.segment] = (u, k)
                holder[u] = k
        if q.occupancy and free_at <= t:
            dep = q.dequeue()
            assert dep is not None
            u, k = seg_of.pop(dep.segment)
            free_at = t + S
            deliveries[u].append(aom.Delivery(t * NS_PER_MS, dep.update.gen_ts, dep.update.count))
            util = q.status(t * NS_PER_MS).queue_util
            head = outcomes[u][k]
            assert head is not None
            head.ack_q = util
            for m in range(k, len(outcomes[u])):
                om = outcomes[u][m]
                if om is not None and om.sent and om.departure_ms is None and om.outcome != "drop_full":
                    om.departure_ms = t
            heapq.heappush(acks, (t + R, u))
    if rule.active:
        inadmissible += _run_violations(rule, outcomes)
    clusters = []
    for u in range(F):
        s_ns, n = aom.peak_aom_sum(deliveries[u]) if deliveries[u] else (0, 0)
        clusters.append(ClusterResult([o for o in outcomes[u] if o is not None], deliveries[u],
                                      Fraction(s_ns, NS_PER_MS), n))
    return ReplayResult(clusters, inadmissible, evaluate_query(cfg, clusters))


def _run_violations(rule: sendrule.Rule, outcomes) -> list[str]:
    """Runs of skips / base-probability sends longer than the envelope allows (over draws: a back-off
    decision neither extends nor ends a run)."""
    cfg, max_skip, max_send = rule.cfg, rule.max_skip_run, rule.max_send_run
    errs = []
    for u, os_ in enumerate(outcomes):
        skip = send = 0
        for k, o in enumerate(os_):
            if o.kind == sendrule.Kind.BACKOFF.value:
                continue
            skip = 0 if o.sent else skip + 1
            send = send + 1 if (o.sent and o.kind == sendrule.Kind.BASE.value) else 0
            if max_skip is not None and skip > max_skip:
                errs.append(f"{cfg.clusters[u].name}[{k}]: {skip} skips in a row > max_skip_run={max_skip}")
            if max_send is not None and send > max_send:
                errs.append(f"{cfg.clusters[u].name}[{k}]: {send} base sends in a row > max_send_run={max_send}")
    return errs


def evaluate_query(cfg: VerifyConfig, clusters: Sequence[ClusterResult]):
    """The fairness query on replayed results via :func:`olaf.aom.peak_aom_gap`."""
    q = cfg.query
    out: list[tuple[str, tuple[int, ...], Optional[Fraction]]] = []
    if q.starvation:
        out += [("starved", (u,), None) for u, c in enumerate(clusters) if c.n_peak == 0]
    for u in range(len(clusters)):
        for v in range(u + 1, len(clusters)):
            a = q.mean_peak(clusters[u].sum_peak_ms, clusters[u].n_peak, len(clusters[u].updates))
            b = q.mean_peak(clusters[v].sum_peak_ms, clusters[v].n_peak, len(clusters[v].updates))
            if a is None or b is None:
                continue
            gap = aom.peak_aom_gap(a, b, q.unit, period_a=cfg.clusters[u].period_ms,
                                   period_b=cfg.clusters[v].period_ms)
            if gap > q.epsilon:
                out.append(("unfair", (u, v), gap))
    return out

"""Which worker's updates reached the PS, and when: paper §8.2's Fig. 7 quantity, "the time
required by PS to receive N model updates from each worker".

An aggregated update the PS receives carries the content of ``count`` worker updates but names
one of them, its *head* (the packet, ``worker_id`` and ``seq`` of the update that waited in the
queue; paper Alg. 1 AGGREGATE keeps ``q``'s ids and sets ``gen_ts = max``). Counted per
contributing worker, each of those updates reached the PS at that reception.

Two sources, by what the backend knows:

* **ledger** — ``deliveries.csv`` in the run directory (:mod:`olaf.rundir`), written by a
  backend that follows every update's fate (ns-3's fate ledger): exact, and with updates in K
  chunks an update counts when the content of its last chunk arrived;
* **reconstructed** — from the PS's receptions and the workers' logs (Mininet, local). Per
  cluster, in reception order, a reception with ``count`` c holds its head (the cluster's
  worker whose address is the reception's ``src``, its update ``seq``) and the c − 1 updates of
  the cluster generated after the head up to the one whose ``gen_ts`` is the reception's
  (``gen_ts = max`` over the contributors). An OlafQueue keeps one unlocked update per key
  (cluster, chunk) and an update of that key arriving while it waits joins it (Alg. 1), so the
  cluster's updates between the first and the last contributor are the others. The
  reconstruction is checked per reception: it is *exact* when it finds exactly c − 1 of them.
  It is not exact when updates of several workers reach the switch in another order than they
  were generated (different paths: a few µs on veths, more across a multi-hop network), when
  the reward filter dropped one in between, or when the network lost one before the switch;
  then the earliest candidates (and the one the ``gen_ts`` names) are taken and the shortfall is
  counted as ``unattributed``. With K chunks, chunk 0's receptions stand for the update (as the
  report's AoM, docs/hosts.md "Accounting"). FIFO receptions (count 1) are always exact.
"""

from __future__ import annotations

import bisect
import csv
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal, Optional

from olaf.report.rundata import RunData, RunDirError, usable
from olaf.rundir import DELIVERIES_COLUMNS, DELIVERIES_FILE


@dataclass
class WorkerDeliveries:
    """Per worker, the reception times (ns, the PS's clock, ascending) of its updates whose content
    reached the PS, and how they were obtained (module docstring)."""

    times: dict[str, list[int]]
    source: Literal["ledger", "reconstructed"]
    receptions: int = 0
    """Receptions attributed (reconstructed source; the ledger's are all exact)."""
    exact: int = 0
    """Receptions whose c − 1 other contributors were found exactly."""
    unattributed: int = 0
    """Worker updates inside receptions that could not be given to a worker (Σ count − attributed)."""
    per_cluster_exact: dict[int, tuple[int, int]] = field(default_factory=dict)
    """cluster → (exact receptions, receptions)."""

    @property
    def exact_pct(self) -> Optional[float]:
        """``100 · exact / receptions`` (100 for the ledger; None without receptions)."""
        if self.source == "ledger":
            return 100.0
        return 100.0 * self.exact / self.receptions if self.receptions else None

    def counts(self) -> dict[str, int]:
        """Updates delivered per worker."""
        return {w: len(ts) for w, ts in self.times.items()}


def time_to_n_from_each(wd: WorkerDeliveries, workers: list[str], n: int, t0_ns: int) -> Optional[int]:
    """Time (ns after ``t0_ns``) at which the PS had received ``n`` updates from every worker of
    ``workers`` (paper §8.2, Fig. 7: aggregated ones counted per contributing worker); None if one
    of them has fewer than ``n`` delivered.

    Raises:
        ValueError: ``n`` < 1 or no workers.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not workers:
        raise ValueError("no workers")
    worst = 0
    for w in workers:
        ts = wd.times.get(w, [])
        if len(ts) < n:
            return None
        worst = max(worst, ts[n - 1])
    return worst - t0_ns


def worker_deliveries(run: RunData) -> WorkerDeliveries:
    """The per-worker deliveries of ``run`` (module docstring): from ``deliveries.csv`` when the run
    directory has it, else reconstructed.

    Raises:
        RunDirError: ``deliveries.csv`` is not the table :mod:`olaf.rundir` describes.
    """
    path = run.ps_path.parent.parent / DELIVERIES_FILE
    if path.exists():
        return _from_ledger(path, [w.name for w in run.workers])
    return _reconstruct(run)


def _from_ledger(path, names: list[str]) -> WorkerDeliveries:
    times: dict[str, list[int]] = {n: [] for n in names}
    with open(path, newline="") as f:
        rows = csv.reader(f)
        if tuple(next(rows, ())) != DELIVERIES_COLUMNS:
            raise RunDirError(f"{path}: expected the header {','.join(DELIVERIES_COLUMNS)}")
        for i, row in enumerate(rows, start=2):
            try:
                times.setdefault(row[0], []).append(int(row[3]))
            except (IndexError, ValueError):
                raise RunDirError(f"{path}:{i}: not a delivery row ({','.join(row)})") from None
    for ts in times.values():
        ts.sort()
    return WorkerDeliveries(times, "ledger")


@dataclass(order=True)
class _Sent:
    gen_ts: int
    worker: str
    seq: int


def _reconstruct(run: RunData) -> WorkerDeliveries:
    by_cluster: dict[int, list[_Sent]] = defaultdict(list)
    address: dict[str, Optional[str]] = {}
    cluster_of: dict[str, Optional[int]] = {}
    wid_of: dict[str, Optional[int]] = {}
    for w in run.workers:
        address[w.name], cluster_of[w.name], wid_of[w.name] = w.address, w.cluster_id, w.worker_id
        if w.cluster_id is not None:
            by_cluster[w.cluster_id] += [_Sent(t, w.name, s) for t, s in zip(w.sent_ts, w.sent_seq)]
    for sent in by_cluster.values():
        sent.sort()
    by_id: dict[tuple[Optional[str], int], list[_Sent]] = defaultdict(list)
    for sent in by_cluster.values():
        for s in sent:
            by_id[(address.get(s.worker), s.seq)].append(s)
    out = WorkerDeliveries({w.name: [] for w in run.workers}, "reconstructed")
    taken: set[tuple[str, int]] = set()
    recs = sorted(usable(run.ps_updates, run.ps_start.t_ns), key=lambda r: r.t_ns)
    for r in recs:
        sent = by_cluster.get(r.cluster_id, [])
        gens = [s.gen_ts for s in sent]
        head = next((s for s in by_id.get((r.src, r.seq), ()) if (s.worker, s.gen_ts) not in taken
                     and s.gen_ts <= r.gen_ts and cluster_of[s.worker] == r.cluster_id
                     and wid_of[s.worker] in (None, r.worker_id)), None)
        got: list[_Sent] = []
        if head is not None:
            got.append(head)
            if r.count > 1:
                lo = bisect.bisect_right(gens, head.gen_ts)
                hi = bisect.bisect_right(gens, r.gen_ts)
                cands = [s for s in sent[lo:hi] if (s.worker, s.gen_ts) not in taken]
                last = [s for s in cands if s.gen_ts == r.gen_ts]
                others = [s for s in cands if s.gen_ts != r.gen_ts]
                if len(cands) > r.count - 1:  # keep the one the gen_ts names and the earliest others
                    got += others[:r.count - 1 - len(last[:1])] + last[:1]
                else:
                    got += cands
        exact = head is not None and len(got) == r.count
        out.receptions += 1
        out.exact += exact
        e, n = out.per_cluster_exact.get(r.cluster_id, (0, 0))
        out.per_cluster_exact[r.cluster_id] = (e + exact, n + 1)
        out.unattributed += max(0, r.count - len(got))
        for s in got:
            taken.add((s.worker, s.gen_ts))
            out.times[s.worker].append(r.t_ns)
    for ts in out.times.values():
        ts.sort()
    return out

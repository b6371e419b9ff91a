"""Per-cluster results of a run (paper §8: Tab. 1, Tab. 2, Fig. 6, time-to-reward).

From a run directory (:mod:`olaf.report.rundata`) :func:`summarize` computes, per
cluster (the ``cluster_id`` the PS saw in the update headers; a worker's
cluster as in :mod:`olaf.report.rundata`):

* ``sent`` — updates the cluster's workers sent (skipped by transmission
  control do not count; they are ``skipped``, of ``generated``). A worker lost with its
  machine mid-run (``run.json`` ``lost_workers``) may have sent its last update(s) without
  the log record (it went with the machine): its cluster's first switch decided more packets
  than the logs show, and those (``unlogged_sent_packets``; the PS's receptions when there are
  no switch counters) count as sent;
* ``delivered`` — update packets the PS received (INIT excluded);
* ``aggregated`` — ``Σ count − delivered``, worker updates folded into them;
* ``dropped`` — ``sent − delivered − aggregated`` (:func:`olaf.aom.accounting`);
* ``aom_avg_ms`` — time-average AoM over the **window** ``[t_start, t_end]``:
  ``t_start`` from the manifest ``run.json``, else the earliest worker start ``t0``;
  ``t_end`` from the manifest, else the latest end of a worker's generation
  phase. The age starts at 0 at ``t_start`` and grows until the cluster's
  first delivery, so a starved cluster ages over the whole window
  (:func:`olaf.aom.time_average_aom` with ``t_start_ns``). Receptions after
  ``t_end`` count in the accounting, not in the AoM;
* ``aom_peak_ms`` — average peak AoM (paper §6, ``avg Δp``; null if the
  cluster got nothing in the window), ``aom_peak_max_ms`` the largest peak,
  ``aom_max_ms`` the largest AoM in the window (including its end);

and ``fates`` (:mod:`olaf.report.accounting`), hop by hop in packets: with a model of K
chunks, every count there is chunks (``sent`` · K; ``delivered`` every chunk the PS received),
since the switches decide per chunk.

Overall ``chunks`` (K > 1): ``sent`` (chunks), ``received`` (chunk messages at the PS),
``content`` (Σ count: chunks whose content reached the PS, alone or folded), ``lost`` =
``sent − content`` (dropped or replaced), and per update, from the chunks that arrived as
their own message (the head of a segment: the ACK and the PS record carry its worker and
``seq``): ``fully_alone`` (all K), ``partially_alone`` (some) and ``none_alone`` (none; of
the updates sent). Where nothing was folded (FIFO) these are exactly the updates fully,
partially and not delivered; under aggregation a folded chunk's content arrived without its
identity, so ``fully_alone`` is a lower bound.

and overall the sums, the mean of the clusters' AoMs and ``jain_fairness``,
Jain's index over the clusters' ``aom_avg_ms`` (paper Tab. 2). With ``k`` the
time from ``t_start`` until the PS has ``k`` worker updates per worker of the
cluster (``Σ count ≥ k·workers``, paper §8.2's time-to-reward; overall: the
slowest cluster); with ``reward_target`` the time until the PS's global reward
first reaches it.

:func:`write_summary` writes ``summary.json`` (this dict) and ``summary.csv``
(one row per cluster and an ``all`` row).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

import numpy as np
from pydantic import ValidationError

from olaf.aom import (
    Delivery,
    accounting,
    aggregations_per_delivery,
    average_peak_aom,
    jain_fairness,
    peak_aoms,
    sawtooth,
    time_average_aom,
    time_to_updates,
)
from olaf.report.accounting import cluster_account, hop_account
from olaf.report.rundata import RunData, RunDirError, plausible_gen_ts, usable
from olaf.rundir.atomic import write_json
from olaf.rundir.records import Outcome, PsSummary, UpdateRecord, WorkerSummary
from olaf.rundir.summary import RunSummary

NS_PER_MS = 1e6

CSV_COLUMNS = ["cluster", "workers", "generated", "sent", "skipped", "delivered", "aggregated", "dropped",
               "loss_fraction", "aom_avg_ms", "aom_peak_ms", "aom_peak_max_ms", "aom_max_ms", "time_to_k_ms",
               "jain_fairness"]


def window(run: RunData) -> tuple[int, int, str]:
    """``(t_start_ns, t_end_ns, source)`` of the metric window (see module docstring)."""
    m = run.manifest
    starts = [w.t0_ns for w in run.workers if w.t0_ns is not None]
    ends = [w.gen_end_ns for w in run.workers if w.gen_end_ns is not None]
    recv = [r.t_ns for r in run.ps_updates]
    t_start = m.t_start_ns if m is not None and m.t_start_ns is not None else (
        min(starts) if starts else (min(recv) if recv else None))
    t_end = m.t_end_ns if m is not None and m.t_end_ns is not None else (
        max(ends) if ends else (max(recv) if recv else None))
    if t_start is None or t_end is None:
        raise RunDirError("no window: no run.json times, no worker logs and no deliveries")
    if t_end < t_start:
        raise RunDirError(f"window ends ({t_end}) before it starts ({t_start})")
    source = "run.json" if m is not None and m.t_start_ns is not None and m.t_end_ns is not None else "worker logs"
    return int(t_start), int(t_end), source


def deliveries_by_cluster(run: RunData) -> dict[int, list[Delivery]]:
    """PS receptions per cluster (:func:`usable` ones)."""
    out: dict[int, list[Delivery]] = defaultdict(list)
    for r in usable(run.ps_updates, run.ps_start.t_ns):
        out[r.cluster_id].append(Delivery(r.t_ns, r.gen_ts, r.count))
    return out


def bad_gen_ts(run: RunData) -> int:
    """Receptions left out of the AoM because their ``gen_ts`` lies outside the run."""
    start = run.ps_start.t_ns
    return sum(1 for r in run.ps_updates if not plausible_gen_ts(r, start))


def _ms(x: Optional[float]) -> Optional[float]:
    return None if x is None else x / NS_PER_MS


def _cluster_metrics(ds: list[Delivery], sent: int, t0: int, t1: int, workers: int,
                     k: Optional[int], regrouped: bool = False) -> dict[str, Any]:
    excess = max(0, sum(d.count for d in ds) - sent)
    if regrouped and excess:
        # Updates generated while olafctl was writing may be stamped with the new
        # cluster but attributed to the old one (regroups.jsonl records when the
        # switches held the change): count those at their delivering cluster.
        sent += excess
    try:
        acc = accounting(sent, ds)
    except ValueError as e:
        raise RunDirError(f"{e}: a worker log of this cluster is missing or assigned to another cluster") from e
    win = [d for d in ds if t0 <= d.t_ns <= t1]
    _, ages = sawtooth(win, t1, t_start_ns=t0)
    peaks = [p for _, p in peak_aoms(win, t_start_ns=t0)]
    ttk = None
    if k is not None and workers:
        t = time_to_updates([d for d in ds if d.t_ns >= t0], k * workers)
        ttk = None if t is None else _ms(t - t0)
    return {
        "workers": workers,
        "sent": acc.sent,
        "delivered": acc.delivered,
        "aggregated": acc.aggregated,
        "dropped": acc.lost,
        "loss_fraction": acc.loss_fraction,
        "aom_avg_ms": _ms(time_average_aom(win, t1, t_start_ns=t0)),
        "aom_peak_ms": _ms(average_peak_aom(win, t_start_ns=t0)),
        "aom_peak_max_ms": _ms(max(peaks)) if peaks else None,
        "aom_max_ms": _ms(float(ages.max())),
        "aggregations_mean": float(aggregations_per_delivery(ds).mean()) if ds else None,
        "time_to_k_ms": ttk,
        "regroup_boundary_updates": excess if regrouped else 0,
    }


def _reassign_regroup_boundary(run: RunData, by_cluster: dict[int, list[Delivery]],
                               sent_of: dict[int, int]) -> None:
    """Move boundary updates from the cluster a worker left to the one it joined.

    ``regroups.jsonl`` has the time a change was complete on the switches; an
    update generated while it was being written is attributed to the old
    cluster but may have been stamped with the new one. Where the new cluster
    delivered more worker updates than were attributed to it and the old one
    fewer, up to that many are moved (in place, on ``sent_of``).
    """
    prev = {w.name: w.cluster_id for w in run.workers}
    for _, members in run.regroups:
        for name, new in members.items():
            old = prev.get(name)
            if old is not None and old != new:
                got = {c: sum(d.count for d in by_cluster.get(c, [])) for c in (old, new)}
                shift = min(max(0, got[new] - sent_of.get(new, 0)), max(0, sent_of.get(old, 0) - got[old]))
                sent_of[old] = sent_of.get(old, 0) - shift
                sent_of[new] = sent_of.get(new, 0) + shift
        prev.update(members)


def _unlogged_packets(run: RunData, cluster: int, path: list[str], logged: int) -> int:
    """Update packets of ``cluster`` that its first switch decided beyond the ``logged`` ones (the
    worker logs' sends, in packets): the last sends of a worker lost with its machine (a Ray node,
    ``run.json`` ``lost_workers``), whose log records went with it. Without switch counters, the
    PS's receptions beyond ``logged`` stand in (a lower bound)."""
    if run.switch is not None and path:
        per = (run.switch.get(path[0]) or {}).get("clusters", {})
        decided = hop_account(path[0], per.get(str(cluster), per.get(cluster, {}))).arrivals
        return max(0, decided - logged)
    received = sum(r.count for r in usable(run.ps_chunks, run.ps_start.t_ns) if r.cluster_id == cluster)
    return max(0, received - logged)


def _time_to_reward(run: RunData, t0: int, target: float) -> Optional[float]:
    for r in sorted(run.ps_updates, key=lambda r: r.t_ns):
        g = r.global_reward
        if g is not None and g >= target:
            return _ms(r.t_ns - t0)
    return None


def summarize(run: RunData, *, k: Optional[int] = None, reward_target: Optional[float] = None) -> dict[str, Any]:
    """The report as a JSON-ready dict: ``clusters`` (by cluster id as a string), ``overall``, context.

    Raises:
        RunDirError: no window, or a cluster whose deliveries carry more
            worker updates than its workers sent.
    """
    t0, t1, source = window(run)
    by_cluster = deliveries_by_cluster(run)
    workers_of: dict[int, list] = defaultdict(list)
    unattributed: list[Any] = []
    for w in run.workers:
        final = run.cluster_at(w, t1) if run.regroups else w.cluster_id
        (workers_of[final] if final is not None else unattributed).append(w)
    sent_of: dict[int, int] = defaultdict(int)
    for w in run.workers:
        for t in w.sent_ts:
            c = run.cluster_at(w, t)
            if c is not None:
                sent_of[c] += 1
    if run.regroups:
        _reassign_regroup_boundary(run, by_cluster, sent_of)
    k_chunks = run.num_chunks
    chunks = usable(run.ps_chunks, run.ps_start.t_ns)
    chunks_of: dict[int, int] = defaultdict(int)
    for r in chunks:
        chunks_of[r.cluster_id] += 1
    lost_at = {} if run.manifest is None else {lw.worker: lw.at_s for lw in run.manifest.lost_workers}
    clusters: dict[str, dict[str, Any]] = {}
    for c in sorted(set(by_cluster) | set(workers_of) | set(sent_of)):
        ws = workers_of.get(c, [])
        path = run.path_of(ws)
        logged = sent_of.get(c, 0) * k_chunks  # packets
        unlogged = _unlogged_packets(run, c, path, logged) if any(w.name in lost_at for w in ws) else 0
        sent_of[c] = sent_of.get(c, 0) + -(-unlogged // k_chunks)  # a partly sent update counts as sent
        m = _cluster_metrics(by_cluster.get(c, []), sent_of.get(c, 0), t0, t1, len(ws), k,
                             regrouped=bool(run.regroups))
        m["unlogged_sent_packets"] = unlogged
        m["generated"] = sum(w.generated for w in ws)
        m["skipped"] = sum(w.skipped for w in ws)
        m["accepted"] = sum(1 for r in run.ps_updates if r.cluster_id == c and r.outcome == Outcome.ACCEPTED)
        if run.switch is not None and path:
            m["fates"] = cluster_account(logged + unlogged, chunks_of.get(c, 0), path, run.switch, c).to_json()
        clusters[str(c)] = m
    avgs = [m["aom_avg_ms"] for m in clusters.values()]
    peaks = [m["aom_peak_ms"] for m in clusters.values() if m["aom_peak_ms"] is not None]
    ttks = [m["time_to_k_ms"] for m in clusters.values()]
    total = {key: sum(m[key] for m in clusters.values())
             for key in ("workers", "generated", "sent", "skipped", "delivered", "aggregated", "dropped")}
    final_rewards = [r.global_reward for r in run.ps_updates if r.global_reward is not None]
    fates = [m["fates"] for m in clusters.values() if "fates" in m]
    overall = {
        **total,
        "loss_fraction": total["dropped"] / total["sent"] if total["sent"] else 0.0,
        "aom_avg_ms": float(np.mean(avgs)) if avgs else None,
        "aom_peak_ms": float(np.mean(peaks)) if peaks else None,
        "jain_fairness": jain_fairness(avgs) if avgs else None,
        "time_to_k_ms": (max(ttks) if ttks and None not in ttks else None) if k is not None else None,
        "final_global_reward": final_rewards[-1] if final_rewards else None,
        "time_to_reward_ms": None if reward_target is None else _time_to_reward(run, t0, reward_target),
        "fates": ({k: sum(f[k] for f in fates) for k in fates[0] if isinstance(fates[0][k], int)}
                  if fates else None),
        "fates_consistent": all(not f["inconsistent"] for f in fates) if fates else None,
        "unlogged_sent_packets": sum(m["unlogged_sent_packets"] for m in clusters.values()),
        "chunks": _chunk_delivery(chunks, k_chunks, total["sent"]) if k_chunks > 1 else None,
    }
    return {
        "clusters": clusters,
        "overall": overall,
        "window": {"t_start_ns": t0, "t_end_ns": t1, "duration_s": (t1 - t0) / 1e9, "source": source},
        "params": {"k": k, "reward_target": reward_target},
        "ps": {"log": str(run.ps_path), "inits": run.ps_inits, "malformed": run.ps_malformed,
               "clean_stop": run.ps_stopped, "bad_gen_ts": bad_gen_ts(run), **_ps_host_losses(run)},
        "bad_records": run.bad_records,
        "socket_drops": host_socket_drops(run),
        "partial": run.manifest is not None and run.manifest.partial,
        "workers": {"count": len(run.workers), "unattributed": [w.name for w in unattributed],
                    "without_stop_record": [w.name for w in run.workers if not w.stopped],
                    "late_start_ms": {w.name: w.late_start_ms for w in run.workers if w.late_start_ms > 0},
                    "restarts": {w.name: len(w.restart_gaps_ms) for w in run.workers if w.restart_gaps_ms},
                    "restart_gap_ms": {w.name: round(sum(w.restart_gaps_ms), 1) for w in run.workers
                                       if w.restart_gaps_ms},
                    "lost_at_s": lost_at},
        "run": {} if run.manifest is None else run.manifest.model_dump(mode="json"),
        "switch": run.switch,
        "regroups": [{"t_ns": t, "clusters": m} for t, m in run.regroups],
    }


def _chunk_delivery(chunks: list[UpdateRecord], k: int, sent_updates: int) -> dict[str, int]:
    """Chunk accounting of a K-chunk model (the ``chunks`` entry of :func:`summarize`)."""
    alone: dict[tuple[int, int, int], set[int]] = defaultdict(set)
    for r in chunks:  # not by gen_ts: a head that aggregated carries the newest gen_ts folded in
        alone[(r.cluster_id, r.worker_id, r.seq)].add(r.chunk or 0)
    full = sum(1 for got in alone.values() if len(got) == k)
    content = sum(r.count for r in chunks)
    return {"k": k, "sent": sent_updates * k, "received": len(chunks), "content": content,
            "lost": sent_updates * k - content, "fully_alone": full, "partially_alone": len(alone) - full,
            "none_alone": sent_updates - len(alone)}


def write_summary(summary: dict[str, Any], out_dir: Path | str) -> tuple[Path, Path]:
    """Write ``summary.json`` and ``summary.csv`` into ``out_dir``; return their paths.

    Raises:
        pydantic.ValidationError: ``summary`` is not a :class:`~olaf.rundir.summary.RunSummary`
            (the report and its model drifted apart: a bug, caught before the file is written).
    """
    RunSummary.model_validate(summary)
    out_dir = Path(out_dir)
    jpath, cpath = out_dir / "summary.json", out_dir / "summary.csv"
    write_json(jpath, summary)
    rows = [{"cluster": c, **m} for c, m in summary["clusters"].items()]
    rows.append({"cluster": "all", **summary["overall"]})
    with open(cpath, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        wr.writeheader()
        for r in rows:
            wr.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_COLUMNS})
    return jpath, cpath


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two summaries side by side (e.g. Olaf vs FIFO): per cluster and overall, the
    Table 1 columns and the AoM, plus ``aom_avg_change`` = ``b/a − 1`` overall
    (−0.69 reads "b has 69 % less average AoM than a")."""
    keys = ("delivered", "aggregated", "dropped", "loss_fraction", "aom_avg_ms", "aom_peak_ms")
    rows = {}
    for c in sorted(set(a["clusters"]) | set(b["clusters"]), key=lambda s: int(s)):
        rows[c] = {k: [s["clusters"].get(c, {}).get(k) for s in (a, b)] for k in keys}
    ov = {k: [a["overall"].get(k), b["overall"].get(k)] for k in keys + ("jain_fairness",)}
    x, y = ov["aom_avg_ms"]
    return {"clusters": rows, "overall": ov, "aom_avg_change": (y / x - 1.0) if x and y is not None else None}


def _summary_path(log: Path) -> Path:
    """The host summary beside a host log (``w1.jsonl`` → ``w1.summary.json``)."""
    return log.with_name(log.name.removesuffix(".jsonl") + ".summary.json")


def host_socket_drops(run: RunData) -> dict[str, dict[str, Any]]:
    """Every host whose kernel dropped datagrams for a full socket receive buffer (``SO_RXQ_OVFL``),
    by host name: ``drops``, ``rcvbuf_bytes`` (the buffer the kernel granted), ``advice`` (what to
    change: the kernel's cap and its sysctl when the buffer was capped, else the host was starved of
    CPU longer than its buffer lasts) and, for a worker, ``slices_superseded`` (newer ACK slices that
    replaced older ones before adoption: not lost). Hosts without drops, or without a summary (a
    simulated run's, a killed host's), are left out."""
    out: dict[str, dict[str, Any]] = {}
    hosts: list[tuple[str, Path, type[PsSummary] | type[WorkerSummary]]] = [("ps", run.ps_path, PsSummary)]
    hosts += [(w.name, w.path, WorkerSummary) for w in run.workers]
    for name, log, model in hosts:
        try:
            s = model.model_validate_json(_summary_path(log).read_bytes(), strict=True)
        except (OSError, ValidationError):
            continue
        if not s.socket_drops:
            continue
        advice = s.rcvbuf_advice or (
            f"the buffer was granted in full; the host went without a core for longer than it lasts: "
            f"give it a larger one ({'--rcvbuf' if name == 'ps' else 'OlafClient(rcvbuf=...)'}) or fewer "
            f"competing processes")
        out[name] = {"drops": s.socket_drops, "rcvbuf_bytes": s.rcvbuf_bytes, "advice": advice,
                     **({"slices_superseded": s.slices_superseded} if isinstance(s, WorkerSummary) else {})}
    return out


def _ps_host_losses(run: RunData) -> dict[str, Any]:
    """What the PS's summary says of datagrams that reached its host but no update record:
    ``socket_drops`` (kernel, full receive buffer), ``untrusted`` by reason and per cluster
    (olaf/hosts/trust.py), and the exact ``malformed`` count (its log keeps only the first of
    each reason). These explain the accounting's ``lost_at_host``. Empty without a summary."""
    path = _summary_path(run.ps_path)
    try:
        s = PsSummary.model_validate_json(path.read_bytes(), strict=True)
    except (OSError, ValidationError):
        return {}

    def given(key: str) -> Any:  # None for a counter this PS does not keep (a simulated one)
        return getattr(s, key) if key in s.model_fields_set else None

    return {"socket_drops": given("socket_drops"), "untrusted": given("untrusted"),
            "untrusted_reasons": given("untrusted_reasons"), "malformed_total": s.malformed,
            "untrusted_by_cluster": {c: v["untrusted"] for c, v in s.per_cluster.items() if v.get("untrusted")}}

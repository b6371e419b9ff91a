"""Write a simulated run as a run directory that ``olaf report`` reads like an emulated one.

Layout (:mod:`olaf.rundir`, the same as every backend's):

* ``run.json`` — the manifest (:class:`~olaf.rundir.manifest.RunManifest`): backend
  ``ns3``, ``t_start_ns``/``t_end_ns`` (the generation window on the simulated clock,
  t0 = 0), the scenario as the plan, the provenance, ``incomplete``, and in
  ``backend_info`` the simulation statistics (``sim``) and why ``network.yaml`` is missing
  (``network_yaml``) when it is;
* ``hosts/ps.jsonl``, ``hosts/w<i>.jsonl`` — the records of :mod:`olaf.rundir.records`
  that ``olaf ps`` and ``olaf worker`` write (start, go, gen, ack, update, stop), times in
  simulated ns; fields the simulation does not model are null (``exp_reward``,
  ``global_reward``) and the PS's ``outcome`` is ``"not_modelled"`` (no global model).
  The workers log every ACK slice. The PS logs one ``update`` record per reception that
  *completes* worker updates (see "Updates in chunks" below); with K = 1 that is every
  reception, exactly as received;
* ``hosts/*.summary.json`` — the hosts' counters;
* ``switch_counters.json`` — per switch the P4 counters by label (``decisions``,
  ``malformed``, ``traffic``, ``egress_errors``, per cluster ``decisions`` and
  ``departures``) and ``tx_drops`` (packets a device queue of the switch dropped);
* ``deliveries.csv`` (with records) — every fully delivered update's worker, ``seq``,
  ``gen_ts_ns`` and the time its content reached the PS (:func:`write_deliveries`);
* ``network.yaml`` — the deployment the emulation would build for this scenario
  (:func:`olaf.topologies.build.deployment`: same hosts, addresses, clusters and switch
  path), so the report follows each cluster's packets hop by hop (``fates``); left out
  (``run.json`` says why) for networks beyond the emulation's sizes.

Without records (``RunPlan.records`` false) the host logs are not written; the
counters are, with the workers' totals in ``hosts/workers.summary.json``.

**Updates in chunks** (docs/protocol.md "Chunks", docs/simulation.md "Chunks"). An update of P
parameters travels as K chunks; the C++ fate ledger (``olaf/sim/cpp/fate_ledger.hpp``) records
where each one went (with records only: a scale run without them keeps no ledger).
:func:`chunk_accounting` turns it into ``backend_info["chunks"]`` of ``run.json`` (so
``summary.json`` carries it under ``run.backend_info.chunks``):

* per chunk sent (taken by the worker's access link), exactly one own fate: ``delivered`` (its
  packet reached the PS, alone or carrying folded chunks), ``folded`` (aggregated into a
  waiting update of its key), ``dropped`` (an OlafQueue dropped it, or a replacement overwrote
  it), ``lost`` (``lost_device``: a device queue dropped its packet; ``lost_in_flight``: still
  in the network when the simulation stopped). ``sent = delivered + folded + dropped + lost``.
  ``content_delivered``: chunks whose content reached the PS, in their own packet or folded into
  one that did. ``not_sent``: chunks the worker's own device refused (not in ``sent``);
* per update sent (transmission control sent it and the access link took at least one of its
  chunks): ``fully_delivered`` (every chunk's content reached the PS), ``partially_delivered``
  (some), ``not_delivered`` (none); ``sent = fully + partially + not``;
* the same per cluster, and per (cluster, chunk).

An update *completes* when the PS receives the last of its chunks' content to arrive; the PS
answers that packet with the update's last ACK slice. That is the update's delivery event for
the report: the PS log has one ``update`` record per reception completing at least one update,
with ``count`` = updates completed, ``gen_ts`` = their latest generation time and
``reward_sum`` = the sum of their rewards (the packet's ids and source). So the report's AoM
is the age of the freshest fully delivered update, its ``delivered + aggregated`` counts fully
delivered updates and its ``dropped`` the partially and not delivered ones. With K = 1 every
reception completes exactly the updates folded into it: the records are the receptions.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np

from olaf.constants import ACK_PORT, UPDATE_PORT, Decision, EgressError, Malformed, Traffic, TxReason
from olaf.fixedpoint import INT32_MIN, reward_from_fixed
from olaf.plan.topology import worker_seed
from olaf.rundir import DELIVERIES_COLUMNS, DELIVERIES_FILE
from olaf.rundir.atomic import write_json
from olaf.rundir.jsonl import write_jsonl
from olaf.rundir.manifest import Incomplete, write_run_manifest
from olaf.rundir.records import (
    NOT_MODELLED,
    AckRecord,
    GenRecord,
    GoRecord,
    PsStart,
    PsSummary,
    Record,
    StopRecord,
    UpdateRecord,
    WorkerStart,
    WorkersTotal,
    WorkerSummary,
)
from olaf.sim import build
from olaf.sim.simrun import SimRun
from olaf.sim.topology import PS_IP, WorkerHost, worker_schedule_of, worker_start_ns

BACKEND = "ns3"
FATES = ("in_flight", "delivered", "folded", "dropped", "lost_device", "not_sent")
"""Labels of olaf::sim::ChunkFate (sim_api.hpp), by code."""
IN_FLIGHT, DELIVERED, FOLDED, DROPPED, LOST_DEVICE, NOT_SENT = range(len(FATES))
INT32_MAX = (1 << 31) - 1
REASONS = tuple(m.label for m in TxReason)
"""Labels of olaf::sim::Reason (txcontrol.hpp) by code: :class:`olaf.constants.TxReason`."""


def records(vec: Any, fields: str) -> np.ndarray:
    """A C++ ``std::vector`` of 8-byte-field records as a numpy structured array (a copy).

    ``fields``: the layout string of the record (``GEN_FIELDS`` …, ``name:i8,name:f8``).
    """
    import ctypes

    import cppyy

    dt = np.dtype([(n, "<" + t) for n, t in (f.split(":") for f in fields.split(","))])
    n = int(vec.size())
    if n == 0:
        return np.zeros(0, dtype=dt)
    buf = (ctypes.c_char * (n * dt.itemsize)).from_address(int(cppyy.addressof(vec.data())))
    return np.frombuffer(memoryview(buf), dtype=dt).copy()


def _layout(name: str) -> str:
    """A record layout string of the C++ library (sim_api.hpp ``GEN_FIELDS`` …)."""
    return str(getattr(build.load(), name))


def _none_if_negative(x: float) -> float | None:
    return None if x < 0 else float(x)


def _int_ip(x: int) -> str:
    return ".".join(str((int(x) >> s) & 0xFF) for s in (24, 16, 8, 0))


def _gen_records(g: np.ndarray, k: int) -> Iterable[GenRecord]:
    """The worker's generations; with K > 1 chunks a sent one names the chunks its link took."""
    for r in g:
        sent = bool(r["sent"])
        yield GenRecord(ev="gen", t_ns=int(r["t_ns"]), idx=int(r["idx"]), late_ms=0.0, sent=sent,
                        seq=int(r["seq"]) if sent else None, reward=float(r["reward"]),
                        folded=int(r["folded"]) if sent else None, exp_reward=None,
                        reason=REASONS[int(r["reason"])], p_send=float(r["p_send"]), draw=_none_if_negative(r["draw"]),
                        delta_hat_ms=_none_if_negative(r["delta_hat_ms"]), N=int(r["n"]) if r["n"] >= 0 else None,
                        q_max=int(r["q_max"]) if r["q_max"] >= 0 else None,
                        chunks=int(r["chunks_sent"]) if sent and k > 1 else None)


def _ack_records(a: np.ndarray, k: int) -> Iterable[AckRecord]:
    """The ACK slices the worker received (``chunk``/``num_chunks`` with K > 1)."""
    for r in a:
        gr = int(r["global_reward"])
        yield AckRecord(ev="ack", t_ns=int(r["t_ns"]), cluster_id=int(r["cluster_id"]), worker_id=int(r["worker_id"]),
                        seq=int(r["seq"]), count=int(r["count"]), gen_ts=int(r["gen_ts"]),
                        global_reward=None if gr == INT32_MIN else reward_from_fixed(gr), weights=int(r["weights"]),
                        own=bool(r["own"]),
                        status=(int(r["queue_util"]), int(r["active_clusters"]), int(r["queue_size"]))
                        if r["status_valid"] else None,
                        chunk=int(r["chunk"]) if k > 1 else None, num_chunks=k if k > 1 else None)


def _worker_log(run: SimRun, w: WorkerHost, end_ns: int, hosts: Path) -> WorkerSummary:
    s, ns = run.plan, run.sim
    name = w.name
    g = s.groups[w.group]
    idx = run.worker_index[name]
    c = ns.GetWorkerCounters(idx)
    t0 = worker_start_ns(s, w)  # its group's start and its start phase, as a real worker's go record
    k = run.chunking.num_chunks
    if s.records:
        start = WorkerStart(ev="start", role="worker", t_ns=0, name=name, start_at_ns=round(g.start_ms * 1e6),
                            start_file=None, bind=w.ip,
                            ps=f"{PS_IP}:{UPDATE_PORT}", cluster_id=w.cluster_id, worker_id=w.worker_id,
                            seed=worker_seed(s.seed, w.worker_id), backend=BACKEND, group=g.name,
                            schedule=worker_schedule_of(s, w).describe(),
                            task=None, num_chunks=k if k > 1 else None,
                            tx={**s.tc.model_dump(), "enabled": s.transmission_control})
        gens = records(ns.Gens(idx), _layout('GEN_FIELDS'))
        acks = records(ns.Acks(idx), _layout('ACK_FIELDS'))
        # one time-ordered log, as a real worker writes it
        merged: list[GenRecord | AckRecord] = sorted([*_gen_records(gens, k), *_ack_records(acks, k)],
                                                   key=lambda r: r.t_ns)
        write_jsonl(hosts / f"{name}.jsonl",
                     [start, GoRecord(ev="go", t_ns=t0, t0_ns=t0, requested_t0_ns=t0), *merged,
                      StopRecord(ev="stop", t_ns=end_ns, reason="schedule_end")])
    return WorkerSummary(
        role="worker", name=name, bind=w.ip, cluster_id=w.cluster_id, worker_id=w.worker_id,
        learned_cluster_id=None if c.learned_cluster_id == 0xFFFFFFFF else int(c.learned_cluster_id),
        learned_worker_id=None if c.learned_worker_id == 0xFFFFFFFF else int(c.learned_worker_id),
        t0_ns=t0, gen_end_ns=end_ns, t_stop_ns=end_ns, stop_reason="schedule_end",
        generated=int(c.generated), sent=int(c.sent), skipped=int(c.skipped), init_sent=0,
        send_errors=int(c.send_errors), acks=int(c.acks), acks_own=int(c.acks_own),
        acks_malformed=int(c.acks_malformed), acks_wrong_size=0, recv_errors=0,
        model_acked=False, last_seq=int(c.last_seq), last_global_reward=None, final_exp_reward=None,
        num_chunks=k if k > 1 else None, chunks_sent=int(c.chunks_sent) if k > 1 else None)


class Ledger:
    """The C++ fate ledger as arrays: per update sent (``worker`` node index, ``cluster``,
    ``seq``, ``gen_ts``, ``reward_sum``) and per (update, chunk) ``fate`` (:data:`FATES` codes),
    ``t_content_ns`` and ``reception`` (-1: the content never reached the PS), shape (updates, K)."""

    def __init__(self, run: SimRun) -> None:
        k = run.chunking.num_chunks
        ups = records(run.sim.LedgerUpdates(), _layout("LEDGER_UPDATE_FIELDS"))
        chs = records(run.sim.LedgerChunks(), _layout("LEDGER_CHUNK_FIELDS"))
        cluster_of = np.full(max(run.worker_index.values(), default=0) + 1, -1, dtype=np.int64)
        for w in run.net.workers:
            cluster_of[run.worker_index[w.name]] = w.cluster_id
        self.k = k
        self.worker = ups["worker"]
        self.cluster = cluster_of[ups["worker"]] if len(ups) else np.zeros(0, dtype=np.int64)
        self.seq, self.gen_ts, self.reward_sum = ups["seq"], ups["gen_ts"], ups["reward_sum"]
        self.fate = chs["fate"].reshape(-1, k)
        self.t_content_ns = chs["t_content_ns"].reshape(-1, k)
        self.reception = chs["reception"].reshape(-1, k)
        self.sent = (self.fate != NOT_SENT).any(axis=1)
        """Updates sent: the access link took at least one of their chunks."""
        self.content = (self.reception >= 0).sum(axis=1)
        """Chunks of each update whose content reached the PS."""

    @property
    def fully(self) -> np.ndarray:
        return self.sent & (self.content == self.k)

    def completions(self) -> dict[int, tuple[int, int, int]]:
        """Per PS reception serial that completes fully delivered updates: ``(count, latest gen_ts,
        Σ reward_sum)`` of the updates whose last chunk content to arrive it carried."""
        full = np.nonzero(self.fully)[0]
        last = self.reception[full].max(axis=1) if full.size else np.zeros(0, dtype=np.int64)
        out: dict[int, tuple[int, int, int]] = {}
        for r, u in zip(last.tolist(), full.tolist()):
            cnt, ts, rs = out.get(r, (0, 0, 0))
            out[r] = (cnt + 1, max(ts, int(self.gen_ts[u])), rs + int(self.reward_sum[u]))
        return out


def _counts(fate: np.ndarray, content: np.ndarray) -> dict[str, int]:
    """Own fates and delivered content of the chunks in ``fate`` (:data:`FATES` codes)."""
    n = {f: int((fate == code).sum()) for code, f in enumerate(FATES)}
    sent = int((fate != NOT_SENT).sum())
    return {"sent": sent, "delivered": n["delivered"], "folded": n["folded"], "dropped": n["dropped"],
            "lost": n["lost_device"] + n["in_flight"], "lost_device": n["lost_device"],
            "lost_in_flight": n["in_flight"], "content_delivered": int(content.sum()), "not_sent": n["not_sent"]}


def _update_counts(lg: Ledger, mask: np.ndarray) -> dict[str, int]:
    sent = lg.sent & mask
    return {"sent": int(sent.sum()), "fully_delivered": int((sent & (lg.content == lg.k)).sum()),
            "partially_delivered": int((sent & (lg.content > 0) & (lg.content < lg.k)).sum()),
            "not_delivered": int((sent & (lg.content == 0)).sum())}


def chunk_accounting(run: SimRun, lg: Optional[Ledger] = None) -> dict[str, Any]:
    """``backend_info["chunks"]``: the chunking, and per update, per chunk, per cluster and per
    (cluster, chunk) where everything sent went (module docstring "Updates in chunks")."""
    lg = lg or Ledger(run)
    content = lg.reception >= 0
    every = np.ones(len(lg.sent), dtype=bool)
    clusters: dict[str, Any] = {}
    for cid in sorted(run.net.clusters):
        m = lg.cluster == cid
        clusters[str(cid)] = {"updates": _update_counts(lg, m), "chunks": _counts(lg.fate[m], content[m]),
                              "per_chunk": [_counts(lg.fate[m, i], content[m, i]) for i in range(lg.k)]}
    return {**run.chunking.to_json(), "padding": run.chunking.padding,
            "updates": _update_counts(lg, every), "chunks": _counts(lg.fate, content), "clusters": clusters}


def write_deliveries(run: SimRun, lg: Ledger, path: Path) -> None:
    """``deliveries.csv`` (:mod:`olaf.rundir`): per fully delivered update its worker, ``seq``,
    ``gen_ts_ns`` and ``t_delivered_ns``, when the content of its last chunk reached the PS
    (in its own packet or folded into another): the exact per-worker deliveries that
    :mod:`olaf.report.deliveries` otherwise reconstructs from the PS's receptions."""
    name_of = {i: n for n, i in run.worker_index.items()}
    full = np.nonzero(lg.fully)[0]
    t = lg.t_content_ns[full].max(axis=1) if full.size else np.zeros(0, dtype=np.int64)
    order = np.argsort(t, kind="stable")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(DELIVERIES_COLUMNS)
        for u, tu in zip(full[order].tolist(), t[order].tolist()):
            w.writerow([name_of[int(lg.worker[u])], int(lg.seq[u]), int(lg.gen_ts[u]), int(tu)])


def _ps_log(run: SimRun, end_ns: int, hosts: Path, lg: Optional[Ledger]) -> None:
    ns = run.sim
    c = ns.GetPsCounters(run.ps_index)
    if lg is not None:
        ups = records(ns.PsUpdates(run.ps_index), _layout('PS_FIELDS'))
        done = lg.completions()

        def gen() -> Iterable[Record]:
            yield PsStart(ev="start", role="ps", t_ns=0, bind=f"{PS_IP}:{UPDATE_PORT}", ack_port=ACK_PORT, lr=None,
                          duration_s=None, backend=BACKEND)
            for i in sorted(done):
                r = ups[i]
                cnt, gen_ts, rs = done[i]
                rs = max(-INT32_MAX - 1, min(INT32_MAX, rs))
                yield UpdateRecord(ev="update", t_ns=int(r["t_ns"]), src=_int_ip(r["src_ip"]),
                                   cluster_id=int(r["cluster_id"]), worker_id=int(r["worker_id"]), seq=int(r["seq"]),
                                   count=cnt, gen_ts=gen_ts, reward_sum=rs, reward=reward_from_fixed(rs) / cnt,
                                   init=False, outcome=NOT_MODELLED, global_reward=None)
            yield StopRecord(ev="stop", t_ns=end_ns, reason="duration")

        write_jsonl(hosts / "ps.jsonl", gen())
    write_json(hosts / "ps.summary.json", PsSummary(
        role="ps", name="ps", bind=f"{PS_IP}:{UPDATE_PORT}", lr=None, t_start_ns=0, t_stop_ns=end_ns,
        stop_reason="duration", datagrams=int(c.datagrams), updates=int(c.updates), inits=0,
        malformed=int(c.malformed), acks_sent=int(c.acks_sent), ack_errors=int(c.ack_errors),
        not_modelled=int(c.updates), malformed_reasons={}, global_reward=None, num_weights=None,
        weights=None).dump())


def switch_counters(run: SimRun) -> dict[str, Any]:
    """``switch_counters.json``: per switch the P4 counters by label (as the controller's snapshot)."""
    out: dict[str, Any] = {}
    labels = [d.name.lower() for d in Decision]
    for name, idx in run.switch_index.items():
        c = run.sim.GetSwitchCounters(idx)
        per = list(c.cluster_decisions)
        dep = list(c.cluster_departures)
        n = len(labels)
        out[name] = {
            "decisions": dict(zip(labels, map(int, c.decisions))),
            "malformed": {m.name.lower(): int(c.malformed[int(m)]) for m in Malformed},
            "traffic": {t.name.lower(): int(c.traffic[int(t)]) for t in Traffic},
            "egress_errors": {e.name.lower(): int(c.egress_errors[int(e)]) for e in EgressError},
            "clusters": {str(cid): {"decisions": dict(zip(labels, map(int, per[cid * n:(cid + 1) * n]))),
                                    "departures": int(dep[cid])}
                         for cid in sorted(run.net.clusters)},
            "tx_drops": int(c.tx_drops),
        }
    return out


def _write_network(s: Any, out: Path, chunking: Any) -> Optional[str]:
    """``network.yaml`` of the scenario; returns why it was left out (None if written).

    Left out when updates travel in K > 1 chunks: the report's per-hop ``fates`` set switch
    counters (per chunk) against update counts; ``backend_info.chunks`` accounts for them."""
    if chunking.num_chunks > 1:
        return (f"updates travel in K = {chunking.num_chunks} chunks: the switch counters count chunks, "
                "see backend_info.chunks for where each went")
    from olaf.controller import config as cfgmod  # noqa: PLC0415
    from olaf.plan.topology import Placement  # noqa: PLC0415
    from olaf.topologies.build import QueueSetup, deployment  # noqa: PLC0415

    try:
        d = deployment(s.topology, [Placement(g.switch, g.clusters, g.workers_per_cluster) for g in s.groups],
                       {sw: QueueSetup(q) for sw, q in s.queue_sizes.items()}, num_grads=chunking.chunk_len,
                       num_chunks=chunking.num_chunks, discipline=s.discipline)
    except (ValueError, cfgmod.ConfigError) as e:
        return str(e)
    cfgmod.save(d, out / "network.yaml")
    return None


def write(run: SimRun, out: Path) -> None:
    """Write the run directory ``out`` (see the module docstring)."""
    s = run.plan
    hosts = out / "hosts"
    hosts.mkdir(parents=True, exist_ok=True)
    end_ns = int(run.stats["sim_end_ns"])
    summaries = [_worker_log(run, w, end_ns, hosts) for w in run.net.workers]
    if s.records:
        for sm in summaries:
            write_json(hosts / f"{sm.name}.summary.json", sm.dump())
    else:
        keys = ("generated", "sent", "skipped", "send_errors", "acks", "acks_own")
        write_json(hosts / "workers.summary.json", WorkersTotal(
            workers=len(summaries), **{k: sum(getattr(sm, k) for sm in summaries) for k in keys}).dump())
    lg = Ledger(run) if s.records else None
    _ps_log(run, end_ns, hosts, lg)
    write_json(out / "switch_counters.json", switch_counters(run))
    no_network = _write_network(s, out, run.chunking)
    info: dict[str, Any] = {"sim": {**run.stats, "setup_s": run.setup_s}}
    if lg is not None:
        info["chunks"] = chunk_accounting(run, lg)
        write_deliveries(run, lg, out / DELIVERIES_FILE)
    gen_end = s.generation_end_ns
    if s.updates_per_worker is not None and s.records:  # the window ends at the last generation
        last = [int(records(run.sim.Gens(i), _layout('GEN_FIELDS'))["t_ns"].max(initial=0))
                for i in run.worker_index.values()]
        gen_end = max(last, default=0)
    if no_network is not None:
        info["network_yaml"] = f"not written: {no_network}"
    incomplete = None
    if s.updates_per_worker is not None:
        short = {sm.name: sm.generated for sm in summaries if sm.generated < s.updates_per_worker}
        if short:
            incomplete = Incomplete(updates_per_worker=s.updates_per_worker, deadline_s=s.duration_s, generated=short)
    write_run_manifest(out, BACKEND, s, 0, gen_end, incomplete=incomplete, backend_info=info)

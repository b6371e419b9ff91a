"""Counterexample traces: built from the solver's model, cross-checked against
the replay, and written as JSON, a Markdown table and a plot of the AoM sawtooths.

Trace format (``olaf-verify-trace/1``, JSON; times in ms)::

    {"format": "olaf-verify-trace/1", "config": {...}, "priority": [names],
     "violations": [{"kind": "unfair"|"starved", "clusters": [names], "gap": "p/q"|null}],
     "clusters": [{"name", "phase_ms", "sum_peak_ms", "n_peak", "avg_peak_ms",
                   "updates": [{"k", "gen_ms", "decision", "sent", "outcome",
                                "departure_ms", "effective", "peak_ms", "ack_q"}]}],
     "replay": {"reproduced": bool, "violations": [...], "inadmissible": [...],
                "mismatches": [...]}}

``decision`` is a :class:`olaf.verifier.sendrule.Kind` value; ``outcome`` is
``skip``, ``append``, ``fold`` (aggregated/replaced into the cluster's waiting
update) or ``drop`` (queue full).
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional

from olaf import aom
from olaf.verifier import replay as rp
from olaf.verifier import sendrule
from olaf.verifier.config import VerifyConfig

FORMAT = "olaf-verify-trace/1"


def _outcome(row: dict) -> str:
    if not row["sent"]:
        return "skip"
    if row["append"]:
        return "append"
    return "fold" if row["wait"] else "drop"


def _kind(rule: sendrule.Rule, row: dict) -> str:
    if not rule.cfg.congested:
        return sendrule.Kind.UNCONGESTED.value
    if not rule.active:
        return sendrule.Kind.ALWAYS.value
    if row.get("backoff"):
        return sendrule.Kind.BACKOFF.value
    if row.get("stale"):
        return sendrule.Kind.STALE.value
    return (sendrule.Kind.BASE if row.get("fresh") else sendrule.Kind.BOOSTED).value


def _frac(x: Optional[Fraction]) -> Optional[str]:
    return None if x is None else str(x)


def build_trace(cfg: VerifyConfig, witness: dict) -> dict:
    """The trace of a solver witness (:func:`olaf.verifier.model.read_model`), before replay."""
    rule = sendrule.Rule(cfg)
    names = [c.name for c in cfg.clusters]
    clusters = []
    for u, cl in enumerate(cfg.clusters):
        rows = witness["updates"][u]
        s, n = witness["sum_peak"][u], witness["n_peak"][u]
        clusters.append({
            "name": cl.name, "phase_ms": witness["phase"][u], "sum_peak_ms": s, "n_peak": n,
            "avg_peak_ms": None if (m := cfg.query.mean_peak(s, n, len(rows))) is None else float(m),
            "updates": [{
                "k": k, "gen_ms": r["gen"], "decision": _kind(rule, r), "sent": r["sent"],
                "outcome": _outcome(r), "departure_ms": r["departure"], "effective": r["effective"],
                "peak_ms": r["peak"], "ack_q": r["ack_q"],
            } for k, r in enumerate(rows)],
        })
    viols = []
    for kind, us in witness["violations"]:
        gap = None
        if kind == "unfair":
            u, v = us
            q = cfg.query
            a = q.mean_peak(witness["sum_peak"][u], witness["n_peak"][u], len(witness["updates"][u]))
            b = q.mean_peak(witness["sum_peak"][v], witness["n_peak"][v], len(witness["updates"][v]))
            assert a is not None and b is not None  # an unfair pair has peaks on both sides
            gap = aom.peak_aom_gap(a, b,
                                   cfg.query.unit, period_a=cfg.clusters[u].period_ms,
                                   period_b=cfg.clusters[v].period_ms)
        viols.append({"kind": kind, "clusters": [names[x] for x in us], "gap": _frac(gap),
                      "gap_float": None if gap is None else float(gap)})
    return {"format": FORMAT, "config": cfg.to_json(),
            "priority": [names[u] for u in witness["priority"]],
            "violations": viols, "clusters": clusters}


def behaviour(cfg: VerifyConfig, trace: dict) -> rp.Behaviour:
    """The solver's choices in a trace: generation times, send decisions, priorities."""
    idx = {c.name: u for u, c in enumerate(cfg.clusters)}
    return rp.Behaviour(
        gen_ms=tuple(tuple(x["gen_ms"] for x in c["updates"]) for c in trace["clusters"]),
        sent=tuple(tuple(bool(x["sent"]) for x in c["updates"]) for c in trace["clusters"]),
        priority=tuple(idx[n] for n in trace["priority"]),
    )


_REPLAY_OUTCOME = {"skip": "skip", "append": "append", "aggregate": "fold",
                   "replace_worker": "fold", "drop_full": "drop"}


def cross_check(cfg: VerifyConfig, trace: dict) -> dict:
    """Replay the trace's behaviour and compare everything the solver claimed.

    Returns the ``replay`` section of the trace: ``reproduced`` is True iff the
    behaviour is admissible, every update's decision kind, outcome, departure
    and ACK status, every cluster's peak sum and count agree, and the replay
    fails the query the same way as the solver.
    """
    res = rp.replay(cfg, behaviour(cfg, trace))
    names = [c.name for c in cfg.clusters]
    mism: list[str] = []
    if not res.inadmissible:
        for u, c in enumerate(trace["clusters"]):
            rc = res.clusters[u]
            for x, o in zip(c["updates"], rc.updates):
                got = {"decision": o.kind, "outcome": _REPLAY_OUTCOME[o.outcome],
                       "departure_ms": o.departure_ms, "ack_q": o.ack_q}
                for key, val in got.items():
                    if x[key] != val:
                        mism.append(f"{c['name']}[{x['k']}].{key}: solver {x[key]!r}, replay {val!r}")
            if (Fraction(c["sum_peak_ms"]), c["n_peak"]) != (rc.sum_peak_ms, rc.n_peak):
                mism.append(f"{c['name']}: solver peaks {c['sum_peak_ms']}/{c['n_peak']}, "
                            f"replay {rc.sum_peak_ms}/{rc.n_peak}")
    rv: list[dict[str, Any]] = [{"kind": k, "clusters": [names[x] for x in us], "gap": _frac(g),
           "gap_float": None if g is None else float(g)} for k, us, g in res.violations]
    claimed = {(v["kind"], tuple(v["clusters"])) for v in trace["violations"]}
    found = {(v["kind"], tuple(v["clusters"])) for v in rv}
    if claimed != found:
        mism.append(f"violations: solver {sorted(claimed)}, replay {sorted(found)}")
    return {"reproduced": not res.inadmissible and not mism and bool(found),
            "violations": rv, "inadmissible": res.inadmissible, "mismatches": mism,
            "deliveries": [[{"t_ms": d.t_ns // rp.NS_PER_MS, "gen_ms": d.gen_ts_ns // rp.NS_PER_MS,
                             "count": d.count} for d in c.deliveries] for c in res.clusters]}


# -- output ---------------------------------------------------------------------------

def table(trace: dict) -> str:
    """Markdown: violations, per-cluster summary, and one row per update."""
    lines = ["# Counterexample", ""]
    for v in trace["violations"]:
        gap = f", gap {v['gap_float']:.4g} > ε" if v["gap"] is not None else ""
        lines.append(f"- **{v['kind']}**: {', '.join(v['clusters'])}{gap}")
    q = trace["config"]["query"]
    lines += ["", f"ε = {q['epsilon']} ({q['unit']}); tie-break priority: {', '.join(trace['priority'])}", "",
              "| cluster | phase ms | peaks | Σ peak ms | avg peak ms |", "|---|---|---|---|---|"]
    for c in trace["clusters"]:
        avg = "—" if c["avg_peak_ms"] is None else f"{c['avg_peak_ms']:.2f}"
        lines.append(f"| {c['name']} | {c['phase_ms']} | {c['n_peak']} | {c['sum_peak_ms']} | {avg} |")
    lines += ["", "| cluster | k | gen ms | decision | sent | outcome | departure ms | ACK_Q | peak ms |",
              "|---|---|---|---|---|---|---|---|---|"]
    rows = sorted(((x["gen_ms"], trace["priority"].index(c["name"]), c["name"], x)
                   for c in trace["clusters"] for x in c["updates"]))
    for _, _, name, x in rows:
        cell = lambda v: "" if v is None else str(v)  # noqa: E731
        lines.append(f"| {name} | {x['k']} | {x['gen_ms']} | {x['decision']} | {'y' if x['sent'] else 'n'} "
                     f"| {x['outcome']} | {cell(x['departure_ms'])} | {cell(x['ack_q'])} | {cell(x['peak_ms'])} |")
    r = trace.get("replay")
    if r is not None:
        lines += ["", f"Replay through the reference OlafQueue: "
                      f"{'reproduces the violation' if r['reproduced'] else 'DOES NOT reproduce the violation'}."]
        lines += [f"- {m}" for m in r["inadmissible"] + r["mismatches"]]
    return "\n".join(lines) + "\n"


def plot(trace: dict, path: Path) -> None:
    """Both (all) clusters' AoM sawtooths at the PS (from the replay's deliveries,
    via :func:`olaf.aom.sawtooth`), peaks marked, generation/drop ticks below."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    deliveries = trace["replay"]["deliveries"]
    for u, c in enumerate(trace["clusters"]):
        # times in ms here (aom's functions are unit-agnostic); each curve ends
        # at its cluster's last event in the horizon
        ds = [aom.Delivery(d["t_ms"], d["gen_ms"], d["count"]) for d in deliveries[u]]
        t_end = max(x["departure_ms"] or x["gen_ms"] for x in c["updates"])
        color = f"C{u}"
        if ds:
            t, a = aom.sawtooth(ds, t_end)
            ax.plot(t, a, color=color, label=f"{c['name']} (avg peak {c['avg_peak_ms'] or 0:.1f} ms)")
            pk = aom.peak_aoms(ds)
            ax.plot([p[0] for p in pk], [p[1] for p in pk], "o", color=color, ms=4)
        for x in c["updates"]:
            marker = {"skip": "|", "drop": "x"}.get(x["outcome"], "^")
            ax.plot([x["gen_ms"]], [-6 - 6 * u], marker, color=color, ms=5)
    viol = "; ".join(f"{v['kind']} {'/'.join(v['clusters'])}" for v in trace["violations"])
    ax.set_title(f"Counterexample: {viol}")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("AoM at the PS (ms)")
    ax.axhline(0, color="0.7", lw=0.5)
    ax.legend(loc="upper left", fontsize=8)
    fig.text(0.01, 0.01, "ticks below 0: ^ sent, | skipped, x dropped; dots: peak AoM", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(trace: dict, out_dir: Path, *, with_plot: bool = True) -> dict[str, Path]:
    """Write ``trace.json``, ``trace.md`` and (unless disabled) ``aom.png`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "trace.json", "table": out_dir / "trace.md"}
    paths["json"].write_text(json.dumps(trace, indent=1) + "\n")
    paths["table"].write_text(table(trace))
    if with_plot:
        paths["plot"] = out_dir / "aom.png"
        plot(trace, paths["plot"])
    return paths


def load_trace(path: Path) -> dict[str, Any]:
    """Read a trace written by :func:`write`; raises ValueError on another format."""
    t = json.loads(Path(path).read_text())
    if t.get("format") != FORMAT:
        raise ValueError(f"{path}: not an {FORMAT} trace")
    return t

"""``olaf train compare FIG``: the paper's training figures as commands (paper §2.1 Figs. 2 and 3,
§8.2 Figs. 7 and 8).

Each figure is a sweep (:class:`~olaf.experiments.sweep.Sweep`) of the base job's plan over its
*arms* (plan parameters that differ in one thing) and ``--seeds`` seeds, run by the engine of
``olaf experiment`` (:func:`olaf.experiments.runner.run_sweep`) through the emulated network.
Into ``--out`` (default ``results/train-FIG``) go every job's run directory
(``runs/<point>/seed-<n>/``), ``curves.csv`` (arm, seed, x, mean worker reward), ``runs.csv`` (one row
per job), ``FIG.png`` (mean curve per arm over seeds, the band their min–max) and ``FIG.md`` (the
table: ours as mean ± 95 % CI over seeds, :mod:`olaf.experiments.stats`, with the paper's number
beside it where the paper gives one).

* **fig8** — mean per-worker reward over time, every job for its whole budget: ideal (no
  bottleneck) vs Olaf vs FIFO at two bottleneck rates (``--rates HIGH,LOW`` packets/s: the
  paper's 40 and 20 Gbit/s); the table has the final rewards, Olaf's reward over FIFO's at each
  rate, ``(R_olaf − R_fifo)/|R_fifo|`` (paper: 82 % and 86.5 %), and the time-to-target speedups.
* **fig7** — time-to-reward speedup ``T_fifo / T_olaf`` (time until the mean worker reward reaches
  the target) at each of ``--rates``; a job that does not reach it counts its budget (the
  speedup is then a bound, marked ≥ or ≤). Besides the curves, ``fig7-speedup.png`` has the
  paper's axes: the speedup (mean, 95 % CI over seeds) against the bottleneck rate.
* **fig2** — the training modes ``async`` (Olaf's immediate response), ``async_with_aggr``
  (iSwitch-style) and ``sync`` (SwitchML-style), no bottleneck, reward over iterations.
* **fig3** — N = 1, 2, 4, 8 workers (one per cluster), no bottleneck, reward over iterations.

Jobs that evaluate the global model (``--eval-every-s``, ``--solve``) or send their model in K > 1
chunks add a second table, ``FIG-eval.md`` (and ``eval`` in ``FIG.json``), per arm: the best and
the final evaluation reward, the time until an evaluation first reached 0 and the environment's
threshold, the PS's updates, chunks lost (dropped or replaced on the way: ``sent − Σ count`` at
the PS) and the updates fully delivered (every chunk arrived as its own message: exact where
nothing is folded, i.e. FIFO; under Olaf a lower bound) — :func:`olaf.report.report.summarize`'s
``chunks``.

The rates that congest depend on how fast the workers iterate (CPU), not on link speeds: pick
them below the job's update rate (``olaf train`` prints the PS's updates; docs/training.md).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import click
from rich.console import Console

from olaf.backends.base import BackendOptions
from olaf.bmv2 import BMV2_LOG_LEVEL
from olaf.configfile import ConfigError
from olaf.constants import WORKER_NICE
from olaf.experiments.metrics import iteration_curve
from olaf.experiments.stats import Estimate, estimate
from olaf.experiments.sweep import Sweep
from olaf.plan.plan import PPOWorkload
from olaf.rundir.summary import SUMMARY_FILE, RunSummary, read_summary
from olaf.rundir.training import EvalRow, TrainingResult, read_training

FIGURES = ("fig2", "fig3", "fig7", "fig8")
BACKEND = "mininet"
"""The figures' jobs run through the emulated switches by default (their ideal arms too, as in the paper's
testbed); ``olaf train --backend local compare fig2|fig3`` runs the figures without a bottleneck over loopback."""
QUICK = {"env": "CartPole-v1", "clusters": 2, "workers_per_cluster": 2, "budget_s": 120.0}
"""``--quick``: a CartPole job of 4 workers, 2 minutes at most (tests, a first look)."""
PAPER_FIG8 = {"high": 82.0, "low": 86.5}
"""Paper §8.2: Olaf's final average worker reward over FIFO's at 40 and 20 Gbit/s, %."""


@dataclass(frozen=True)
class Arm:
    """One training job of a figure: ``label`` and its plan parameters over the base job's
    (:mod:`olaf.experiments.params` names: ``queue``, ``uplinks.<root>.pps``, ``job.mode``,
    ``groups.*.clusters`` …)."""

    label: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Bottleneck:
    """The bottleneck of a pair of fig7/fig8 arms (Olaf and FIFO): ``value`` updates/s (``kind``
    ``pps``, ``--rates``) or offered load / capacity, measured during the job (``kind`` ``load``,
    ``--loads``: :mod:`olaf.plan.bottleneck`; 2 is the paper's "half of the offered rate")."""

    value: float
    kind: str = "pps"

    @property
    def label(self) -> str:
        """As the arms name it: ``1.5pps``, ``load2``."""
        return f"{self.value:g}pps" if self.kind == "pps" else f"load{self.value:g}"

    @property
    def text(self) -> str:
        """As the tables say it: ``1.5 pps``, ``load 2``."""
        return f"{self.value:g} pps" if self.kind == "pps" else f"load {self.value:g}"

    @property
    def capacity_rank(self) -> float:
        """Larger for more capacity (a higher rate, a lower load)."""
        return self.value if self.kind == "pps" else -self.value


def arms(fig: str, bottlenecks: list[Bottleneck], root: str = "s1") -> list[Arm]:
    """The jobs of figure ``fig`` (one of :data:`FIGURES`); ``root`` is the switch attached to the PS
    (its uplink is the bottleneck); fig7 and fig8 have an Olaf and a FIFO arm per bottleneck
    (``olaf-1.5pps``, ``fifo-load2``).

    Raises:
        click.BadParameter: fig8 without exactly two bottlenecks, the first of more capacity; fig7
            without any.
    """
    hint = "--loads" if bottlenecks and bottlenecks[0].kind == "load" else "--rates"
    pairs = [Arm(f"{q}-{b.label}", {f"uplinks.{root}.{b.kind}": b.value, "queue": q})
             for b in bottlenecks for q in ("olaf", "fifo")]
    if fig == "fig8":
        if len(bottlenecks) != 2 or bottlenecks[0].capacity_rank <= bottlenecks[1].capacity_rank:
            raise click.BadParameter("fig8 needs two bottlenecks, the first of more capacity (the paper's 40 and "
                                     "20 Gbit/s): rates HIGH,LOW with HIGH > LOW, or loads LOW,HIGH with LOW < HIGH",
                                     param_hint=hint)
        return [Arm("ideal", {}), *pairs]
    if fig == "fig7":
        if not bottlenecks:
            raise click.BadParameter("fig7 needs at least one bottleneck", param_hint=hint)
        return pairs
    if fig == "fig2":
        return [Arm(m, {"job.mode": m}) for m in ("async", "async_with_aggr", "sync")]
    if fig == "fig3":
        return [Arm(f"N={n}", {"groups.*.clusters": n, "groups.*.workers_per_cluster": 1}) for n in (1, 2, 4, 8)]
    raise click.BadParameter(f"{fig!r}: use one of {', '.join(FIGURES)}", param_hint="FIG")


def _fmt(e: Estimate, digits: int = 1, bound: str = "") -> str:
    if e.mean is None:
        return "–"
    s = f"{bound}{e.mean:.{digits}f}"
    return s + (f" ± {e.ci95:.{digits}f}" if e.ci95 is not None else "")


def _curve(run_dir: Path, by_iteration: bool) -> list[tuple[float, float]]:
    """``(x, mean worker reward)``: over time (``progress.csv``) or over iterations
    (:func:`olaf.experiments.metrics.iteration_curve`)."""
    if by_iteration:
        return iteration_curve(run_dir)
    pts: list[tuple[float, float]] = []
    with open(run_dir / "progress.csv") as f:
        for r in csv.DictReader(f):
            if r["mean_worker_reward"]:
                pts.append((float(r["t_s"]), float(r["mean_worker_reward"])))
    return pts


def _iterations_to(curve: list[tuple[float, float]], target: float) -> Optional[float]:
    return next((x for x, y in curve if y >= target), None)


def figure_sweep(fig: str, base: dict[str, Any], bottlenecks: list[Bottleneck], seeds: int) -> tuple[Sweep, list[Arm]]:
    """Figure ``fig`` as a sweep: the base job's plan (``olaf train``'s options ``base``,
    :func:`olaf.training.job.build_plan`) over the figure's arms and ``seeds`` seeds from the base
    job's seed (``olaf train --seed S``: S..S + seeds − 1; default 1), so that a later invocation can
    add seeds to an earlier one. fig8 compares rewards at the end of equal budgets: its jobs do not
    stop at the target."""
    from olaf.training.job import build_plan  # noqa: PLC0415

    plan = build_plan(**base, stop_at_target=fig != "fig8")
    jobs = arms(fig, bottlenecks, plan.root_switch)
    first = plan.seed
    return Sweep(plan, [a.settings for a in jobs], list(range(first, first + seeds)),
                 labels=[a.label for a in jobs]), jobs


def compare(fig: str, base: dict[str, Any], bottlenecks: list[Bottleneck], seeds: int, out: Path, options: BackendOptions,
            backend: str = BACKEND) -> dict[str, Any]:
    """Run figure ``fig``'s jobs through the sweep engine (:func:`olaf.experiments.runner.run_sweep`)
    into ``out/runs/`` and write its files into ``out``; returns the table's data.

    Raises:
        click.ClickException: a job failed or the figure was interrupted (what completed is in ``out``).
    """
    from olaf.experiments.runner import RunRecord, run_sweep  # noqa: PLC0415

    sweep, jobs = figure_sweep(fig, base, bottlenecks, seeds)
    if (out / "runs").exists():
        raise click.ClickException(f"{out / 'runs'} exists: pass another --out or remove it")
    records: list[RunRecord] = []
    try:
        interrupted = run_sweep(sweep, backend, out, options, records, name=fig, keep_logs=True)
    except ConfigError as e:  # a backend that cannot run an arm (e.g. a bottleneck on local)
        raise click.ClickException(f"{fig} on {backend}: {e}") from None
    failed = [r for r in records if r.status == "failed"]
    if interrupted or failed or len(records) < len(sweep.points) * len(sweep.seeds):
        raise click.ClickException(f"{fig}: " + "; ".join([f"{sweep.label(r.index)}, seed {r.seed}: {r.error}"
                                                           for r in failed] or ["interrupted"])
                                   + f" (runs so far in {out})")
    by_iteration = fig in ("fig2", "fig3")
    results: dict[tuple[str, int], TrainingResult] = {}
    curves: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for r in records:
        key = (sweep.label(r.index), r.seed)
        results[key] = read_training(out / r.run_dir)
        curves[key] = _curve(out / r.run_dir, by_iteration)
    assert isinstance(sweep.base.workload, PPOWorkload)
    target = sweep.base.workload.job.target
    _write_runs(out, results, curves, target, by_iteration)
    rows = _table(fig, jobs, results, curves, target, by_iteration, bottlenecks)
    _plot(out / f"{fig}.png", fig, jobs, curves, target, by_iteration)
    if fig == "fig7":
        _plot_speedup(out / "fig7-speedup.png", rows, target)
    md = _markdown(fig, base, bottlenecks, seeds, target, rows)
    (out / f"{fig}.md").write_text(md)
    infos = {(sweep.label(r.index), r.seed): run_info(out / r.run_dir) for r in records}
    ev = eval_delivery_rows([a.label for a in jobs], infos, _threshold(base["env"]))
    if ev:
        ev_md = _eval_markdown(fig, ev, base["env"])
        (out / f"{fig}-eval.md").write_text(ev_md)
        md += "\n" + ev_md
    (out / f"{fig}.json").write_text(json.dumps({"rows": rows, "target": target, "eval": ev}, indent=1,
                                                default=lambda o: o.to_json() if isinstance(o, Estimate) else str(o)))
    options.console.print(md)
    return {"rows": rows, "target": target, "eval": ev}


def _threshold(env_id: str) -> Optional[float]:
    """The environment's "solved" reward threshold, or None if it registers none."""
    from olaf.training.job import env_threshold  # noqa: PLC0415

    try:
        return env_threshold(env_id)
    except click.BadParameter:
        return None


def _first_eval_at(evaluations: list[EvalRow], threshold: float) -> Optional[float]:
    return next((e.t_s for e in evaluations if e.mean >= threshold), None)


def run_info(run_dir: Path) -> dict[str, Any]:
    """What :func:`eval_delivery_rows` needs of one job's run directory: its ``training.json`` and
    the chunk accounting its report already wrote (``summary.json`` ``overall.chunks``, by
    :func:`olaf.report.report.summarize`, which runs here only for a directory without one; None
    for K = 1)."""
    if (run_dir / SUMMARY_FILE).exists():
        summary = read_summary(run_dir)
    else:
        from olaf.report.report import summarize  # noqa: PLC0415
        from olaf.report.rundata import load_run  # noqa: PLC0415

        summary = RunSummary.model_validate(summarize(load_run(run_dir)))
    chunks = summary.overall.chunks
    return {"training": read_training(run_dir), "chunks": None if chunks is None else chunks.model_dump()}


def eval_delivery_rows(labels: list[str], infos: dict[tuple[str, int], dict[str, Any]],
                       solved_at: Optional[float]) -> list[dict[str, Any]]:
    """Per arm (``labels``; ``infos``: (arm, seed) → :func:`run_info`): evaluation of the global
    model and chunk delivery; [] when no job evaluated and none sent chunks.

    Each row: ``best_eval``/``final_eval`` (mean evaluation reward, estimates over seeds),
    ``t_eval0_s``/``t_solved_s`` (s from the job's start to the first evaluation ≥ 0 and ≥
    ``solved_at``, the environment's reward threshold; a seed that never got there is left out
    and the rest counted in ``eval0_reached``/``solved_reached``), ``ps_updates``, and for K > 1
    ``k``, ``chunks_lost_pct`` (100 · lost / sent chunks) and ``fully_delivered_pct``
    (100 · fully_alone / updates sent)."""
    per: dict[str, list[dict[str, Any]]] = {lab: [] for lab in labels}
    for (label, _seed), info in sorted(infos.items()):
        per[label].append(info)
    if not any(i["training"].evaluations or i["chunks"] for i in infos.values()):
        return []
    rows = []
    for label in labels:
        ts: list[TrainingResult] = [i["training"] for i in per[label]]
        evals = [t.evaluations for t in ts]
        t0 = [_first_eval_at(e, 0.0) for e in evals]
        tsol = [_first_eval_at(e, solved_at) if solved_at is not None else None for e in evals]
        row: dict[str, Any] = {
            "arm": label, "runs": len(ts), "best_eval": estimate(t.best_eval.mean if t.best_eval else None for t in ts),
            "final_eval": estimate(t.final_eval.mean if t.final_eval else None for t in ts),
            "t_eval0_s": estimate(t0), "eval0_reached": sum(x is not None for x in t0),
            "t_solved_s": estimate(tsol), "solved_reached": sum(x is not None for x in tsol), "solved_at": solved_at,
            "ps_updates": estimate(t.ps_updates for t in ts)}
        cs = [i["chunks"] for i in per[label] if i["chunks"] and i["chunks"]["sent"]]
        if cs:
            row.update(k=cs[0]["k"], chunks_lost_pct=estimate(100 * c["lost"] / c["sent"] for c in cs),
                       fully_delivered_pct=estimate(100 * c["fully_alone"] * c["k"] / c["sent"] for c in cs))
        rows.append(row)
    return rows


def _eval_markdown(fig: str, rows: list[dict[str, Any]], env_id: str) -> str:
    solved_at = rows[0]["solved_at"]
    chunked = any("k" in r for r in rows)
    head = ["job", "best evaluation", "final evaluation", "first evaluation ≥ 0 (s)",
            f"first evaluation ≥ {solved_at:g} (s)" if solved_at is not None else "solved (s)", "PS updates"]
    if chunked:
        head += ["chunks lost (%)", "updates fully delivered (%)"]
    lines = [f"### {fig}: evaluation of the global model and delivery ({env_id})", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["arm"], _fmt(r["best_eval"]), _fmt(r["final_eval"]),
                 f"{_fmt(r['t_eval0_s'], 0)} ({r['eval0_reached']}/{r['runs']})",
                 f"{_fmt(r['t_solved_s'], 0)} ({r['solved_reached']}/{r['runs']})", _fmt(r["ps_updates"], 0)]
        if chunked:
            cells += [_fmt(r["chunks_lost_pct"]) if "k" in r else "–",
                      _fmt(r["fully_delivered_pct"]) if "k" in r else "–"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Times are means over the seeds that got there (how many in brackets). Updates fully delivered: "
              "every chunk arrived at the PS as its own message; exact where nothing is folded (FIFO, the "
              "ideal network), a lower bound under Olaf, whose folded chunks arrive without their identity."]
    return "\n".join(lines) + "\n"


def _write_runs(out: Path, results, curves, target: float, by_iteration: bool) -> None:
    with open(out / "curves.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arm", "seed", "iteration" if by_iteration else "t_s", "mean_worker_reward"])
        for (label, seed), pts in curves.items():
            for x, y in pts:
                w.writerow([label, seed, f"{x:g}", f"{y:.3f}"])
    with open(out / "runs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arm", "seed", "reached", "time_to_target_s", "elapsed_s", "final_mean_worker_reward",
                    "ps_updates", "iterations", "env_steps", "target"])
        for (label, seed), r in results.items():
            w.writerow([label, seed, int(r.reached), r.time_to_target_s if r.reached else "", r.elapsed_s,
                        r.final_mean_worker_reward, r.ps_updates, r.iterations, r.env_steps, target])


def _per_arm(results, label: str, key) -> Estimate:
    return estimate(key(r) for (lab, _), r in results.items() if lab == label)


def _time_to(r: TrainingResult) -> float:
    """Time to the target, or the job's whole time when it was not reached (a lower bound)."""
    return r.time_or_elapsed_s


def _time_to_solved(r: TrainingResult) -> Optional[float]:
    """Time to the confirmed solved evaluation (``training.json`` ``solved_eval``), s, or None."""
    return r.time_to_solved_s


def _speedup_row(results: dict[tuple[str, int], TrainingResult], b: Bottleneck, seeds: list[int],
                 what: str, time_of: Any) -> dict[str, Any]:
    """``T_FIFO / T_Olaf`` per seed at one bottleneck, by ``time_of`` (None: not reached): a seed
    whose FIFO job did not get there counts FIFO's whole time (the speedup is then at least the
    ratio, marked ≥); if an Olaf job did not get there no speedup is given."""
    head = {"arm": f"speedup FIFO/Olaf at {b.text} ({what})", "load" if b.kind == "load" else "rate_pps": b.value,
            "what": what}
    sp, bound = [], ""
    for s in seeds:
        o, f = results[(f"olaf-{b.label}", s)], results[(f"fifo-{b.label}", s)]
        to, tf = time_of(o), time_of(f)
        if to is None:
            return {**head, "speedup": estimate([]), "bound": ""}
        if tf is None:
            tf, bound = f.elapsed_s, "≥ "
        sp.append(tf / to)
    return {**head, "speedup": estimate(sp), "bound": bound}


def _table(fig, jobs, results, curves, target, by_iteration, bottlenecks) -> list[dict[str, Any]]:
    rows = []
    for a in jobs:
        runs = [r for (lab, _), r in results.items() if lab == a.label]
        row = {"arm": a.label, "final_reward": _per_arm(results, a.label, lambda r: r.final_mean_worker_reward),
               "time_to_target_s": _per_arm(results, a.label, _time_to),
               "reached": sum(r.reached for r in runs), "runs": len(runs)}
        if by_iteration:
            row["iterations_to_target"] = estimate(_iterations_to(c, target) for (lab, _), c in curves.items()
                                                   if lab == a.label)
        rows.append(row)
    if fig in ("fig7", "fig8"):
        most = max(bottlenecks, key=lambda b: b.capacity_rank)
        for b in bottlenecks:
            o = next(r for r in rows if r["arm"] == f"olaf-{b.label}")
            f_ = next(r for r in rows if r["arm"] == f"fifo-{b.label}")
            if fig == "fig8":
                om, fm = o["final_reward"].mean, f_["final_reward"].mean
                gain = None if om is None or fm is None or fm == 0 else 100 * (om - fm) / abs(fm)
                paper = PAPER_FIG8["high" if b == most else "low"]
                rows.append({"arm": f"Olaf over FIFO at {b.text} (%)", "gain_pct": gain, "paper_pct": paper})
            seeds = sorted({s for (lab, s) in results if lab == f"olaf-{b.label}"})
            olaf_all = all(results[(f"olaf-{b.label}", s)].reached for s in seeds)
            fifo_all = all(results[(f"fifo-{b.label}", s)].reached for s in seeds)
            # FIFO not reaching it: the speedup is at least the ratio; Olaf not reaching it: no bound
            row = _speedup_row(results, b, seeds, "time to target", lambda r: r.time_or_elapsed_s)
            if not olaf_all:
                row.update(speedup=estimate([]), bound="")
            elif not fifo_all:
                row["bound"] = "≥ "
            rows.append(row)
            if any(r.solve_at is not None for r in results.values()):
                rows.append(_speedup_row(results, b, seeds, "time to solved", _time_to_solved))
    return rows


def _markdown(fig, base, bottlenecks, seeds, target, rows) -> str:
    loads = bool(bottlenecks) and bottlenecks[0].kind == "load"
    rate_text = ", ".join(f"{b.value:g}" for b in bottlenecks)
    head = {"fig8": "Fig. 8 (§8.2): mean per-worker reward, ideal vs Olaf vs FIFO",
            "fig7": "Fig. 7 (§8.2): time-to-reward speedup of Olaf over FIFO",
            "fig2": "Fig. 2 (§2.1): training modes", "fig3": "Fig. 3 (§2.1): number of workers"}[fig]
    lines = [f"## {head}", "",
             f"Generated by `olaf train compare {fig}`: {base['env']}, "
             + ("N clusters of 1 worker" if fig == "fig3" else
                f"{base['clusters']} clusters × {base['workers_per_cluster']} workers") + f", target {target:g}, budget "
             f"{base['budget_s']:g} s, {seeds} seed(s)" + ((f", bottleneck loads {rate_text} (offered / capacity, "
                                                             "measured)" if loads else
                                                             f", bottleneck rates {rate_text} updates/s")
                                                            if fig in ("fig7", "fig8") else "") + "; ours: mean ± 95 % CI.", ""]
    lines += ["| job | final mean worker reward | time to target (s) | reached | "
              + ("iterations to target |" if fig in ("fig2", "fig3") else "paper |"),
              "|---|---|---|---|---|"]
    for r in rows:
        if "final_reward" in r:
            extra = _fmt(r["iterations_to_target"], 0) if "iterations_to_target" in r else "–"
            lines.append(f"| {r['arm']} | {_fmt(r['final_reward'])} | {_fmt(r['time_to_target_s'], 0)} | "
                         f"{r['reached']}/{r['runs']} | {extra} |")
        elif "gain_pct" in r:
            g = "–" if r["gain_pct"] is None else f"{r['gain_pct']:+.1f} %"
            lines.append(f"| {r['arm']} | {g} | | | {r['paper_pct']} % |")
        else:
            sp = _fmt(r["speedup"], 2, r["bound"])
            lines.append(f"| {r['arm']} | {sp} | | | – (plotted only) |")
    lines += ["", "A job that did not reach the target counts its whole time (its time to target is at least "
              "that): a speedup whose FIFO job did not reach it is a lower bound (≥), one whose Olaf job did not "
              "is not given (–). With --solve, \"time to solved\" is to the global model's first confirmed solved "
              "evaluation (olaf.plan.workload.first_solved)."]
    return "\n".join(lines) + "\n"


def _plot_speedup(path: Path, rows: list[dict[str, Any]], target: float) -> None:
    """Paper Fig. 7's axes: speedup ``T_fifo / T_olaf`` (mean, 95 % CI bar) per bottleneck, from the
    most capacity to the least (rates in packets/s, or loads: offered / capacity); a lower bound
    (≥, FIFO did not reach the target) is drawn hollow."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    pts = sorted(((r["rate_pps"] if "rate_pps" in r else -r["load"], r["speedup"], r["bound"]) for r in rows
                  if "speedup" in r and r["speedup"].mean is not None and r.get("what") == "time to target"),
                 key=lambda p: -p[0])
    loads = any("load" in r for r in rows)
    f, ax = plt.subplots(figsize=(5, 3.5))
    for i, (_, e, bound) in enumerate(pts):
        ax.bar(i, e.mean, yerr=e.ci95 or 0.0, capsize=4, color="none" if bound else "tab:blue",
               edgecolor="tab:blue", label="lower bound (FIFO did not reach it)" if bound else None)
    ax.set_xticks(range(len(pts)), [f"{abs(p[0]):g}" for p in pts])
    ax.axhline(1.0, ls="--", lw=0.8, color="grey")
    ax.set_xlabel("bottleneck toward the PS: " + ("offered load / capacity" if loads else "packets/s"))
    ax.set_ylabel(f"speedup T_FIFO / T_Olaf (reward {target:g})")
    if any(p[2] for p in pts):
        ax.legend()
    f.tight_layout()
    f.savefig(path, dpi=110)
    plt.close(f)


def _plot(path: Path, fig: str, jobs, curves, target: float, by_iteration: bool) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    f, ax = plt.subplots(figsize=(7, 4))
    for a in jobs:
        runs = [c for (lab, _), c in curves.items() if lab == a.label and c]
        if not runs:
            continue
        end = min(c[-1][0] for c in runs)
        xs = np.linspace(min(c[0][0] for c in runs), end, 200) if end > 0 else np.array([0.0])
        ys = np.array([np.interp(xs, [p[0] for p in c], [p[1] for p in c]) for c in runs])
        line, = ax.plot(xs, ys.mean(axis=0), label=a.label)
        if len(runs) > 1:
            ax.fill_between(xs, ys.min(axis=0), ys.max(axis=0), color=line.get_color(), alpha=0.2)
    ax.axhline(target, ls="--", lw=0.8, color="grey")
    ax.set_xlabel("iteration" if by_iteration else "time since start (s)")
    ax.set_ylabel("mean worker reward")
    ax.legend()
    f.tight_layout()
    f.savefig(path, dpi=110)
    plt.close(f)


@click.command("compare")
@click.argument("fig", type=click.Choice(FIGURES))
@click.option("--rates", default=None, help="Bottleneck rates, updates/s (K chunk packets each), comma-separated (fig7, fig8) "
                                            "[default: fig8 6,3; fig7 6,4,3].")
@click.option("--loads", default=None, help="Instead of --rates: bottlenecks as offered load / capacity, comma-separated "
                                            "(fig7, fig8; fig8 LOW,HIGH), each measured at the switch during its job "
                                            "(olaf train --load): 2 is half of what the workers offer, on any machine.")
@click.option("--seeds", default=1, show_default=True, type=click.IntRange(1, 20),
              help="Repetitions per job, with seeds `olaf train --seed` S, S+1, ... (default S = 1).")
@click.option("--quick", is_flag=True, help="CartPole-v1, 2 clusters x 2 workers, 120 s per job.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="[default: results/train-FIG]")
@click.pass_obj
def compare_cmd(obj: dict[str, Any], fig: str, rates: Optional[str], loads: Optional[str], seeds: int, quick: bool,
                out: Optional[Path]) -> None:
    """Run one of the paper's training figures: FIG is fig8, fig7, fig2 or fig3 (root).

    The job options of `olaf train` (before `compare`) set the base job, e.g.
    `olaf train --env CartPole-v1 --budget-s 300 compare fig8 --rates 6,3 --seeds 3`, or
    `... compare fig7 --loads 2` (a bottleneck of half the offered rate).
    """
    bottlenecks = _bottlenecks(fig, rates, loads)
    base = dict(obj)
    build, results = base.pop("build"), base.pop("results")
    for k, opt in (("rate_pps", "--rate-pps"), ("load", "--load")):
        if base.pop(k, None):
            raise click.UsageError(f"`compare {fig}` sets every job's bottleneck (--rates or --loads); drop "
                                   f"`olaf train {opt}`")
    base.pop("queue", None)
    if base.get("mtu", 0) is None:  # `olaf train --mtu` not given: build_plan's default (the emulated links')
        del base["mtu"]
    if quick:
        base.update(QUICK)
    arms(fig, bottlenecks)  # the checks, before anything starts
    options = BackendOptions(console=Console(), build=build, quiet=True, progress=False, report=True, plots=True,
                             bmv2_log_level=base.pop("bmv2_log_level", BMV2_LOG_LEVEL),
                             workers_per_actor=base.pop("workers_per_actor", 1),
                             worker_nice=base.pop("worker_nice", WORKER_NICE))
    compare(fig, base, bottlenecks, seeds, out or results / f"train-{fig}", options, backend=base.pop("backend"))


def _bottlenecks(fig: str, rates: Optional[str], loads: Optional[str]) -> list[Bottleneck]:
    """``--rates`` or ``--loads`` as bottlenecks (the defaults: rates); fig2 and fig3 take neither.

    Raises:
        click.BadParameter: both given, one given to fig2/fig3, a value not a finite number > 0
            (a load of at most 1 does not congest).
    """
    if rates is not None and loads is not None:
        raise click.BadParameter("give --rates or --loads, not both", param_hint="--loads")
    if fig in ("fig2", "fig3"):
        if rates is not None or loads is not None:
            raise click.BadParameter(f"{fig} has no bottleneck", param_hint="--rates" if rates is not None else "--loads")
        return []
    kind, text, hint = ("load", loads, "--loads") if loads is not None else ("pps", rates, "--rates")
    if text is None:
        return [Bottleneck(r) for r in ([6.0, 3.0] if fig == "fig8" else [6.0, 4.0, 3.0])]
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"{text!r}: comma-separated numbers, e.g. " + ("2,4" if kind == "load" else "6,3 or 3,1.5"),
                                 param_hint=hint) from None
    floor = 1.0 if kind == "load" else 0.0
    if not all(floor < v < math.inf for v in values):
        raise click.BadParameter(f"{text!r}: every " + ("load must be a finite number > 1 (offered / capacity: 1 does not "
                                                          "congest)" if kind == "load" else
                                                          "rate must be a finite number of updates/s > 0 (no bottleneck "
                                                          "is the ideal arm, which fig8 has anyway)"), param_hint=hint)
    return [Bottleneck(v, kind) for v in values]

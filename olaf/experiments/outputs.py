"""An experiment's table (Markdown, ours beside the paper's) and figure (matplotlib PNG).

Input is the per-point aggregate of :func:`olaf.experiments.runner.aggregate` (mean and
95 % CI over seeds per metric). A row of the table is a sweep point; where the spec has a
``paper`` row for that point (same values of the swept parameters), the paper's number
stands beside ours and the row takes the paper's label.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np

from olaf.aom import ecdf
from olaf.experiments.spec import ExperimentSpec, PaperRow, point_label, same_value


def _pyplot():
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def paper_row(spec: ExperimentSpec, point: dict[str, Any]) -> Optional[PaperRow]:
    """The paper's row for ``point`` (None if the paper has no number for it)."""
    for r in spec.paper:
        if r.point and all(k in point and same_value(point[k], v) for k, v in r.point.items()):
            return r
    return None


def _num(x: Optional[float], digits: int) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def ours(est: dict[str, Any], digits: int) -> str:
    """``mean ± ci95`` (``mean`` alone for one run, ``–`` for none)."""
    if est["mean"] is None:
        return "–"
    s = _num(est["mean"], digits)
    return s if est["ci95"] is None else f"{s} ± {_num(est['ci95'], digits)}"


def _paper_value(row: Optional[PaperRow], metric: str, digits: int) -> str:
    if row is None or metric not in row.values:
        return "–"
    v = row.values[metric]
    return "–" if v is None else v if isinstance(v, str) else _num(float(v), digits)


def markdown_table(spec: ExperimentSpec, points: list[dict[str, Any]], backend: str) -> str:
    """The results table: one row per point, per column the paper's value and ours (mean ± 95 % CI)."""
    assert spec.table is not None
    cols = spec.table.columns
    who = ("paper", "ours") if spec.paper else ("ours",)  # a figure without numbers: ours alone
    head = ["point"] + [f"{c.label} ({w})" for c in cols for w in who]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in points:
        row = paper_row(spec, p["point"])
        label = p["label"] if row is None else f"{row.label} ({p['label']})"
        if p["incomplete_runs"]:
            label += f" — {p['incomplete_runs']} incomplete run(s)"
        cells = [label]
        for c in cols:
            cells += ([_paper_value(row, c.metric, c.digits)] if spec.paper else []) + [
                ours(p["metrics"][c.metric], c.digits)]
        lines.append("| " + " | ".join(cells) + " |")
    seeds = sorted({p["metrics"][cols[0].metric]["n"] for p in points}) if points else []
    foot = [f"Backend `{backend}`; ours: mean ± 95 % confidence interval (Student's t) over "
            f"{'/'.join(map(str, seeds)) or 0} seed(s) per point."]
    if spec.paper_claim:
        foot.append(f"The paper gives no numbers here: {spec.paper_claim.strip()}")
    if spec.table.note:
        foot.append(spec.table.note.strip())
    return "\n".join(lines) + "\n\n" + "\n\n".join(foot) + "\n"


def _matches(point: dict[str, Any], where: dict[str, Any]) -> bool:
    return all(k in point and same_value(point[k], v) for k, v in where.items())


def _series_label(fig, value: Any) -> str:
    """Legend label of a series value (a tuple of values when ``series`` lists several parameters)."""
    names, values = fig.series_params, value if isinstance(value, tuple) else (value,)
    if not names:
        return fig.labels.get(str(value), str(value))
    return ", ".join(fig.labels.get(str(v), f"{n}={v}") for n, v in zip(names, values))


def _series_value(fig, point: dict[str, Any]) -> Any:
    """The point's value of ``series`` (a tuple for several parameters; None without series)."""
    names = fig.series_params
    if len(names) > 1:
        return tuple(point.get(n) for n in names)
    return point.get(names[0]) if names else None


def _same_series(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return same_value(a, b)


def figure(spec: ExperimentSpec, points: list[dict[str, Any]], path: Path) -> Optional[Path]:
    """Draw ``spec.figure`` from the aggregates into ``path`` (None if the spec has no figure)."""
    fig_spec = spec.figure
    if fig_spec is None or not points:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sel = [p for p in points if _matches(p["point"], fig_spec.where)]
    if fig_spec.kind == "aggregation_cdf":
        for p in sel:
            hist = {int(k): n for k, n in p["agg_hist"].items()}
            vals = np.repeat(np.array(list(hist), dtype=float), list(hist.values())) if hist else np.zeros(0)
            x, f = ecdf(vals)
            if x.size:
                label = _series_label(fig_spec, _series_value(fig_spec, p["point"])) if fig_spec.series else p["label"]
                ax.step(np.concatenate([[x[0]], x]), np.concatenate([[0.0], f]), where="post", label=label)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(fig_spec.xlabel or "aggregations per delivered update")
        ax.set_ylabel(fig_spec.ylabel or "CDF")
    elif fig_spec.kind == "line":
        _lines(ax, spec, sel)
    else:
        _bars(ax, spec, sel)
    if fig_spec.logy:
        ax.set_yscale("log")
    ax.set_title(fig_spec.title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _lines(ax, spec: ExperimentSpec, sel: list[dict[str, Any]]) -> None:
    f = spec.figure
    assert f is not None and f.x is not None
    series_values: list[Any] = []
    for p in sel:
        v = _series_value(f, p["point"])
        if not any(_same_series(v, s) for s in series_values):
            series_values.append(v)
    for sv in series_values:
        ps = sorted((p for p in sel if _same_series(_series_value(f, p["point"]), sv)),
                    key=lambda p: p["point"][f.x])
        xs = [p["point"][f.x] for p in ps]
        for m in f.metrics:
            est = [p["metrics"][m] for p in ps]
            y = [np.nan if e["mean"] is None else e["mean"] for e in est]
            err = [0.0 if e["ci95"] is None else e["ci95"] for e in est]
            label = f.labels.get(m, m) + ("" if sv is None else f", {_series_label(f, sv)}")
            line = ax.errorbar(xs, y, yerr=err, marker="o", ms=4, capsize=3, label=label)
            pts = [(p["point"][f.x], r.values[m]) for p in ps if (r := paper_row(spec, p["point"])) is not None
                   and isinstance(r.values.get(m), (int, float))]
            if pts:
                px, py = zip(*pts)
                ax.plot(px, py, marker="s", ls="none", mfc="none", color=line[0].get_color(),
                        label=f"paper: {label}")
    if f.logx:
        ax.set_xscale("log")
    ax.set_xlabel(f.xlabel or f.x)
    ax.set_ylabel(f.ylabel or ", ".join(f.metrics))


def _bars(ax, spec: ExperimentSpec, sel: list[dict[str, Any]]) -> None:
    f = spec.figure
    assert f is not None
    n_m = len(f.metrics)
    width = 0.8 / (2 * n_m)
    x = np.arange(len(sel))
    colors = [f"C{i}" for i in range(n_m)]
    for j, m in enumerate(f.metrics):
        est = [p["metrics"][m] for p in sel]
        y = [0.0 if e["mean"] is None else e["mean"] for e in est]
        err = [0.0 if e["ci95"] is None else e["ci95"] for e in est]
        off = (2 * j - n_m + 0.5) * width
        ax.bar(x + off, y, width, yerr=err, capsize=3, color=colors[j], label=f"{f.labels.get(m, m)} (ours)")
        paper = []
        for p in sel:
            r = paper_row(spec, p["point"])
            v = None if r is None else r.values.get(m)
            paper.append(float(v) if isinstance(v, (int, float)) else np.nan)
        if not all(np.isnan(paper)):
            ax.bar(x + off + width, paper, width, color="white", edgecolor=colors[j], hatch="//",
                   label=f"{f.labels.get(m, m)} (paper)")
    labels = []
    for p in sel:
        r = paper_row(spec, p["point"])
        labels.append(r.label if r is not None else point_label(p["point"]))
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel(f.ylabel or ", ".join(f.metrics))
    if f.xlabel:
        ax.set_xlabel(f.xlabel)


def write_outputs(spec: ExperimentSpec, points: list[dict[str, Any]], out: Path, backend: str) -> list[Path]:
    """``table.md`` (if the spec has a table) and ``figure.png`` (if it has a figure) in ``out``."""
    written = []
    if spec.table is not None:
        path = out / "table.md"
        path.write_text(markdown_table(spec, points, backend))
        written.append(path)
    fig = figure(spec, points, out / "figure.png")
    if fig is not None:
        written.append(fig)
    return written

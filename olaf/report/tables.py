"""Rich tables of a report (:func:`olaf.report.report.summarize`) and of a comparison."""

from __future__ import annotations

from typing import Any, Optional

from rich.table import Table


def _f(x: Optional[float], fmt: str = "{:.1f}") -> str:
    return "–" if x is None else fmt.format(x)


def _pct(x: Optional[float]) -> str:
    return _f(None if x is None else 100 * x, "{:.1f} %")


def summary_table(summary: dict[str, Any], title: str = "Per-cluster results") -> Table:
    """Cluster rows (workers, sent, delivered, aggregated, dropped, loss, AoM avg/peak) and an ``all`` row."""
    t = Table(title=title, show_footer=False)
    for col in ("cluster", "workers", "sent", "delivered", "aggregated", "dropped", "loss",
                "AoM avg (ms)", "AoM peak (ms)"):
        t.add_column(col, justify="right")

    def row(name: str, m: dict[str, Any], end: bool = False) -> None:
        t.add_row(name, str(m["workers"]), str(m["sent"]), str(m["delivered"]), str(m["aggregated"]),
                  str(m["dropped"]), _pct(m["loss_fraction"]), _f(m["aom_avg_ms"]), _f(m["aom_peak_ms"]),
                  end_section=end)

    items = list(summary["clusters"].items())
    for i, (c, m) in enumerate(items):
        row(c, m, end=i == len(items) - 1)
    ov = summary["overall"]
    row("all", ov)
    t.caption = f"Jain's fairness of the clusters' average AoM: {_f(ov['jain_fairness'], '{:.3f}')}"
    extra = [f"window {summary['window']['duration_s']:.1f} s"]
    if ov.get("time_to_k_ms") is not None:
        extra.append(f"time to {summary['params']['k']} updates/worker: {ov['time_to_k_ms'] / 1000:.2f} s")
    if ov.get("time_to_reward_ms") is not None:
        extra.append(f"time to reward {summary['params']['reward_target']}: {ov['time_to_reward_ms'] / 1000:.2f} s")
    if ov.get("final_global_reward") is not None:
        extra.append(f"final global reward {ov['final_global_reward']:.3f}")
    late = summary["workers"]["late_start_ms"]
    if late:
        extra.append(f"{len(late)} worker(s) started after their requested start (max {max(late.values()):.0f} ms late)")
    t.caption += "; " + "; ".join(extra)
    return t


def compare_table(cmp: dict[str, Any], labels: tuple[str, str]) -> Table:
    """Delivered, aggregated, loss and average AoM of two runs per cluster and overall."""
    a, b = labels
    t = Table(title=f"{a} vs {b}")
    t.add_column("cluster", justify="right")
    for col in ("delivered", "aggregated", "loss", "AoM avg (ms)", "AoM peak (ms)"):
        t.add_column(f"{col}\n{a} | {b}", justify="right")

    def pair(v: list, fmt) -> str:
        return f"{fmt(v[0])} | {fmt(v[1])}"

    def row(name: str, m: dict[str, list], end: bool = False) -> None:
        t.add_row(name, pair(m["delivered"], lambda x: _f(x, "{:.0f}")), pair(m["aggregated"], lambda x: _f(x, "{:.0f}")),
                  pair(m["loss_fraction"], _pct), pair(m["aom_avg_ms"], _f), pair(m["aom_peak_ms"], _f),
                  end_section=end)

    items = list(cmp["clusters"].items())
    for i, (c, m) in enumerate(items):
        row(c, m, end=i == len(items) - 1)
    row("all", cmp["overall"])
    ja, jb = cmp["overall"]["jain_fairness"]
    t.caption = (f"Jain's fairness {_f(ja, '{:.3f}')} | {_f(jb, '{:.3f}')}; "
                 f"average AoM of {b} relative to {a}: {_pct(cmp['aom_avg_change'])}")
    return t

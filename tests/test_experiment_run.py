"""`olaf experiment` end to end on the ns-3 backend (small): results per point with mean and
95 % CI over seeds, the paired AoM reduction and Fig. 7's paired speedup, the table beside the paper's numbers, the
figure, resuming, docs/reproduction.md, and a run that cannot finish in its duration."""

from __future__ import annotations

import csv
import json
import math

import pytest
import yaml
from click.testing import CliRunner

from olaf.cli import main

pytestmark = pytest.mark.ns3

SPEC = {
    "name": "small", "title": "small ToR", "reproduces": "Table 1 (§8.1)", "scaling": "tiny",
    "plan": {"topology": "tor", "duration_s": 3, "queue_size": {"s1": 2}, "updates_from_each": [5],
                 "groups": [{"name": "all", "clusters": 3, "workers_per_cluster": 2, "period_ms": 50,
                             "jitter_ms": 10}]},
    "sweep": {"queue": ["fifo", "olaf"], "load.s1": [2]},
    "seeds": [1, 2, 3],
    "table": {"columns": [{"metric": "loss_pct", "label": "loss"},
                          {"metric": "aom_reduction_pct", "label": "AoM reduction"}]},
    "paper": [{"label": "Olaf X", "point": {"queue": "olaf", "load.s1": 2}, "values": {"loss_pct": 11}}],
    "figure": {"kind": "aggregation_cdf", "title": "cdf", "series": "queue"},
}


@pytest.fixture(scope="module")
def experiment(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("exp")
    path = d / "small.yaml"
    path.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    r = CliRunner().invoke(main, ["experiment", str(path), "--out", str(d / "out")])
    assert r.exit_code == 0, r.output
    return d, path, r.output


def test_results_have_mean_and_ci_over_seeds(experiment):
    d, _, _ = experiment
    res = json.loads((d / "out" / "results.json").read_text())
    assert res["complete"] and len(res["runs"]) == 6 and len(res["points"]) == 2
    for p in res["points"]:
        runs = [r for r in res["runs"] if r["index"] == p["index"]]
        xs = [r["metrics"]["loss_pct"] for r in runs]
        mean = sum(xs) / 3
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / 2)
        est = p["metrics"]["loss_pct"]
        assert est["n"] == 3 and est["mean"] == pytest.approx(mean)
        assert est["ci95"] == pytest.approx(4.302653 * sd / math.sqrt(3), rel=1e-5)  # t(0.975, 2)
        assert all(r["fates_consistent"] for r in runs)
    fifo, olaf = res["points"]
    assert fifo["metrics"]["loss_pct"]["mean"] > olaf["metrics"]["loss_pct"]["mean"]
    # the reduction is paired by seed against the FIFO run of the same point
    for r in (r for r in res["runs"] if r["point"]["queue"] == "olaf"):
        f = next(x for x in res["runs"] if x["point"]["queue"] == "fifo" and x["seed"] == r["seed"])
        want = 100 * (1 - r["metrics"]["aom_avg_ms"] / f["metrics"]["aom_avg_ms"])
        assert r["metrics"]["aom_reduction_pct"] == pytest.approx(want)
        # Fig. 7's speedup: FIFO's time to 5 updates from every worker over Olaf's, same seed
        t_fifo, t_olaf = f["metrics"]["time_to_each_ms.5"], r["metrics"]["time_to_each_ms.5"]
        assert t_fifo > t_olaf > 0 and r["metrics"]["speedup_each.5"] == pytest.approx(t_fifo / t_olaf)
        assert f["metrics"]["speedup_each.5"] is None and r["metrics"]["each_exact_pct"] == 100.0
    rows = list(csv.DictReader(open(d / "out" / "results.csv")))
    assert [r["queue"] for r in rows] == ["fifo", "olaf"] and float(rows[1]["loss_pct_mean"]) == pytest.approx(
        olaf["metrics"]["loss_pct"]["mean"])


def test_table_puts_ours_beside_the_paper_and_figure_is_written(experiment):
    d, _, out = experiment
    table = (d / "out" / "table.md").read_text()
    olaf_row = next(line for line in table.splitlines() if line.startswith("| Olaf X"))
    assert "| 11.0 |" in olaf_row and " ± " in olaf_row
    assert "over 3 seed(s)" in table and "| loss (paper) | loss (ours) |" in table
    assert (d / "out" / "figure.png").stat().st_size > 1000
    run = next((d / "out" / "runs").glob("p01-*/seed-1"))
    assert (run / "summary.json").exists() and not list((run / "hosts").glob("*.jsonl"))  # logs dropped


def test_resume_reuses_finished_runs(experiment):
    d, path, _ = experiment
    before = json.loads((d / "out" / "results.json").read_text())
    r = CliRunner().invoke(main, ["experiment", str(path), "--out", str(d / "out"), "--resume"])
    assert r.exit_code == 0, r.output
    after = json.loads((d / "out" / "results.json").read_text())
    assert [x["metrics"] for x in after["runs"]] == [x["metrics"] for x in before["runs"]]
    assert all(x["wall_s"] == 0.0 for x in after["runs"])


def test_reproduction_doc(experiment, tmp_path):
    from olaf.experiments.reproduction import write

    d, _, _ = experiment
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "small").symlink_to(d / "out")
    doc = write(tmp_path / "res", tmp_path / "docs" / "reproduction.md").read_text()
    assert "## Table 1 (§8.1): small ToR" in doc and "| Olaf X" in doc and "**Scaling.** tiny" in doc
    assert (tmp_path / "docs" / "reproduction" / "small.png").exists()


def test_a_run_that_cannot_finish_in_its_duration_reports_what_completed(sim, tmp_path):
    spec = {"name": "short", "title": "t",
            "plan": {"topology": "tor", "duration_s": 2, "updates_per_worker": 50,
                         "groups": [{"clusters": 2, "workers_per_cluster": 2, "period_ms": 100}]}}
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump(spec))
    r = CliRunner().invoke(main, ["experiment", str(path), "--out", str(tmp_path / "out")])
    assert r.exit_code == 1
    # 2 s at 100 ms: 19 or 20 updates per worker (none at or after t0 + 2 s)
    assert "not every run completed" in r.output and "4 worker(s) generated 19 of 50 updates within 2 s" in r.output
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    (run,) = res["runs"]
    assert run["status"] == "incomplete" and not res["complete"]
    assert run["metrics"]["completed_pct"] == pytest.approx(38.0) and run["metrics"]["sent"] == 76


def test_ctrl_c_keeps_what_completed(sim, tmp_path, monkeypatch):
    """Ctrl-C during the second run: the first run's results are written and reported."""
    from olaf.backends.ns3 import Ns3Backend

    real, calls = Ns3Backend.run, []

    def run_then_interrupt(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(Ns3Backend, "run", run_then_interrupt)
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    r = CliRunner().invoke(main, ["experiment", str(path), "--out", str(tmp_path / "out")])
    assert r.exit_code == 1 and "interrupted: 1 of 6 runs completed" in r.output
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["interrupted"] and len(res["runs"]) == 1 and res["points"][0]["runs"] == 1


def test_a_runs_metrics_round_trip_and_a_bad_file_is_named(tmp_path):
    from olaf.experiments.metrics import MetricsFileError, RunMetrics, read_metrics, write_metrics
    from olaf.rundir.manifest import Incomplete

    m = RunMetrics(values={"aom_avg_ms": 12.5, "time_to_k_ms": None}, agg_hist={0: 40, 2: 3},
                   incomplete=Incomplete(updates_per_worker=10, deadline_s=5.0, generated={"w3": 7}),
                   fates_consistent=True)
    write_metrics(tmp_path, m)
    assert read_metrics(tmp_path) == m
    (tmp_path / "metrics.json").write_text('{"values": {"x": "high"}}')
    with pytest.raises(MetricsFileError, match="metrics.json: not a run's metrics"):
        read_metrics(tmp_path)
    with pytest.raises(MetricsFileError, match="cannot read"):
        read_metrics(tmp_path / "nowhere")

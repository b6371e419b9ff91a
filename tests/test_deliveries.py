"""Per-worker deliveries (olaf.report.deliveries), the quantity of paper Fig. 7: ns-3's fate ledger
gives them exactly; the reconstruction from the PS's receptions and the workers' logs (what a
Mininet run has) must agree with it on simulated runs, and say where it cannot."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from olaf.configfile import validate
from olaf.plan.plan import RunPlan
from olaf.report.deliveries import WorkerDeliveries, time_to_n_from_each, worker_deliveries
from olaf.report.rundata import RunDirError, load_run
from olaf.rundir import DELIVERIES_FILE


def multihop(queue: str) -> RunPlan:
    """Paper Fig. 9's network, 2 × 3 clusters of 4 workers at 10 updates/s into an SW3 uplink of
    60 updates/s: both switches aggregate."""
    return validate(RunPlan, {
        "topology": "multihop", "queue": queue, "duration_s": 6, "seed": 2, "updates_from_each": [5, 20],
        "queue_size": {"s1": 4, "s2": 4, "s3": 6},
        "groups": [{"name": "S1", "clusters": 3, "workers_per_cluster": 4, "period_ms": 100, "jitter_ms": 10,
                    "switch": "s1"},
                   {"name": "S2", "clusters": 3, "workers_per_cluster": 4, "period_ms": 100, "jitter_ms": 10,
                    "switch": "s2"}],
        "uplinks": {"s1": {"pps": 200}, "s2": {"pps": 200}, "s3": {"pps": 60}}})


@pytest.fixture(scope="module")
def runs(sim, tmp_path_factory) -> dict[str, Path]:
    from olaf.sim.backend import run_ns3

    return {q: run_ns3(multihop(q), tmp_path_factory.mktemp(q), plots=False) for q in ("olaf", "fifo")}


def _without_ledger(d: Path, tmp: Path) -> Path:
    out = tmp / d.name
    shutil.copytree(d, out)
    (out / DELIVERIES_FILE).unlink()
    return out


@pytest.mark.ns3
@pytest.mark.parametrize("queue", ["olaf", "fifo"])
def test_reconstruction_agrees_with_the_ledger(runs, queue: str, tmp_path: Path) -> None:
    run = load_run(runs[queue])
    ledger = worker_deliveries(run)
    assert ledger.source == "ledger"
    summary = json.loads((runs[queue] / "summary.json").read_text())["overall"]
    # every update whose content reached the PS, once, at its worker
    assert sum(ledger.counts().values()) == summary["delivered"] + summary["aggregated"] > 0
    rec = worker_deliveries(load_run(_without_ledger(runs[queue], tmp_path)))
    assert rec.source == "reconstructed" and rec.unattributed == 0
    assert rec.receptions == summary["delivered"] and rec.exact == rec.receptions
    assert rec.times == ledger.times
    if queue == "olaf":
        assert summary["aggregated"] > 0  # the reconstruction had aggregates to take apart


@pytest.mark.ns3
def test_metric_time_to_n_from_each(runs) -> None:
    from olaf.experiments.metrics import metric_names, run_metrics

    plan = multihop("olaf")
    assert {"time_to_each_ms.5", "time_to_each_ms.20", "each_exact_pct"} <= set(metric_names(plan))
    v = run_metrics(runs["olaf"], plan).values
    assert v["each_exact_pct"] == 100.0
    wd = worker_deliveries(load_run(runs["olaf"]))
    names = sorted(wd.times)
    # the slowest worker's 5th (20th) delivered update, in ms from the start (t0 = 0 on ns-3)
    assert v["time_to_each_ms.5"] == max(wd.times[w][4] for w in names) / 1e6
    assert v["time_to_each_ms.20"] == max(wd.times[w][19] for w in names) / 1e6 > v["time_to_each_ms.5"]


@pytest.mark.ns3
def test_an_update_missing_from_the_logs_is_unattributed_not_invented(runs, tmp_path: Path) -> None:
    """Drop, from its worker's log, one update that was folded into another worker's reception:
    that reception is no longer exact and its missing contributor is counted, not guessed."""
    d = _without_ledger(runs["olaf"], tmp_path)
    run = load_run(d)
    full = worker_deliveries(run)
    heads = {(r.src, r.seq) for r in run.ps_updates}
    victim = next(w for w in run.workers if any((w.address, s) not in heads for s in w.sent_seq))
    seq = next(s for s in victim.sent_seq if (victim.address, s) not in heads)
    log = victim.path
    lines = [ln for ln in log.read_text().splitlines() if not (
        '"ev":"gen"' in ln and json.loads(ln).get("seq") == seq and json.loads(ln)["sent"])]
    log.write_text("\n".join(lines) + "\n")
    rec = worker_deliveries(load_run(d))
    assert rec.unattributed == 1 and rec.exact == full.exact - 1 < rec.receptions
    assert sum(rec.counts().values()) == sum(full.counts().values()) - 1
    assert rec.exact_pct is not None and rec.exact_pct < 100


def test_time_to_n_from_each_edges() -> None:
    wd = WorkerDeliveries({"w1": [10, 20, 30], "w2": [15, 40]}, "ledger")
    assert time_to_n_from_each(wd, ["w1", "w2"], 1, 5) == 10
    assert time_to_n_from_each(wd, ["w1", "w2"], 2, 0) == 40
    assert time_to_n_from_each(wd, ["w1", "w2"], 3, 0) is None  # w2 has two
    assert time_to_n_from_each(wd, ["w1", "w3"], 1, 0) is None  # w3 delivered nothing
    with pytest.raises(ValueError, match="n must be >= 1"):
        time_to_n_from_each(wd, ["w1"], 0, 0)
    with pytest.raises(ValueError, match="no workers"):
        time_to_n_from_each(wd, [], 1, 0)


def test_a_malformed_deliveries_file_names_the_line(runs_dir_with_bad_ledger: Path) -> None:
    with pytest.raises(RunDirError, match=r"deliveries.csv:3: not a delivery row"):
        worker_deliveries(load_run(runs_dir_with_bad_ledger))


@pytest.fixture
def runs_dir_with_bad_ledger(tmp_path: Path) -> Path:
    """The smallest run directory load_run reads (a PS log and one worker log), with a
    ``deliveries.csv`` whose second row is cut short."""
    hosts = tmp_path / "hosts"
    hosts.mkdir()
    (hosts / "ps.jsonl").write_text(json.dumps({"ev": "start", "role": "ps", "t_ns": 0, "bind": "10.0.0.100:50100",
                                                "ack_port": 50101, "lr": None, "duration_s": None}) + "\n")
    (tmp_path / DELIVERIES_FILE).write_text("worker,seq,gen_ts_ns,t_delivered_ns\nw1,0,5,9\nw1,1\n")
    return tmp_path


def test_recorded_updates_required_for_the_metric() -> None:
    from olaf.configfile import ConfigError

    with pytest.raises(ConfigError, match="updates_from_each"):
        validate(RunPlan, {"duration_s": 1, "records": False, "updates_from_each": [5],
                           "groups": [{"clusters": 1, "workers_per_cluster": 1}]})
    with pytest.raises(ConfigError, match="updates_from_each"):
        validate(RunPlan, {"duration_s": 1, "updates_from_each": [0],
                           "groups": [{"clusters": 1, "workers_per_cluster": 1}]})

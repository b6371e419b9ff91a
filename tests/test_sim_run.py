"""Simulated runs end to end (olaf.sim.run_ns3): the run directory is one ``olaf report``
reads, its accounting agrees with the switches' counters, Olaf beats FIFO under
congestion, and the multi-hop status rule reaches the workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from olaf.configfile import ConfigError, validate
from olaf.plan.plan import RunPlan


def tor(queue: str) -> RunPlan:
    """9 clusters x 3 workers at 20 updates/s (540/s) into a 200 packets/s uplink, queue 8 (paper §8.1 shape)."""
    return validate(RunPlan, {"topology": "tor", "queue": queue, "duration_s": 8, "seed": 3,
                               "groups": [{"clusters": 9, "workers_per_cluster": 3, "period_ms": 50, "jitter_ms": 10}],
                               "uplinks": {"s1": {"pps": 200}}})


@pytest.fixture(scope="module")
def tor_runs(sim, tmp_path_factory) -> dict[str, dict]:
    from olaf.sim.backend import run_ns3

    out = {}
    for q in ("olaf", "fifo"):
        d = run_ns3(tor(q), tmp_path_factory.mktemp(q), plots=False)
        out[q] = {"dir": d, "summary": json.loads((d / "summary.json").read_text()),
                  "switch": json.loads((d / "switch_counters.json").read_text())["s1"]}
    return out


@pytest.mark.ns3
@pytest.mark.parametrize("queue", ["olaf", "fifo"])
def test_report_accounting_matches_switch_counters(tor_runs, queue: str) -> None:
    r = tor_runs[queue]
    sw, ov = r["switch"], r["summary"]["overall"]
    sent = sum(json.loads(p.read_text())["sent"] for p in Path(r["dir"], "hosts").glob("w*.summary.json"))
    assert ov["sent"] == sent > 0
    assert ov["delivered"] == sw["decisions"]["append"] == sum(c["departures"] for c in sw["clusters"].values())
    assert ov["aggregated"] == sw["decisions"]["aggregate"]
    lost = sum(sw["decisions"][k] for k in ("drop_full", "drop_reward", "replace_worker", "replace_reward"))
    assert ov["dropped"] == lost + sw["tx_drops"]
    assert ov["sent"] == ov["delivered"] + ov["aggregated"] + ov["dropped"]
    for c, m in r["summary"]["clusters"].items():
        k = sw["clusters"][c]["decisions"]
        assert m["delivered"] == k["append"] and m["aggregated"] == k["aggregate"]
    assert ov["dropped"] > 0  # congested


@pytest.mark.ns3
def test_olaf_beats_fifo(tor_runs) -> None:
    o, f = tor_runs["olaf"]["summary"]["overall"], tor_runs["fifo"]["summary"]["overall"]
    assert o["loss_fraction"] < 0.5 * f["loss_fraction"]
    assert o["aom_avg_ms"] < 0.8 * f["aom_avg_ms"]
    assert f["aggregated"] == 0 and o["aggregated"] > 0


@pytest.mark.ns3
def test_report_cli_reads_simulated_run(tor_runs) -> None:
    from click.testing import CliRunner

    from olaf.cli import main

    res = CliRunner().invoke(main, ["report", str(tor_runs["olaf"]["dir"]), "--no-plots"])
    assert res.exit_code == 0, res.output
    assert "Per-cluster results" in res.output


@pytest.mark.ns3
def test_multihop_tc_sees_tightest_bottleneck(sim, tmp_path) -> None:
    """Fig. 9 with Table 3's periods: S1 behind s1 (100 ms), S2 behind s2 (300 ms), bottleneck at s3.

    s1/s2 hold 5 clusters each in queues of 5 (Q/N = 1), s3 10 clusters in 8 (Q/N = 0.8; a 1 s
    activity window counts S2's 300 ms clusters as active): the ACKs must carry s3's status
    (multi-hop rule), and Olaf_TC workers then skip updates."""
    from olaf.sim.backend import run_ns3

    s = validate(RunPlan, {
        "topology": "multihop", "queue": "olaf_tc", "duration_s": 6, "grads": 16, "activity_window_ms": 1000,
        "groups": [{"name": "S1", "clusters": 5, "workers_per_cluster": 4, "period_ms": 100, "jitter_ms": 10, "switch": "s1"},
                   {"name": "S2", "clusters": 5, "workers_per_cluster": 4, "period_ms": 300, "jitter_ms": 10, "switch": "s2"}],
        "uplinks": {"s1": {"pps": 400}, "s2": {"pps": 400}, "s3": {"pps": 60}}})
    d = run_ns3(s, tmp_path / "mh", plots=False)
    statuses = [r["status"] for p in (d / "hosts").glob("w*.jsonl") for r in map(json.loads, p.read_text().splitlines())
                if r.get("ev") == "ack" and r["status"]]
    assert statuses
    tight = sum(1 for st in statuses if st[2] == 8 and st[1] == 10)
    assert tight / len(statuses) > 0.9
    summary = json.loads((d / "summary.json").read_text())
    assert summary["overall"]["skipped"] > 0
    counters = json.loads((d / "switch_counters.json").read_text())
    assert counters["s3"]["traffic"]["ack_multicast"] == summary["overall"]["delivered"]
    assert counters["s1"]["traffic"]["ack_multicast"] + counters["s2"]["traffic"]["ack_multicast"] == \
        summary["overall"]["delivered"]


@pytest.mark.parametrize("patch, field", [
    ({"groups": [{"clusters": 2, "workers_per_cluster": 2, "period_ms": 10, "jitter_ms": 20}]}, "groups[0]"),
    ({"queue": "red"}, "queue"),
    ({"uplinks": {"s9": {"pps": 10}}}, "uplinks"),
    ({"uplinks": {"s1": {"pps": 10, "gbps": 1}}}, "uplinks.s1"),
    ({"duration_s": None}, "duration_s"),
])
def test_scenario_errors_name_the_field(patch: dict, field: str) -> None:
    raw = {"duration_s": 1, "groups": [{"clusters": 1, "workers_per_cluster": 1}], **patch}
    with pytest.raises(ConfigError) as e:
        validate(RunPlan, raw)
    assert field in str(e.value)


def test_missing_ns3_says_how_to_install(monkeypatch) -> None:
    from importlib import metadata

    from olaf.sim import build

    def missing(name: str):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(build.SimUnavailable, match=r"pip install 'olaf-drl\[ns3\]'"):
        build.find_ns3()

"""Simulated runs end to end (olaf.sim.run_ns3): the run directory is one ``olaf report``
reads, its accounting agrees with the switches' counters, Olaf beats FIFO under
congestion, the multi-hop status rule reaches the workers, and an update sent in K chunks
is accounted for chunk by chunk (olaf.sim.rundir "Updates in chunks")."""

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
    # K = 1: the fate ledger agrees, and every PS reception is one record of the PS log
    chunks = r["summary"]["run"]["backend_info"]["chunks"]
    assert chunks["num_chunks"] == 1 and chunks["updates"]["partially_delivered"] == 0
    assert chunks["updates"]["fully_delivered"] == ov["delivered"] + ov["aggregated"]
    assert chunks["chunks"]["folded"] == ov["aggregated"]
    ps = json.loads(Path(r["dir"], "hosts", "ps.summary.json").read_text())
    assert ps["updates"] == ov["delivered"] == chunks["chunks"]["delivered"]


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
@pytest.mark.parametrize("reading", ["probabilistic", "backoff"])
def test_multihop_tc_sees_tightest_bottleneck(sim, tmp_path, reading: str) -> None:
    """Fig. 9 with Table 3's periods: S1 behind s1 (100 ms), S2 behind s2 (300 ms), bottleneck at s3.

    s1/s2 hold 5 clusters each in queues of 5 (Q/N = 1), s3 10 clusters in 8 (Q/N = 0.8; a 1 s
    activity window counts S2's 300 ms clusters as active): the ACKs must carry s3's status
    (multi-hop rule), and Olaf_TC workers then skip updates; back-off decisions only under that reading."""
    from olaf.sim.backend import run_ns3

    s = validate(RunPlan, {
        "topology": "multihop", "queue": "olaf_tc", "duration_s": 6, "grads": 16, "activity_window_ms": 1000,
        "tc": {"reading": reading},
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
    records = [r for p in (d / "hosts").glob("w*.jsonl") for r in map(json.loads, p.read_text().splitlines())]
    assert {(r["tx"]["enabled"], r["tx"]["reading"]) for r in records if r["ev"] == "start"} == {(True, reading)}
    reasons = {r["reason"] for r in records if r["ev"] == "gen" and not r["sent"]}
    assert reasons == ({"draw", "backoff"} if reading == "backoff" else {"draw"})


def chunked(queue: str) -> RunPlan:
    """SB3's 9,797-parameter network (K = 5 chunks of 1,960 in 9000 B frames) through the
    congested ToR of :func:`tor` for 3 s; ``pps`` counts updates, so the uplink carries 5 chunk
    frames per update of capacity."""
    return validate(RunPlan, {"topology": "tor", "queue": queue, "duration_s": 3, "seed": 5, "grads": 9797,
                               "groups": [{"clusters": 9, "workers_per_cluster": 3, "period_ms": 50, "jitter_ms": 10}],
                               "uplinks": {"s1": {"pps": 200}}})


@pytest.mark.ns3
@pytest.mark.parametrize("queue", ["olaf", "fifo"])
def test_chunked_run_accounts_for_every_chunk(sim, tmp_path, queue: str) -> None:
    from olaf.sim.backend import run_ns3

    d = run_ns3(chunked(queue), tmp_path / queue, plots=False)
    summary = json.loads((d / "summary.json").read_text())
    info = summary["run"]["backend_info"]["chunks"]
    assert (info["num_params"], info["num_chunks"], info["chunk_len"], info["padding"]) == (9797, 5, 1960, 3)
    ch, up = info["chunks"], info["updates"]
    # every chunk sent met exactly one fate; every update sent is fully, partially or not delivered
    assert ch["sent"] == ch["delivered"] + ch["folded"] + ch["dropped"] + ch["lost"] > 0
    assert ch["lost"] == ch["lost_device"] + ch["lost_in_flight"]
    assert ch["sent"] + ch["not_sent"] == 5 * up["sent"]
    assert up["sent"] == up["fully_delivered"] + up["partially_delivered"] + up["not_delivered"] > 0
    assert ch["delivered"] <= ch["content_delivered"] <= ch["sent"]
    assert up["partially_delivered"] > 0  # congested: some updates lose some of their chunks
    # per cluster and per (cluster, chunk) they add up to the totals
    for key in ("sent", "delivered", "folded", "dropped", "lost", "content_delivered"):
        assert sum(c["chunks"][key] for c in info["clusters"].values()) == ch[key]
        for c in info["clusters"].values():
            assert sum(pc[key] for pc in c["per_chunk"]) == c["chunks"][key]
    for key in up:
        assert sum(c["updates"][key] for c in info["clusters"].values()) == up[key]
    # the switch's counters count chunks
    sw = json.loads((d / "switch_counters.json").read_text())["s1"]
    dec = sw["decisions"]
    assert dec["aggregate"] == ch["folded"]
    assert sum(dec[k] for k in ("drop_full", "drop_reward", "replace_worker", "replace_reward")) == ch["dropped"]
    assert dec["append"] == ch["delivered"] + ch["lost_in_flight"]
    assert sw["malformed"]["chunk"] == 0 and sw["malformed"]["extern"] == 0
    ps = json.loads((d / "hosts" / "ps.summary.json").read_text())
    assert ps["updates"] == ch["delivered"] and ps["malformed"] == 0
    # the report counts fully delivered updates; the rest are its dropped ones
    ov = summary["overall"]
    assert ov["sent"] == up["sent"]
    assert ov["delivered"] + ov["aggregated"] == up["fully_delivered"]
    assert ov["dropped"] == up["partially_delivered"] + up["not_delivered"]
    # the PS answers each chunk with its slice: L weights, the model's last 1,957 in chunk 4
    weights = {r["weights"] for p in (d / "hosts").glob("w*.jsonl") for r in map(json.loads, p.read_text().splitlines())
               if r.get("ev") == "ack"}
    assert weights == {1960, 9797 - 4 * 1960}
    if queue == "fifo":
        assert ch["folded"] == 0


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


@pytest.mark.ns3
def test_chunked_multihop_run_accounts_across_switches(sim, tmp_path) -> None:
    """K = 5 through Fig. 9's two hops: chunks folded or dropped at s1/s2 and again at s3 each
    meet one fate, so the switches' decisions summed over the path equal the ledger's fates."""
    from olaf.sim.backend import run_ns3

    s = validate(RunPlan, {
        "topology": "multihop", "queue": "olaf", "duration_s": 2, "grads": 9797, "seed": 2,
        "groups": [{"name": "S1", "clusters": 5, "workers_per_cluster": 4, "period_ms": 100, "jitter_ms": 10, "switch": "s1"},
                   {"name": "S2", "clusters": 5, "workers_per_cluster": 4, "period_ms": 100, "jitter_ms": 10, "switch": "s2"}],
        "uplinks": {"s1": {"pps": 150}, "s2": {"pps": 150}, "s3": {"pps": 60}}})
    d = run_ns3(s, tmp_path / "mh", plots=False)
    info = json.loads((d / "run.json").read_text())["backend_info"]["chunks"]
    ch, up = info["chunks"], info["updates"]
    assert ch["sent"] == ch["delivered"] + ch["folded"] + ch["dropped"] + ch["lost"] > 0
    assert up["sent"] == up["fully_delivered"] + up["partially_delivered"] + up["not_delivered"] > 0
    counters = json.loads((d / "switch_counters.json").read_text())
    dec = {k: sum(counters[sw]["decisions"][k] for sw in ("s1", "s2", "s3")) for k in counters["s1"]["decisions"]}
    assert dec["aggregate"] == ch["folded"] > 0
    assert sum(dec[k] for k in ("drop_full", "drop_reward", "replace_worker", "replace_reward")) == ch["dropped"]
    assert ch["lost_device"] <= sum(counters[sw]["tx_drops"] for sw in counters)  # tx_drops count ACKs too
    assert json.loads((d / "hosts" / "ps.summary.json").read_text())["updates"] == ch["delivered"]
    # a chunk folded at s1 whose aggregate s3 then drops is folded, but its content is lost
    assert ch["content_delivered"] < ch["delivered"] + ch["folded"]


def test_ns3_backend_takes_any_model_up_to_65535_chunks() -> None:
    """The ns3 backend sends a model beyond one 9000 B frame as K chunks (no build limit below the
    wire's 65535) and refuses, naming the field, a K beyond it or a queue whose Q_max · K segments
    exceed the switch's."""
    from olaf import backends
    from olaf.backends.base import PlanRefused
    from olaf.constants import MAX_CHUNKS_WIRE, max_chunk_elements

    ns3 = backends.get("ns3")
    base = {"duration_s": 1, "groups": [{"clusters": 1, "workers_per_cluster": 1}]}
    for grads, k in ((341, 1), (9797, 5), (62_000, 28)):
        p = validate(RunPlan, {**base, "grads": grads})
        ns3.check(p)
        assert p.chunking(ns3.mtu).num_chunks == k
    with pytest.raises(PlanRefused, match=f"K = {MAX_CHUNKS_WIRE + 1} chunks") as e:
        ns3.check(validate(RunPlan, {**base, "grads": MAX_CHUNKS_WIRE * max_chunk_elements(ns3.mtu) + 1}))
    assert e.value.field == "grads"
    with pytest.raises(PlanRefused, match="need 280 segments") as e:
        ns3.check(validate(RunPlan, {**base, "grads": 62_000, "queue_size": {"s1": 10}}))  # 10 x 28 > 256
    assert e.value.field == "queue_sizes"

"""The run report on a synthetic log set with hand-computed numbers, and its files and CLI."""

import csv
import json

import pytest
from click.testing import CliRunner

from olaf.cli import main
from olaf.report.report import compare, summarize
from olaf.report.rundata import RunDirError, load_run
from olaf.rundir.manifest import LostWorker, RunManifest, write_manifest
from olaf.rundir.records import (
    AckRecord,
    GenRecord,
    GoRecord,
    MalformedRecord,
    PsStart,
    Record,
    StopRecord,
    UpdateRecord,
    WorkerStart,
)

MS = 1_000_000
REQUIRED = {"sent", "delivered", "aggregated", "dropped", "aom_avg_ms", "aom_peak_ms"}
PS_START = PsStart(ev="start", role="ps", t_ns=0, bind="10.0.0.100:50100", ack_port=50101, lr=0.001, duration_s=None)


def write_jsonl(path, records):
    path.write_text("".join((r.line() if isinstance(r, Record) else json.dumps(r)) + "\n" for r in records))


def update(t_ms, cluster_id, gen_ts_ms, count, global_reward, init=False, outcome="accepted"):
    """A PS reception record at ``t_ms`` of an update generated at ``gen_ts_ms`` (ms)."""
    return UpdateRecord(ev="update", t_ns=t_ms * MS, src="10.0.0.1", cluster_id=cluster_id, worker_id=0, seq=1,
                        count=count, gen_ts=gen_ts_ms * MS, reward_sum=0, reward=0.0, init=init, outcome=outcome,
                        global_reward=global_reward)


def window(d, t_end_ms, **plan):
    """The manifest of a run of an external harness: the window [0, t_end_ms] and ``plan``."""
    write_manifest(d, RunManifest(backend="external", t_start_ns=0, t_end_ns=t_end_ms * MS, plan=plan))


def worker_log(path, name, cluster_id, sent_at, skipped_at=(), learned=None):
    recs: list[Record] = [
        WorkerStart(ev="start", role="worker", t_ns=0, name=name, bind="10.0.0.1", ps="10.0.0.100:50100",
                    cluster_id=cluster_id, seed=1, schedule={"duration_s": None}, task=None, tx={"enabled": False}),
        GoRecord(ev="go", t_ns=0, t0_ns=0, requested_t0_ns=0)]
    gens = sorted([(t, True) for t in sent_at] + [(t, False) for t in skipped_at])
    for i, (t, sent) in enumerate(gens):
        recs.append(GenRecord(ev="gen", t_ns=t * MS, idx=i, late_ms=0.0, sent=sent, seq=i + 1 if sent else None,
                              reward=-1.0, folded=1 if sent else None, exp_reward=-1.0, reason="tc_off", p_send=1.0,
                              draw=None, delta_hat_ms=None, N=None, q_max=None))
    if learned is not None:
        recs.append(AckRecord(ev="ack", t_ns=1, cluster_id=learned, worker_id=0, seq=1, count=1, gen_ts=0,
                              global_reward=None, weights=0, own=True, status=None))
    recs.append(StopRecord(ev="stop", t_ns=80 * MS, reason="schedule_end"))
    write_jsonl(path, recs)


@pytest.fixture
def run_dir(tmp_path):
    """Cluster 0: workers a (5 sent, 1 skipped) and b (3 sent); the PS got (t, gen_ts, count) =
    (10, 5, 1), (30, 20, 3), (35, 15, 1), (60, 50, 2) ms. Cluster 1: worker c (2 sent, cluster
    learned from its ACKs), nothing delivered. Window [0, 70] ms from run.json."""
    d = tmp_path / "run"
    (d / "hosts").mkdir(parents=True)
    worker_log(d / "hosts" / "a.jsonl", "a", 0, [1, 2, 3, 4, 5], skipped_at=[6])
    worker_log(d / "hosts" / "b.jsonl", "b", 0, [7, 8, 9])
    worker_log(d / "hosts" / "c.jsonl", "c", None, [1, 2], learned=1)
    ps: list[Record] = [PS_START, update(1, 0, 0, 1, None, init=True, outcome="initialised"),
                        MalformedRecord(ev="malformed", t_ns=2 * MS, src="10.0.0.1", len=3, reason="update too short")]
    for t, g, c, gr in [(10, 5, 1, -5.0), (30, 20, 3, -3.0), (35, 15, 1, -3.0), (60, 50, 2, -1.0)]:
        ps.append(update(t, 0, g, c, gr))
    ps.append(StopRecord(ev="stop", t_ns=90 * MS, reason="signal"))
    write_jsonl(d / "ps.jsonl", ps)
    window(d, 70, queue="olaf")
    (d / "switch_counters.json").write_text(json.dumps({"drop_full": 1}))
    return d


def test_hand_computed_report(run_dir):
    s = summarize(load_run(run_dir), k=1, reward_target=-3.0)
    c0, c1, ov = s["clusters"]["0"], s["clusters"]["1"], s["overall"]
    assert (c0["workers"], c0["generated"], c0["sent"], c0["skipped"]) == (2, 9, 8, 1)
    assert (c0["delivered"], c0["aggregated"], c0["dropped"]) == (4, 3, 1)
    # AoM from 0: [0,10] 0->10, [10,30] 5->25, [30,60] 10->40 (35 is older: no refresh), [60,70] 10->20
    assert c0["aom_avg_ms"] == pytest.approx((50 + 300 + 750 + 150) / 70)
    assert c0["aom_peak_ms"] == pytest.approx((10 + 25 + 40) / 3)
    assert (c0["aom_peak_max_ms"], c0["aom_max_ms"]) == (40.0, 40.0)
    assert c0["time_to_k_ms"] == 30.0  # 2 workers x k=1: sum of counts reaches 2 at 30 ms
    # cluster 1 starved: ages 0 -> 70 over the window
    assert (c1["sent"], c1["delivered"], c1["aggregated"], c1["dropped"]) == (2, 0, 0, 2)
    assert c1["aom_avg_ms"] == 35.0 and c1["aom_peak_ms"] is None and c1["aom_max_ms"] == 70.0
    x = [1250 / 70, 35.0]
    assert ov["jain_fairness"] == pytest.approx(sum(x) ** 2 / (2 * (x[0] ** 2 + x[1] ** 2)))
    assert (ov["sent"], ov["delivered"], ov["aggregated"], ov["dropped"]) == (10, 4, 3, 3)
    assert ov["loss_fraction"] == pytest.approx(0.3)
    assert ov["time_to_k_ms"] is None  # cluster 1 never got its updates
    assert ov["time_to_reward_ms"] == 30.0 and ov["final_global_reward"] == -1.0
    assert s["ps"]["malformed"] == 1 and s["ps"]["inits"] == 1
    assert s["window"]["source"] == "run.json" and s["switch"] == {"drop_full": 1} and s["run"]["plan"]["queue"] == "olaf"


def test_window_from_worker_logs_and_errors(run_dir, tmp_path):
    (run_dir / "run.json").unlink()
    s = summarize(load_run(run_dir))
    # t0 = 0 (workers' start); end = the last generation of any worker (9 ms; they had no duration)
    assert (s["window"]["t_start_ns"], s["window"]["t_end_ns"], s["window"]["source"]) == (0, 9 * MS, "worker logs")
    (run_dir / "hosts" / "b.jsonl").unlink()  # cluster 0 now delivered more than it sent
    with pytest.raises(RunDirError, match="missing or assigned"):
        summarize(load_run(run_dir))
    with pytest.raises(RunDirError, match="exactly one PS log"):
        load_run(tmp_path / "run" / "hosts")


def test_a_lost_workers_unlogged_sends_count_as_sent(run_dir):
    """Worker b was lost with its machine after sending 3 updates, but its log kept only the first
    (the rest went with the machine): the PS's receptions (7 worker updates) exceed the logs' 6
    sends. As a lost worker's (run.json lost_workers), the excess counts as sent, unlogged; for any
    other worker it is an error."""
    worker_log(run_dir / "hosts" / "b.jsonl", "b", 0, [7])
    with pytest.raises(RunDirError, match="missing or assigned"):
        summarize(load_run(run_dir))
    m = RunManifest.model_validate_json((run_dir / "run.json").read_text())
    lost = LostWorker(worker="b", at_s=0.008, reason="its Ray node was lost")
    write_manifest(run_dir, m.model_copy(update={"lost_workers": [lost]}))
    s = summarize(load_run(run_dir), k=1)
    c0 = s["clusters"]["0"]
    assert (c0["sent"], c0["delivered"], c0["aggregated"], c0["dropped"], c0["unlogged_sent_packets"]) == (7, 4, 3, 0, 1)
    assert s["overall"]["unlogged_sent_packets"] == 1 and s["workers"]["lost_at_s"] == {"b": 0.008}


def test_cli_writes_summary_csv_and_plots(run_dir, tmp_path):
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["report", str(run_dir), "--out", str(out), "--k", "1", "--compare", str(run_dir)])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    for m in s["clusters"].values():
        assert REQUIRED <= set(m)
    assert REQUIRED | {"jain_fairness"} <= set(s["overall"])
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [row["cluster"] for row in rows] == ["0", "1", "all"]
    assert rows[0]["dropped"] == "1" and rows[1]["aom_peak_ms"] == "" and float(rows[2]["jain_fairness"]) > 0.9
    for png in ("aom.png", "aggregations_cdf.png", "reward.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cmp = json.loads((out / "compare.json").read_text())
    assert cmp["aom_avg_change"] == 0.0 and cmp["labels"] == ["olaf (baseline)", "olaf"]
    assert "Jain" in r.output and "all" in r.output


def test_cli_error_names_the_problem(tmp_path):
    r = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert r.exit_code == 1 and "need exactly one PS log" in r.output


def test_compare_by_hand():
    def summ(aom):
        m = {"delivered": 1, "aggregated": 0, "dropped": 0, "loss_fraction": 0.0, "aom_avg_ms": aom, "aom_peak_ms": aom}
        return {"clusters": {"0": m}, "overall": {**m, "jain_fairness": 1.0}}

    c = compare(summ(100.0), summ(31.0))
    assert c["aom_avg_change"] == pytest.approx(-0.69)
    assert c["clusters"]["0"]["aom_avg_ms"] == [100.0, 31.0]


def test_regroup_attributes_sends_by_time_and_moves_the_boundary(tmp_path):
    """Worker m moves from cluster 0 to cluster 1; regroups.jsonl says the switches held the
    change at 20 ms. m sent at 5, 10 ms (cluster 0) and 19 ms (stamped 1 while olafctl was still
    writing, so attributed to 0 by time) and 30, 40 ms (cluster 1). Worker s stays in cluster 1."""
    d = tmp_path / "run"
    (d / "hosts").mkdir(parents=True)
    worker_log(d / "hosts" / "m.jsonl", "m", 0, [5, 10, 19, 30, 40])
    worker_log(d / "hosts" / "s.jsonl", "s", 1, [12])
    ps: list[Record] = [PS_START]
    for t, cl, g, c in [(6, 0, 5, 1), (11, 0, 10, 1), (20, 1, 19, 1), (25, 1, 12, 1), (31, 1, 30, 1), (41, 1, 40, 1)]:
        ps.append(update(t, cl, g, c, None))
    write_jsonl(d / "ps.jsonl", ps)
    window(d, 50)
    write_jsonl(d / "regroups.jsonl", [{"t_ns": 20 * MS, "clusters": {"0": [], "1": ["s", "m"]}}])
    s = summarize(load_run(d))
    c0, c1 = s["clusters"]["0"], s["clusters"]["1"]
    assert (c0["sent"], c0["delivered"], c0["dropped"]) == (2, 2, 0)   # 19 ms moved to cluster 1
    assert (c1["sent"], c1["delivered"], c1["dropped"]) == (4, 4, 0)
    assert (c0["workers"], c1["workers"]) == (0, 2)
    assert s["overall"]["dropped"] == 0
    assert s["regroups"][0]["clusters"] == {"s": 1, "m": 1}


def test_bad_log_lines_and_gen_ts_are_counted_not_fatal(run_dir):
    """A corrupt line, a record of the wrong shape, gen_ts = 2^64 − 1 and gen_ts an hour in
    the future: the report still runs, counts them and keeps the AoM of the good records."""
    good = summarize(load_run(run_dir))
    ps = run_dir / "ps.jsonl"
    lines = ps.read_text().splitlines()
    extra = ['{"ev": "update", "t_ns": 40', "[1, 2]",
             json.dumps({**update(45, 0, 0, 1, -1.0).dump(), "gen_ts": "soon"}),
             update(50, 0, 0, 1, -1.0).model_copy(update={"gen_ts": (1 << 64) - 1}).line(),
             update(55, 0, 55 + 3600 * 1000, 1, -1.0).line()]
    ps.write_text("\n".join(lines[:-1] + extra + lines[-1:]) + "\n")
    s = summarize(load_run(run_dir))
    assert s["bad_records"] == {"ps.jsonl": 3}
    assert s["ps"]["bad_gen_ts"] == 2
    assert s["clusters"]["0"]["aom_avg_ms"] == good["clusters"]["0"]["aom_avg_ms"]
    assert s["clusters"]["0"]["aom_avg_ms"] >= 0


def test_socket_drops_are_named_per_host_with_the_buffer_and_the_fix(run_dir):
    """A worker whose kernel dropped ACK slices for a full receive buffer is named in the report
    (summary.json and the console) with the buffer it was granted and what to change; hosts
    without drops, and hosts without a summary, are not."""
    from olaf.rundir.records import WorkerSummary

    def worker_summary(name, drops, advice):
        return WorkerSummary(
            role="worker", name=name, task="ppo", bind="10.0.0.1", cluster_id=0, worker_id=None,
            learned_cluster_id=0, learned_worker_id=1, t0_ns=0, gen_end_ns=70 * MS, t_stop_ns=80 * MS,
            stop_reason="schedule_end", generated=6, sent=5, skipped=1, init_sent=1, send_errors=0, acks=50,
            acks_own=20, acks_malformed=0, acks_wrong_size=0, recv_errors=0, socket_drops=drops,
            slices_superseded=40, rcvbuf_bytes=425_984, rcvbuf_advice=advice, model_acked=True, last_seq=5,
            last_global_reward=None).dump()

    capped = ("the kernel granted a 425,984-byte receive buffer of the 8,388,608 asked for (net.core.rmem_max = "
              "212992): raise it with `sysctl -w net.core.rmem_max=4194304` or run as root (SO_RCVBUFFORCE)")
    (run_dir / "hosts" / "a.summary.json").write_text(json.dumps(worker_summary("a", 921, capped)))
    (run_dir / "hosts" / "b.summary.json").write_text(json.dumps(worker_summary("b", 0, None)))
    s = summarize(load_run(run_dir))
    assert s["socket_drops"] == {"a": {"drops": 921, "rcvbuf_bytes": 425_984, "advice": capped,
                                       "slices_superseded": 40}}
    r = CliRunner().invoke(main, ["report", str(run_dir), "--no-plots"])
    assert r.exit_code == 0, r.output
    assert "a: the kernel dropped 921 datagrams for a full socket receive buffer (425,984 B)" in r.output
    assert "sysctl -w net.core.rmem_max=4194304" in " ".join(r.output.split())


def test_rcvbuf_advice_and_truesize_by_hand(monkeypatch):
    from olaf import udpsock

    assert [udpsock.datagram_truesize(n) for n in (1472, 8972, 0)] == [2048 + 256, 16384 + 256, 1024 + 256]
    assert udpsock.rcvbuf_for(756, 1430) == max(udpsock.SOCKET_RCVBUF, 756 * 2304)
    assert udpsock.rcvbuf_for(2000, 8972) == 2000 * 16640
    assert udpsock.rcvbuf_advice(1 << 22, 1 << 23) is None   # granted: twice what was asked for
    monkeypatch.setattr(udpsock, "rmem_max", lambda: 212992)
    advice = udpsock.rcvbuf_advice(1 << 22, 425_984)
    assert "425,984-byte" in advice and "net.core.rmem_max = 212992" in advice and "rmem_max=4194304" in advice
    with pytest.raises(ValueError, match="rcvbuf"):
        udpsock.udp_socket(0)

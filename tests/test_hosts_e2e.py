"""End to end on loopback: `olaf ps`, four `olaf worker` processes, SIGTERM, then `olaf report`.

No switch on this path: every sent update is delivered and nothing is aggregated, so
the report must show sent == delivered for each cluster; clusters come from
--cluster-id, the metric window from the manifest run.json as a harness writes it. Real
processes, real UDP sockets, the same command lines a Mininet harness uses. Every line the
hosts wrote and their summaries are valid records of olaf.rundir.records.
"""

import json
import signal
import subprocess
import sys
import threading
import time

from hostnet import loopback_net

from olaf.rundir.jsonl import read_jsonl
from olaf.rundir.manifest import RunManifest, write_manifest
from olaf.rundir.records import PsStart, PsSummary, StopRecord, WorkerStart, WorkerSummary

OLAF = [sys.executable, "-m", "olaf.cli"]
UPDATES = 75
"""Updates of workers w1–w3 (about 1.5 s at their 20 ± 5 ms period; longer on a busy machine)."""


def poll(cond, timeout_s: float) -> bool:
    """Evaluate ``cond`` until true or the timeout (a wait between tries, not a synchronisation sleep)."""
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while time.monotonic() < deadline:
        if cond():
            return True
        tick.wait(0.05)
    return cond()


def aom_bound_ms(ps_records, cluster_id, t0, t_end) -> float:
    """An upper bound of a cluster's AoM over ``[t0, t_end]`` from the PS's log: the age at any
    moment is the time since the last reception (or t0) plus that reception's age, so at most
    the longest gap between receptions plus the largest age at a reception."""
    recv = sorted((r["t_ns"], r["gen_ts"]) for r in ps_records
                  if r.get("ev") == "update" and not r["init"] and r["cluster_id"] == cluster_id
                  and t0 <= r["t_ns"] <= t_end)
    times = [t0] + [t for t, _ in recv] + [t_end]
    longest_gap = max(b - a for a, b in zip(times, times[1:]))
    oldest = max((t - g for t, g in recv), default=0)
    return (longest_gap + oldest) / 1e6


def gen_events(path) -> int:
    try:
        return path.read_text().count('"ev":"gen"')
    except FileNotFoundError:
        return 0


def test_ps_workers_report(tmp_path):
    ip = loopback_net()
    run = tmp_path / "run"
    ps = subprocess.Popen(OLAF + ["ps", "--bind", ip(100), "--out-dir", str(run), "--flush-ms", "50"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert poll(lambda: (run / "ps.jsonl").exists(), 20)  # the PS is bound before any INIT is sent
    go = tmp_path / "go"
    common = ["--ps", ip(100), "--start-file", str(go), "--period-ms", "20", "--jitter-ms", "5",
              "--grads", "16", "--out-dir", str(run), "--linger-ms", "300"]
    workers = []
    for i, cluster in enumerate([0, 0, 1, 1], start=1):
        length = ["--duration", "60"] if i == 4 else ["--updates", str(UPDATES)]
        workers.append(subprocess.Popen(
            OLAF + ["worker", "--bind", ip(i), "--cluster-id", str(cluster), "--worker-id", str(i),
                    "--seed", str(i), *length, "--name", f"w{i}"] + common,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        # as a harness does: once every worker is up (start record written), give the common start
        assert poll(lambda: all((run / f"w{i}.jsonl").exists() for i in range(1, 5)), 30)
        t0 = time.time_ns() + 300_000_000
        (tmp_path / "go.tmp").write_text(str(t0))
        (tmp_path / "go.tmp").rename(go)
        for w in workers[:3]:
            assert w.wait(timeout=30) == 0, w.stderr.read()
        # the long-running worker stops cleanly on SIGTERM: log flushed, summary written, exit 0
        assert poll(lambda: gen_events(run / "w4.jsonl") >= 10, 10)
        workers[3].send_signal(signal.SIGTERM)
        assert workers[3].wait(timeout=10) == 0, workers[3].stderr.read()
        ps.send_signal(signal.SIGTERM)
        assert ps.wait(timeout=10) == 0, ps.stderr.read()
    finally:
        for p in workers + [ps]:
            if p.poll() is None:
                p.kill()

    w4 = json.loads((run / "w4.summary.json").read_text())
    assert w4["stop_reason"] == "signal" and w4["sent"] >= 10 and w4["model_acked"]
    assert (run / "w4.jsonl").read_text().splitlines()[-1].startswith('{"ev":"stop"')
    ps_sum = json.loads((run / "ps.summary.json").read_text())
    assert ps_sum["stop_reason"] == "signal" and ps_sum["initialised"] == 1 and ps_sum["inits"] >= 4
    assert ps_sum["malformed"] == 0 and ps_sum["acks_sent"] == ps_sum["datagrams"]
    ends = []
    for i in 1, 2, 3:
        s = json.loads((run / f"w{i}.summary.json").read_text())
        assert s["stop_reason"] == "schedule_end" and s["model_acked"]
        assert s["generated"] == s["sent"] == UPDATES
        assert s["acks_own"] == s["sent"] + s["init_sent"]
        ends.append(s["gen_end_ns"])

    # the window a harness states: the common start and the end of w1-w3's schedules (without
    # it the window would run to w4's SIGTERM and cluster 0 would age meanwhile)
    gos = [json.loads(line) for i in (1, 2, 3) for line in (run / f"w{i}.jsonl").read_text().splitlines()
           if '"ev":"go"' in line]
    assert [g["requested_t0_ns"] for g in gos] == [t0] * 3
    assert all(g["t0_ns"] == t0 for g in gos), "a worker got going after the start it was given"
    t_end = max(ends)
    write_manifest(run, RunManifest(backend="external", t_start_ns=t0, t_end_ns=t_end))
    r = subprocess.run(OLAF + ["report", str(run), "--k", "5"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rep = json.loads((run / "summary.json").read_text())
    assert set(rep["clusters"]) == {"0", "1"}
    ups = [json.loads(line) for line in (run / "ps.jsonl").read_text().splitlines()]
    for cid, c in rep["clusters"].items():
        assert c["workers"] == 2 and c["sent"] == c["delivered"] > 0
        assert c["aggregated"] == 0 and c["dropped"] == 0
        assert 0 < c["aom_avg_ms"] <= aom_bound_ms(ups, int(cid), t0, t_end) and c["aom_peak_ms"] is not None
    assert 0.5 < rep["overall"]["jain_fairness"] <= 1.0
    assert rep["workers"]["late_start_ms"] == {} and not rep["workers"]["unattributed"]
    # learning happened: the PS accepted updates and its global reward rose
    rewards = [u["global_reward"] for u in ups if u.get("ev") == "update" and u["global_reward"] is not None]
    assert ps_sum["accepted"] >= 5 and rewards[-1] > rewards[0]
    for png in ("aom.png", "aggregations_cdf.png", "reward.png"):
        assert (run / png).stat().st_size > 1000
    # every line and summary the real hosts wrote is a valid record
    for log in sorted(run.glob("*.jsonl")):
        got = read_jsonl(log)
        assert got.corrupt_lines == 0, (log.name, got.corrupt.problems)
        assert isinstance(got.records[0], PsStart if log.stem == "ps" else WorkerStart)
        assert isinstance(got.records[-1], StopRecord) and len(got.records) > 50
    PsSummary.model_validate_json((run / "ps.summary.json").read_text(), strict=True)
    for i in 1, 2, 3, 4:
        WorkerSummary.model_validate_json((run / f"w{i}.summary.json").read_text(), strict=True)

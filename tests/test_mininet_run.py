"""Tier 3: `olaf run` end to end in Mininet with BMv2 (root, Mininet, P4 tools).

Small networks keep these to a few tens of seconds each; `make run` /
`make compare` run the paper-sized ones.
"""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostnet import guard
from p4_tier import ROOT, leftovers

from olaf.controller import config as cfgmod
from olaf.rundir.manifest import read_manifest

# the first test also waits for `make build` (the session's build fixture)
pytestmark = [pytest.mark.mininet, pytest.mark.timeout(900)]

OLAF = str(Path(sys.executable).parent / "olaf")
OLAFCTL = str(Path(sys.executable).parent / "olafctl")


def run(args, results, build, **kw):
    if "timeout" in kw:
        kw["timeout"] = guard(kw["timeout"])
    return subprocess.run([OLAF, "run", "--results", str(results), "--build", str(build), *args],
                          capture_output=True, text=True, cwd=ROOT, **kw)


def test_tor_run_reconciles_with_the_switch(build, tmp_path):
    """Accounting against the switch's counters, with each cluster's two workers on one host (one
    address and switch port, a UDP port each: the five-tuple identity) and every port captured."""
    r = run(["--duration", "6", "--clusters", "3", "--workers-per-cluster", "2", "--rate-pps", "60",
             "--period-ms", "40", "--workers-per-host", "2", "--pcap"], tmp_path, build, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = (tmp_path / "latest").resolve()
    s = json.loads((out / "summary.json").read_text())
    c = json.loads((out / "switch_counters.json").read_text())["s1"]["decisions"]
    assert set(s["clusters"]) == {"0", "1", "2"}
    for m in s["clusters"].values():
        assert {"sent", "delivered", "aggregated", "dropped", "aom_avg_ms", "aom_peak_ms"} <= set(m)
    o = s["overall"]
    assert o["sent"] == sum(c.values())                      # every sent update reached a decision
    assert o["delivered"] == c["append"]                     # each APPEND is one PS delivery
    assert o["aggregated"] == c["aggregate"]
    assert o["dropped"] == c["drop_full"] + c["drop_reward"] + c["replace_worker"] + c["replace_reward"]
    assert o["aggregated"] > 0, "a 60 pps bottleneck under 150 updates/s must aggregate"
    assert 0 < o["jain_fairness"] <= 1
    assert s["ps"]["inits"] == 6
    for f in ("aom.png", "summary.csv", "network.yaml", "run.json"):
        assert (out / f).exists()
    d = cfgmod.load(out / "network.yaml")
    workers = {n: h for n, h in d.hosts.items() if h.worker_id is not None}
    assert d.identity == "five_tuple" and len({h.ip for h in workers.values()}) == 3
    assert sorted(h.udp_port for h in workers.values()) == [50101] * 3 + [50102] * 3
    # the switch stamped each worker's own id on its updates: 6 ids from 3 addresses at the PS
    recs = [json.loads(line) for line in (out / "hosts" / "ps.jsonl").read_text().splitlines()]
    ids = {(x["src"], x["worker_id"]) for x in recs if x.get("ev") == "update"}
    assert {wid for _, wid in ids} == {h.worker_id for h in workers.values()} and len({ip for ip, _ in ids}) == 3
    for n in workers:   # and each got its cluster's ACKs at its own UDP port
        w = json.loads((out / "hosts" / f"{n}.summary.json").read_text())
        assert w["model_acked"] and w["acks"] > 0 and w["socket_drops"] == 0, (n, w)
    assert {p.name for p in (out / "pcap").iterdir()} >= {"s1-eth1_in.pcap", "s1-eth1_out.pcap"}
    assert leftovers(tmp_path) == []


def test_regroup_during_a_run(build, tmp_path):
    # the run must outlast the move (olafctl's start-up and P4Runtime writes): 30 s, stretched under load
    p = subprocess.Popen([OLAF, "run", "--results", str(tmp_path), "--build", str(build), "--duration",
                          repr(guard(30)),
                          "--clusters", "2", "--workers-per-cluster", "2", "--rate-pps", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        net = None
        deadline = time.monotonic() + guard(120)
        while time.monotonic() < deadline:
            runs = [d for d in tmp_path.iterdir() if d.is_dir()]
            if runs and (runs[0] / "start_ns").exists():
                net = runs[0] / "network.yaml"
                break
            assert p.poll() is None, p.stdout.read()
            time.sleep(0.5)
        assert net is not None, "the run did not start"
        # The switches' control ports are reachable only on loopback (olaf/mgmtns.py): in this
        # namespace only the forwarders listen on them, on 127.0.0.1.
        d = cfgmod.load(net)
        control = {d.switches["s1"].thrift_port, int(d.switches["s1"].grpc.rsplit(":", 1)[1])}
        listen = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True).stdout.split("\n")
        addrs = {ln.split()[3] for ln in listen if ln.strip() and int(ln.split()[3].rsplit(":", 1)[1]) in control}
        assert addrs and all(a.startswith("127.0.0.1:") for a in addrs), addrs
        ps_log = net.parent / "hosts" / "ps.jsonl"   # updates flow before the move
        deadline = time.monotonic() + guard(60)
        while ps_log.read_text().count('"ev":"update"') < 20:
            assert time.monotonic() < deadline, "no updates reached the PS"
            time.sleep(0.1)
        r = subprocess.run([OLAFCTL, "--network", str(net), "--p4info", str(build / "olaf.p4info.txt"),
                            "--bmv2-json", str(build / "olaf.json"), "move", "w2", "--to", "1"],
                           capture_output=True, text=True, timeout=guard(60))
        assert r.returncode == 0, r.stdout + r.stderr
        out, _ = p.communicate(timeout=guard(180))
    finally:
        if p.poll() is None:
            p.terminate()
            p.wait()
    assert p.returncode == 0, out[-3000:]
    s = json.loads((net.parent / "summary.json").read_text())
    assert len(s["regroups"]) == 1 and s["regroups"][0]["clusters"]["w2"] == 1
    # w2's updates after the move count (and arrive) as cluster 1: nothing is lost by the move. Every
    # update is delivered or merged by the queue: aggregated into a cluster-mate's, or replaced by its
    # worker's newer one (queue decisions, which a PS port backed up on a busy machine makes; with
    # two clusters in a queue of 8 it is never full).
    f = s["overall"]["fates"]
    assert f["sent"] == f["delivered"] + f["aggregated"] + f["replaced"], f
    assert f["dropped_full"] == f["dropped_reward"] == f["not_decided"] == 0, f
    assert f["lost_in_tm"] == f["lost_on_links"] == f["lost_at_host"] == 0, f
    assert s["clusters"]["1"]["workers"] == 3 and s["clusters"]["0"]["workers"] == 1
    assert s["clusters"]["1"]["sent"] > s["clusters"]["0"]["sent"]
    assert leftovers(tmp_path) == []


def test_failed_start_names_the_switch_log_and_cleans_up(build, tmp_path):
    bad = tmp_path / "build"
    bad.mkdir()
    for f in ("olaf.json", "olaf.p4info.txt"):
        shutil.copy(build / f, bad / f)
    (bad / "olaf_queue.so").write_bytes(b"not a shared object")
    r = run(["--duration", "5", "--clusters", "1", "--workers-per-cluster", "1"], tmp_path / "res", bad, timeout=120)
    assert r.returncode != 0
    err = r.stdout + r.stderr
    assert "s1: simple_switch_grpc could not load the OlafQueue extern" in err and "log:" in err, err[-2000:]
    assert leftovers(tmp_path) == []


def test_multihop_run_accounting_closes_and_acks_carry_the_tightest_status(build, tmp_path):
    """Paper Fig. 9 end to end: s1 and s2 (queue 5, unlimited) -> s3 (queue 3, 60 pps) -> PS,
    2 clusters x 2 workers per edge, transmission control on. s3 is the tightest queue for
    every cluster (Q/N = 3/4 against 5/2 at the edges), so the ACKs must carry s3's status."""
    r = run(["--topo", "multihop", "--duration", "8", "--clusters", "2", "--workers-per-cluster", "2",
             "--queue-size", "3", "--edge-queue-size", "5", "--rate-pps", "60", "--period-ms", "40", "--tc"],
            tmp_path, build, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = (tmp_path / "latest").resolve()
    s = json.loads((out / "summary.json").read_text())
    counters = json.loads((out / "switch_counters.json").read_text())
    o = s["overall"]
    assert s["overall"]["fates_consistent"] is True
    for c, m in s["clusters"].items():
        f = m["fates"]
        fates = {k: v for k, v in f.items() if k not in ("sent", "inconsistent", "hops")}
        assert sum(fates.values()) == f["sent"] == m["sent"] and f["inconsistent"] == []
        edge = "s1" if int(c) < 2 else "s2"
        assert [h["switch"] for h in f["hops"]] == [edge, "s3"]
        # packets: the fates count decisions, the summary worker updates (a replaced segment takes
        # the updates aggregated into it along), so only the deliveries must agree one to one
        assert f["delivered"] == m["delivered"]
    # what the edges passed on is what s3 decided on; what s3 appended reached the PS
    s3 = counters["s3"]["decisions"]
    assert sum(s3.values()) == sum(counters[e]["clusters"][c]["departures"]
                                   for e in ("s1", "s2") for c in counters[e]["clusters"])
    assert o["delivered"] == s3["append"] and o["dropped"] > 0 and o["skipped"] > 0
    # answers to INITs (seq 0) are left out: INITs bypass the queues, so one answered before any update
    # crossed s3 carries s3's status with N = 0 (Q/N infinite), which an edge rightly overwrites
    statuses = [tuple(rec["status"]) for p in (out / "hosts").glob("w*.jsonl")
                for rec in map(json.loads, p.read_text().splitlines())
                if rec.get("ev") == "ack" and rec.get("status") and rec["seq"] != 0]
    assert len(statuses) > 100
    assert all(q == 3 for _, _, q in statuses), "an edge switch's looser status (Q_max 5) reached a worker"
    assert sum(1 for _, n, _ in statuses if n == 4) / len(statuses) > 0.9
    assert leftovers(tmp_path) == []


def test_switch_restart_mid_run_is_reprogrammed_and_accounted(build, tmp_path):
    """Kill BMv2 4 s into the run and start it again: the controller reprograms it, updates flow
    again, and the report's hop-by-hop fates still close (counters from before the kill kept)."""
    # the run outlasts the restart and the controller's reprogramming by 20 s or more (more under load)
    r = run(["--duration", repr(guard(30)), "--clusters", "3", "--workers-per-cluster", "2", "--rate-pps", "60",
             "--period-ms", "40", "--fault", "switch-restart:s1@4"], tmp_path, build, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = (tmp_path / "latest").resolve()
    meta = read_manifest(out)
    assert meta.backend == "mininet"
    (f,) = meta.faults
    assert f.fault == "switch-restart" and f.reprogrammed == ["s1"] and f.gap_ms and f.gap_ms > 0
    s = json.loads((out / "summary.json").read_text())
    assert s["overall"]["fates_consistent"] is True
    for m in s["clusters"].values():
        fates = {k: v for k, v in m["fates"].items() if k not in ("sent", "inconsistent", "hops")}
        assert sum(fates.values()) == m["fates"]["sent"] == m["sent"] and m["fates"]["inconsistent"] == []
    after = [json.loads(line) for line in (out / "hosts" / "ps.jsonl").read_text().splitlines()]
    after = [x for x in after if x.get("ev") == "update" and not x["init"] and x["t_ns"] > (f.reprogrammed_ns or 0)]
    assert len(after) > 50, "updates did not flow again after the restart"
    assert leftovers(tmp_path) == []


def test_ps_killed_mid_run_ends_with_a_clear_error_and_a_partial_report(build, tmp_path):
    r = run(["--duration", "10", "--clusters", "2", "--workers-per-cluster", "2", "--rate-pps", "60",
             "--period-ms", "40", "--fault", "ps-kill@3"], tmp_path, build, timeout=300)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert "the PS exited" in r.stderr and "partial report" in r.stderr, r.stderr[-2000:]
    out = (tmp_path / "latest").resolve()
    s = json.loads((out / "summary.json").read_text())
    meta = read_manifest(out)
    assert s["partial"] is True and meta.partial and "the PS exited" in (meta.partial_reason or "")
    assert meta.faults[0].fault == "ps-kill"
    assert s["overall"]["sent"] > 0 and s["overall"]["delivered"] > 0
    assert leftovers(tmp_path) == []

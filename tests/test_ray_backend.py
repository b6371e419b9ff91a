"""Tier 3 (mininet, train): the ray backend through BMv2 (olaf/backends/ray/, docs/ray.md,
docs/rllib.md) — a training job's workers as Ray actors joined to their Mininet hosts' namespaces
(and restarted with their identity when killed), the RLlib algorithm OlafPPO with one EnvRunner per
worker, and a Ray head with one node per host whose traffic never crosses the switch."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
from hostnet import guard
from p4_tier import ROOT, leftovers

from olaf.controller import config as cfgmod

pytestmark = [pytest.mark.mininet, pytest.mark.train, pytest.mark.timeout(900)]

OLAF = str(Path(sys.executable).parent / "olaf")


def ray_processes() -> list[str]:
    """Ray's running processes; an exited one not yet reaped by its parent (``<defunct>``, a zombie
    that holds no resource and is gone at the parent's next wait) is not one."""
    return [line for line in subprocess.run(["pgrep", "-af", "raylet|gcs_server"], capture_output=True,
                                            text=True).stdout.splitlines() if not line.endswith("<defunct>")]


def log_records(log: Path) -> list[dict]:
    """A host log's records so far (none while it does not exist)."""
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.exists() else []


def train_and_strike(args: list[str], tmp_path: Path, workers: tuple[str, ...], gens: int,
                     strike: Callable[[dict[str, list[dict]]], None]) -> str:
    """Run `olaf train ARGS --results tmp_path`; once each of ``workers`` has logged ``gens``
    iterations, call ``strike`` with their records so far (e.g. to kill a process), then wait for
    the run to end. Returns its output; the run is killed if the test fails first."""
    run = subprocess.Popen([OLAF, "train", "--results", str(tmp_path), *args], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    deadline = time.monotonic() + guard(600)  # hang guard only
    try:
        while True:
            assert run.poll() is None, run.stdout.read()[-3000:]
            assert time.monotonic() < deadline, "hang guard: the workers did not start generating"
            recs = {w: log_records(p) for d in tmp_path.glob("*train*") for w in workers
                    if (p := d / "hosts" / f"{w}.jsonl").exists()}
            if len(recs) == len(workers) and all(sum(r["ev"] == "gen" for r in rs) >= gens for rs in recs.values()):
                break
            time.sleep(0.2)
        strike(recs)
        out_text, _ = run.communicate(timeout=guard(900))
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, out_text[-3000:]
    return out_text


def test_an_rllib_algorithm_trains_through_bmv2(build, tmp_path):
    """The same job with RLlib's learner (--learner rllib) is one RLlib algorithm (OlafPPO): one
    EnvRunner actor per worker, 2 per Mininet host (five-tuple identity), each sampling with RLlib's
    connectors and module, updating its own RLlib Learner (PPO loss, GAE) and pushing the change
    through BMv2; the switch stamps each its cluster, every update is decided and accounted for,
    every EnvRunner wrote its Olaf log and summary, and no Ray process is left."""
    pytest.importorskip("ray.rllib", reason="the rllib extra is not installed: pip install -e '.[train,rllib]'")
    before = ray_processes()
    iterations = 3
    r = subprocess.run([OLAF, "train", "--backend", "ray", "--learner", "rllib", "--build", str(build),
                        "--results", str(tmp_path), "--env", "CartPole-v1", "--clusters", "2",
                        "--workers-per-cluster", "2", "--workers-per-host", "2", "--iterations", str(iterations),
                        "--budget-s", repr(guard(300))], capture_output=True, text=True, cwd=ROOT, timeout=guard(800))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = (tmp_path / "latest").resolve()
    t = json.loads((out / "training.json").read_text())
    assert t["fewest_worker_iterations"] >= iterations and t["worker_errors"] == {}, t
    d = cfgmod.load(out / "network.yaml")
    pids = set()
    for cid, members in d.clusters.items():
        for w in members:
            start = json.loads((out / "hosts" / f"{w}.jsonl").read_text().splitlines()[0])
            s = json.loads((out / "hosts" / f"{w}.summary.json").read_text())
            assert s["learner"] == "rllib" and s["iterations"] >= iterations and s["sent"] >= 1, (w, s)
            assert s["model_acked"] and s["socket_drops"] == 0 and s["learned_cluster_id"] == cid, (w, s)
            assert (start["bind"], start.get("udp_port", 50101)) == (d.hosts[w].ip, d.hosts[w].udp_port)
            assert start["task"]["algorithm"] == "OlafPPO"
            pids.add(start["pid"])
    assert len(pids) == 4  # one EnvRunner actor process per worker
    sw = json.loads((out / "switch_counters.json").read_text())["s1"]
    rep = json.loads((out / "summary.json").read_text())["overall"]
    assert rep["fates_consistent"] and rep["fates"]["not_decided"] == 0, rep["fates"]
    assert sum(sw["decisions"].values()) == rep["fates"]["sent"] > 0
    assert ray_processes() == before
    assert leftovers(tmp_path) == []


def test_ray_nodes_keep_rays_traffic_off_the_data_path_and_a_lost_node_loses_only_its_workers(build, tmp_path):
    """--ray-nodes lays the Ray cluster out as on separate machines: the head in the root
    namespace, one node inside each Mininet host, joined by management links. Each worker's actor
    runs on its own host's node and its Olaf traffic crosses BMv2, while not one TCP packet (Ray's
    GCS, raylet and object traffic is gRPC over TCP; an idle node alone sends about 5 packets/s)
    passes any switch port: the captures of every port hold Olaf's UDP and no TCP.

    Once every worker has generated, one host's node is killed whole (SIGKILL to its process
    group: the raylet and the actor, as when a machine dies). Its two workers are reported lost
    (run.json, summary.json, training.json), the job goes on and ends when the other host's workers
    have done their iterations, `olaf train` succeeds, and the report's fates still close. The
    nodes are stopped by PID and their links removed."""
    from scapy.all import TCP, UDP, rdpcap

    before = ray_processes()
    iterations = 8

    def lose_the_node_of_w3(recs: dict[str, list[dict]]) -> None:
        victim = recs["w3"][0]["pid"]  # the actor of w3 and w4, on the node of their host
        assert recs["w4"][0]["pid"] == victim and recs["w1"][0]["pid"] != victim
        node = victim  # up the parents to the node's `ray start --block` (its own process group)
        while b"--block" not in Path(f"/proc/{node}/cmdline").read_bytes().split(b"\0"):
            node = int(Path(f"/proc/{node}/stat").read_text().rsplit(")", 1)[1].split()[1])
            assert node > 1, "the actor is not under a Ray node's process"
        for group in {os.getpgid(node), os.getpgid(victim)}:  # the machine dies: everything on it
            os.killpg(group, signal.SIGKILL)

    out_text = train_and_strike(["--backend", "ray", "--ray-nodes", "--pcap", "--build", str(build), "--env",
                                 "CartPole-v1", "--clusters", "2", "--workers-per-cluster", "2", "--workers-per-host",
                                 "2", "--workers-per-actor", "2", "--iterations", str(iterations),
                                 "--budget-s", repr(guard(300))],
                                tmp_path, ("w1", "w2", "w3", "w4"), 1, lose_the_node_of_w3)
    assert "lost" in out_text and "w3" in out_text
    out = (tmp_path / "latest").resolve()
    t = json.loads((out / "training.json").read_text())
    assert t["lost_workers"] == ["w3", "w4"] and t["worker_errors"] == {}, t
    assert t["fewest_worker_iterations"] >= iterations, t  # of the workers not lost
    d = cfgmod.load(out / "network.yaml")
    placed = json.loads((out / "ray_nodes.json").read_text())
    nodes = placed["nodes"]
    assert len(nodes) == 2 and placed["head"] not in nodes.values()
    assert all(ip.startswith("10.254.") for ip in nodes.values())
    # workers sharing a host (an address) ran on that host's node; the two hosts are two nodes
    by_address = {}
    for w, node_ip in placed["workers"].items():
        by_address.setdefault(d.hosts[w].ip, set()).add(node_ip)
    assert len(by_address) == 2 and all(len(v) == 1 for v in by_address.values())
    assert set().union(*by_address.values()) == set(nodes.values())
    for w in ("w1", "w2"):
        s = json.loads((out / "hosts" / f"{w}.summary.json").read_text())
        assert s["sent"] >= iterations and s["model_acked"] and s["socket_drops"] == 0, (w, s)
    manifest = json.loads((out / "run.json").read_text())
    lost = {lw["worker"]: lw for lw in manifest["lost_workers"]}
    assert set(lost) == {"w3", "w4"} and all("Ray node" in lw["reason"] for lw in lost.values()), lost
    rep = json.loads((out / "summary.json").read_text())
    assert set(rep["workers"]["lost_at_s"]) == {"w3", "w4"}
    assert rep["overall"]["fates_consistent"] and rep["overall"]["fates"]["not_decided"] == 0, rep["overall"]["fates"]
    captures = sorted((out / "pcap").glob("*.pcap"))
    assert captures, "no switch port was captured"
    tcp = udp = 0
    for f in captures:
        for pkt in rdpcap(str(f)):
            tcp += TCP in pkt
            udp += UDP in pkt and pkt[UDP].dport == 50100
    assert udp > 0 and tcp == 0, f"{tcp} TCP packets crossed the switch ({udp} Olaf updates)"
    assert ray_processes() == before
    assert subprocess.run(["ip", "link", "show", "olafray0"], capture_output=True).returncode != 0
    current = Path("/tmp/ray/ray_current_cluster")  # a later ray.init() must not try to join the dead head
    assert not current.exists() or "10.254.0.1" not in current.read_text()
    assert leftovers(tmp_path) == []


def test_a_killed_actor_is_restarted_with_its_workers_identity_and_the_report_counts_the_gap(build, tmp_path):
    """2 workers in one actor and on one Mininet host (five-tuple identity: the same address, a UDP
    port each), the actor joined to the host's namespace; once both have generated, the actor's
    process is killed (SIGKILL).
    Ray restarts the actor (--actor-restarts 1), which brings both workers back with the same
    address and UDP port: they append to their logs (a second, resumed start record), INIT again
    and train to the end; the switch and the PS accept them as before, every update of both
    incarnations is decided, and the report counts one restart and its gap per worker."""
    before = ray_processes()
    killed = []

    def kill_the_actor(recs: dict[str, list[dict]]) -> None:
        pid = recs["w1"][0]["pid"]
        assert pid == recs["w2"][0]["pid"] and pid != os.getpid()
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    train_and_strike(["--backend", "ray", "--actor-restarts", "1", "--build", str(build), "--env", "CartPole-v1",
                      "--clusters", "1", "--workers-per-cluster", "2", "--workers-per-actor", "2",
                      "--workers-per-host", "2", "--iterations", "8", "--budget-s", repr(guard(300))],
                     tmp_path, ("w1", "w2"), 2, kill_the_actor)
    pid = killed[0]
    out = (tmp_path / "latest").resolve()
    d = cfgmod.load(out / "network.yaml")
    for w in ("w1", "w2"):
        recs = log_records(out / "hosts" / f"{w}.jsonl")
        starts = [r for r in recs if r["ev"] == "start"]
        assert len(starts) == 2 and starts[1].get("resumed") and starts[1]["pid"] != pid, starts
        assert {(s["bind"], s.get("udp_port", 50101)) for s in starts} == {(d.hosts[w].ip, d.hosts[w].udp_port)}
        s = json.loads((out / "hosts" / f"{w}.summary.json").read_text())
        assert s["model_acked"] and s["socket_drops"] == 0, (w, s)
        assert sum(r["ev"] == "init" for r in recs[recs.index(starts[1]):]) >= 1  # it INITs again
        assert sum(r["ev"] == "ack" and r["own"] for r in recs[recs.index(starts[1]):]) >= 1  # and is answered
    assert d.hosts["w1"].ip == d.hosts["w2"].ip and d.hosts["w1"].udp_port != d.hosts["w2"].udp_port
    rep = json.loads((out / "summary.json").read_text())
    assert rep["workers"]["restarts"] == {"w1": 1, "w2": 1}, rep["workers"]
    assert all(g > 0 for g in rep["workers"]["restart_gap_ms"].values())
    assert rep["overall"]["fates_consistent"] and rep["overall"]["fates"]["not_decided"] == 0, rep["overall"]["fates"]
    sw = json.loads((out / "switch_counters.json").read_text())["s1"]
    assert sum(sw["decisions"].values()) == rep["overall"]["fates"]["sent"] > 0
    t = json.loads((out / "training.json").read_text())
    assert t["worker_errors"] == {}, t
    assert ray_processes() == before
    assert leftovers(tmp_path) == []

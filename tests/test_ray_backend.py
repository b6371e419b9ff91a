"""Tier 3 (mininet, train): the ray backend — a training job's workers as Ray actors, each joined
to its Mininet host's network namespace, through BMv2 (olaf/backends/ray.py, docs/ray.md)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from p4_tier import ROOT, leftovers

from olaf.controller import config as cfgmod

pytestmark = [pytest.mark.mininet, pytest.mark.train, pytest.mark.timeout(900)]

OLAF = str(Path(sys.executable).parent / "olaf")


def ray_processes() -> list[str]:
    return subprocess.run(["pgrep", "-af", "raylet|gcs_server"], capture_output=True, text=True).stdout.splitlines()


def test_a_training_job_runs_its_workers_in_ray_actors_through_bmv2(build, tmp_path):
    """4 PPO workers (CartPole) in 2 actors (2 workers each), 2 workers per Mininet host: each
    worker's updates cross BMv2 from its host's address and UDP port, every update is decided and
    accounted for, and the run leaves no Ray process behind."""
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")
    before = ray_processes()
    iterations = 3
    r = subprocess.run([OLAF, "train", "--backend", "ray", "--build", str(build), "--results", str(tmp_path),
                        "--env", "CartPole-v1", "--clusters", "1", "--workers-per-cluster", "4",
                        "--workers-per-host", "2", "--workers-per-actor", "2", "--iterations", str(iterations),
                        "--budget-s", "300"], capture_output=True, text=True, cwd=ROOT, timeout=800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = (tmp_path / "latest").resolve()
    t = json.loads((out / "training.json").read_text())
    assert t["fewest_worker_iterations"] >= iterations and t["worker_errors"] == {}, t
    d = cfgmod.load(out / "network.yaml")
    starts = {}
    for w in ("w1", "w2", "w3", "w4"):
        starts[w] = json.loads((out / "hosts" / f"{w}.jsonl").read_text().splitlines()[0])
        s = json.loads((out / "hosts" / f"{w}.summary.json").read_text())
        assert s["sent"] >= iterations and s["model_acked"] and s["socket_drops"] == 0, (w, s)
    # two actor processes, two workers in each, none of them the harness
    pids = {w: st["pid"] for w, st in starts.items()}
    assert len(set(pids.values())) == 2 and pids["w1"] == pids["w2"] and pids["w3"] == pids["w4"], pids
    assert {(starts[w]["bind"], starts[w].get("udp_port", 50101)) for w in starts} == \
        {(d.hosts[w].ip, d.hosts[w].udp_port) for w in starts}
    sw = json.loads((out / "switch_counters.json").read_text())["s1"]
    rep = json.loads((out / "summary.json").read_text())["overall"]
    assert rep["fates_consistent"] and rep["fates"]["not_decided"] == 0, rep["fates"]
    assert sum(sw["decisions"].values()) == rep["fates"]["sent"] > 0
    assert ray_processes() == before
    assert leftovers(tmp_path) == []


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
                        "--budget-s", "300"], capture_output=True, text=True, cwd=ROOT, timeout=800)
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


def test_ray_nodes_in_the_hosts_keep_rays_traffic_off_the_data_path(build, tmp_path):
    """--ray-nodes lays the Ray cluster out as on separate machines: the head in the root
    namespace, one node inside each Mininet host, joined by management links. Each worker's actor
    runs on its own host's node and its Olaf traffic crosses BMv2, while not one TCP packet (Ray's
    GCS, raylet and object traffic is gRPC over TCP; an idle node alone sends about 5 packets/s)
    passes any switch port: the captures of every port hold Olaf's UDP and no TCP. The nodes are
    stopped by PID and their links removed."""
    from scapy.all import TCP, UDP, rdpcap

    before = ray_processes()
    iterations = 3
    r = subprocess.run([OLAF, "train", "--backend", "ray", "--ray-nodes", "--pcap", "--build", str(build),
                        "--results", str(tmp_path), "--env", "CartPole-v1", "--clusters", "2",
                        "--workers-per-cluster", "2", "--workers-per-host", "2", "--workers-per-actor", "2",
                        "--iterations", str(iterations), "--budget-s", "300"],
                       capture_output=True, text=True, cwd=ROOT, timeout=800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = (tmp_path / "latest").resolve()
    t = json.loads((out / "training.json").read_text())
    assert t["fewest_worker_iterations"] >= iterations and t["worker_errors"] == {}, t
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
    for w in placed["workers"]:
        s = json.loads((out / "hosts" / f"{w}.summary.json").read_text())
        assert s["sent"] >= iterations and s["model_acked"] and s["socket_drops"] == 0, (w, s)
    rep = json.loads((out / "summary.json").read_text())["overall"]
    assert rep["fates_consistent"] and rep["fates"]["not_decided"] == 0, rep["fates"]
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
    assert leftovers(tmp_path) == []

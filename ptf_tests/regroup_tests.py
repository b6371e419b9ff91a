"""Runtime regrouping with `olafctl` on the running switch, shown with packets.

The switch is programmed by the controller from a deployment file that
matches the PTF port map (olaf_base); `olafctl move` then runs as a separate
process, exactly as a user would run it.
"""

import subprocess
import sys
from pathlib import Path

import yaml
from olaf_base import PS_IP, PS_MAC, PS_PORT, SW_MAC, WORKER_PORTS, OlafTest, worker_ip, worker_mac
from ptf import testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from olaf import wire
from olaf.controller import config as cfgmod
from olaf.controller.controller import OlafController
from olaf.update import Update


def network(grpc: str, thrift_port: int, clusters: dict) -> dict:
    hosts = {"ps": {"ip": PS_IP, "mac": PS_MAC, "switch": "s1", "port": PS_PORT}}
    for k in WORKER_PORTS:
        hosts[f"w{k}"] = {"ip": worker_ip(k), "mac": worker_mac(k), "switch": "s1", "port": k, "worker_id": k}
    return {"num_grads": 4, "ps": "ps", "hosts": hosts, "clusters": clusters,
            "switches": {"s1": {"grpc": grpc, "thrift_port": thrift_port, "mac": SW_MAC,
                                "queue": {"size": 4}, "bottleneck": {"rate_pps": 0, "depth": 64}}}}


class MoveWorkerWithOlafctl(OlafTest):
    """After `olafctl move w2 --to 1` returns, w2's updates aggregate with cluster 1, cluster 1's
    ACKs reach w2 and cluster 0's no longer do; w2's update queued before the move departs as
    cluster 0 (nothing lost)."""

    def runTest(self):
        p = tu.test_params_get()
        net_file = Path(p["p4info"]).parent / "ptf-regroup-network.yaml"
        net_file.write_text(yaml.safe_dump(network(p["grpcaddr"], p["thrift_port"],
                                                   {0: ["w1", "w2"], 1: ["w3", "w4"]})))
        # Above the base class's session (election id 1), like olafctl (2) after it.
        ctl = OlafController(cfgmod.load(net_file), Path(p["p4info"]), Path(p["bmv2_json"]),
                             election_id=(0, 2))
        ctl.deploy(push_pipeline=True)
        ctl.close()

        # w2's update is queued as cluster 0 before the move (it must still arrive as cluster 0).
        self.open_window(rate_pps=1)
        self.send_update(2, Update(cluster_id=0, worker_id=0, seq=1, grads=(1, 1, 1, 1)))
        self.wait_decided(1)
        r = subprocess.run([str(Path(sys.executable).parent / "olafctl"), "--network", str(net_file),
                            "--p4info", p["p4info"], "--bmv2-json", p["bmv2_json"],
                            "move", "w2", "--to", "1"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("moved w2 from cluster 0 to cluster 1", r.stdout)
        before = self.recv_update(timeout=5)[1]
        self.assertEqual((before.cluster_id, before.worker_id, before.grads, before.count), (0, 2, (1, 1, 1, 1), 1))

        # After the move (a new window, so the olafctl start-up time does not matter):
        # w3 (cluster 1) and w2 aggregate. Packets sent on two ports may reach the switch in
        # either order: w3's is decided first, then w2's is sent.
        self.open_window(rate_pps=1)
        self.send_update(3, Update(cluster_id=0, worker_id=0, seq=1, grads=(10, 10, 10, 10)))
        self.wait_decided(2)
        self.send_update(2, Update(cluster_id=0, worker_id=0, seq=2, grads=(5, 5, 5, 5)))
        self.wait_decided(3)
        self.assert_window_holds()
        after = self.recv_update(timeout=5)[1]
        self.assertEqual((after.cluster_id, after.worker_id, after.grads, after.count), (1, 3, (15, 15, 15, 15), 2))

        # ACK fan-out follows the move.
        for cluster, expect in ((1, {2, 3, 4}), (0, {1})):
            ack = (Ether(src=PS_MAC, dst=SW_MAC) / IP(src=PS_IP, dst=worker_ip(1))
                   / UDP(sport=wire.UPDATE_PORT, dport=wire.ACK_PORT)
                   / wire.ack_layer(cluster_id=cluster, worker_id=0, seq=0, count=1, global_reward=0,
                                    gen_ts=0, weights=[0, 0, 0, 0]))
            tu.send_packet(self, PS_PORT, bytes(ack))
            for k in sorted(expect):
                pkt = self.recv(k)
                self.assertEqual(pkt[IP].dst, worker_ip(k))
                self.assertEqual(wire.parse_ack(bytes(pkt[UDP].payload)).cluster_id, cluster)
            for k in set(WORKER_PORTS) - expect:
                self.assert_no_packet(k, timeout=0.3)

"""Controller logic without a switch: exact P4Runtime requests against an in-process server.

The P4Info is tests/data/olaf.p4info.txt, the compiled program's (a tier-2
test checks it is identical to a fresh compile). Traffic-manager calls are
BMv2 Thrift, not P4Runtime; here they go to a recorder (they are exercised
against BMv2 in the integration tests).
"""

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from p4.v1 import p4runtime_pb2
from p4rt_servicer import FakeSwitchServer, RecordingTM

from olaf.constants import ACCESS_QUEUE_DEPTH
from olaf.controller import cli as olafctl
from olaf.controller import config as cfgmod
from olaf.controller.controller import OlafController
from olaf.controller.p4rt import SwitchConnection, SwitchUnavailable
from olaf.controller.state import desired_state, group_id
from olaf.controller.update_identifier import WorkerEntry
from olaf.topologies.build import QueueSetup, tor

P4INFO = Path(__file__).parent / "data" / "olaf.p4info.txt"
U = p4runtime_pb2.Update


@pytest.fixture
def fake(tmp_path):
    with FakeSwitchServer() as srv:
        yield srv


def deployment(fake, clusters=3, wpc=2):
    d = tor(clusters, wpc, queue=QueueSetup(size=4, rate_pps=100), num_grads=8)
    s = d.switches["s1"]
    return cfgmod.validate(cfgmod.Deployment(
        num_grads=d.num_grads, ps=d.ps, hosts=d.hosts, links=d.links, clusters=d.clusters,
        switches={"s1": cfgmod.SwitchConf(**{**s.__dict__, "grpc": fake.addr})}))


def controller(d, tmp_path, monkeypatch):
    monkeypatch.setattr("olaf.controller.controller.TrafficManager", RecordingTM)
    json_path = tmp_path / "olaf.json"
    json_path.write_text("{}")
    return OlafController(d, P4INFO, json_path)


def kinds(updates):
    return [(U.Type.Name(u.type), u.entity.WhichOneof("entity")) for u in updates]


def test_deploy_programs_everything(fake, tmp_path, monkeypatch):
    d = deployment(fake)
    ctl = controller(d, tmp_path, monkeypatch)
    ctl.deploy()
    sv = fake.servicer
    assert sv.pipeline_pushes == 1
    ups = sv.updates()
    tables = {}
    for u in ups:
        if u.entity.HasField("table_entry"):
            name = ctl.switches["s1"].sw.pipeline.ctx.get_name_from_id(u.entity.table_entry.table_id)
            tables.setdefault(name, []).append(U.Type.Name(u.type))
    assert tables["OlafIngress.forwarding.ipv4_lpm"] == ["INSERT"] * 7          # 6 workers + PS
    assert tables["OlafIngress.identifier.worker_table"] == ["INSERT"] * 6
    assert tables["OlafEgress.ack_rewrite.ack_rewrite"] == ["INSERT"] * 6
    assert tables["OlafIngress.ack_multicast.cluster_mcast"] == ["INSERT"] * 3
    assert tables["OlafIngress.params.olaf_params"] == ["MODIFY"]               # default action
    assert sorted(sv.groups) == [group_id(c) for c in range(3)]
    assert [(r.egress_port, r.instance) for r in sv.groups[1].replicas] == [(1, 1), (2, 2)]
    assert ctl.switches["s1"].tm.calls == [("clear_pre",), ("depth", ACCESS_QUEUE_DEPTH, None),
                                               ("depth", 64, 7), ("rate", 100, 7)]
    # a second sync of the same state writes nothing
    sv.clear_records()
    assert not ctl.switches["s1"].sync(desired_state(d, "s1"))
    assert sv.updates() == []
    ctl.close()


def test_move_worker_writes_only_what_changes(fake, tmp_path, monkeypatch):
    d = deployment(fake)
    ctl = controller(d, tmp_path, monkeypatch)
    ctl.deploy()
    fake.servicer.clear_records()
    new = {c: tuple(w for w in ws if w != "w2") for c, ws in d.clusters.items()}
    new[2] = new[2] + ("w2",)
    ch = ctl.regroup(new)["s1"]
    ups = fake.servicer.updates()
    assert kinds(ups) == [("MODIFY", "packet_replication_engine_entry")] * 2 + [("MODIFY", "table_entry")]
    groups = {u.entity.packet_replication_engine_entry.multicast_group_entry.multicast_group_id:
              [(r.egress_port, r.instance) for r in u.entity.packet_replication_engine_entry.multicast_group_entry.replicas]
              for u in ups[:2]}
    assert groups == {1: [(1, 1)], 3: [(2, 2), (5, 5), (6, 6)]}
    assert (ch.inserted, ch.modified, ch.deleted) == (0, 3, 0)
    assert ctl.d.cluster_of("w2") == 2


def test_create_and_delete_cluster_order(fake, tmp_path, monkeypatch):
    d = deployment(fake)
    ctl = controller(d, tmp_path, monkeypatch)
    ctl.deploy()
    fake.servicer.clear_records()
    ctl.regroup({**d.clusters, 0: ("w1",), 7: ("w2",)})
    ups = fake.servicer.updates()
    # the group exists before the entry that points at it
    assert kinds(ups)[:2] == [("INSERT", "packet_replication_engine_entry"), ("INSERT", "table_entry")]
    fake.servicer.clear_records()
    ctl.regroup({**d.clusters, 0: ("w1", "w2")})
    ups = fake.servicer.updates()
    k = kinds(ups)
    assert k.index(("DELETE", "table_entry")) < k.index(("DELETE", "packet_replication_engine_entry"))
    assert group_id(7) not in fake.servicer.groups


def test_invalid_regroup_writes_nothing(fake, tmp_path, monkeypatch):
    d = deployment(fake)
    ctl = controller(d, tmp_path, monkeypatch)
    ctl.deploy()
    fake.servicer.clear_records()
    with pytest.raises(cfgmod.ConfigError, match="already in cluster"):
        ctl.regroup({0: ("w1", "w2"), 1: ("w2",)})
    assert fake.servicer.updates() == []


def test_switch_restart_is_reprogrammed(fake, tmp_path, monkeypatch):
    d = deployment(fake)
    ctl = controller(d, tmp_path, monkeypatch)
    ctl.deploy()
    fake.servicer.restart()
    assert ctl.ensure() == ["s1"]
    assert fake.servicer.pipeline_pushes == 2
    assert len(fake.servicer.groups) == 3
    assert ctl.ensure() == []


def test_write_error_lists_the_failed_update(fake, tmp_path, monkeypatch):
    d = deployment(fake)
    ctl = controller(d, tmp_path, monkeypatch)
    ctl.deploy()
    sc = ctl.switches["s1"]
    with pytest.raises(Exception, match="ALREADY_EXISTS|entry exists"):
        sc.workers.set_worker(("10.0.1.2", 0), WorkerEntry(1, 0, 2))


def test_unreachable_switch_is_a_clear_error():
    sw = SwitchConnection("127.0.0.1:1", name="sX")
    with pytest.raises(SwitchUnavailable, match="sX: no P4Runtime server at 127.0.0.1:1"):
        sw.connect(timeout_s=0.5)


def test_olafctl_move_and_errors(fake, tmp_path, monkeypatch):
    d = deployment(fake)
    ctl = controller(d, tmp_path, monkeypatch)
    ctl.deploy()
    ctl.close()
    net = tmp_path / "network.yaml"
    cfgmod.save(d, net)
    args = ["--network", str(net), "--p4info", str(P4INFO), "--bmv2-json", str(tmp_path / "olaf.json")]
    r = CliRunner().invoke(olafctl.main, args + ["move", "w2", "--to", "2"])
    assert r.exit_code == 0, r.output
    assert "moved w2 from cluster 0 to cluster 2" in r.output
    assert cfgmod.load(net).cluster_of("w2") == 2
    fake.servicer.clear_records()
    for bad, msg in [(["move", "w2", "--to", "2"], "already in cluster 2"),
                     (["move", "w99", "--to", "1"], "not a worker host"),
                     (["move", "w1", "--to", "42"], "cluster 42 does not exist"),
                     (["delete-cluster", "1"], "has workers"),
                     (["set-queue"], "nothing to change"),
                     (["set-queue", "--reward-threshold", "abc"], "not a number")]:
        r = CliRunner().invoke(olafctl.main, args + bad)
        assert r.exit_code == 1 and msg in r.output, (bad, r.output)
    assert fake.servicer.updates() == []
    r = CliRunner().invoke(olafctl.main, args + ["set-queue", "--size", "6", "--reward-threshold", "0.5"])
    assert r.exit_code == 0, r.output
    assert fake.servicer.updates()[0].entity.table_entry.is_default_action


def olaf_params_written(ctl, sv):
    """The action data of every olaf_params write the fake switch received."""
    pl = ctl.switches["s1"].sw.require_pipeline()
    return [pl.param_values(u.entity.table_entry.action.action) for u in sv.updates()
            if u.entity.HasField("table_entry")
            and pl.ctx.get_name_from_id(u.entity.table_entry.table_id) == "OlafIngress.params.olaf_params"]


def test_num_chunks_reaches_olaf_params_and_bounds_set_queue(fake, tmp_path, monkeypatch):
    d = cfgmod.validate(replace(deployment(fake), num_chunks=3))
    assert d.switches["s1"].queue.num_chunks == 3
    ctl = controller(d, tmp_path, monkeypatch)
    ctl.deploy()
    [written] = olaf_params_written(ctl, fake.servicer)
    assert (written["num_chunks"], written["queue_size"], written["num_grads"]) == (3, 4, 8)
    ctl.close()
    net = tmp_path / "network.yaml"
    cfgmod.save(d, net)
    assert cfgmod.load(net).num_chunks == 3
    args = ["--network", str(net), "--p4info", str(P4INFO), "--bmv2-json", str(tmp_path / "olaf.json")]
    fake.servicer.clear_records()
    r = CliRunner().invoke(olafctl.main, args + ["set-queue", "--size", "2"])
    assert r.exit_code == 1 and "queue_size=2 segments is below num_chunks=3" in r.output, r.output
    assert "at least 3 segments" in r.output
    assert fake.servicer.updates() == []
    r = CliRunner().invoke(olafctl.main, args + ["set-queue", "--size", "3"])
    assert r.exit_code == 0, r.output
    ctl = controller(cfgmod.load(net), tmp_path, monkeypatch)
    ctl.switches["s1"].connect(5.0, push_pipeline=False)
    q, _ = ctl.switches["s1"].params.get()
    assert (q.queue_size, q.num_chunks) == (3, 3)
    ctl.close()


def test_olafctl_without_network_file(tmp_path):
    r = CliRunner().invoke(olafctl.main, ["--network", str(tmp_path / "nope.yaml"), "--p4info", str(P4INFO), "clusters"])
    assert r.exit_code == 1 and "make run DURATION=0" in r.output

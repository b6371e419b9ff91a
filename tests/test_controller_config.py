"""Deployment config: validation errors name the field; builders produce valid networks."""

import pytest
import yaml

from olaf.constants import MAX_CHUNKS
from olaf.controller.config import ConfigError, load, parse, save
from olaf.controller.olaf_params import QueueParams
from olaf.controller.routing import next_hops
from olaf.controller.state import desired_state, group_id
from olaf.topologies.build import QueueSetup, multihop, tor


def minimal():
    return {
        "num_grads": 4,
        "ps": "ps",
        "switches": {"s1": {"grpc": "127.0.0.1:50001", "thrift_port": 9091, "mac": "00:00:00:00:01:00",
                            "queue": {"size": 4, "reward_threshold": 0.5}}},
        "hosts": {
            "ps": {"ip": "10.0.0.100", "mac": "00:00:0a:00:00:64", "switch": "s1", "port": 9},
            "w1": {"ip": "10.0.1.1", "mac": "00:00:0a:00:01:01", "switch": "s1", "port": 1, "worker_id": 1},
            "w2": {"ip": "10.0.1.2", "mac": "00:00:0a:00:01:02", "switch": "s1", "port": 2, "worker_id": 2},
        },
        "clusters": {0: ["w1", "w2"]},
    }


def test_minimal_parses():
    d = parse(minimal())
    assert d.switches["s1"].queue.reward_threshold == 32768
    assert d.cluster_of("w2") == 0


@pytest.mark.parametrize("mutate, field", [
    (lambda c: c["switches"]["s1"].update(grpc="nocolon"), "switches.s1.grpc"),
    (lambda c: c["switches"]["s1"].update(mac="zz"), "switches.s1.mac"),
    (lambda c: c["switches"]["s1"]["queue"].update(size=0), "switches.s1.queue.size"),
    (lambda c: c["switches"]["s1"]["queue"].update(discipline="red"), "switches.s1.queue.discipline"),
    (lambda c: c["switches"]["s1"]["queue"].update(reward_threshold=-1), "switches.s1.queue.reward_threshold"),
    (lambda c: c["switches"]["s1"].update(colour="blue"), "switches.s1.colour"),
    (lambda c: c["hosts"]["w1"].update(ip="10.0.1"), "hosts.w1.ip"),
    (lambda c: c["hosts"]["w2"].update(ip="10.0.1.1"), "hosts.w2.ip"),
    (lambda c: c["hosts"]["w2"].update(port=1), "hosts.w2.port"),
    (lambda c: c["hosts"]["w2"].update(switch="s9"), "hosts.w2.switch"),
    (lambda c: c["hosts"]["w2"].update(worker_id=1), "hosts.w2.worker_id"),
    (lambda c: c.update(ps="nobody"), "ps"),
    (lambda c: c["clusters"].update({1: ["w1"]}), "clusters.1[0]"),
    (lambda c: c["clusters"].update({2: ["w9"]}), "clusters.2[0]"),
    (lambda c: c["clusters"].update({5000: []}), "clusters.5000"),
    (lambda c: c.update(num_grads=-1), "num_grads"),
])
def test_errors_name_the_field(mutate, field):
    c = minimal()
    mutate(c)
    with pytest.raises(ConfigError) as e:
        parse(c)
    assert e.value.path == field, str(e.value)


def test_num_chunks_default_and_in_every_queue():
    d = parse(minimal())
    assert d.num_chunks == 1 and d.switches["s1"].queue.num_chunks == 1
    c = minimal()
    c["num_chunks"] = 4
    d = parse(c)
    assert d.num_chunks == 4 and d.switches["s1"].queue.num_chunks == 4
    assert d.to_dict()["num_chunks"] == 4


@pytest.mark.parametrize("num_chunks, size, field, fix", [
    (5, 4, "switches.s1.queue.size", "give a size of at least 5"),
    (MAX_CHUNKS + 1, 256, "num_chunks", "use a larger MTU"),
    (0, 4, "num_chunks", ""),
])
def test_chunks_the_switch_cannot_hold_are_refused(num_chunks, size, field, fix):
    c = minimal()
    c["num_chunks"] = num_chunks
    c["switches"]["s1"]["queue"]["size"] = size
    c["switches"]["s1"]["bottleneck"] = {"depth": size}
    with pytest.raises(ConfigError) as e:
        parse(c)
    assert e.value.path == field and fix in str(e.value), str(e.value)


def test_queue_params_refuse_a_queue_below_num_chunks():
    with pytest.raises(ValueError, match="queue_size=2 segments is below num_chunks=3"):
        QueueParams(queue_size=2, num_chunks=3)
    with pytest.raises(ValueError, match=f"num_chunks={MAX_CHUNKS + 1} must be in 1..{MAX_CHUNKS}"):
        QueueParams(queue_size=200, num_chunks=MAX_CHUNKS + 1)
    assert QueueParams(queue_size=3, num_chunks=3).num_chunks == 3


def test_disconnected_switch_is_rejected():
    c = minimal()
    c["switches"]["s2"] = {"grpc": "127.0.0.1:50002", "thrift_port": 9092, "mac": "00:00:00:00:02:00"}
    c["hosts"]["w2"]["switch"] = "s2"
    with pytest.raises(ConfigError, match="no path"):
        parse(c)


def test_yaml_round_trip(tmp_path):
    p = tmp_path / "net.yaml"
    p.write_text(yaml.safe_dump(minimal()))
    d = load(p)
    save(d, tmp_path / "again.yaml")
    assert load(tmp_path / "again.yaml") == d
    (tmp_path / "bad.yaml").write_text("switches: [")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(tmp_path / "bad.yaml")


def test_tor_builder_is_the_paper_testbed():
    d = tor()
    assert len(d.clusters) == 9 and all(len(ws) == 3 for ws in d.clusters.values())
    st = desired_state(d, "s1")
    assert len(st.routes) == 28 and len(st.workers) == 27 and len(st.rewrites) == 27
    assert all(len(r) == 3 and all(x.rid >= 1 for x in r) for r in st.groups.values())
    assert group_id(0) == 1


def test_multihop_replicas_and_routes():
    d = multihop(clusters_per_edge=2, workers_per_cluster=2, edge_queue=QueueSetup(size=5, rate_pps=100))
    core = desired_state(d, "s3")
    # s3 reaches cluster 0 (on s1) through its port 1, one unrewritten replica
    assert {r.port for r in core.groups[0]} == {1} and all(r.rid == 0 for r in core.groups[0])
    assert core.rewrites == {}
    edge = desired_state(d, "s1")
    assert all(r.rid >= 1 for r in edge.groups[0])
    assert next_hops(d, "s1")["ps"].port == 5  # uplink after 4 worker ports
    assert d.switches["s1"].queue.queue_size == 5 and d.switches["s3"].queue.queue_size == 8


def shared_address():
    """w1 and w2 on one machine (10.0.1.1, one MAC, s1 port 1), told apart by their UDP ports."""
    c = minimal()
    c["identity"] = "five_tuple"
    c["hosts"]["w2"].update(ip="10.0.1.1", mac="00:00:0a:00:01:01", port=1, udp_port=50102)
    return c


def test_workers_sharing_an_address_get_a_key_and_an_ack_port_each(tmp_path):
    from olaf.controller.entries import Replica, Rewrite
    from olaf.controller.update_identifier import WorkerEntry

    d = parse(shared_address())
    st = desired_state(d, "s1")
    assert st.workers == {("10.0.1.1", 50101): WorkerEntry(1, 0, 1), ("10.0.1.1", 50102): WorkerEntry(2, 0, 1)}
    assert set(st.routes) == {"10.0.0.100", "10.0.1.1"}
    assert st.groups[0] == (Replica(1, 1), Replica(1, 2))
    assert {rid: rw.dst_port for rid, rw in st.rewrites.items()} == {1: 50101, 2: 50102}
    assert st.rewrites[2] == Rewrite("00:00:00:00:01:00", "00:00:0a:00:01:01", "10.0.1.1", 50102)
    save(d, tmp_path / "n.yaml")
    back = load(tmp_path / "n.yaml")
    assert back.hosts == d.hosts and "udp_port" not in yaml.safe_load((tmp_path / "n.yaml").read_text())["hosts"]["w1"]
    # under address_port every worker is its address: one entry matching any UDP port
    c = minimal()
    assert set(desired_state(parse(c), "s1").workers) == {("10.0.1.1", 0), ("10.0.1.2", 0)}


@pytest.mark.parametrize("mutate, field, needle", [
    (lambda c: c.update(identity="address_port"), "hosts.w2.ip", "set identity: five_tuple"),
    (lambda c: c["hosts"]["w2"].update(udp_port=50101), "hosts.w2.udp_port", "its own udp_port"),
    (lambda c: c["hosts"]["w2"].update(mac="00:00:0a:00:01:02"), "hosts.w2.ip", "share those too"),
    (lambda c: c["hosts"]["w2"].update(port=2), "hosts.w2.ip", "share those too"),
    (lambda c: c["hosts"]["ps"].update(ip="10.0.1.1"), "hosts.w1.ip", "only workers may share"),
    (lambda c: c["hosts"]["w2"].update(udp_port=0), "hosts.w2.udp_port", "greater than or equal to 1"),
])
def test_a_shared_address_is_refused_unless_each_worker_is_its_own_five_tuple(mutate, field, needle):
    c = shared_address()
    mutate(c)
    with pytest.raises(ConfigError, match=needle) as e:
        parse(c)
    assert e.value.path == field, str(e.value)

"""Tier 2: the P4 program and the extern build, and the controller's names exist in the P4Info."""

import json

import pytest
from p4runtime_sh.context import P4Type

from olaf.constants import RECLAIM_SLOTS, SEGMENTS, Reclaim, TokenFate
from olaf.controller.ack_multicast import AckMulticast
from olaf.controller.counters import OlafCounters
from olaf.controller.forwarding import Ipv4Forwarding
from olaf.controller.olaf_params import OlafParams
from olaf.controller.p4rt import Pipeline
from olaf.controller.update_identifier import UpdateIdentifier

pytestmark = [pytest.mark.p4, pytest.mark.timeout(600)]  # the first test also waits for `make build`


def test_bmv2_json_uses_the_olaf_extern(build):
    j = json.loads((build / "olaf.json").read_text())
    externs = {e["type"]: e for e in j["extern_instances"]}
    assert "OlafQueue" in externs
    attrs = {a["name"] for a in externs["OlafQueue"]["attribute_values"]}
    assert attrs == {"segments", "num_clusters", "max_chunks"}
    prims = {p["op"] for a in j["actions"] for p in a["primitives"]}
    assert {"_OlafQueue_enqueue", "_OlafQueue_dequeue", "_OlafQueue_status", "_OlafQueue_configure"} <= prims
    assert (build / "olaf_queue.so").stat().st_size > 0


def test_controller_names_exist_in_p4info(build):
    p = Pipeline.from_file(build / "olaf.p4info.txt")
    for _cls, tables, actions in [
        (Ipv4Forwarding, [Ipv4Forwarding.TABLE], [Ipv4Forwarding.ACTION]),
        (UpdateIdentifier, [UpdateIdentifier.TABLE], [UpdateIdentifier.ACTION]),
        (OlafParams, [OlafParams.TABLE], [OlafParams.ACTION]),
        (AckMulticast, [AckMulticast.MCAST_TABLE, AckMulticast.REWRITE_TABLE],
         [AckMulticast.MCAST_ACTION, AckMulticast.REWRITE_ACTION]),
    ]:
        for t in tables:
            p.table_id(t)
        for a in actions:
            p.action(a, {x.name: 0 for x in p._obj(P4Type.action, a).params})
    for c in (OlafCounters.DECISIONS, OlafCounters.CLUSTER_DECISIONS, OlafCounters.MALFORMED,
              OlafCounters.TRAFFIC, OlafCounters.DEPARTURES):
        assert p.counter_size(c) > 0
    assert p.counter_size(OlafCounters.TOKEN_FATES) == len(TokenFate)
    for c in OlafCounters.RECLAIMED:   # histogram: kind * RECLAIM_SLOTS + n, n = 0..SEGMENTS
        assert p.counter_size(c) == len(Reclaim) * RECLAIM_SLOTS == len(Reclaim) * (SEGMENTS + 1)


def test_committed_p4info_is_current(build):
    """tests/data/olaf.p4info.txt (used by the controller unit tests) equals a fresh compile."""
    from pathlib import Path

    committed = Path(__file__).parent / "data" / "olaf.p4info.txt"
    assert committed.read_text() == (build / "olaf.p4info.txt").read_text(), \
        "P4 program changed: cp build/olaf.p4info.txt tests/data/olaf.p4info.txt"

"""The ns-3 QueueDisc (p4src/extern/olaf_queue_ns3.cpp) replays the shared vectors.

Every vector in tests/vectors/ is driven through ``ns3::OlafQueueDisc``'s QueueDisc
interface (Enqueue/Dequeue on ns-3's simulated clock, via olaf/sim/cpp/queue_harness.cpp):
updates go in as real IPv4/UDP datagrams built by scapy and :func:`olaf.wire.encode_update`,
departures come out as datagrams parsed by :func:`olaf.wire.parse_update`. Decisions,
segments, departing updates (bit for bit), their source address (the segment's owner),
status and final counters must equal the reference model's.

``lock`` maps to ``QueueDisc::Peek`` (the head is committed to depart next). Vectors with
``num_chunks`` K > 1 configure the QueueDisc's ``NumChunks`` and carry ``chunk``/``num_chunks``
in every datagram (docs/protocol.md "Chunks").

Skipped: the vectors of the token ledger (:func:`olaf.vectors.uses_token_ledger`:
``dequeue_token`` events, expiry by ``max_sojourn_ns``). The QueueDisc keeps its tokens in
its own FIFO, which cannot lose or reorder them, and departs the head (the core's
``dequeue()``); it has no lossy token path to drive and does not configure expiry. For the
same reason the enqueue's ``token`` is not compared (the QueueDisc does not expose it), and
the final ``lost``/``expired``/``token_fates`` counters of the replayed vectors must be 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP

from olaf.constants import ACK_PORT, UPDATE_PORT, Decision
from olaf.update import Update
from olaf.vectors import load, uses_token_ledger
from olaf.wire import encode_update, parse_update

ALL_VECTORS = sorted((Path(__file__).parent / "vectors").glob("*.json"))
VECTORS = [p for p in ALL_VECTORS if not uses_token_ledger(load(p))]
PS_IP = "10.0.0.100"




def owner_ip(cluster_id: int, worker_id: int) -> str:
    return f"10.{1 + cluster_id // 256}.{cluster_id % 256}.{worker_id % 250 + 1}"


def datagram(u: Update) -> bytes:
    return bytes(IP(src=owner_ip(u.cluster_id, u.worker_id), dst=PS_IP) / UDP(sport=ACK_PORT, dport=UPDATE_PORT)
                 / encode_update(u))


def replay(sim, vector: dict) -> tuple[int, int]:
    """Replay ``vector``; returns (events compared, departures compared)."""
    c = vector["config"]
    thr = -1 if c["reward_threshold"] is None else c["reward_threshold"]
    h = sim.QueueHarness(c.get("discipline", "olaf"), c["segments"], c["num_clusters"], c["num_grads"],
                         c["queue_size"], thr, c["activity_window_ns"], c.get("num_chunks", 1))
    cfg = dict(queue_size=c["queue_size"], reward_threshold=thr, activity_window_ns=c["activity_window_ns"])
    compared = departures = 0
    for i, e in enumerate(vector["events"]):
        where = f"{vector['name']} event {i} ({e['op']})"
        if e["op"] == "lock":
            seg = h.Lock()
            got = {"segment": None if seg < 0 else seg}
        elif e["op"] == "enqueue":
            r = h.Enqueue(datagram(Update.from_json(e["update"])), e["t_ns"])
            assert r.error == "", where
            got = {"decision": Decision(r.decision).label, "segment": None if r.segment < 0 else r.segment,
                   "token": e["expect"]["token"]}  # not exposed by the QueueDisc (module docstring)
        elif e["op"] == "dequeue":
            d = h.Dequeue()
            got = None
            if d.ok:
                raw = bytes(list(d.datagram))
                ip = IP(raw)
                u = parse_update(bytes(ip[UDP].payload))
                assert ip.src == owner_ip(u.cluster_id, u.worker_id), f"{where}: source is not the owner"
                assert ip[UDP].sport == ACK_PORT and ip[UDP].chksum == 0, where
                resum = ip.copy()
                del resum.chksum
                assert IP(bytes(resum)).chksum == ip.chksum, f"{where}: IPv4 checksum"
                got = {"segment": d.segment, "update": u.to_json()}
                departures += 1
        elif e["op"] == "status":
            s = list(h.Status(e["t_ns"]))
            got = {"queue_util": s[0], "active_clusters": s[1], "queue_size": s[2]}
        elif e["op"] == "configure":
            if "reward_threshold" in e:
                cfg["reward_threshold"] = -1 if e["reward_threshold"] is None else e["reward_threshold"]
            for k in ("queue_size", "activity_window_ns"):
                cfg[k] = e.get(k, cfg[k])
            assert h.Configure(cfg["queue_size"], cfg["reward_threshold"], cfg["activity_window_ns"]), where
            continue
        else:
            raise AssertionError(f"{where}: unknown op")
        assert got == e["expect"], where
        compared += 1
    fc = vector.get("final_counters")
    if fc is not None:
        labels = [d.label for d in Decision]
        assert dict(zip(labels, h.Decisions())) == fc["decisions"]
        per = list(h.ClusterDecisions())
        dep = list(h.Departures())
        n = len(labels)
        got_pc = [{**dict(zip(labels, per[k * n:(k + 1) * n])), "departures": dep[k], "lost": 0, "expired": 0}
                  for k in range(len(dep))]
        assert got_pc == fc["per_cluster"], f"{vector['name']}: final counters"
        assert not any(fc["token_fates"].values()), f"{vector['name']}: no token path in the QueueDisc"
    return compared, departures


def test_only_token_ledger_vectors_are_skipped() -> None:
    skipped = {p.stem for p in ALL_VECTORS} - {p.stem for p in VECTORS}
    assert skipped and all(s.startswith(("token_", "random_tokens_")) for s in skipped)
    assert len(VECTORS) >= 26
    chunked = [p.stem for p in VECTORS if load(p)["config"].get("num_chunks", 1) > 1]
    assert len(chunked) >= 8, chunked  # the chunk traces and the seeded chunk traces are replayed


@pytest.mark.ns3
@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_queue_disc_replays_vector(sim, path: Path) -> None:
    vector = json.loads(path.read_text())
    compared, _ = replay(sim, vector)
    assert compared == sum(e["op"] != "configure" for e in vector["events"])


def _update(**kw) -> Update:
    return Update(cluster_id=0, worker_id=1, seq=1, grads=(1, 2), **kw)


@pytest.mark.ns3
def test_queue_disc_counts_and_drops_bad_chunks(sim) -> None:
    """A queue of K = 3: an update announcing another K is refused by the core (bad chunk), one
    whose ``chunk`` is not below its ``num_chunks`` is malformed on the wire, one of another size
    is malformed too; each is counted and dropped, and a good chunk still appends."""
    h = sim.QueueHarness("olaf", 8, 2, 2, 6, -1, 1_000_000, 3)
    bad_k = h.Enqueue(datagram(_update(chunk=1, num_chunks=2)), 10)
    raw = bytearray(datagram(_update(chunk=2, num_chunks=3)))
    raw[28 + 4:28 + 6] = (3).to_bytes(2, "big")  # chunk 3 of 3: outside 0..K-1
    bad_range = h.Enqueue(bytes(raw), 20)
    short = h.Enqueue(datagram(Update(cluster_id=0, worker_id=1, seq=1, grads=(1,), chunk=0, num_chunks=3)), 30)
    good = h.Enqueue(datagram(_update(chunk=2, num_chunks=3)), 40)
    assert [r.decision for r in (bad_k, bad_range, short)] == [255, 255, 255]
    assert bad_k.error == bad_range.error != short.error
    assert (good.decision, good.segment) == (Decision.APPEND, 0)
    assert list(h.Errors()) == [3, 2, 2]  # all; malformed (chunk range, length); bad chunk (another K, range)
    assert list(h.Status(50)) == [1, 1, 2]  # ceil(1 / 3) updates of floor(6 / 3)
    with pytest.raises(Exception, match="num_chunks"):
        sim.QueueHarness("olaf", 8, 2, 2, 2, -1, 1_000_000, 3)  # queue_size below K

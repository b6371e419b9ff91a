"""The committed vectors: the model reproduces each, they are up to date, and they cover every branch."""

import json
from pathlib import Path

import pytest

from olaf import vectors as vec
from olaf.queue_model import TOKEN_MODULUS, Decision, TokenFate, make_queue
from olaf.vectors.corpus import make_update, small_config

VECTOR_DIR = Path(__file__).parent / "vectors"
FILES = sorted(VECTOR_DIR.glob("*.json"))


def test_vector_set_is_present():
    assert len(FILES) >= 20


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_reference_model_reproduces_vector(path):
    assert vec.replay(vec.load(path)) == []


def test_committed_vectors_match_the_generator():
    """Regenerating gives byte-identical files: the committed set is not stale."""
    expected = {t.name: vec.dumps(t.to_json()) for t in vec.all_traces(found_dir=VECTOR_DIR)}
    assert sorted(expected) == sorted(p.stem for p in FILES)
    for p in FILES:
        assert p.read_text() == expected[p.stem], f"{p.name} is stale: run `olaf vectors generate`"


def test_every_decision_and_event_kind_is_covered():
    vs = [vec.load(p) for p in FILES]
    assert set().union(*(vec.decisions_covered(v) for v in vs)) == set(Decision)
    ops = {e["op"] for v in vs for e in v["events"]}
    assert ops == set(vec.format.OPS)
    assert set().union(*(vec.fates_covered(v) for v in vs)) == set(TokenFate)
    assert any(e["op"] == "dequeue" and e["expect"] is None for v in vs for e in v["events"])
    assert {v["config"]["discipline"] for v in vs} == {"olaf", "fifo"}


def test_replay_reports_a_mismatch(tmp_path):
    v = vec.load(VECTOR_DIR / "aggregate_basic.json")
    v["events"][1]["expect"]["decision"] = "append"
    bad = vec.replay(v)
    assert len(bad) == 1 and bad[0].event_index == 1 and "append" in str(bad[0])


def test_load_rejects_bad_files(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{")
    with pytest.raises(vec.VectorFormatError, match="not JSON"):
        vec.load(p)
    p.write_text(json.dumps({"format": "olaf-queue-vectors", "format_version": 9}))
    with pytest.raises(vec.VectorFormatError, match="format_version"):
        vec.load(p)


def test_curated_trace_fails_to_build_if_its_branch_changes():
    b = vec.TraceBuilder("t", "", small_config())
    b.enqueue(make_update(0, 1, grads=[0] * 4), expect="append")
    with pytest.raises(AssertionError, match="expected drop_full"):
        b.enqueue(make_update(0, 2, grads=[0] * 4), expect="drop_full")


def test_token_ledger_vectors_cover_loss_expiry_and_wrap():
    """The ledger's cases each have a vector: segments reclaimed as lost and as expired,
    token ids wrapping past 2**32-1, and which vectors the lossless shells skip."""
    vs = {p.stem: vec.load(p) for p in FILES}
    totals = {k: sum(row[k] for v in vs.values() for row in v["final_counters"]["per_cluster"])
              for k in ("lost", "expired")}
    assert totals["lost"] > 0 and totals["expired"] > 0
    wrap = [e["expect"]["token"] for e in vs["token_serial_wrap"]["events"] if e["op"] == "enqueue"]
    assert TOKEN_MODULUS - 1 in wrap and 0 in wrap
    assert vec.uses_token_ledger(vs["token_expiry_unsticks_full_queue"])
    assert not vec.uses_token_ledger(vs["aggregate_basic"])


def test_conservation_holds_in_every_vector():
    """Σ append = Σ departures + Σ lost + Σ expired + occupancy, after every event."""
    for p in FILES:
        v = vec.load(p)
        cfg, disc = vec.config_of(v)
        q = make_queue(cfg, disc)
        for e in v["events"]:
            vec.outcome(q, e)
            q.check_invariants()

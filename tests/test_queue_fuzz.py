"""The C++ queue core under fuzzing and token loss (docs/vectors.md "Fuzzing",
docs/dataplane.md "The token ledger").

* the committed fuzz corpus (tests/fuzz/corpus) replayed by the fuzzer's trace program
  (ASan/UBSan, every check of the harness after every call) agrees with the reference
  model event by event;
* a short, seeded libFuzzer run (where clang's libFuzzer is installed);
* a divergence, a failed check and a crash each become a vector file with the model's
  expectations, which the corpus generator keeps;
* the 0.1 % token-loss regression: no leaked segment, every departure carries
  its token's segment; the egress before the ledger, run the same way, leaks and
  mis-delivers.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from olaf import vectors as vec
from olaf.vectors.differential import FOUND_PREFIX, Trace, check_trace, differential, read_trace, save_finding

pytestmark = pytest.mark.slow  # builds the core with ASan/UBSan (and libFuzzer where clang has it)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"


def _make(target: str) -> Path:
    deps = subprocess.run([str(ROOT / "scripts" / "check-system-deps.sh"), "cpp"], capture_output=True, text=True)
    if deps.returncode != 0:
        pytest.skip(f"C++ toolchain not installable here: {deps.stderr.strip()}")
    r = subprocess.run(["make", "-s", f"build/{target}"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return ROOT / "build" / target


@pytest.fixture(scope="module")
def trace_tool() -> Path:
    return _make("fuzz_queue_trace")


def test_committed_corpus_agrees_with_the_model(trace_tool):
    inputs = sorted(CORPUS.iterdir())
    assert len(inputs) >= 20
    findings, n, events = differential(trace_tool, inputs)
    assert [(f.trace.name, f.kind, f.detail) for f in findings] == []
    assert n == len(inputs) and events > 2000


def test_short_libfuzzer_run(tmp_path):
    if shutil.which("clang++") is None:
        pytest.skip("clang++ is not installed (apt-get install --no-install-recommends clang libclang-rt-14-dev)")
    r = subprocess.run(["make", "-s", "build/fuzz_queue_core"], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0 and "fuzzer" in (r.stdout + r.stderr):
        pytest.skip(f"clang's libFuzzer runtime is missing (libclang-rt-14-dev): {r.stderr.strip()[-200:]}")
    assert r.returncode == 0, r.stdout + r.stderr
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    run = subprocess.run([str(ROOT / "build" / "fuzz_queue_core"), "-seed=1", "-runs=1000", "-max_len=4096",
                          f"-artifact_prefix={tmp_path}/", str(corpus)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert re.search(r"Done \d+ runs", run.stderr)
    assert not list(tmp_path.glob("crash-*"))


def _a_trace(trace_tool, tmp_path) -> Path:
    """The trace of the largest committed input."""
    big = max(CORPUS.iterdir(), key=lambda p: p.stat().st_size)
    subprocess.run([str(trace_tool), str(tmp_path), str(big)], check=True, capture_output=True)
    return tmp_path / f"{big.name}.jsonl"


def test_a_divergence_becomes_a_vector(trace_tool, tmp_path):
    """A C++ outcome that differs from the model (here: one changed in the trace, as a
    bug in the core would) is found, and saved with the model's expectation."""
    path = _a_trace(trace_tool, tmp_path)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    i = next(i for i, x in enumerate(lines) if "expect" in x and isinstance(x["expect"], dict)
             and x["expect"].get("decision") == "append")
    lines[i]["expect"]["segment"] += 1
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    f = check_trace(read_trace(path))
    assert f is not None and f.kind == "divergence" and f.mismatches[0].op == "enqueue"
    out = save_finding(f, tmp_path / "found")
    assert out.name.startswith(f"{FOUND_PREFIX}divergence_")
    v = vec.load(out)
    assert vec.replay(v) == []
    assert v["events"][f.mismatches[0].event_index]["expect"]["segment"] == lines[i]["expect"]["segment"] - 1
    regenerated = {t.name: vec.dumps(t.to_json()) for t in vec.all_traces(found_dir=out.parent)}
    assert regenerated[out.stem] == out.read_text()


def test_a_failed_check_and_a_crash_become_vectors(trace_tool, tmp_path):
    path = _a_trace(trace_tool, tmp_path)
    lines = path.read_text().splitlines()
    failed = read_trace(path)
    failed.failure = "after dequeue_token: segments not conserved"
    f = check_trace(failed)
    assert f is not None and f.kind == "invariant"
    crashed = tmp_path / "crashed.jsonl"
    cut = next(i for i, x in enumerate(lines) if i > len(lines) // 2 and '"event"' in x)
    crashed.write_text("\n".join(lines[: cut + 1]) + "\n")   # stopped inside a call
    t: Trace = read_trace(crashed)
    f = check_trace(t)
    assert f is not None and f.kind == "crash" and not t.complete
    v = vec.load(save_finding(f, tmp_path / "found"))
    assert len(v["events"]) == len(t.vector["events"]) and vec.replay(v) == []


@pytest.fixture(scope="module")
def token_loss() -> Path:
    return _make("test_token_loss")


def _run_token_loss(binary: Path, *args: str) -> tuple[int, dict]:
    r = subprocess.run([str(binary), *args], capture_output=True, text=True)
    return r.returncode, json.loads(r.stdout)


@pytest.mark.parametrize("seed,loss", [(1, "0.001"), (2, "0.001"), (3, "0.001"), (4, "0.01")])
def test_token_loss_leaks_nothing_with_the_ledger(token_loss, seed, loss):
    rc, r = _run_token_loss(token_loss, "--mode", "ledger", "--seed", str(seed), "--loss", loss)
    assert rc == 0, r
    assert r["updates"] == 10000 and r["tokens_dropped"] > 0
    assert (r["wrong_departures"], r["leaked_segments"], r["stale"]) == (0, 0, 0)
    assert r["lost"] + r["expired"] == r["tokens_dropped"]
    assert r["appends"] == r["departures"] + r["lost"] + r["expired"]


def test_token_loss_before_the_ledger_leaks_and_misdelivers(token_loss):
    """The egress before the ledger (pop the head whatever token arrives), same traffic
    model: segments leak for good and departures carry another token's segment."""
    rc, r = _run_token_loss(token_loss, "--mode", "legacy", "--seed", "1")
    assert rc == 0
    assert r["tokens_dropped"] > 0
    assert r["leaked_segments"] == r["tokens_dropped"]
    assert r["wrong_departures"] > r["departures"] // 4

"""The C++ OlafQueue core (used by the BMv2 extern) replays every shared vector, with no switch."""

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds the C++ core first

ROOT = Path(__file__).resolve().parents[1]
VECTORS = sorted((ROOT / "tests" / "vectors").glob("*.json"))


@pytest.fixture(scope="module")
def core_test_binary():
    deps = subprocess.run([str(ROOT / "scripts" / "check-system-deps.sh"), "cpp"],
                          capture_output=True, text=True)
    if deps.returncode != 0:
        pytest.skip(f"C++ toolchain not installable here: {deps.stderr.strip()}")
    subprocess.run(["make", "-s", "build/test_queue_core"], cwd=ROOT, check=True)
    return ROOT / "build" / "test_queue_core"


def test_cpp_core_matches_every_vector(core_test_binary):
    r = subprocess.run([str(core_test_binary), *map(str, VECTORS)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(VECTORS)}/{len(VECTORS)} vector files match" in r.stdout


def test_cpp_core_reports_a_tampered_vector(core_test_binary, tmp_path):
    v = json.loads((ROOT / "tests" / "vectors" / "aggregate_basic.json").read_text())
    dep = next(e for e in v["events"] if e["op"] == "dequeue")
    dep["expect"]["update"]["grads"][0] += 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(v))
    r = subprocess.run([str(core_test_binary), str(bad)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "event" in r.stderr and "dequeue" in r.stderr

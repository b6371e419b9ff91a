"""Tier 2: a short data-plane fuzzing run against BMv2 (the long one is `make fuzz`):
a few thousand malformed, spoofed, forged and valid frames; after every batch the
switch answers, every frame is counted exactly once, nothing leaks, one probe per
cluster appends and departs, and every frame the switch emits has valid checksums."""

import json
import subprocess
import sys

import pytest
from p4_tier import ROOT, require_root

pytestmark = pytest.mark.p4


@pytest.mark.timeout(900)  # `make build` and a 600 s budget for the run
def test_short_fuzz_run_keeps_every_invariant(build, tmp_path):
    require_root()
    out = tmp_path / "fuzz.json"
    r = subprocess.run([sys.executable, "-m", "olaf.dpfuzz", "--frames", "3000", "--batch", "500", "--seed", "7",
                        "--build", str(build), "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert out.exists(), r.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["failure"] is None and r.returncode == 0, res["failure"]
    assert res["switch_alive"] and res["bad_checksums"] == 0
    assert res["frames"] == 3000 and res["batches"] == 6 and res["probes"] == 12
    assert set(res["families"]) >= {"scapy_fuzz", "lengths", "ip_layer", "identity", "acks"}
    assert sum(res["counters"]["malformed"].values()) > 0 and res["counters"]["traffic"]["spoofed_source"] > 0

"""examples/sb3_client.py — the guide's Stable-Baselines3 loop (docs/client.md) — run for real: an
`olaf ps` process and three example workers over loopback UDP, a few iterations each. Checked per
iteration and per update, never against a reward or a time: every update the workers sent was
received by the PS (all K chunks of it), every worker adopted the global model, and the global
model moved. HANG_S only guards against a hang."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostnet import guard, loopback_net
from tiers import require

require("train")
pytestmark = pytest.mark.train

from stable_baselines3 import PPO  # noqa: E402
from torch.nn.utils import parameters_to_vector  # noqa: E402

from olaf.chunks import Chunking  # noqa: E402
from olaf.constants import MTU  # noqa: E402

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sb3_client.py"
WORKERS = 3
ITERATIONS = 4
HANG_S = 240.0


def wait_for(what: str, ok, procs=()) -> None:
    """Poll ``ok()`` until it holds; fail if HANG_S passes or one of ``procs`` exits with an error first."""
    deadline = time.monotonic() + guard(HANG_S)
    while not ok():
        for p in procs:
            assert p.poll() in (None, 0), f"{what}: a process exited with {p.returncode}: {p.stderr.read()}"
        assert time.monotonic() < deadline, f"hang guard: {what} not done after {guard(HANG_S):.0f} s"
        time.sleep(0.05)


@pytest.mark.timeout(HANG_S + 120)
def test_the_sb3_example_trains_against_a_real_ps(tmp_path):
    num_params = parameters_to_vector(PPO("MlpPolicy", "CartPole-v1").policy.parameters()).numel()
    k = Chunking.for_model(num_params, MTU).num_chunks
    assert k > 1  # the example's model travels in chunks
    ip = loopback_net()
    # three learners on a small machine; SB3 would put its default logger's directories here
    sb3_logs = tmp_path / "sb3-logdir"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SB3_LOGDIR": str(sb3_logs)}
    ps = subprocess.Popen([sys.executable, "-m", "olaf.cli", "ps", "--bind", ip(100), "--out-dir", str(tmp_path),
                           "--num-params", str(num_params), "--mtu", str(MTU), "--step", "paper", "--lr", "0.3",
                           "--no-reward-gate", "--flush-ms", "0"], stderr=subprocess.PIPE, text=True)
    workers = []
    try:
        log = tmp_path / "ps.jsonl"
        wait_for("the PS's start record", lambda: log.exists() and log.read_text().strip(), [ps])
        workers = [subprocess.Popen([sys.executable, str(EXAMPLE), "--ps", ip(100), "--bind", ip(i + 1),
                                     "--iterations", str(ITERATIONS), "--seed", str(i)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                   for i in range(WORKERS)]
        wait_for("the example workers", lambda: all(w.poll() is not None for w in workers), workers)
        outs = []
        for w in workers:
            stdout, stderr = w.communicate()
            assert w.returncode == 0, stderr
            outs.append([json.loads(line) for line in stdout.splitlines()])
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
        ps.send_signal(signal.SIGTERM)
        assert ps.wait(guard(60)) == 0, ps.stderr.read()
    summary = json.loads((tmp_path / "ps.summary.json").read_text())
    assert not sb3_logs.exists(), "the example left SB3's default logger on: a directory per learn() call"

    total_sent = 0
    for lines in outs:
        *iterations, last = lines
        st = last["stats"]
        assert [it["iteration"] for it in iterations] == list(range(ITERATIONS))
        sent = [it for it in iterations if it["sent"]]
        assert [it["seq"] for it in sent] == list(range(1, len(sent) + 1))  # one seq per sent update
        assert st["pushes"] == ITERATIONS and st["sent"] == len(sent) >= 1
        assert st["chunks_sent"] == k * st["sent"] and st["send_errors"] == 0
        # the global model came back and was adopted between iterations
        assert st["model_acked"] and any(it["adopted_slices"] > 0 for it in iterations)
        assert (st["acks_malformed"], st["acks_foreign"], st["acks_wrong_size"]) == (0, 0, 0)
        assert sum(st["ack_slices"].values()) == st["sent"]
        assert last["global_moved"] > 0  # the PS applied updates: the model differs from the one at INIT
        total_sent += st["sent"]

    # every chunk of every sent update reached the PS (loopback loses none), and was applied and answered
    assert (summary["num_chunks"], summary["num_weights"]) == (k, num_params)
    assert (summary["malformed"], summary["wrong_size"], summary["untrusted"]) == (0, 0, 0)
    per_chunk = {c: sum(cl[str(c)]["chunks"] for cl in summary["per_chunk"].values()) for c in range(k)}
    assert per_chunk == {c: total_sent for c in range(k)}
    assert all(v["acked"] == v["chunks"] for cl in summary["per_chunk"].values() for v in cl.values())
    assert summary["accepted"] == summary["updates"] == k * total_sent

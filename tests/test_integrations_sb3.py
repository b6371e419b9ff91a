"""olaf.integrations.sb3 (examples/sb3_callback.py: SB3's quick-start plus the callback) run for
real: an `olaf ps` process and two example workers over loopback UDP. Checked per iteration and
per update, never against a time: every rollout's train became one pushed update, every chunk of
every update reached the PS and was applied, each worker adopted the global model, and the
workers' episode return grew over the iterations they ran. HANG_S only guards against a hang."""

import json
import os
import re
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
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from torch.nn.utils import parameters_to_vector  # noqa: E402

from olaf.chunks import Chunking  # noqa: E402
from olaf.constants import MTU  # noqa: E402

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sb3_callback.py"
WORKERS = 2
ITERATIONS = 10  # of PPO's default 2,048 steps
HANG_S = 400.0
ROW = re.compile(r"^\|\s*(\S+)\s*\|\s*(\S*)\s*\|$")


def tables(stdout: str) -> list[dict[str, float]]:
    """SB3's logger tables (verbose=1), one dict per iteration: ``{"rollout/ep_rew_mean": …}``."""
    out: list[dict[str, float]] = []
    cur: dict[str, float] = {}
    section = ""
    for line in stdout.splitlines():
        if line.startswith("---"):
            if cur:
                out.append(cur)
            cur, section = {}, ""
            continue
        m = ROW.match(line.strip())
        if not m:
            continue
        key, value = m.groups()
        if key.endswith("/") and not value:
            section = key
        elif value:
            try:
                cur[section + key] = float(value)
            except ValueError:
                pass
    return out


def wait_for(what: str, ok, procs=()) -> None:
    deadline = time.monotonic() + guard(HANG_S)
    while not ok():
        for p in procs:
            assert p.poll() in (None, 0), f"{what}: a process exited with {p.returncode}: {p.stderr.read()}"
        assert time.monotonic() < deadline, f"hang guard: {what} not done after {guard(HANG_S):.0f} s"
        time.sleep(0.05)


def test_the_callback_refuses_what_it_cannot_do():
    from olaf.integrations.sb3 import OlafCallback

    with pytest.raises(ValueError, match="ps=None"):
        OlafCallback()
    with pytest.raises(ValueError, match="ack_wait_s"):
        OlafCallback(ps="127.0.0.1", ack_wait_s=-1)
    assert isinstance(OlafCallback(ps="127.0.0.1"), BaseCallback)


@pytest.mark.timeout(HANG_S + 120)
def test_sb3_workers_learn_cartpole_through_a_real_ps(tmp_path):
    num_params = parameters_to_vector(PPO("MlpPolicy", "CartPole-v1").policy.parameters()).numel()
    k = Chunking.for_model(num_params, MTU).num_chunks
    ip = loopback_net()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    ps = subprocess.Popen([sys.executable, "-m", "olaf.cli", "ps", "--bind", ip(100), "--out-dir", str(tmp_path),
                           "--num-params", str(num_params), "--mtu", str(MTU), "--step", "sgd", "--lr", "1",
                           "--no-reward-gate", "--flush-ms", "0"], stderr=subprocess.PIPE, text=True)
    workers = []
    try:
        log = tmp_path / "ps.jsonl"
        wait_for("the PS's start record", lambda: log.exists() and log.read_text().strip(), [ps])
        workers = [subprocess.Popen([sys.executable, str(EXAMPLE), ip(100), ip(i + 1), str(ITERATIONS * 2048), str(i)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                   for i in range(WORKERS)]
        wait_for("the example workers", lambda: all(w.poll() is not None for w in workers), workers)
        outs = []
        for w in workers:
            stdout, stderr = w.communicate()
            assert w.returncode == 0, stderr
            outs.append(tables(stdout))
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
        ps.send_signal(signal.SIGTERM)
        assert ps.wait(guard(60)) == 0, ps.stderr.read()
    summary = json.loads((tmp_path / "ps.summary.json").read_text())
    total_sent = 0
    for rows in outs:
        assert len(rows) == ITERATIONS, rows
        # one update per train: pushed at the next rollout's start (the last at training end, not in a table)
        assert [r.get("olaf/sent") for r in rows[1:]] == [float(i) for i in range(1, ITERATIONS)]
        assert max(r.get("olaf/adopted_slices", 0) for r in rows) >= 2 * k  # it came back after the INIT too
        # it learned: the mean return of the last 100 episodes, per iteration of this worker
        first, last = rows[0]["rollout/ep_rew_mean"], rows[-1]["rollout/ep_rew_mean"]
        assert last > 2 * first, [r["rollout/ep_rew_mean"] for r in rows]
        total_sent += ITERATIONS
    assert (summary["num_chunks"], summary["num_weights"]) == (k, num_params)
    assert (summary["malformed"], summary["wrong_size"], summary["untrusted"]) == (0, 0, 0)
    assert summary["accepted"] == summary["updates"] == k * total_sent

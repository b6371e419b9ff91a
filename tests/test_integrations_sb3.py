"""olaf.integrations.sb3 (examples/sb3_callback.py: SB3's quick-start plus the callback) run for
real: `olaf launch` with a PS and two example workers over loopback UDP. Checked per iteration and
per update, never against a time: every rollout's train became one pushed update, every chunk of
every update reached the PS and was applied, each worker adopted the global model, and the
workers' episode return grew over the iterations they ran. HANG_S only guards against a hang."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hostnet import guard
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


def test_the_callback_refuses_what_it_cannot_do(monkeypatch):
    from olaf.integrations.sb3 import OlafCallback

    monkeypatch.delenv("OLAF_PS", raising=False)
    with pytest.raises(ValueError, match="olaf launch"):
        OlafCallback()  # no PS, no client, not launched
    with pytest.raises(ValueError, match="ack_wait_s"):
        OlafCallback(ps="127.0.0.1", ack_wait_s=-1)
    assert isinstance(OlafCallback(ps="127.0.0.1"), BaseCallback)


@pytest.mark.timeout(HANG_S + 120)
def test_sb3_workers_learn_cartpole_through_a_real_ps(tmp_path):
    num_params = parameters_to_vector(PPO("MlpPolicy", "CartPole-v1").policy.parameters()).numel()
    k = Chunking.for_model(num_params, MTU).num_chunks
    run = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "olaf.cli", "launch", "-n", str(WORKERS), "--out", str(run),
                        "--ps-args", "--step sgd --lr 1 --no-reward-gate --flush-ms 0", "--", sys.executable,
                        str(EXAMPLE)], capture_output=True, text=True, timeout=guard(HANG_S))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    summary = json.loads((run / "hosts" / "ps.summary.json").read_text())
    total_sent = 0
    for rank in range(WORKERS):
        rows = tables((run / "logs" / f"rank-{rank}.out").read_text())
        assert len(rows) == ITERATIONS, rows
        # one update per train: pushed at the next rollout's start (the last at training end, not in a table)
        assert [row.get("olaf/sent") for row in rows[1:]] == [float(i) for i in range(1, ITERATIONS)]
        assert max(row.get("olaf/adopted_slices", 0) for row in rows) >= 2 * k  # it came back after the INIT too
        assert {row.get("olaf/refusals_own") for row in rows[1:]} == {0.0}  # the PS applied every update
        # it learned: the mean return of the last 100 episodes, per iteration of this worker
        first, last = rows[0]["rollout/ep_rew_mean"], rows[-1]["rollout/ep_rew_mean"]
        assert last > 2 * first, [row["rollout/ep_rew_mean"] for row in rows]
        total_sent += ITERATIONS
    assert (summary["num_chunks"], summary["num_weights"]) == (k, num_params)
    assert (summary["malformed"], summary["wrong_size"], summary["untrusted"]) == (0, 0, 0)
    assert summary["accepted"] == summary["updates"] == k * total_sent

"""olaf.integrations.torch.DistributedOptimizer (examples/cleanrl_ppo.py: CleanRL's PPO plus the
lines marked `# olaf`) run for real: `olaf launch` with a PS and two example workers over loopback
UDP. Checked per iteration and per update, never against a time: every iteration's update
reached the PS and was applied, and the workers' episode return grew over the iterations they
ran. HANG_S only guards against a hang."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hostnet import guard
from tiers import require

require("train")
pytestmark = pytest.mark.train

import torch  # noqa: E402

from olaf.chunks import Chunking  # noqa: E402
from olaf.constants import MTU  # noqa: E402

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cleanrl_ppo.py"
WORKERS = 2
ITERATIONS = 30  # of 4 environments x 128 steps
HANG_S = 400.0


def test_the_wrapper_refuses_what_it_cannot_do(monkeypatch):
    from olaf.integrations.torch import DistributedOptimizer

    monkeypatch.delenv("OLAF_PS", raising=False)
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="olaf launch"):
        DistributedOptimizer(opt, model)
    with pytest.raises(ValueError, match="push_every"):
        DistributedOptimizer(opt, model, ps="127.0.0.1", push_every=0)
    with pytest.raises(ValueError, match="does not update every parameter"):
        DistributedOptimizer(torch.optim.SGD([model.weight], lr=0.1), model, ps="127.0.0.1")
    with pytest.raises(ValueError, match="torch.optim.Optimizer"):
        DistributedOptimizer(object(), model, ps="127.0.0.1")  # type: ignore[arg-type]


@pytest.mark.timeout(HANG_S + 120)
def test_cleanrl_workers_learn_cartpole_through_a_real_ps(tmp_path):
    k = Chunking.for_model(9155, MTU).num_chunks  # CleanRL's agent: 9,155 parameters
    run = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "olaf.cli", "launch", "-n", str(WORKERS), "--out", str(run),
                        "--ps-args", "--step sgd --lr 1 --no-reward-gate --flush-ms 0", "--", sys.executable,
                        str(EXAMPLE), str(ITERATIONS)], capture_output=True, text=True, timeout=guard(HANG_S))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "for P=9155 at MTU 1500" in r.stderr
    for rank in range(WORKERS):
        lines = [json.loads(x) for x in (run / "logs" / f"rank-{rank}.out").read_text().splitlines() if x.startswith("{")]
        assert [x["iteration"] for x in lines] == list(range(ITERATIONS))
        means = [x["mean_return"] for x in lines if x["mean_return"] is not None]
        first, last = sum(means[:5]) / 5, sum(means[-5:]) / 5
        assert last > 2 * first, means  # it learned
    summary = json.loads((run / "hosts" / "ps.summary.json").read_text())
    assert (summary["num_chunks"], summary["num_weights"]) == (k, 9155)
    assert (summary["malformed"], summary["wrong_size"], summary["untrusted"]) == (0, 0, 0)
    # one update per iteration (pushed at the next sync; the last at close), every chunk applied
    assert summary["accepted"] == summary["updates"] == k * WORKERS * ITERATIONS

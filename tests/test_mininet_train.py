"""Tier 3: `olaf train` — real PPO workers (CartPole-v1) training through BMv2 in Mininet, with a
congesting bottleneck, under the OlafQueue and under FIFO; and `olaf train compare` writing its
table, curves and figure from real jobs.

The mean worker reward of an untrained policy is about 22; each job must take it above
THRESHOLD (the job stops there). The first reward the monitor saw must be far below it, so a
job cannot pass without learning.
"""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from p4_tier import ROOT  # noqa: E402
from test_mininet_run import build, leftovers  # noqa: E402,F401  (the module-scoped build fixture)

OLAF = str(Path(sys.executable).parent / "olaf")
THRESHOLD = 100.0
JOB = ["--env", "CartPole-v1", "--clusters", "2", "--workers-per-cluster", "2", "--target", str(THRESHOLD)]


def train(args, results, build, timeout=300):  # noqa: F811
    return subprocess.run([OLAF, "train", "--build", str(build), *args, "--results", str(results)],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)


@pytest.mark.parametrize("queue", ["olaf", "fifo"])
def test_cartpole_trains_through_a_congested_switch(build, tmp_path, queue):  # noqa: F811
    r = train([*JOB, "--queue", queue, "--rate-pps", "10", "--budget-s", "120"], tmp_path, build)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = (tmp_path / "latest").resolve()
    t = json.loads((out / "training.json").read_text())
    assert t["reached"], f"mean worker reward {t['final_mean_worker_reward']} after {t['elapsed_s']:.0f} s"
    assert t["final_mean_worker_reward"] >= THRESHOLD and t["workers_with_reward"] == 4
    assert t["saturated_elements"] == 0 and t["worker_errors"] == {}
    with open(out / "progress.csv") as f:
        first = next(float(r["mean_worker_reward"]) for r in csv.DictReader(f) if r["mean_worker_reward"])
    assert first < 50, f"an untrained policy scores about 22, the job started at {first}"
    # through the switch: its counters and the AoM report of the same run
    s = json.loads((out / "summary.json").read_text())
    dec = json.loads((out / "switch_counters.json").read_text())["s1"]["decisions"]
    assert s["overall"]["delivered"] == dec["append"] > 0
    assert s["overall"]["sent"] == sum(dec.values())
    if queue == "olaf":
        assert dec["aggregate"] > 0, "10 pps under ~28 updates/s must aggregate"
    else:
        assert dec["aggregate"] == 0 and dec["drop_full"] > 0
    for f in ("rewards.csv", "reward_time.png", "reward_updates.png", "aom.png", "network.yaml"):
        assert (out / f).exists(), f
    assert leftovers(tmp_path) == []


def test_train_compare_fig3_writes_table_curves_and_figure(build, tmp_path):  # noqa: F811
    r = subprocess.run([OLAF, "train", "--build", str(build), "--env", "CartPole-v1", "--target", "60",
                        "--budget-s", "40", "compare", "fig3", "--out", str(tmp_path / "fig3")],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = tmp_path / "fig3"
    runs = list(csv.DictReader(open(out / "runs.csv")))
    assert [x["arm"] for x in runs] == ["N=1", "N=2", "N=4", "N=8"]
    assert all(float(x["final_mean_worker_reward"]) > 30 for x in runs), runs
    arms = {row["arm"] for row in csv.DictReader(open(out / "curves.csv"))}
    assert arms == {"N=1", "N=2", "N=4", "N=8"}
    md = (out / "fig3.md").read_text()
    assert "Fig. 3" in md and "| N=8 |" in md
    assert (out / "fig3.png").stat().st_size > 10_000
    assert leftovers(tmp_path) == []


def test_train_refuses_bad_options_before_starting(tmp_path):
    for args, needle in ((["--env", "Pendulum-v1"], "discrete"), (["--env", "NoSuchEnv-v0"], "unknown Gymnasium"),
                         (["--hidden", "64,64"], "at most 359 elements"), (["--hidden", "a"], "--hidden"),
                         (["compare", "fig8", "--rates", "3,6"], "HIGH > LOW")):
        r = subprocess.run([OLAF, "train", "--results", str(tmp_path), *args], capture_output=True, text=True,
                           cwd=ROOT, timeout=120)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert needle in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    assert list(tmp_path.iterdir()) == []

"""`olaf launch` (olaf/launch.py) and OlafClient.from_env run for real: a PS and N copies of a
numpy training script over loopback. Checked per update, never against a time."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from olaf.chunks import Chunking
from olaf.constants import MTU
from olaf.launchenv import LaunchEnv, LaunchEnvError

SCRIPT = Path(__file__).resolve().parent / "data" / "launch_worker.py"
P = 3000  # K = 9 chunks at MTU 1500


def launch(tmp_path: Path, n: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "olaf.cli", "launch", "-n", str(n), "--out", str(tmp_path / "run"),
                           "--ps-args", "--no-reward-gate", "--", sys.executable, str(SCRIPT), *args],
                          capture_output=True, text=True, timeout=300)


def test_a_launch_runs_a_ps_and_its_workers_and_every_update_arrives(tmp_path):
    r = launch(tmp_path, 3, str(P))
    assert r.returncode == 0, r.stdout + r.stderr
    k = Chunking.for_model(P, MTU).num_chunks
    stats = {}
    for line in r.stdout.splitlines():  # each worker's lines carry its rank
        rank, _, text = line.partition(" ")
        if text.startswith("{"):
            stats[rank] = json.loads(text)
    assert sorted(stats) == ["[0]", "[1]", "[2]"]
    for st in stats.values():
        assert st["model_acked"] and st["sent"] == 5 and st["chunks_sent"] == 5 * k
        assert sum(st["ack_slices"].values()) == 5
    run = tmp_path / "run"
    summary = json.loads((run / "hosts" / "ps.summary.json").read_text())
    assert (summary["num_weights"], summary["num_chunks"]) == (P, k)
    assert summary["updates"] == summary["accepted"] == 3 * 5 * k
    meta = json.loads((run / "launch.json").read_text())
    assert meta["exit_codes"] == {"0": 0, "1": 0, "2": 0} and meta["model"] == {"num_params": P, "mtu": MTU}
    assert (run / "logs" / "rank-2.out").read_text().strip().startswith("{")
    assert f"PS at {meta['ps']} for P={P}" in r.stderr
    # every worker wrote its log into the run directory, so olaf report reads the launch as any run
    assert sorted(p.name for p in (run / "hosts").glob("w*.jsonl")) == ["w1.jsonl", "w2.jsonl", "w3.jsonl"]
    rep = subprocess.run([sys.executable, "-m", "olaf.cli", "report", str(run)], capture_output=True, text=True,
                         timeout=300)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    overall = json.loads((run / "summary.json").read_text())["overall"]
    assert (overall["workers"], overall["sent"], overall["delivered"], overall["dropped"]) == (3, 15, 15, 0)


def test_a_failing_worker_stops_the_launch_with_its_exit_code(tmp_path):
    r = launch(tmp_path, 2, str(P), "fail1")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "rank 1 exited with 3; the others were stopped" in r.stderr
    codes = json.loads((tmp_path / "run" / "launch.json").read_text())["exit_codes"]
    assert codes["1"] == 3 and codes["0"] != 0  # rank 0 was waiting: the launcher stopped it


def test_a_worker_with_another_model_size_is_refused_by_name(tmp_path):
    r = launch(tmp_path, 2, str(P), "size1")
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert f"P={P + 1}" in out and f"P={P}" in out and "same model" in out


def test_from_env_outside_a_launch_says_how_to_start_it():
    with pytest.raises(LaunchEnvError, match="olaf launch -n N"):
        LaunchEnv.read({})
    with pytest.raises(LaunchEnvError, match="OLAF_RANK"):
        LaunchEnv.read({"OLAF_PS": "127.0.0.1:50100", "OLAF_BIND": "127.0.0.2", "OLAF_WORLD_SIZE": "2",
                        "OLAF_MTU": "1500", "OLAF_LAUNCH_DIR": "/tmp"})


def test_the_launch_command_needs_a_command():
    from click.testing import CliRunner

    from olaf.cli import main

    r = CliRunner().invoke(main, ["launch", "-n", "2", "--out", "/tmp/olaf-launch-none"])
    assert r.exit_code == 2 and "give the command to launch" in r.output
    r = CliRunner().invoke(main, ["launch", "-n", "2", "--ps-args", "--mtu 9000", "--", "true"])
    assert r.exit_code == 2 and "--mtu: set by the launch" in r.output

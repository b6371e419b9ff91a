"""`olaf train`'s option errors that need neither root nor a switch: `--ideal` against a bottleneck
and against `compare`, an `--mtu` above the backend's or too small for one element (the message
names only options `olaf train` has). Nothing may start: no run directory appears."""

import pytest
from click.testing import CliRunner
from tiers import require

require("train")
pytestmark = pytest.mark.train

from olaf.cli import main  # noqa: E402


@pytest.mark.parametrize("args, needle", [
    (["--ideal", "--rate-pps", "4"], "--ideal means no bottleneck, but --rate-pps is 4"),
    (["--ideal", "compare", "fig8"], "drop --ideal"),
    (["--mtu", "9001"], "9001 B is above this backend's largest MTU (9000 B)"),
    (["--backend", "local", "--net", "sb3", "--mtu", "68"], "9797 parameters: mtu=68 B leaves no room for one element"),
    (["--solve", "--env", "Acrobot-v1", "--solve-at", "x"], "--solve-at"),
    (["--env", "Pendulum-v1"], "discrete"),
    (["--env", "NoSuchEnv-v0"], "unknown Gymnasium"),
    (["--hidden", "a"], "--hidden"),
    (["compare", "fig8", "--rates", "3,6"], "HIGH > LOW"),
])
def test_train_option_errors_name_the_option_and_start_nothing(tmp_path, args, needle):
    r = CliRunner().invoke(main, ["train", "--results", str(tmp_path / "results"), *args])
    assert r.exit_code == 2, r.output
    assert needle in r.output, r.output
    assert "Traceback" not in r.output
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("args, needle", [
    (["--backend", "ns3"], "--backend: the ns3 backend cannot honour it: ns-3's workers are synthetic"),
    (["--backend", "local", "--rate-pps", "4"], "--rate-pps: the local backend cannot honour it"),
    (["--backend", "local", "--queue", "fifo"], "--queue: the local backend cannot honour it"),
    (["--backend", "local", "--tc"], "--tc: the local backend cannot honour it"),
])
def test_a_backend_that_cannot_run_the_job_refuses_it_naming_the_option(tmp_path, args, needle):
    r = CliRunner().invoke(main, ["train", "--env", "CartPole-v1", "--results", str(tmp_path / "results"), *args])
    assert r.exit_code == 2, r.output
    assert needle in " ".join(r.output.split()), r.output
    assert not (tmp_path / "results").exists()


@pytest.mark.timeout(900)
def test_local_backend_trains_cartpole_and_writes_the_training_outputs(tmp_path):
    """`olaf train --backend local`: real PS and workers over loopback; every worker iterates and the PS
    applies updates; the job ends at its count of updates at the PS (the budget only guards a hang)."""
    import json

    r = CliRunner().invoke(main, ["train", "--backend", "local", "--env", "CartPole-v1", "--clusters", "2",
                                  "--workers-per-cluster", "1", "--target", "1e9", "--ps-updates", "4",
                                  "--eval-every-s", "1", "--eval-episodes", "5", "--no-apply-locally",
                                  "--budget-s", "600", "--results", str(tmp_path / "results")])
    assert r.exit_code == 0, r.output
    (run,) = [p for p in (tmp_path / "results").iterdir() if p.name != "latest"]
    assert run.name.endswith("train-local-tor-olaf")
    t = json.loads((run / "training.json").read_text())
    assert t["job"]["backend"] == "local" and t["ps_updates"] >= 4 and not t["worker_errors"], t
    assert t["job"]["ps_updates"] == 4 and not t["reached"]
    meta = json.loads((run / "run.json").read_text())
    assert meta["backend"] == "local" and meta["plan"]["workload"]["kind"] == "ppo"
    assert meta["stopped_early_s"] is not None, "the job ran to its budget, not to its 4 updates at the PS"
    # --no-apply-locally reached the workers' learners
    assert meta["plan"]["workload"]["job"]["task"]["apply_locally"] is False
    starts = [json.loads((run / "hosts" / f"w{i}.jsonl").read_text().splitlines()[0]) for i in (1, 2)]
    assert all(st["task"]["apply_locally"] is False for st in starts), starts
    for f in ("progress.csv", "rewards.csv", "summary.json"):
        assert (run / f).exists(), f
    s = json.loads((run / "summary.json").read_text())["overall"]
    assert s["sent"] == s["delivered"] and s["delivered"] >= 4  # no switch: every update reaches the PS
    # the global model was evaluated, last on the PS's final checkpoint (its final weights)
    ps = json.loads((run / "hosts" / "ps.summary.json").read_text())
    final = t["final_eval"]
    assert final["episodes"] == 5 and final["ps_updates"] == ps["updates"] and len(t["evaluations"]) >= 1, t
    assert not t["solved"] and t["solve_at"] is None
    # `olaf evaluate` scores the same final checkpoint again, with its own episodes and seed
    r = CliRunner().invoke(main, ["evaluate", str(run), "--episodes", "3", "--json"])
    assert r.exit_code == 0, r.output
    e = json.loads(r.output)
    assert e["episodes"] == 3 and e["env"] == "CartPole-v1" and e["ps_updates"] == ps["updates"]
    r = CliRunner().invoke(main, ["evaluate", str(run), "--checkpoint", str(run / "run.json")])
    assert r.exit_code == 2 and "not a PS checkpoint" in r.output


@pytest.mark.timeout(900)
def test_a_job_that_ends_when_solved_ends_at_its_first_solved_evaluation(tmp_path):
    """--solve-at: the job ends once an evaluation of 100 deterministic episodes of the PS's global
    model reaches the mean; a threshold any CartPole policy reaches (each episode returns >= 8) makes
    the first evaluation solve it (the budget only guards a hang)."""
    import json

    r = CliRunner().invoke(main, ["train", "--backend", "local", "--env", "CartPole-v1", "--clusters", "1",
                                  "--workers-per-cluster", "2", "--solve-at", "5", "--eval-every-s", "1",
                                  "--budget-s", "600", "--results", str(tmp_path / "results")])
    assert r.exit_code == 0, r.output
    (run,) = [p for p in (tmp_path / "results").iterdir() if p.name != "latest"]
    t = json.loads((run / "training.json").read_text())
    assert t["solved"] and t["solve_at"] == 5.0 and t["solved_eval"]["episodes"] == 100, t
    assert t["solved_eval"]["mean"] >= 5.0 and t["solved_eval"] == t["evaluations"][0]
    assert json.loads((run / "run.json").read_text())["stopped_early_s"] is not None
    with open(run / "progress.csv") as f:
        assert "eval_reward" in f.readline()

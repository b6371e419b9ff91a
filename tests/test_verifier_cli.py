"""`olaf verify` on the example configs, its JSON output, errors and timeout;
the admission API."""

import json
from fractions import Fraction
from pathlib import Path

from click.testing import CliRunner

from olaf.cli import main
from olaf.verifier import Cluster, Engine, may_join, report

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(*args):
    return CliRunner().invoke(main, ["verify", *map(str, args)])


def test_paper_case_i_is_verified():
    r = run(EXAMPLES / "verify-paper-i.yaml", "--horizon", 5)
    assert r.exit_code == 0, r.output
    assert r.output.startswith("verified") and "solver" in r.output


def test_unfair_config_gives_a_replayed_counterexample(tmp_path):
    r = run(EXAMPLES / "verify-unfair.yaml", "--horizon", 5, "--out", tmp_path)
    assert r.exit_code == 1, r.output
    assert r.output.startswith("violated")
    assert "unfair polite, greedy" in r.output
    assert "reproduces the violation" in r.output
    for f in ("trace.json", "trace.md", "aom.png"):
        assert (tmp_path / f).stat().st_size > 0
    t = report.load_trace(tmp_path / "trace.json")
    assert t["replay"]["reproduced"] and not t["replay"]["mismatches"]
    polite, greedy = t["clusters"]
    assert all(x["sent"] for x in greedy["updates"])  # the greedy cluster never backs off
    assert Fraction(t["violations"][0]["gap"]) > Fraction(1, 10)


def test_json_output(tmp_path):
    r = run(EXAMPLES / "verify-unfair.yaml", "--horizon", 4, "--out", tmp_path, "--json", "--no-plot")
    assert r.exit_code == 1
    d = json.loads(r.output)
    assert d["verdict"] == "violated" and d["solver_time_s"] >= 0
    assert d["trace"]["format"] == "olaf-verify-trace/1" and d["trace_path"].endswith("trace.json")
    assert not (tmp_path / "aom.png").exists()
    r = run(EXAMPLES / "verify-paper-i.yaml", "--horizon", 4, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["trace"] is None


def test_bad_config_names_the_field(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text((EXAMPLES / "verify-paper-i.yaml").read_text().replace("q_max: 1", "q_max: 0"))
    r = run(f)
    assert r.exit_code == 2 and "engine.q_max: Input should be greater than or equal to 1" in r.output


def test_timeout_gives_unknown():
    r = run(EXAMPLES / "verify-paper-ii.yaml", "--horizon", 30, "--timeout", 0.001)
    assert r.exit_code == 3, r.output
    assert r.output.startswith("unknown")


def test_may_join():
    engine = Engine(q_max=1, p_over_c_ms=2)
    polite = Cluster("polite", 100, 5, 400, Fraction(1, 400), (0, 9), 5)
    twin = Cluster("twin", 100, 5, 400, Fraction(1, 400), (50, 59), 5)
    greedy = Cluster("greedy", 100, 5, 0, Fraction(1), (50, 59), 5)
    assert may_join([polite], twin, engine, 0.1, 5).verified
    v = may_join([polite], greedy, engine, "0.1", 5)
    assert v.verdict == "violated" and v.reproduced


def test_paper_case_ii_per_update_average_is_verified(tmp_path):
    """Case (ii) is violated with the peaks averaged per delivery and verified with the paper's
    Δp(k) averaged over every update (peak_average: update) at K = 20 (docs/verifier.md)."""
    f = tmp_path / "ii-update.yaml"
    f.write_text((EXAMPLES / "verify-paper-ii.yaml").read_text() + "peak_average: update\n")
    assert run(EXAMPLES / "verify-paper-ii.yaml", "--horizon", 20, "--out", tmp_path / "d").exit_code == 1
    r = run(f, "--horizon", 20, "--out", tmp_path / "u")
    assert r.exit_code == 0, r.output

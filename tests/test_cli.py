from click.testing import CliRunner

from olaf.cli import main


def test_generate_and_check_round_trip(tmp_path):
    r = CliRunner().invoke(main, ["vectors", "generate", "--out", str(tmp_path), "--random", "2"])
    assert r.exit_code == 0, r.output
    files = list(tmp_path.glob("*.json"))
    assert any(f.stem.startswith("random_extra_") for f in files)
    r = CliRunner().invoke(main, ["vectors", "check", str(tmp_path)])
    assert r.exit_code == 0 and f"{len(files)}/{len(files)} vector files match" in r.output


def test_check_fails_on_a_tampered_vector(tmp_path):
    CliRunner().invoke(main, ["vectors", "generate", "--out", str(tmp_path)])
    f = tmp_path / "aggregate_basic.json"
    f.write_text(f.read_text().replace('"decision": "aggregate"', '"decision": "append"', 1))
    r = CliRunner().invoke(main, ["vectors", "check", str(f)])
    assert r.exit_code == 1 and "FAIL" in r.output

"""`olaf train`'s option errors that need neither root nor a switch: `--ideal` against a bottleneck
and against `compare`, and a `--hidden` too large for the emulated links' frame (the message names
only options `olaf train` has). Nothing may start: no run directory appears."""

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from olaf.cli import main  # noqa: E402


@pytest.mark.parametrize("args, needle", [
    (["--ideal", "--rate-pps", "4"], "--ideal means no bottleneck, but --rate-pps is 4"),
    (["--ideal", "compare", "fig8"], "drop --ideal"),
    (["--hidden", "64"], "has 901 parameters"),
])
def test_train_option_errors_name_the_option_and_start_nothing(tmp_path, args, needle):
    r = CliRunner().invoke(main, ["train", "--results", str(tmp_path / "results"), *args])
    assert r.exit_code == 2, r.output
    assert needle in r.output, r.output
    assert "Traceback" not in r.output
    assert "--mtu" not in r.output  # `olaf train` has no --mtu: the emulated links have a 1500 B MTU
    assert not (tmp_path / "results").exists()

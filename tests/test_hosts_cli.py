"""`olaf worker` / `olaf ps` argument errors name the option and the fix (no socket is opened)."""

import pytest
from click.testing import CliRunner

from olaf.cli import main

BASE = ["worker", "--ps", "127.0.0.1", "--bind", "127.0.0.1"]


@pytest.mark.parametrize("args, message", [
    (["worker", "--ps", "10.0.0.300", "--bind", "127.0.0.1", "--duration", "1"], "'--ps': '10.0.0.300' is not an IPv4"),
    (["worker", "--ps", "10.0.0.1:0", "--bind", "127.0.0.1", "--duration", "1"], "the port must be 1-65535"),
    (["worker", "--ps", "10.0.0.1", "--bind", "host1", "--duration", "1"], "--bind"),
    (BASE, "--duration SECONDS or --updates N"),
    (BASE + ["--duration", "1", "--jitter-ms", "200"], "jitter must be in [0, period=100.0]"),
    (BASE + ["--duration", "1", "--start-at-ns", "5", "--start-file", "go"], "give one of them"),
    (BASE + ["--duration", "1", "--grads", "3000"], "--grads"),
    (["ps", "--bind", "1.2.3"], "'--bind': '1.2.3' is not an IPv4"),
])
def test_bad_arguments(args, message):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2 and message in r.output, r.output


def test_trace_conflicts_and_errors(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("time\n1\n")
    r = CliRunner().invoke(main, BASE + ["--trace", str(bad)])
    assert r.exit_code == 2 and "no 't_ms' or 'interval_ms' column" in r.output
    r = CliRunner().invoke(main, BASE + ["--trace", str(bad), "--period-ms", "5"])
    assert r.exit_code == 2 and "--trace replaces --period-ms" in r.output

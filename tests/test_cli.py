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


# -- first contact: help works on a base install ------------------------------------------------

import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

# Runs `argv` of the click group `entry` in a fresh interpreter in which the optional
# extras (P4Runtime/gRPC/protobuf, ptf, Mininet, z3, torch, ns-3) cannot be imported.
_BASE_INSTALL = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = {"p4", "p4runtime_sh", "grpc", "google", "ptf", "mininet", "z3", "torch", "gymnasium", "ns", "cppyy"}
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked: {name}", name=name)
    sys.meta_path.insert(0, Block())
    import importlib
    mod, attr = sys.argv[1].split(":")
    group = getattr(importlib.import_module(mod), attr)
    group.main(sys.argv[2:], prog_name="x")
""")


def _base_install(entry: str, *argv: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _BASE_INSTALL, entry, *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def test_olaf_help_needs_no_extra():
    r = _base_install("olaf.cli:main", "--help")
    assert r.returncode == 0, r.stderr
    for cmd in ("run", "compare", "report", "worker", "ps", "verify", "vectors", "codegen"):
        assert cmd in r.stdout


def test_olaf_run_help_needs_no_extra():
    r = _base_install("olaf.cli:main", "run", "--help")
    assert r.returncode == 0, r.stderr
    assert "--pcap" in r.stdout and "--bmv2-log-level" in r.stdout


def test_missing_extra_names_the_install_command():
    r = _base_install("olaf.cli:main", "verify", "--help")
    assert r.returncode != 0
    assert "make setup" in r.stderr and "z3" in r.stderr


def test_olafctl_subcommand_help_without_network_or_build(tmp_path):
    r = subprocess.run([sys.executable, "-m", "olaf.controller.cli", "move", "--help"], capture_output=True,
                       text=True, cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Move WORKER" in r.stdout


def test_a_failed_or_interrupted_run_ends_with_its_message_not_a_traceback():
    import click

    from olaf.cli import LazyGroup
    from olaf.harness import RunFailed, RunInterrupted

    group = LazyGroup(lazy={})

    @group.command()
    @click.argument("how")
    def job(how):
        raise {"failed": RunFailed, "interrupted": RunInterrupted}[how](f"{how}; partial report in /runs/x")

    r = CliRunner().invoke(group, ["job", "failed"])
    assert r.exit_code == 1 and "Error: failed; partial report in /runs/x" in r.output and r.exception is not None
    r = CliRunner().invoke(group, ["job", "interrupted"])
    assert r.exit_code == 130 and "Stopped: interrupted; partial report in /runs/x" in r.output
    assert "Traceback" not in r.output

"""Run the PTF data-plane tests (``ptf_tests/``) against a real simple_switch_grpc.

Everything lives in a network namespace made for the run: veth pairs
``sw<i>``/``ptf<i>`` (BMv2 port i ↔ PTF port i — one port map for both), the
switch (started by handle, pipeline pushed by each test over P4Runtime) and
the ``ptf`` process. Teardown stops the switch by its handle and deletes the
namespace, which removes every interface, also after a failure or Ctrl-C.

Usage: ``python -m olaf.ptf_runner --build build --test-dir ptf_tests [PTF args...]``
(root; needs p4c-bm2-ss, simple_switch_grpc, simple_switch_CLI and ptf).
Exit status: PTF's (0 = all passed); 2 if the environment is missing something.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import click

from olaf.bmv2 import Bmv2Switch, NetNamespace, SwitchSpec, SwitchStartError, missing_p4_tools, veth_pairs

NUM_PORTS = 6  # 0: PS, 1..5: workers / other hosts (ptf_tests/olaf_base.py)


def environment_problems(build: Path) -> list[str]:
    """Reasons the PTF tier cannot run here (empty list: it can)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("PTF tests need root (network namespaces and veth interfaces)")
    missing = missing_p4_tools()
    if missing:
        problems.append(f"not on PATH: {', '.join(missing)} (see README \"P4 toolchain\")")
    if shutil.which("ip") is None:
        problems.append("iproute2 (`ip`) is not installed")
    for f in ("olaf.json", "olaf.p4info.txt", "olaf_queue.so"):
        if not (build / f).exists():
            problems.append(f"{build / f} is missing (run `make build`)")
    return problems


def run(build: Path, test_dir: Path, ptf_args: tuple[str, ...], log_dir: Path) -> int:
    build, test_dir, log_dir = build.resolve(), test_dir.resolve(), log_dir.resolve()
    log_dir.mkdir(parents=True, exist_ok=True)
    ptf = Path(sys.executable).parent / "ptf"
    ns = f"olafptf{os.getpid()}"
    ports = {i: f"sw{i}" for i in range(NUM_PORTS)}
    spec = SwitchSpec(name="s1", ports=ports, extern_so=build / "olaf_queue.so",
                      log_path=log_dir / "switch.log", netns=ns)
    params = ";".join([
        "grpcaddr='127.0.0.1:9559'",
        f"p4info='{build / 'olaf.p4info.txt'}'",
        f"bmv2_json='{build / 'olaf.json'}'",
        f"thrift_port={spec.thrift_port}",
        f"vectors='{Path(__file__).resolve().parents[1] / 'tests' / 'vectors'}'",
    ])
    with NetNamespace(ns), veth_pairs([(f"sw{i}", f"ptf{i}") for i in range(NUM_PORTS)], netns=ns):
        switch = Bmv2Switch(spec)
        try:
            switch.start()
        except SwitchStartError as e:
            click.echo(str(e), err=True)
            return 1
        try:
            cmd = ["ip", "netns", "exec", ns, str(ptf), "--test-dir", str(test_dir),
                   "--pypath", str(test_dir), "--log-file", str(log_dir / "ptf.log"),
                   "--test-params", params]
            for i in range(NUM_PORTS):
                cmd += ["--interface", f"{i}@ptf{i}"]
            rc = subprocess.call(cmd + list(ptf_args))
            if not switch.alive:
                click.echo(f"simple_switch_grpc died during the tests; log: {spec.log_file}", err=True)
                rc = rc or 1
            return rc
        finally:
            switch.stop()


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--build", type=click.Path(file_okay=False, path_type=Path), default=Path("build"),
              show_default=True, help="Directory with olaf.json, olaf.p4info.txt, olaf_queue.so.")
@click.option("--test-dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=Path("ptf_tests"), show_default=True)
@click.option("--log-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("build/ptf-logs"), show_default=True)
@click.argument("ptf_args", nargs=-1, type=click.UNPROCESSED)
def main(build: Path, test_dir: Path, log_dir: Path, ptf_args: tuple[str, ...]) -> None:
    """Run PTF tests against simple_switch_grpc in a fresh network namespace."""
    problems = environment_problems(build)
    if problems:
        for p in problems:
            click.echo(f"cannot run PTF tests: {p}", err=True)
        sys.exit(2)
    sys.exit(run(build, test_dir, ptf_args, log_dir))


if __name__ == "__main__":
    main()

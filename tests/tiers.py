"""The test tiers (README "Tests"): what each needs, and why one cannot run on this machine.

A tier is a pytest marker registered in pyproject.toml (``[tool.pytest.ini_options] markers``).
A test of a tier that this machine cannot run is skipped with the reason
``"<tier> tier: <why>"`` (:func:`require`); ``tests/conftest.py`` applies it to every marked
test before it runs and prints, at the end of the session, one line per tier saying what ran
and why the rest was skipped. ``slow`` needs nothing; it only marks tests that ``make
test-quick`` leaves out.

A module that cannot even be imported without its tier's packages calls :func:`require` at its
top (before those imports), so it is skipped whole with the same reason.
"""

from __future__ import annotations

import importlib.util
import os
import re
from functools import lru_cache
from typing import Callable, Optional

import pytest

from olaf.bmv2 import missing_p4_tools

TIERS = ("p4", "mininet", "ns3", "rtl", "train", "slow")
"""The tiers, in the order the session summary lists them (each a marker registered in pyproject.toml)."""

SKIP_REASON = re.compile(r"^(?P<tier>[a-z0-9]+) tier: ")
"""How a skip reason names its tier (the session summary reads it back)."""


def _p4() -> Optional[str]:
    missing = missing_p4_tools()
    if missing:
        return f"P4 toolchain absent: {', '.join(missing)} not on PATH (README \"P4 toolchain\")"
    return None


def _mininet() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth interfaces): sudo make test"
    try:
        import mininet.net  # noqa: F401, PLC0415
    except ImportError:
        return "Mininet's Python package is not importable (`make test` links the distribution's mininet)"
    return _p4()


def _ns3() -> Optional[str]:
    from olaf.sim.build import INSTALL_HINT, SimUnavailable, find_ns3  # noqa: PLC0415

    try:
        find_ns3()
    except SimUnavailable as e:
        return str(e)
    if importlib.util.find_spec("cppyy") is None:
        return f"cppyy (shipped with the ns3 package's dependencies) is missing: {INSTALL_HINT}"
    return None


def _train() -> Optional[str]:
    from olaf.rl.extra import TrainExtraMissing, require_train_extra  # noqa: PLC0415

    try:
        require_train_extra()
    except TrainExtraMissing as e:
        return str(e)
    return None


REQUIREMENTS: dict[str, Callable[[], Optional[str]]] = {"p4": _p4, "mininet": _mininet, "ns3": _ns3, "train": _train}
"""Tier → a check returning None when this machine can run the tier, else why not. The ``rtl``
tier's tests live in verilog_queue/tb and check Verilator and cocotb themselves
(``olaf_queue_sim.missing_simulator_reason``), with reasons of the same form; ``slow`` needs
nothing."""


@lru_cache(maxsize=None)
def unavailable(tier: str) -> Optional[str]:
    """Why this machine cannot run ``tier`` (None: it can).

    Raises:
        KeyError: ``tier`` is not one of :data:`REQUIREMENTS`.
    """
    return REQUIREMENTS[tier]()


def require(tier: str) -> None:
    """Skip the calling test (or, at a module's top, the whole module) when ``tier`` cannot run here.

    Raises:
        pytest.skip.Exception: with the reason ``"<tier> tier: <why>"``.
    """
    why = unavailable(tier)
    if why is not None:
        pytest.skip(f"{tier} tier: {why}", allow_module_level=True)

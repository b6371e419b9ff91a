"""Fixtures shared by several test modules, and the test tiers (tests/tiers.py): every test of a
tier this machine cannot run is skipped with the reason, and the session ends with one line per
tier saying what ran, what was skipped and why.

``--competing-load N`` runs the session beside N CPU-bound processes (``make test-under-load``,
``docs/reliability.md`` "Under load"): a user's machine is busy (a compile, another job), and no
test may pass only on an idle one. Each process is a busy loop in a session of its own (an
autogroup of its own, as a compile started from another terminal), at nice 0; they start before
the first test and are killed when the session ends. Every test's hang guard (pytest-timeout, and
the tests' own deadlines, subprocess timeouts and job budgets through :func:`hostnet.guard`) is
stretched by ``(cores + N) / cores``, the share of the cores the tests lose to them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from hostnet import GUARD_SCALE_ENV
from hypothesis import HealthCheck, settings
from p4_tier import build_p4
from tiers import REQUIREMENTS, SKIP_REASON, TIERS, require

TIER_STATS = pytest.StashKey[dict]()
LOAD = pytest.StashKey[list]()
LOAD_HELD = pytest.StashKey[bool]()
BUSY_LOOP = "while True: pass"

# Hypothesis without its timing checks (a 200 ms deadline per example, "data generation too
# slow"): on a loaded machine they fail tests that are correct. A test's own settings keep
# what they set and take these for the rest.
settings.register_profile("olaf", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("olaf")


# -- competing load -------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--competing-load", type=int, default=0, metavar="N",
                     help="run the session beside N CPU-bound processes (make test-under-load); "
                          "hang guards are stretched by (cores + N) / cores")


def _load_scale(config: pytest.Config) -> float:
    """How much longer a test may take beside the competing processes: ``(cores + N) / cores``."""
    cores = os.cpu_count() or 1
    return (cores + max(config.getoption("--competing-load"), 0)) / cores


def pytest_sessionstart(session: pytest.Session) -> None:
    n = session.config.getoption("--competing-load")
    if n < 0:
        raise pytest.UsageError(f"--competing-load={n}: the number of CPU-bound processes must be >= 0")
    os.environ[GUARD_SCALE_ENV] = repr(_load_scale(session.config))  # tests' own deadlines (hostnet.guard)
    session.config.stash[LOAD] = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP], start_new_session=True)
                                  for _ in range(n)]


def pytest_sessionfinish(session: pytest.Session) -> None:
    load = session.config.stash.get(LOAD, [])
    session.config.stash[LOAD_HELD] = all(p.poll() is None for p in load)  # the load lasted the whole session
    for p in load:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    scale = _load_scale(config)
    if scale == 1.0:
        return
    default = float(config.getini("timeout") or 0)
    for item in items:
        m = item.get_closest_marker("timeout")
        guard = float(m.args[0] if m and m.args else m.kwargs.get("timeout", default) if m else default)
        if guard > 0:
            item.add_marker(pytest.mark.timeout(guard * scale), append=False)


# -- tiers ----------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.hasplugin("timeout"):
        raise pytest.UsageError("pytest-timeout is not installed (the `test` extra; `make test` installs it): "
                                "every test needs its hang guard")
    registered = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    unregistered = [t for t in TIERS if t not in registered]
    if unregistered:
        raise pytest.UsageError(f"tests/tiers.py names tiers that pyproject.toml does not register as markers: "
                                f"{unregistered}")
    config.stash[TIER_STATS] = {"selected": defaultdict(int), "deselected": defaultdict(int), "by_node": {}}


def _item_tiers(item: pytest.Item) -> list[str]:
    """The item's tiers, or ``["untiered"]``."""
    return [t for t in TIERS if item.get_closest_marker(t) is not None] or ["untiered"]


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        for t in _item_tiers(item):
            item.config.stash[TIER_STATS]["deselected"][t] += 1


def pytest_collection_finish(session: pytest.Session) -> None:
    stats = session.config.stash[TIER_STATS]
    for item in session.items:
        stats["by_node"][item.nodeid] = _item_tiers(item)
        for t in stats["by_node"][item.nodeid]:
            stats["selected"][t] += 1


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in item.iter_markers():
        if marker.name in REQUIREMENTS:
            require(marker.name)


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:  # noqa: ARG001
    """One line per tier: tests run (passed or failed) of those selected, the time in them (a test
    of several tiers counts in each), the reasons of its skips, tests deselected, modules skipped
    whole."""
    stats = config.stash.get(TIER_STATS, None)
    if stats is None:
        return
    skipped: dict[str, int] = defaultdict(int)
    reasons: dict[str, set[str]] = defaultdict(set)
    modules: dict[str, list[str]] = defaultdict(list)
    ran: dict[str, int] = defaultdict(int)
    done = {rep.nodeid for key in ("passed", "failed", "error", "xfailed", "xpassed")
            for rep in terminalreporter.stats.get(key, []) if isinstance(rep, pytest.TestReport)}
    for nodeid in done:
        for t in stats["by_node"].get(nodeid, []):
            ran[t] += 1
    for rep in terminalreporter.stats.get("skipped", []):
        reason = _skip_reason(rep)
        m = SKIP_REASON.match(reason)
        if isinstance(rep, pytest.CollectReport):  # a module skipped whole: its tests were never collected
            tier = m.group("tier") if m else "untiered"
            modules[tier].append(rep.nodeid)
            reasons[tier].add(reason[m.end():] if m else reason)
            continue
        # a test counts as skipped in each of its tiers; the reason keeps the name of another tier
        for t in stats["by_node"].get(rep.nodeid, [m.group("tier")] if m else ["untiered"]):
            skipped[t] += 1
            reasons[t].add(reason[m.end():] if m and m.group("tier") == t else reason)
    secs: dict[str, float] = defaultdict(float)  # time in each tier's tests (setup, call, teardown)
    for reports in terminalreporter.stats.values():
        for rep in reports:
            if isinstance(rep, pytest.TestReport):
                for t in stats["by_node"].get(rep.nodeid, ["untiered"]):
                    secs[t] += rep.duration
    terminalreporter.write_sep("=", "test tiers")
    load = config.stash.get(LOAD, [])
    if load:
        terminalreporter.write_line(f"under load: {len(load)} competing CPU-bound processes on {os.cpu_count()} cores "
                                    f"(hang guards x{_load_scale(config):.2f}); all still running at the end: "
                                    f"{config.stash.get(LOAD_HELD, False)}")
    for t in [*TIERS, "untiered"]:
        selected, deselected = stats["selected"].get(t, 0), stats["deselected"].get(t, 0)
        if not (selected or deselected or modules.get(t)):
            continue
        parts = []
        if selected:
            parts.append(f"all {selected} ran" if ran[t] == selected else f"{ran[t]} of {selected} ran")
        if modules.get(t):
            parts.append(f"{len(modules[t])} module(s) skipped whole ({', '.join(sorted(modules[t]))})")
        if deselected:
            parts.append(f"{deselected} not selected (-m)")
        line = f"{t:8} " + "; ".join(parts) + (f" ({secs[t]:.0f} s)" if secs.get(t) else "")
        if reasons.get(t):
            line += " — skipped: " + " | ".join(sorted(reasons[t]))
        terminalreporter.write_line(line, yellow=bool(skipped[t] or modules.get(t)), green=not (skipped[t] or modules.get(t)))


# -- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim():
    """The compiled ns-3 simulation library (olaf.sim.build); skips, saying why, without ns-3."""
    from olaf.sim.build import SimUnavailable, load

    require("ns3")
    try:
        return load()
    except SimUnavailable as e:
        pytest.skip(f"ns3 tier: {e}")


@pytest.fixture(scope="session")
def build() -> Path:
    """The build directory with the P4 program and the OlafQueue extern compiled (`make build`);
    skips without the P4 toolchain, fails if compilation fails."""
    require("p4")
    return build_p4()

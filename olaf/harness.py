"""What every run harness shares, below the backends and the emulation that run plans: how a run
fails (:class:`RunFailed`, :class:`RunInterrupted`) and what watches it while it goes
(:class:`RunMonitor`). A backend (:mod:`olaf.backends`) raises subclasses of the failures; the
emulation (:mod:`olaf.topologies.emulation`) and the experiment runner use the same types, so
neither imports the other's package for them.
"""

from __future__ import annotations

from typing import Protocol


class RunFailed(RuntimeError):
    """A run did not complete (a host or switch failed, or it could not start); the message says
    what and where its logs are. Backends raise subclasses; what was collected stays in the run
    directory."""


class RunInterrupted(RunFailed):
    """Ctrl-C or SIGTERM stopped the run; its partial report is written."""


class RunMonitor(Protocol):
    """Watches a run while it goes (``olaf train``: the workers' rewards)."""

    def poll(self, elapsed_s: float) -> tuple[str, bool]:
        """Called about once a second with the seconds since t0: a text for the progress line, and
        whether the run has reached its goal and should stop now."""
        ...

    def workers_lost(self, names: set[str]) -> None:
        """The harness lost ``names`` with their machine (a Ray node lost mid-run) and goes on
        without them: a goal over every worker is now over the others."""
        ...

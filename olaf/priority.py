"""CPU priority of the emulated hosts: the workers (and the evaluator) below the network.

On one machine the workers' training is CPU-bound and outnumbers the cores many times over,
while the switch (BMv2), the PS and the harness need little CPU but need it at once. In a
deployment these do not share cores with the workers; here the workers run at a lower priority
(:data:`olaf.constants.WORKER_NICE`) to emulate that.

A nice value alone does not do it on a Linux kernel with ``CONFIG_SCHED_AUTOGROUP``
(``/proc/sys/kernel/sched_autogroup_enabled`` = 1, the default of desktop and many server
kernels): the scheduler then first shares the CPU equally among *sessions* and applies nice
values only within a session (sched(7), "The autogroup feature"). A Mininet host's process
leads its own session (``mnexec -d`` calls ``setsid``), so 27 workers, BMv2 and the PS were 29
equal groups: BMv2's threads together got 1/29 of the CPU whenever every worker was busy, and
held a chunk between ingress and the PS port for 0.6 s (median) and up to 4 s. The fix is the
autogroup's own nice value (``/proc/<pid>/autogroup``, sched(7)) for a process that leads its
session, and the ordinary nice value for the rest.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Optional

AUTOGROUP_ENABLED = "/proc/sys/kernel/sched_autogroup_enabled"


def _check(nice: int) -> None:
    if not 0 <= nice <= 19:
        raise ValueError(f"nice={nice}: must be 0..19 (0 = the harness's own priority)")


def niced(cmd: list[str], nice: int) -> list[str]:
    """``cmd`` run at nice value ``nice`` (coreutils ``nice -n``; 0: ``cmd`` unchanged).

    Raises:
        ValueError: ``nice`` outside 0..19 (the harness only lowers its hosts' priority).
    """
    _check(nice)
    return cmd if nice == 0 else ["nice", "-n", str(nice), *cmd]


def autogroups() -> bool:
    """Whether the kernel schedules by autogroup (sessions first, nice values within them)."""
    try:
        with open(AUTOGROUP_ENABLED) as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def session_nice(pid: int) -> Optional[int]:
    """The nice value of process ``pid``'s autogroup (``/proc/<pid>/autogroup`` reads
    ``/autogroup-<id> nice <n>``); None without autogroups or without the process."""
    if not autogroups():
        return None
    try:
        with open(f"/proc/{pid}/autogroup") as f:
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


SESSION_POLL_S = 0.01
"""Interval of :func:`set_session_nice`'s wait for a process to lead its session."""


def set_session_nice(pid: int, nice: int, wait_s: float = 0.0) -> bool:
    """Give process ``pid``'s autogroup (its session's) nice value ``nice`` (sched(7)), only if
    ``pid`` leads its own session: the autogroup of a session it merely belongs to holds other
    processes (the harness, the user's shell). ``wait_s`` is how long to wait for it to become the
    leader: a process started through ``mnexec -d`` (or ``setsid``) calls ``setsid()`` only after
    :class:`subprocess.Popen` has returned. True if set; False if the kernel has no autogroups,
    ``pid`` did not lead its session in time or has exited, or the kernel refused (then the
    process's own nice value is what counts).

    Raises:
        ValueError: ``nice`` outside 0..19.
    """
    _check(nice)
    if nice == 0 or not autogroups():
        return False
    deadline = time.monotonic() + wait_s
    try:
        while os.getsid(pid) != pid:
            if time.monotonic() >= deadline:
                return False
            time.sleep(SESSION_POLL_S)
    except ProcessLookupError:
        return False
    # a session leader stays one: the autogroup written below is its own
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(nice))
        return True
    return False


def lower_priority(nice: int, own_session: bool = False) -> None:
    """Lower the calling thread (and the threads it starts later) to nice value ``nice``, unless it
    is already nicer (an unprivileged thread may not raise its priority). Linux keeps a nice value
    per thread, so a worker thread inside a shared process (a Ray actor) calls this itself. With
    ``own_session`` the process first leaves its parent's session for one of its own and lowers
    that session's autogroup too (:func:`set_session_nice`): for a child of the harness that must
    not be scheduled as part of the harness's group (the evaluator). A process group leader (a
    command a shell with job control started) cannot leave its session: it then lowers only
    itself, never the autogroup of the session it shares (the user's shell and everything in it).

    Raises:
        ValueError: ``nice`` outside 0..19.
    """
    _check(nice)
    if nice == 0:
        return
    if own_session:
        with contextlib.suppress(OSError):  # a process group leader may not: it keeps its parent's session
            os.setsid()
        set_session_nice(os.getpid(), nice)  # only if it now leads its session, never its shell's
    if nice > os.getpriority(os.PRIO_PROCESS, 0):
        os.setpriority(os.PRIO_PROCESS, 0, nice)

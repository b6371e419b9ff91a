"""olaf/priority.py: the workers' and the evaluator's lower CPU priority, applied for real to child
processes (never to the test process itself): the nice value of a thread and, for a process that
leads its own session, of its autogroup (sched(7)), which is what the kernel weighs first when
autogroups are on. Each check reads the kernel's own view (``/proc``)."""

import os
import subprocess
import sys

import pytest

from olaf.priority import autogroups, lower_priority, niced, session_nice, set_session_nice

HANG_S = 30.0


def test_niced_prefixes_the_command_and_names_a_bad_value():
    assert niced(["olaf", "worker"], 0) == ["olaf", "worker"]
    assert niced(["olaf", "worker"], 10) == ["nice", "-n", "10", "olaf", "worker"]
    for bad in (-1, 20):
        with pytest.raises(ValueError, match=f"nice={bad}: must be 0..19"):
            niced(["x"], bad)
    with pytest.raises(ValueError, match="nice=25"):
        lower_priority(25)


def test_a_niced_command_runs_at_that_nice_value():
    out = subprocess.run(niced([sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"], 7),
                         capture_output=True, text=True, check=True).stdout
    assert int(out) == 7


def test_lower_priority_lowers_the_calling_thread_and_never_raises_it():
    code = ("import os, threading; from olaf.priority import lower_priority\n"
            "lower_priority(6); a = os.getpriority(os.PRIO_PROCESS, 0)\n"
            "lower_priority(3); b = os.getpriority(os.PRIO_PROCESS, 0)\n"
            "seen = []\n"
            "t = threading.Thread(target=lambda: seen.append(os.getpriority(os.PRIO_PROCESS, 0))); t.start(); t.join()\n"
            "print(a, b, seen[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["6", "6", "6"]  # lowered; not raised back; inherited by a thread started later


def test_own_session_leaves_the_parents_session_and_lowers_its_autogroup():
    code = ("import os; from olaf.priority import lower_priority, session_nice\n"
            "lower_priority(9, own_session=True)\n"
            "print(os.getsid(0) == os.getpid(), os.getpriority(os.PRIO_PROCESS, 0), session_nice(os.getpid()))")
    leader, nice, group = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                         check=True).stdout.split()
    assert (leader, nice, group) == ("True", "9", "9" if autogroups() else "None")


def test_a_process_group_leader_lowers_itself_and_never_its_shells_session():
    """A command a shell with job control started leads its process group, so it cannot leave the
    shell's session: it lowers itself, and the session's autogroup (the shell and all it runs) keeps
    its nice value."""
    before = session_nice(os.getpid())
    code = ("import os; from olaf.priority import lower_priority, session_nice\n"
            "lower_priority(9, own_session=True)\n"
            "print(os.getsid(0) == os.getpid(), os.getpriority(os.PRIO_PROCESS, 0))")
    leader, nice = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                  process_group=0).stdout.split()
    assert (leader, nice) == ("False", "9")
    assert session_nice(os.getpid()) == before


def test_set_session_nice_never_lowers_a_session_the_process_only_belongs_to():
    """A child of this process's session is not its leader: its autogroup is this session's (the
    harness's), so nothing is written, also after waiting for it to become one."""
    before = session_nice(os.getpid())
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert set_session_nice(p.pid, 11) is False
        assert set_session_nice(p.pid, 11, wait_s=0.2) is False
        assert session_nice(os.getpid()) == before
    finally:
        p.stdin.close()
        p.wait(HANG_S)


def test_set_session_nice_waits_for_a_process_that_calls_setsid_after_it_starts():
    """As ``mnexec -d`` does: the process becomes a session leader only after Popen returned."""
    code = "import os, sys, time; time.sleep(0.3); os.setsid(); sys.stdin.read()"
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)
    before = session_nice(os.getpid())
    try:
        assert set_session_nice(p.pid, 12, wait_s=HANG_S) is autogroups()
        assert os.getsid(p.pid) == p.pid
        if autogroups():
            assert session_nice(p.pid) == 12
        assert session_nice(os.getpid()) == before
    finally:
        p.stdin.close()
        p.wait(HANG_S)


def test_set_session_nice_lowers_a_session_leaders_autogroup():
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                         start_new_session=True)
    try:
        if autogroups():
            assert set_session_nice(p.pid, 11) is True
            assert session_nice(p.pid) == 11
        else:  # the process's own nice value is then what the scheduler weighs
            assert set_session_nice(p.pid, 11) is False
        assert set_session_nice(p.pid, 0) is False  # 0: the harness's priority, nothing to do
    finally:
        p.stdin.close()
        p.wait(HANG_S)

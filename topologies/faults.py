"""Faults injected into an emulated run (``olaf run --fault …``, docs/reliability.md "Faults during a
run"): real kills of the real processes, to show what the run does about them.

* ``switch-restart:<switch>@<s>`` — ``s`` seconds after t0, set the switch's data ports down (in the
  management namespace), read its counters, SIGKILL its ``simple_switch_grpc``, bring the ports up,
  start it again on the same ports, and let the controller reprogram it
  (``OlafController.ensure``: pipeline, tables, PRE, queue rate and depth). The run goes on;
  ``run.json`` records the fault and the gap (ns from the kill until the switch was
  reprogrammed); ``switch_counters.json`` holds the counters from before the kill plus those after
  it, so the report's accounting still closes (segments queued at the kill show up as lost in the
  traffic manager).
* ``ps-kill@<s>`` — SIGKILL the PS. The run notices the dead PS, stops, and ends with an error
  naming it and a report marked partial.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from olaf.plan.faults import Fault


def add_counters(a: Any, b: Any) -> Any:
    """``a + b`` over nested dicts of counts (``switch_counters.json`` before and after a restart)."""
    if isinstance(a, dict) or isinstance(b, dict):
        a, b = a or {}, b or {}
        return {k: add_counters(a.get(k), b.get(k)) for k in {*a, *b}}
    return (a or 0) + (b or 0)


class FaultInjector:
    """Applies due faults during a run (:meth:`poll` once a second from the run's loop)."""

    def __init__(self, faults: list[Fault], net: Any, ctl: Any, ps_proc: Any, clusters: Any) -> None:
        self.pending = sorted(faults, key=lambda f: f.at_s)
        self.net, self.ctl, self.ps_proc, self.clusters = net, ctl, ps_proc, clusters
        self.done: list[dict[str, Any]] = []
        self.counters_before: dict[str, Any] = {}
        """Per switch: the counters read just before each kill, summed."""

    def poll(self, elapsed_s: float) -> None:
        while self.pending and self.pending[0].at_s <= elapsed_s:
            f = self.pending.pop(0)
            self.done.append(self._switch_restart(f) if f.kind == "switch-restart" else self._ps_kill(f))

    def _ps_kill(self, f: Fault) -> dict[str, Any]:
        t = time.time_ns()
        os.killpg(self.ps_proc.pid, signal.SIGKILL)
        return {"fault": f.kind, "at_s": f.at_s, "killed_ns": t}

    def _switch_restart(self, f: Fault) -> dict[str, Any]:
        name = f.switch
        assert name is not None
        sc = self.ctl.switches[name]
        node = self.net.net.get(name)
        ports = [intf.name for intf in node.intfs.values() if intf.name != "lo"]
        t_kill = time.time_ns()
        self._links(ports, "down")  # from now on nothing the switch counts leaves it: the snapshot is final
        snap = sc.counters.snapshot(self.clusters)
        self.counters_before[name] = add_counters(self.counters_before.get(name, {}), snap)
        os.killpg(node.bmv2.proc.pid, signal.SIGKILL)
        node.bmv2.proc.wait()
        self._links(ports, "up")
        node.bmv2.start()
        redone = self.ctl.ensure(timeout_s=20)
        t_up = time.time_ns()
        return {"fault": f.kind, "switch": name, "at_s": f.at_s, "killed_ns": t_kill, "reprogrammed_ns": t_up,
                "gap_ms": (t_up - t_kill) / 1e6, "reprogrammed": redone}

    def _links(self, ports: list[str], state: str) -> None:
        for p in ports:
            r = self.net.mgmt.exec("ip", "link", "set", p, state)
            if r.returncode != 0:
                raise RuntimeError(f"cannot set {p} {state}: {r.stderr.strip()}")

    def counters(self, final: dict[str, Any]) -> dict[str, Any]:
        """``switch_counters.json``: ``final`` plus what each restarted switch counted before its kills."""
        return {n: add_counters(c, self.counters_before[n]) if n in self.counters_before else c
                for n, c in final.items()}

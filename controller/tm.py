"""Traffic-manager settings of a BMv2 switch: egress queue rate and depth.

These are BMv2 Thrift runtime calls (``set_queue_rate`` / ``set_queue_depth``
of ``simple_switch_CLI``), not P4Runtime. In BMv2 a rate of 0 pps means
*unlimited*, and a packet's departure time is fixed when it enters the queue
(``QueueingLogicPriRL::push_front``): lowering the rate slows later packets
only, raising it does not release packets already waiting.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from typing import Optional

from olaf.controller.p4rt import SwitchConnection


class ThriftError(RuntimeError):
    """simple_switch_CLI failed or reported an error; the message has its output."""


class TrafficManager:
    """Runs commands through ``simple_switch_CLI --thrift-port PORT``.

    The CLI (a Python script that finds BMv2's own Thrift modules) runs with
    this interpreter, which has the ``thrift`` package (the ``p4`` extra), so it
    does not matter which ``python3`` comes first on PATH.
    """

    def __init__(self, thrift_port: int, cli: str = "simple_switch_CLI", name: str = "switch"):
        self.thrift_port = thrift_port
        self.name = name
        path = shutil.which(cli)
        if path is None:
            raise ThriftError(f"{cli} not found on PATH (it comes with BMv2)")
        self.cli = path

    def run(self, *commands: str, timeout_s: float = 20.0) -> str:
        """Run CLI commands; raises ThriftError if the CLI fails or prints an error."""
        p = subprocess.run([sys.executable, self.cli, "--thrift-port", str(self.thrift_port)],
                           input="\n".join(commands) + "\n", capture_output=True, text=True,
                           timeout=timeout_s)
        out = p.stdout + p.stderr
        bad = [line for line in out.splitlines()
               if "Error" in line or "Invalid" in line or "Could not connect" in line]
        if p.returncode != 0 or bad:
            raise ThriftError(f"{self.name}: simple_switch_CLI {'; '.join(commands)!r} failed: "
                              + ("; ".join(bad) or out.strip()[-300:]))
        return out

    def set_queue_rate(self, pps: int, port: Optional[int] = None) -> None:
        """Egress queue rate in packets/s (0 = unlimited), for ``port`` or all ports."""
        if pps < 0:
            raise ValueError(f"queue rate {pps} pps must be >= 0")
        self.run(f"set_queue_rate {pps}" + ("" if port is None else f" {port}"))

    def set_queue_depth(self, packets: int, port: Optional[int] = None) -> None:
        """Egress queue depth in packets, for ``port`` or all ports."""
        if packets < 1:
            raise ValueError(f"queue depth {packets} must be >= 1 packet")
        self.run(f"set_queue_depth {packets}" + ("" if port is None else f" {port}"))

    def clear_pre(self) -> int:
        """Destroy every multicast group and node in BMv2's PRE; returns how many groups.

        BMv2 keeps its PRE state across a P4Runtime SetForwardingPipelineConfig
        (p4lang/behavioral-model#891), while PI forgets it: a group id reused after
        a pipeline push then keeps its old nodes and replicates packets twice.
        Call this right after pushing a pipeline, before writing groups.
        """
        groups: dict[int, list[int]] = {}
        current = None
        for line in self.run("mc_dump").splitlines():
            m = re.match(r"\s*mgrp\((\d+)\)", line)
            if m:
                current = int(m.group(1))
                groups[current] = []
            m = re.search(r"L1h=(\d+)", line)
            if m and current is not None:
                groups[current].append(int(m.group(1)))
        cmds = []
        for mgrp, nodes in groups.items():
            for l1h in nodes:
                cmds += [f"mc_node_dissociate {mgrp} {l1h}", f"mc_node_destroy {l1h}"]
            cmds.append(f"mc_mgrp_destroy {mgrp}")
        if cmds:
            self.run(*cmds)
        return len(groups)


def push_pipeline(sw: SwitchConnection, tm: TrafficManager, p4info, bmv2_json):
    """Push a pipeline over P4Runtime and clear BMv2's stale PRE state (see
    :meth:`TrafficManager.clear_pre`). Returns the Pipeline."""
    pipeline = sw.set_pipeline(p4info, bmv2_json)
    tm.clear_pre()
    return pipeline

"""Traffic-manager settings and PRE clean-up of a BMv2 switch, through BMv2's Thrift API.

Queue rate and depth are BMv2 Thrift runtime calls (the ``simple_switch`` service's
``set_egress_queue_rate`` / ``set_egress_queue_depth``), not P4Runtime. In BMv2 a rate of
0 pps means *unlimited*, and a packet's departure time is fixed when it enters the queue
(``QueueingLogicPriRL::push_front``): lowering the rate slows later packets only, raising
it does not release packets already waiting.

The client is BMv2's own generated Python Thrift code (packages ``bm_runtime`` and
``sswitch_runtime``, installed with BMv2 next to ``simple_switch_CLI``) over PyPI's
``thrift`` (the ``p4`` extra): typed calls with a timeout, no output parsing.
:func:`bmv2_thrift_modules` finds the bindings of the installed BMv2.
"""

from __future__ import annotations

import glob
import importlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Optional

from olaf.controller.p4rt import SwitchConnection


class ThriftError(RuntimeError):
    """A Thrift call failed or the bindings are missing; the message says which and why."""


def _binding_dirs() -> list[str]:
    """Where BMv2 installs its Python Thrift bindings, relative to ``simple_switch_grpc``."""
    exe = shutil.which("simple_switch_grpc") or shutil.which("simple_switch")
    prefixes = [str(Path(os.path.realpath(exe)).parents[1])] if exe else []
    prefixes += ["/usr/local", "/usr"]
    out = []
    for p in dict.fromkeys(prefixes):
        out += sorted(glob.glob(f"{p}/lib/python3*/site-packages")) + sorted(glob.glob(f"{p}/lib/python3*/dist-packages"))
        out += [f"{p}/lib/python3/dist-packages"]
    return [d for d in out if os.path.isdir(os.path.join(d, "sswitch_runtime"))]


def bmv2_thrift_modules():
    """``(Standard, SimplePreLAG, SimpleSwitch)`` client modules of the installed BMv2.

    The directory that holds them (a system site-packages) is appended, not prepended, to
    ``sys.path``, so nothing there shadows this environment's packages.

    Raises:
        ThriftError: BMv2's bindings or the ``thrift`` package cannot be imported.
    """
    try:
        import thrift  # noqa: F401,PLC0415
    except ImportError:
        raise ThriftError("the Python package 'thrift' is missing: install Olaf's 'p4' extra (`make setup`)") from None
    try:
        importlib.import_module("sswitch_runtime")
    except ImportError:
        dirs = _binding_dirs()
        if not dirs:
            raise ThriftError("BMv2's Python Thrift bindings (sswitch_runtime, bm_runtime) were not found next to "
                              "simple_switch_grpc; install BMv2 with --with-thrift (p4lang's packages include "
                              "them)") from None
        sys.path.append(dirs[0])
    try:
        from bm_runtime.simple_pre_lag import SimplePreLAG  # noqa: PLC0415
        from bm_runtime.standard import Standard  # noqa: PLC0415
        from sswitch_runtime import SimpleSwitch  # noqa: PLC0415
    except ImportError as e:
        raise ThriftError(f"BMv2's Python Thrift bindings do not import: {e}") from None
    return Standard, SimplePreLAG, SimpleSwitch


class TrafficManager:
    """Typed Thrift client of one BMv2 switch (``127.0.0.1:thrift_port``).

    Every call opens a connection, makes the call with a ``timeout_s`` deadline and closes
    it (the switch may restart between calls). Raises :class:`ThriftError` naming the
    switch and the call on any failure.
    """

    def __init__(self, thrift_port: int, name: str = "switch", host: str = "127.0.0.1", timeout_s: float = 10.0):
        self.thrift_port = thrift_port
        self.host = host
        self.name = name
        self.timeout_s = timeout_s
        self._modules: Optional[dict[str, Any]] = None  # loaded on the first call

    def _call(self, service: str, method: str, *args: Any) -> Any:
        from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol  # noqa: PLC0415
        from thrift.Thrift import TException  # noqa: PLC0415
        from thrift.transport import TSocket, TTransport  # noqa: PLC0415

        if self._modules is None:
            standard, pre, sswitch = bmv2_thrift_modules()
            self._modules = {"standard": standard, "simple_pre_lag": pre, "simple_switch": sswitch}
        module = self._modules[service]
        sock = TSocket.TSocket(self.host, self.thrift_port)
        sock.setTimeout(int(self.timeout_s * 1000))
        transport = TTransport.TBufferedTransport(sock)
        proto = TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(transport), service)
        try:
            transport.open()
            return getattr(module.Client(proto), method)(*args)
        except (TException, OSError) as e:
            raise ThriftError(f"{self.name}: Thrift {method}{args} at {self.host}:{self.thrift_port} failed: "
                              f"{type(e).__name__}: {e}") from None
        finally:
            transport.close()

    def set_queue_rate(self, pps: int, port: Optional[int] = None) -> None:
        """Egress queue rate in packets/s (0 = unlimited), for ``port`` or all ports."""
        if pps < 0:
            raise ValueError(f"queue rate {pps} pps must be >= 0")
        if port is None:
            self._call("simple_switch", "set_all_egress_queue_rates", pps)
        else:
            self._call("simple_switch", "set_egress_queue_rate", port, pps)

    def set_queue_depth(self, packets: int, port: Optional[int] = None) -> None:
        """Egress queue depth in packets, for ``port`` or all ports."""
        if packets < 1:
            raise ValueError(f"queue depth {packets} must be >= 1 packet")
        if port is None:
            self._call("simple_switch", "set_all_egress_queue_depths", packets)
        else:
            self._call("simple_switch", "set_egress_queue_depth", port, packets)

    def mc_entries(self) -> dict[str, Any]:
        """BMv2's PRE state: ``{"mgrps": [{"id", "l1_handles"}], "l1_handles": [...], ...}``."""
        return json.loads(self._call("simple_pre_lag", "bm_mc_get_entries", 0))

    def clear_pre(self) -> int:
        """Destroy every multicast group and node in BMv2's PRE; returns how many groups.

        BMv2 keeps its PRE state across a P4Runtime SetForwardingPipelineConfig
        (p4lang/behavioral-model#891), while PI forgets it: a group id reused after
        a pipeline push then keeps its old nodes and replicates packets twice.
        Call this right after pushing a pipeline, before writing groups.
        """
        entries = self.mc_entries()
        for g in entries.get("mgrps", []):
            for l1 in g.get("l1_handles", []):
                self._call("simple_pre_lag", "bm_mc_node_dissociate", 0, g["id"], l1)
        for l1 in entries.get("l1_handles", []):
            self._call("simple_pre_lag", "bm_mc_node_destroy", 0, l1["handle"])
        for g in entries.get("mgrps", []):
            self._call("simple_pre_lag", "bm_mc_mgrp_destroy", 0, g["id"])
        return len(entries.get("mgrps", []))


def push_pipeline(sw: SwitchConnection, tm: TrafficManager, p4info, bmv2_json):
    """Push a pipeline over P4Runtime and clear BMv2's stale PRE state (see
    :meth:`TrafficManager.clear_pre`). Returns the Pipeline."""
    pipeline = sw.set_pipeline(p4info, bmv2_json)
    tm.clear_pre()
    return pipeline

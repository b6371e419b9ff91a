"""A Mininet network of BMv2 Olaf switches built from a Deployment.

:class:`OlafNetwork` is a context manager: on exit — normal, exception or
Ctrl-C — it stops every host process it started, every switch (by its process
handle) and Mininet's hosts and links, so no interface, namespace or process
is left behind. A switch that fails to start raises
:class:`olaf.bmv2.SwitchStartError` naming the switch and its log file.

The switches run in a management network namespace (:mod:`olaf.mgmtns`): BMv2's Thrift
server listens on every interface of its namespace, and there it has none but loopback
and its data ports, so the runtime API is reachable only through the forwarders on
``127.0.0.1`` of the machine (the deployment's ``grpc``/``thrift_port``).

Mininet comes from the distribution (Debian/Ubuntu package ``mininet``); the
Makefile links its Python package into the virtualenv.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any, Optional

from mininet.net import Mininet
from mininet.node import Host, Switch

from olaf.bmv2 import BMV2_LOG_LEVEL, Bmv2Switch, SwitchSpec
from olaf.constants import MTU
from olaf.controller.config import Deployment
from olaf.mgmtns import ManagementNamespace


class OlafSwitchNode(Switch):
    """Mininet switch running simple_switch_grpc with the OlafQueue extern. Its data-plane
    ports are moved into the management namespace, where the switch runs (olaf/mgmtns.py):
    its Thrift and gRPC servers are reachable only through the loopback forwarders."""

    def __init__(self, name: str, spec_args: Optional[dict] = None, mgmt: Optional[ManagementNamespace] = None,
                 **params):
        Switch.__init__(self, name, **params)
        self.spec_args = spec_args or {}
        self.mgmt = mgmt
        self.bmv2: Optional[Bmv2Switch] = None

    def start(self, controllers) -> None:  # noqa: ARG002 (Mininet API)
        ports = {port: intf.name for port, intf in self.intfs.items() if intf.name != "lo"}
        if self.mgmt is not None:
            for ifname in ports.values():
                self.mgmt.move_interface(ifname)
        self.bmv2 = Bmv2Switch(SwitchSpec(name=self.name, ports=ports,
                                          netns=None if self.mgmt is None else self.mgmt.name, **self.spec_args))
        self.bmv2.start()

    def stop(self, deleteIntfs: bool = True) -> None:
        if self.bmv2 is not None:
            self.bmv2.stop()
        super().stop(deleteIntfs)


class OlafNetwork:
    """Mininet hosts, links and BMv2 switches for ``deployment``.

    Args:
        deployment: hosts, switches (gRPC/Thrift ports, device ids), links.
        extern_so: absolute path of ``olaf_queue.so``.
        log_dir: switch logs go to ``<log_dir>/<switch>.log``.
        log_level: BMv2 log level (``warn`` keeps the switch fast under load).
        pcap_dir: if set, every switch writes a pcap per port there (BMv2 ``--pcap``).
        mtu: IPv4 MTU of every veth (hosts' and switches' ports), bytes: 1500 or jumbo frames up
            to 9000 (``ip link set … mtu``; Mininet's links have no MTU parameter).
    """

    def __init__(self, deployment: Deployment, extern_so: Path, log_dir: Path, log_level: str = BMV2_LOG_LEVEL,
                 pcap_dir: Optional[Path] = None, mtu: int = MTU):
        self.d = deployment
        self.mtu = mtu
        self.pcap_dir = None if pcap_dir is None else Path(pcap_dir).resolve()
        self.extern_so = Path(extern_so).resolve()
        self.log_dir = Path(log_dir).resolve()
        self.log_level = log_level
        self.net: Optional[Mininet] = None
        self.procs: list[subprocess.Popen] = []
        self.mgmt = ManagementNamespace(f"olafmgmt{os.getpid()}")
        self.node_of: dict[str, str] = {}
        """Host name → its Mininet node: workers that share an address (identity five_tuple) run
        in one node, the first of them's."""

    def __enter__(self) -> "OlafNetwork":
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.pcap_dir is not None:
            self.pcap_dir.mkdir(parents=True, exist_ok=True)
        net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False, autoStaticArp=False)
        self.net = net
        try:
            self.mgmt.__enter__()
            for name, s in self.d.switches.items():
                grpc_host, grpc_port = s.grpc.rsplit(":", 1)
                if grpc_host != "127.0.0.1":
                    raise ValueError(f"switches.{name}.grpc: {s.grpc}: an emulated switch's control ports are "
                                     "forwarded on 127.0.0.1 only")
                for port in (int(grpc_port), s.thrift_port):
                    self.mgmt.forward(port)
                net.addSwitch(name, cls=OlafSwitchNode, mgmt=self.mgmt, spec_args=dict(
                    extern_so=self.extern_so, log_path=self.log_dir / f"{name}.log",
                    device_id=s.device_id, grpc_port=int(grpc_port), grpc_host="127.0.0.1",
                    thrift_port=s.thrift_port, log_level=self.log_level, pcap_dir=self.pcap_dir))
            first_at: dict[str, str] = {}
            for name, h in self.d.hosts.items():   # workers sharing an address share the first one's node
                self.node_of[name] = first_at.setdefault(h.ip, name)
            for name in dict.fromkeys(self.node_of.values()):
                h = self.d.hosts[name]
                net.addHost(name, ip=f"{h.ip}/8", mac=h.mac)
                net.addLink(net.get(name), net.get(h.switch), port2=h.port)
            for l in self.d.links:
                net.addLink(net.get(l.a), net.get(l.b), port1=l.port_a, port2=l.port_b)
            net.build()
            if self.mtu != MTU:  # before start: a switch's ports then move into the management namespace
                for node in (*net.hosts, *net.switches):
                    for intf in node.intfList():
                        if intf.name != "lo":
                            out = node.cmd(f"ip link set dev {intf.name} mtu {self.mtu} 2>&1")
                            if out.strip():
                                raise RuntimeError(f"{intf.name}: cannot set MTU {self.mtu}: {out.strip()}")
            net.start()
            net.staticArp()
            for h in self.hosts():
                h.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
                # veth TX checksum offload leaves partial UDP checksums that BMv2 (which reads
                # raw frames) forwards unchanged and the receiver then drops: compute them in
                # software, as BMv2 setups do (p4lang/tutorials, p4-utils).
                for intf in h.intfList():
                    if intf.name != "lo":
                        h.cmd(f"ethtool -K {intf.name} tx off rx off >/dev/null 2>&1")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def hosts(self) -> list[Host]:
        assert self.net is not None
        return list(self.net.hosts)

    def host(self, name: str) -> Host:
        assert self.net is not None
        return self.net.get(self.node_of.get(name, name))

    def popen(self, host: str, cmd: list[str], log: Path) -> subprocess.Popen:
        """Start ``cmd`` in ``host``'s namespace (stdout+stderr to ``log``); stopped on exit."""
        out = open(log, "wb")
        # mnexec -d (Mininet's popen) calls setsid(): the process leads its own group,
        # so killpg reaches it. (start_new_session would make mnexec fork and exit.)
        p = self.host(host).popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        out.close()
        self.procs.append(p)
        return p

    def track(self, handle: Any) -> None:
        """Stop ``handle`` with the started processes (:meth:`stop_procs`): a host program that is
        not a process of its own (a worker inside a Ray actor) but answers ``poll``, ``wait``,
        ``terminate`` and ``kill`` as :class:`subprocess.Popen` does."""
        self.procs.append(handle)

    def stop_procs(self, timeout_s: float = 10.0, procs: Optional[list[Any]] = None) -> None:
        """SIGTERM every started process (or those of ``procs``; they flush logs and exit), SIGKILL
        stragglers after ``timeout_s``; a tracked handle that is not a process gets ``terminate``
        and then ``kill``."""
        procs = self.procs if procs is None else procs
        for p in procs:
            if p.poll() is None:
                if isinstance(p, subprocess.Popen):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p.pid, signal.SIGTERM)
                else:
                    p.terminate()
        for p in procs:
            try:
                p.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                if isinstance(p, subprocess.Popen):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p.pid, signal.SIGKILL)
                else:
                    p.kill()
                p.wait()

    def check_switches(self) -> None:
        """Watchdog: raise SwitchStartError if a switch process died."""
        assert self.net is not None
        for s in self.net.switches:
            if isinstance(s, OlafSwitchNode) and s.bmv2 is not None:
                s.bmv2.check_alive()

    def __exit__(self, *exc: object) -> None:
        self.stop_procs()
        if self.net is not None:
            self.net.stop()
            self.net = None
        self.mgmt.__exit__(None, None, None)

"""Run BMv2 ``simple_switch_grpc`` with the Olaf extern, by process handle.

Used by the PTF runner, the integration tests and the Mininet topologies, so
the switch command line exists once (:meth:`SwitchSpec.command`). The switch
is a child process kept by its :class:`subprocess.Popen` handle; readiness is
a poll of its gRPC and Thrift ports with a timeout; :meth:`Bmv2Switch.stop`
acts on the handle only (never ``pkill`` by name).

:class:`NetNamespace` and :func:`veth_pairs` create the links a test needs and
remove them on exit, including after an exception.

**Receive rings.** BMv2 reads each port through libpcap in immediate mode, that is a
``TPACKET_V2`` ring of fixed-size frames in libpcap's default 2 MiB buffer. libpcap sizes a
frame for the largest packet the interface can hand it: ``MTU + 18`` bytes, but 65,553 bytes
as soon as the interface has a segmentation or receive offload on (``pcap-linux.c``,
``create_ring``), and a veth has TSO and GSO on by default. The ring then holds 32 frames,
whatever the MTU: a burst of more than 32 frames (the K chunks of one update, the K slices of
one ACK answer) that arrives while BMv2's receive thread waits for a core overflows it, and
the kernel counts the loss only in the socket's ``PACKET_STATISTICS``, which no tool outside
BMv2 can read. :meth:`Bmv2Switch.start` therefore turns TSO, GSO and GRO off on every
data-plane port before the switch opens it (:data:`RING_OFFLOADS`): the ring then holds
1,310 frames at a 1500 B MTU and 231 at 9000 B (measured with libpcap 1.10).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence


class ToolMissing(RuntimeError):
    """A P4 tool is not on PATH; the message says which and how to get it."""


class SwitchStartError(RuntimeError):
    """The switch did not come up; the message names the log file and its tail."""


P4_TOOLS_HINT = (
    "p4c and BMv2 come from p4lang's packages (Ubuntu: add the p4lang OBS repository, "
    "then `apt-get install p4lang-p4c p4lang-bmv2 p4lang-pi`; see README \"P4 toolchain\"), "
    "or build p4lang/p4c, p4lang/PI and p4lang/behavioral-model from source and put them on PATH."
)


def require_tool(name: str) -> str:
    """Absolute path of ``name`` on PATH, or :class:`ToolMissing` with the install hint."""
    path = shutil.which(name)
    if path is None:
        raise ToolMissing(f"{name} is not on PATH. {P4_TOOLS_HINT}")
    return path


def missing_p4_tools() -> list[str]:
    """The P4 tools Olaf needs that are not on PATH (empty if all are there)."""
    return [t for t in ("p4c-bm2-ss", "simple_switch_grpc", "simple_switch_CLI") if shutil.which(t) is None]


BMV2_LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")
BMV2_LOG_LEVEL = "warn"
"""The switches' default log level: ``warn`` keeps a loaded switch fast (every packet at ``info`` costs it)."""
"""BMv2's log levels (``--log-level``; :attr:`SwitchSpec.log_level`, ``BackendOptions.bmv2_log_level``)."""
RING_OFFLOADS = ("tso", "gso", "gro")
"""The ``ethtool -K`` features that make libpcap size BMv2's receive frames for 64 KiB packets
(module docstring, "Receive rings"); :meth:`Bmv2Switch.start` turns them off on every port."""


def ring_offloads_off(ifaces: Sequence[str], netns: Optional[str] = None) -> None:
    """Turn :data:`RING_OFFLOADS` off on ``ifaces`` (in ``netns``, or the caller's namespace),
    so that BMv2's libpcap receive ring is sized in MTU-sized frames (module docstring).

    Raises:
        ToolMissing: ``ethtool`` is not on PATH.
        SwitchStartError: ``ethtool`` could not change an interface's features (the message
            names the interface and ethtool's answer).
    """
    if not ifaces:
        return
    ethtool = shutil.which("ethtool")
    if ethtool is None:
        raise ToolMissing("ethtool is not on PATH: BMv2's ports need their segmentation offloads off "
                          "(apt-get install ethtool)")
    prefix = ["ip", "netns", "exec", netns] if netns else []
    for iface in ifaces:
        features = [w for f in RING_OFFLOADS for w in (f, "off")]
        r = subprocess.run([*prefix, ethtool, "-K", iface, *features], capture_output=True, text=True)
        if r.returncode != 0:
            raise SwitchStartError(f"{iface}: ethtool -K {' '.join(features)} failed ({r.stderr.strip() or r.returncode}); "
                                   "with these offloads on, BMv2's receive ring holds only 32 frames")


@dataclass
class SwitchSpec:
    """How to start one BMv2 switch.

    Attributes:
        name: label for logs and errors (e.g. ``"s1"``).
        ports: BMv2 port number → interface name (the single port map, also given to PTF).
        extern_so: absolute path of the OlafQueue extern module (``olaf_queue.so``).
        json_path: BMv2 JSON to load at start, or None for ``--no-p4`` (pipeline pushed over P4Runtime).
        device_id: P4Runtime device id.
        grpc_port / thrift_port: TCP ports on 127.0.0.1 (or all addresses when ``grpc_host`` is 0.0.0.0).
        log_path: switch log, without suffix: BMv2 writes ``<log_path>.txt``
            (:attr:`log_file`); start-up output goes to ``<log_path>.stdout``.
        netns: network namespace to run in (None: the caller's).
        cpu_port: optional BMv2 CPU port for packet-in/out.
        log_level: BMv2 log level (:data:`BMV2_LOG_LEVELS`); ``warn`` keeps a loaded switch fast.
        pcap_dir: if set, BMv2 writes one pcap per port there (``--pcap``).
    """

    name: str
    ports: Mapping[int, str]
    extern_so: Path
    log_path: Path
    json_path: Optional[Path] = None
    device_id: int = 0
    grpc_port: int = 9559
    thrift_port: int = 9090
    grpc_host: str = "127.0.0.1"
    netns: Optional[str] = None
    cpu_port: Optional[int] = None
    log_level: str = "info"
    pcap_dir: Optional[Path] = None
    extra_args: Sequence[str] = field(default_factory=tuple)

    @property
    def log_file(self) -> Path:
        """The file BMv2 actually writes (it appends ``.txt`` to ``--log-file``)."""
        return Path(f"{self.log_path}.txt")

    @property
    def grpc_addr(self) -> str:
        return f"{'127.0.0.1' if self.grpc_host == '0.0.0.0' else self.grpc_host}:{self.grpc_port}"

    def command(self) -> list[str]:
        """The full ``simple_switch_grpc`` command line."""
        exe = require_tool("simple_switch_grpc")
        if not Path(self.extern_so).is_absolute():
            raise ValueError(f"extern_so must be an absolute path, got {self.extern_so}")
        cmd = [exe, "--device-id", str(self.device_id), "--thrift-port", str(self.thrift_port),
               "--log-file", str(self.log_path), "--log-flush", "--log-level", self.log_level]
        for port, iface in sorted(self.ports.items()):
            cmd += ["-i", f"{port}@{iface}"]
        if self.pcap_dir is not None:
            cmd += [f"--pcap={self.pcap_dir}"]   # an implicit-value option: a separate word is not its value
        cmd += [str(self.json_path)] if self.json_path else ["--no-p4"]
        cmd += list(self.extra_args)
        cmd += ["--", "--grpc-server-addr", f"{self.grpc_host}:{self.grpc_port}",
                "--load-modules", str(self.extern_so)]
        if self.cpu_port is not None:
            cmd += ["--cpu-port", str(self.cpu_port)]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        return cmd


class Bmv2Switch:
    """A running ``simple_switch_grpc`` (context manager: start on enter, stop on exit)."""

    def __init__(self, spec: SwitchSpec):
        self.spec = spec
        self.proc: Optional[subprocess.Popen] = None

    def start(self, timeout_s: float = 30.0) -> "Bmv2Switch":
        """Start and wait until both the gRPC and the Thrift port accept connections.

        Turns the ports' segmentation offloads off first (:func:`ring_offloads_off`).

        Raises SwitchStartError (with the log's tail) if the process exits or
        the ports stay closed for ``timeout_s``.
        """
        spec = self.spec
        ring_offloads_off(list(spec.ports.values()), spec.netns)
        Path(spec.log_path).parent.mkdir(parents=True, exist_ok=True)
        out = open(f"{spec.log_path}.stdout", "wb")
        self.proc = subprocess.Popen(spec.command(), stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        out.close()
        deadline = time.monotonic() + timeout_s
        pending = {spec.grpc_port, spec.thrift_port}
        while pending:
            if self.proc.poll() is not None:
                raise SwitchStartError(self._failure(f"exited with status {self.proc.returncode}"))
            for port in list(pending):
                if self._port_open(port):
                    pending.discard(port)
            if time.monotonic() > deadline:
                self.stop()
                raise SwitchStartError(self._failure(f"ports {sorted(pending)} not open after {timeout_s:.0f} s"))
            time.sleep(0.05)
        # BMv2 only warns when --load-modules fails, then dies once a pipeline needs the extern.
        startup = Path(f"{spec.log_path}.stdout").read_text(errors="replace")
        skipped = [line for line in startup.splitlines() if "Skipping module" in line]
        if skipped:
            self.stop()
            raise SwitchStartError(self._failure(f"could not load the OlafQueue extern ({skipped[0].strip()})"))
        return self

    def _port_open(self, port: int) -> bool:
        if self.spec.netns:
            # The port lives in the namespace: probe from inside it.
            r = subprocess.run(["ip", "netns", "exec", self.spec.netns, "python3", "-c",
                                f"import socket; socket.create_connection(('127.0.0.1', {port}), 0.2)"],
                               capture_output=True)
            return r.returncode == 0
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
        return False

    def _failure(self, what: str) -> str:
        tail = ""
        for p in (Path(f"{self.spec.log_path}.stdout"), self.spec.log_file):
            if p.exists():
                tail += "".join(p.read_text(errors="replace").splitlines(True)[-15:])
        return (f"{self.spec.name}: simple_switch_grpc {what}; log: {self.spec.log_file}\n"
                f"command: {' '.join(self.spec.command())}\n{tail}")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        """Process id of ``simple_switch_grpc`` (``ip netns exec`` execs it in place).

        Raises:
            RuntimeError: the switch was not started.
        """
        if self.proc is None:
            raise RuntimeError(f"{self.spec.name}: the switch was not started")
        return self.proc.pid

    def check_alive(self) -> None:
        """Watchdog: raise SwitchStartError (with the log tail) if the switch died."""
        if self.proc is not None and self.proc.poll() is not None:
            raise SwitchStartError(self._failure(f"died with status {self.proc.returncode}"))

    def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate the switch (its whole process group) and wait for it."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def __enter__(self) -> "Bmv2Switch":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class NetNamespace:
    """A named network namespace, deleted (with its interfaces) on exit."""

    def __init__(self, name: str):
        if len(name) > 32:
            raise ValueError(f"namespace name {name!r} is too long")
        self.name = name

    def __enter__(self) -> "NetNamespace":
        subprocess.run(["ip", "netns", "add", self.name], check=True, capture_output=True)
        self.exec("ip", "link", "set", "lo", "up")
        return self

    def exec(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.name, *cmd], check=check,
                              capture_output=True, text=True)

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


@contextlib.contextmanager
def veth_pairs(pairs: Sequence[tuple[str, str]], netns: Optional[str] = None) -> Iterator[None]:
    """Create veth pairs (both ends in ``netns`` if given), up, IPv6 off; delete on exit."""
    pre = ["ip", "netns", "exec", netns] if netns else []
    made = []
    try:
        for a, b in pairs:
            subprocess.run(pre + ["ip", "link", "add", a, "type", "veth", "peer", "name", b],
                           check=True, capture_output=True)
            made.append(a)
            for end in (a, b):
                subprocess.run(pre + ["ip", "link", "set", end, "up"], check=True, capture_output=True)
                subprocess.run(pre + ["sysctl", "-qw", f"net.ipv6.conf.{end}.disable_ipv6=1"],
                               capture_output=True)
        yield
    finally:
        for a in made:
            subprocess.run(pre + ["ip", "link", "del", a], capture_output=True)

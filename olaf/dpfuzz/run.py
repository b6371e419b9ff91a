"""The data-plane fuzzing loop, run inside the switch's network namespace.

Program the switch (two clusters of two workers, the PS on port 0), then batch after batch:
send the batch's frames (rate-limited), wait until the switch has counted every one, and
check, after each batch:

* the switch answers P4Runtime reads and is alive;
* **ingress conservation**: frames sent = Σ malformed + Σ traffic + Σ decisions (every
  frame is counted exactly once, docs/dataplane.md);
* **egress conservation** once the PS port has drained: Σ append = Σ departures + segments
  reclaimed (lost and expired tokens, docs/dataplane.md "The token ledger"; nothing leaked);
* **liveness**: one probe update per cluster appends and departs (a queue stuck at
  ``drop_full`` would fail here);
* **emitted frames**: every frame the switch sent on any port has a right IPv4 checksum and
  a UDP checksum that is 0 or right.

The result is a JSON-ready dict; the first failed check ends the run and is reported with
the batch it happened in.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from olaf import wire
from olaf.checksums import checksum_problem
from olaf.constants import Decision
from olaf.dpfuzz import frames as fr

NUM_PORTS = 6
PACKET_OUTGOING = 4
PROBE_SEQ = 0xF0000000


def deployment_file(path: Path, grpc: str, thrift_port: int) -> Path:
    """The network file of the fuzzed switch (the PTF port map, frames.py)."""
    hosts: dict[str, Any] = {"ps": {"ip": fr.PS_IP, "mac": fr.PS_MAC, "switch": "s1", "port": fr.PS_PORT},
                             "h5": {"ip": fr.worker_ip(fr.UNKNOWN_PORT), "mac": fr.worker_mac(fr.UNKNOWN_PORT),
                                    "switch": "s1", "port": fr.UNKNOWN_PORT}}
    for k in fr.WORKERS:
        hosts[f"w{k}"] = {"ip": fr.worker_ip(k), "mac": fr.worker_mac(k), "switch": "s1", "port": k, "worker_id": k}
    clusters: dict[int, list[str]] = {}
    for k, c in fr.WORKERS.items():
        clusters.setdefault(c, []).append(f"w{k}")
    net = {"num_grads": fr.NUM_GRADS, "ps": "ps", "hosts": hosts, "clusters": clusters,
           "switches": {"s1": {"grpc": grpc, "thrift_port": thrift_port, "mac": fr.SW_MAC,
                               "queue": {"size": 4}, "bottleneck": {"rate_pps": 0, "depth": 64}}}}
    path.write_text(yaml.safe_dump(net))
    return path


class Capture:
    """Receives every frame the switch sends on ports 0..5 (AF_PACKET, in a thread) and
    checks its checksums; keeps the sequence numbers of updates leaving on the PS port."""

    def __init__(self):
        self.socks = []
        for i in range(NUM_PORTS):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            s.bind((f"ptf{i}", 0))
            s.settimeout(0.05)
            self.socks.append(s)
        self.emitted = Counter()
        self.bad: list[str] = []
        self.ps_seqs: set[int] = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._rx, args=(i,), daemon=True) for i in range(NUM_PORTS)]
        for t in self.threads:
            t.start()

    def _rx(self, port: int) -> None:
        s = self.socks[port]
        while not self.stop.is_set():
            try:
                data, addr = s.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] == PACKET_OUTGOING:
                continue
            problem = checksum_problem(data)
            seq = _update_seq(data) if port == fr.PS_PORT else None
            with self.lock:
                self.emitted[port] += 1
                if problem:
                    self.bad.append(f"port {port}: {problem}")
                if seq is not None:
                    self.ps_seqs.add(seq)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()
        for s in self.socks:
            s.close()


def _update_seq(frame: bytes) -> Optional[int]:
    if len(frame) < 42 + wire.UPDATE_HEADER_LEN or frame[12:14] != b"\x08\x00":
        return None
    if int.from_bytes(frame[36:38], "big") != wire.UPDATE_PORT:
        return None
    try:
        return wire.parse_update(frame[42:]).seq
    except wire.MalformedOlafPacket:
        return None


@dataclass
class Result:
    frames: int = 0
    batches: int = 0
    families: Counter = field(default_factory=Counter)
    failure: Optional[str] = None
    counters: dict[str, Any] = field(default_factory=dict)
    emitted: dict[int, int] = field(default_factory=dict)
    bad_checksums: int = 0
    probes: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"frames": self.frames, "batches": self.batches, "families": dict(self.families),
                "failure": self.failure, "counters": self.counters, "emitted_frames": self.emitted,
                "bad_checksums": self.bad_checksums, "probes": self.probes, "seconds": round(self.seconds, 1)}


def fuzz(build: Path, frames: int, batch: int, seed: int, rate_fps: float, work_dir: Path,
         families: list[str] | None = None) -> Result:
    """Run ``frames`` fuzz frames in batches of ``batch`` at ``rate_fps`` (see the module docstring)."""
    from olaf.controller import config as cfgmod
    from olaf.controller.controller import OlafController

    net = deployment_file(work_dir / "network.yaml", "127.0.0.1:9559", 9090)
    ctl = OlafController(cfgmod.load(net), build / "olaf.p4info.txt", build / "olaf.json")
    ctl.deploy(push_pipeline=True)
    sc = ctl.switches["s1"]
    out = {i: socket.socket(socket.AF_PACKET, socket.SOCK_RAW) for i in range(NUM_PORTS)}
    for i, s in out.items():
        s.bind((f"ptf{i}", 0))
    cap = Capture()
    rng = random.Random(seed)
    res = Result()
    t_start = time.monotonic()
    try:
        while res.frames < frames and res.failure is None:
            n = min(batch, frames - res.frames)
            for fam, (port, data) in fr.mixed(rng, n, res.frames, families):
                out[port].send(data)
                res.families[fam] += 1
                time.sleep(1.0 / rate_fps)
            res.frames += n
            res.batches += 1
            res.failure = _check(sc, cap, out, res.frames + res.probes, res)
    finally:
        res.seconds = time.monotonic() - t_start
        time.sleep(0.2)
        cap.close()
        res.emitted = dict(cap.emitted)
        res.bad_checksums = len(cap.bad)
        try:
            res.counters = sc.counters.snapshot(range(2))
        except Exception as e:  # noqa: BLE001  (a dead switch: say so in the result)
            res.failure = res.failure or f"switch unreachable at the end: {e}"
        ctl.close()
        for s in out.values():
            s.close()
    if res.failure is None and cap.bad:
        res.failure = f"{len(cap.bad)} emitted frames with bad checksums, first: {cap.bad[0]}"
    return res


def _totals(sc) -> tuple[int, dict[str, int], dict[str, int]]:
    c = sc.counters
    dec = c.decisions()
    frames_counted = sum(c.malformed().values()) + sum(c.traffic().values()) + sum(dec.values())
    return frames_counted, dec, c.reclaimed()


def _wait(pred, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _check(sc, cap: Capture, out, sent: int, res: Result) -> Optional[str]:
    """The checks of the module docstring after one batch; a message for the first failure."""
    b = res.batches
    try:
        if not _wait(lambda: _totals(sc)[0] >= sent, 20):
            return f"batch {b}: ingress counted {_totals(sc)[0]} frames, {sent} were sent"
        counted, dec, reclaimed = _totals(sc)
        if counted != sent:
            return f"batch {b}: ingress counted {counted} frames, {sent} were sent (a frame counted twice?)"

        def drained() -> bool:
            _, dec, reclaimed = _totals(sc)
            return dec["append"] == _departures(sc) + sum(reclaimed.values())
        if not _wait(drained, 20):
            counted, dec, reclaimed = _totals(sc)
            return (f"batch {b}: egress conservation: {dec['append']} appended, {_departures(sc)} departed, "
                    f"reclaimed {reclaimed}: segments leaked")
        for c, k in ((0, 1), (1, 3)):
            seq = PROBE_SEQ + res.probes
            before = sc.counters.cluster_decision(c, Decision.APPEND)
            out[k].send(bytes(fr.update_pkt(k, fr.Update(cluster_id=0, worker_id=0, seq=seq, count=1, reward_sum=0,
                                                         gen_ts=1, grads=(0,) * fr.NUM_GRADS))))
            res.probes += 1
            if not _wait(lambda c=c, before=before: sc.counters.cluster_decision(c, Decision.APPEND) > before, 10):
                return f"batch {b}: the probe of cluster {c} was not appended (queue stuck?)"
            if not _wait(lambda seq=seq: seq in cap.ps_seqs, 10):
                return f"batch {b}: the probe of cluster {c} (seq {seq:#x}) never reached the PS port"
    except Exception as e:  # noqa: BLE001  (a crashed switch shows up here)
        return f"batch {b}: switch not answering: {type(e).__name__}: {e}"
    return None


def _departures(sc) -> int:
    return sum(sc.sw.read_counter(sc.counters.DEPARTURES).values())

"""PS throughput on loopback: `olaf ps` against a raw UDP echo server, in the same run.

A client keeps a window of updates outstanding (closed loop: a new update for each
ACK that comes back) and measures completed exchanges per second against

* baseline: a plain Python UDP echo server (recvfrom + sendto of the same bytes
  back to the sender's port 50101) — the cost of Python and the kernel alone;
* the real PS (`python -m olaf.cli ps`): strict decode, the reward-gated rule,
  ACK built with the scapy layers, a JSONL record per update.

Every update has a higher reward than the last, so every one is accepted and
changes the weights (the PS's most expensive path). Reports updates/s of both and
their ratio; the machine's load is printed because other work shares the cores.

``--chunked P`` measures instead a model of P parameters in chunks (docs/protocol.md "Chunks"):
for each MTU of ``--mtus`` (default 65535, 9000, 1500: K = 1, 5, 28 for P = 9,797) the PS runs
with ``--num-params P --mtu M`` and the client sends every update as its K chunks; the rate is
chunks (messages) per second, each answered by its ACK slice, beside the echo of the same
chunk messages in the same run.

Usage: python bench/ps_throughput.py [--updates N] [--window W] [--grads G] [--chunked P [--mtus ...]]
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import click

from olaf.chunks import Chunking
from olaf.fixedpoint import grads_to_fixed
from olaf.update import Update
from olaf.wire import ACK_PORT, UPDATE_PORT, encode_update

ECHO = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
while True:
    data, (src, _) = s.recvfrom(65535)
    s.sendto(data, (src, int(sys.argv[3])))
"""


def _updates(n: int, g: int) -> list[bytes]:
    grads = tuple(grads_to_fixed([0.01 * ((i % 7) - 3) for i in range(g)]))
    return [encode_update(Update(cluster_id=i % 9, worker_id=i % 27, seq=i + 1, reward_sum=i + 1,
                                 gen_ts=time.time_ns(), grads=grads)) for i in range(n)]


def _exchange(sock: socket.socket, server: tuple[str, int], msgs: list[bytes], window: int) -> tuple[float, int]:
    """Send ``msgs`` keeping ``window`` outstanding; return (seconds, lost)."""
    sock.settimeout(1.0)
    sent = got = lost = 0
    t = time.perf_counter()
    while sent < min(window, len(msgs)):
        sock.sendto(msgs[sent], server)
        sent += 1
    while got + lost < len(msgs):
        try:
            sock.recvfrom(65535)
            got += 1
        except socket.timeout:
            lost += sent - got - lost  # everything outstanding is gone
        while sent < len(msgs) and sent - got - lost < window:
            sock.sendto(msgs[sent], server)
            sent += 1
    return time.perf_counter() - t, lost


def _wait_ready(proc: subprocess.Popen, check, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while not check():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"server did not come up: {proc.args}")
        tick.wait(0.05)


def _chunked(n: int, ch: Chunking) -> tuple[list[bytes], list[bytes]]:
    """(the INIT's K chunks, ``n`` messages: whole updates of K chunks each, cut at ``n``)."""
    grads = grads_to_fixed([0.01 * ((i % 7) - 3) for i in range(ch.num_params)])
    parts = ch.split(grads)
    init = [encode_update(Update(cluster_id=0, worker_id=0, grads=p, chunk=k, num_chunks=ch.num_chunks), init=True)
            for k, p in enumerate(parts)]
    msgs: list[bytes] = []
    i = 0
    while len(msgs) < n:
        for k, p in enumerate(parts):
            msgs.append(encode_update(Update(cluster_id=i % 9, worker_id=i % 27, seq=i + 1, reward_sum=i + 1,
                                             gen_ts=time.time_ns(), grads=p, chunk=k, num_chunks=ch.num_chunks)))
        i += 1
    return init, msgs[:n]


def _measure(name: str, cmd: list[str], ready, ip: str, msgs: list[bytes], window: int,
             init: bytes | list[bytes] | None) -> float:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        _wait_ready(proc, lambda: ready(proc))
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.bind((ip + "1", ACK_PORT))
        server = (ip + "100", UPDATE_PORT)
        if init is not None:
            _exchange(sock, server, init if isinstance(init, list) else [init], 1)
        _exchange(sock, server, msgs[: len(msgs) // 10], window)  # warm-up
        secs, lost = _exchange(sock, server, msgs, window)
        sock.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    rate = (len(msgs) - lost) / secs
    click.echo(f"{name:>9}: {len(msgs) - lost} exchanges in {secs:.2f} s = {rate:,.0f} updates/s (lost {lost})")
    return rate


@click.command()
@click.option("--updates", type=int, default=20000, show_default=True, help="Measured exchanges per server.")
@click.option("--window", type=int, default=32, show_default=True, help="Updates outstanding.")
@click.option("--grads", type=int, default=32, show_default=True, help="Elements per update.")
@click.option("--json", "as_json", is_flag=True, help="Also print one JSON line: echo, olaf_ps (updates/s), ratio.")
@click.option("--chunked", type=click.IntRange(min=1), help="Model parameters P: measure chunks/s per MTU instead.")
@click.option("--mtus", default="65535,9000,1500", show_default=True, help="With --chunked: the MTUs (K per MTU).")
def main(updates: int, window: int, grads: int, as_json: bool, chunked: int | None, mtus: str) -> None:
    ip = f"127.{random.randrange(32, 250)}.{random.randrange(1, 250)}."
    if chunked is not None:
        _main_chunked(ip, chunked, [int(m) for m in mtus.split(",")], updates, window, as_json)
        return
    msgs = _updates(updates, grads)
    init = encode_update(Update(cluster_id=0, worker_id=0, grads=tuple([0] * grads)), init=True)
    click.echo(f"G = {grads}, window {window}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    echo = _measure("echo", [sys.executable, "-c", ECHO, ip + "100", str(UPDATE_PORT), str(ACK_PORT)],
                    lambda p: p.stdout.readline().strip() == "ready", ip, msgs, window, None)
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "ps.jsonl"
        ps = _measure("olaf ps", [sys.executable, "-m", "olaf.cli", "ps", "--bind", ip + "100", "--out-dir", d],
                      lambda p: log.exists(), ip, msgs, window, init)
        lines = sum(1 for _ in log.open())
    click.echo(f"    ratio: olaf ps / echo = {ps / echo:.3f}  (PS log lines: {lines})")
    if as_json:
        click.echo(json.dumps({"echo": echo, "olaf_ps": ps, "ratio": ps / echo, "grads": grads}))



def _main_chunked(ip: str, params: int, mtus: list[int], n: int, window: int, as_json: bool) -> None:
    """Chunks/s of `olaf ps --num-params P --mtu M` per MTU, each beside the echo in the same run."""
    click.echo(f"P = {params}, window {window}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    rows = []
    for mtu in mtus:
        ch = Chunking.for_model(params, mtu)
        init, msgs = _chunked(n, ch)
        echo = _measure("echo", [sys.executable, "-c", ECHO, ip + "100", str(UPDATE_PORT), str(ACK_PORT)],
                        lambda p: p.stdout.readline().strip() == "ready", ip, msgs, window, None)
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "ps.jsonl"
            ps = _measure(f"K = {ch.num_chunks}", [sys.executable, "-m", "olaf.cli", "ps", "--bind", ip + "100",
                                                   "--out-dir", d, "--num-params", str(params), "--mtu", str(mtu)],
                          lambda p, log=log: log.exists(), ip, msgs, window, init)
        rows.append({"mtu": mtu, "num_chunks": ch.num_chunks, "chunk_len": ch.chunk_len, "echo": echo,
                     "olaf_ps": ps, "ratio": ps / echo, "updates_per_s": ps / ch.num_chunks})
        click.echo(f"    MTU {mtu}: K = {ch.num_chunks}, L = {ch.chunk_len}: {ps:,.0f} chunks/s = "
                   f"{ps / ch.num_chunks:,.0f} updates/s, {ps / echo:.3f}x the echo")
    if as_json:
        click.echo(json.dumps({"num_params": params, "rows": rows}))


if __name__ == "__main__":
    main()

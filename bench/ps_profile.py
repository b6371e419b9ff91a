"""Where the PS's time per update goes: the real :class:`~olaf.hosts.ps.ParameterServer` fed
update datagrams in-process (its receive step skipped: the syscall is measured by
``bench/ps_throughput.py``), under :mod:`cProfile`, the time grouped by what it does.

Groups (by the function's module and name): ``decode`` (``olaf.wire`` parsing, INIT flag),
``trust`` (``olaf.hosts.trust``), ``step`` (``olaf.hosts.global_model``: Q7.24 → float, the rule,
the ACK's weights), ``encode`` (``olaf.wire`` ACK encoding), ``send`` (the ACK's ``sendto``),
``log`` (the update's JSONL record: the pydantic model and its write), ``staleness``
(``olaf.hosts.staleness``), ``other`` (the rest of ``_handle``: counters, dict bookkeeping).
Each group's share is its *own* (tottime) time, so the groups add up to the total.

For each model of ``--chunked P`` at each MTU of ``--mtus``: the µs per update (K chunks) and
per chunk, and each group's µs per chunk and share. One process, one core; the machine's load is
printed (other work shares the cores).

Usage: python bench/ps_profile.py [--chunked 9797] [--mtus 65535,9000,1500] [--updates 300] [--out FILE]
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import random
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

import click

from olaf.chunks import Chunking
from olaf.fixedpoint import grads_to_fixed
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.rundir.jsonl import JsonlLog
from olaf.update import Update
from olaf.wire import encode_update

GROUPS = ("decode", "trust", "step", "encode", "send", "log", "staleness", "other")


BUILTINS = {"<built-in method _struct.unpack_from>": "decode", "<built-in method _struct.pack>": "encode",
            "<built-in method numpy.asarray>": "step", "<built-in method numpy.frombuffer>": "decode",
            "<method 'astype' of 'numpy.ndarray' objects>": "decode", "<method 'tolist' of 'numpy.ndarray' objects>":
            "encode", "<method 'sendto' of '_socket.socket' objects>": "send",
            "<method 'write' of '_io.TextIOWrapper' objects>": "log"}
"""Built-in functions by what they do here (cProfile names them without a module)."""


def _group(path: str, name: str) -> str:
    if name in BUILTINS:
        return BUILTINS[name]
    if "olaf/wire" in path or "olaf/update" in path:
        return "encode" if "encode" in name or "ack" in name.lower() else "decode"
    if "olaf/hosts/trust" in path:
        return "trust"
    if "olaf/hosts/global_model" in path or "olaf/fixedpoint" in path or "numpy" in path:
        return "step"
    if "olaf/hosts/staleness" in path:
        return "staleness"
    if "olaf/rundir" in path or "pydantic" in path or "json" in path:
        return "log"
    return "other"


def _datagrams(p: int, mtu: int, n: int) -> tuple[list[bytes], list[bytes], int]:
    """The INIT chunks and ``n`` updates' chunks of a ``p``-parameter model at ``mtu``."""
    ch = Chunking.for_model(p, mtu)
    w = grads_to_fixed([0.01 * ((i % 7) - 3) for i in range(p)])
    t = time.time_ns()

    def chunks(seq: int, reward: int, init: bool) -> list[bytes]:
        out = []
        for k in range(ch.num_chunks):
            a, b = ch.bounds(k)
            u = Update(cluster_id=seq % 9, worker_id=seq % 27 + 1, seq=seq, reward_sum=reward, gen_ts=t + seq,
                       grads=tuple(w[a:b]), chunk=k, num_chunks=ch.num_chunks)
            out.append(encode_update(u, init=init))
        return out

    init = chunks(0, 0, True)
    ups = [c for i in range(n) for c in chunks(i + 1, (i + 1) << 16, False)]
    return init, ups, ch.num_chunks


def profile(p: int, mtu: int, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        ip = f"127.{random.randrange(32, 250)}.{random.randrange(1, 250)}.100"
        ps = ParameterServer(PsConfig(bind_ip=ip, out_dir=Path(d), num_params=p, mtu=mtu, step="paper", gate=False))
        log = JsonlLog(Path(d) / "ps.jsonl", 0.5)
        ps._t_start = time.time_ns() - 1_000_000_000
        init, ups, k = _datagrams(p, mtu, n)
        src = "127.0.0.2"
        for dg in init:
            ps._handle(dg, src, time.time_ns(), log)
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.enable()
        for dg in ups:
            ps._handle(dg, src, time.time_ns(), log)
        prof.disable()
        wall = time.perf_counter() - t
        log.close()
        ps.sock.close()
    st = pstats.Stats(prof)
    own: dict[str, float] = defaultdict(float)
    for (path, _line, name), (_cc, _nc, tt, _ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        own[_group(path, name)] += tt
    total = sum(own.values())
    chunks = len(ups)
    return {"P": p, "mtu": mtu, "K": k, "updates": n, "us_per_update_wall": wall / n * 1e6,
            "us_per_chunk_profiled": total / chunks * 1e6,
            "groups": {g: {"us_per_chunk": own[g] / chunks * 1e6, "share": own[g] / total if total else 0.0}
                       for g in GROUPS}}


@click.command()
@click.option("--chunked", "p", default=9797, show_default=True, help="Model parameters P.")
@click.option("--mtus", default="65535,9000,1500", show_default=True)
@click.option("--updates", default=300, show_default=True)
@click.option("--out", type=click.Path(path_type=Path))
def main(p: int, mtus: str, updates: int, out: Optional[Path]) -> None:
    rows = [profile(p, int(m), updates) for m in mtus.split(",")]
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; P = {p}")
    print(f"{'MTU':>6} {'K':>3} {'µs/update':>10} {'µs/chunk':>9}  " + " ".join(f"{g:>10}" for g in GROUPS))
    for r in rows:
        print(f"{r['mtu']:>6} {r['K']:>3} {r['us_per_update_wall']:>10.0f} {r['us_per_chunk_profiled']:>9.0f}  "
              + " ".join(f"{r['groups'][g]['us_per_chunk']:>5.0f} {100 * r['groups'][g]['share']:>3.0f}%" for g in GROUPS))
    if out is not None:
        out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Packets per second through simple_switch_grpc running the Olaf program (``make bench-switch``).

One BMv2 switch (same build, same run, BMv2 logging off) in a network namespace with
veth ports (:class:`olaf.ptf_runner.PtfEnvironment`). A sender process blasts prebuilt
frames from one worker port for a fixed time, faster than the switch can take them; the
rate is the growth of the switch's own counters (frames the ingress pipeline processed)
over that time, so only the switch's work counts. Workloads, each as a ratio to plain
forwarding measured in the same run:

* ``ipv4``: plain UDP/IPv4 through ``ipv4_lpm`` (traffic ``bypass``);
* ``append``: Olaf updates of G = 64 from many clusters, unlimited PS port: APPEND, and the
  egress ``dequeue`` writes each segment into its token;
* ``aggregate64`` / ``aggregate360``: updates of 4 clusters while the PS port drains
  ``AGGREGATE_PPS`` pkt/s: nearly every update after the first of its cluster is folded in
  (saturating adds of G elements; the decisions column says how many);
* ``fifo``: the FIFO baseline (PARAM_FIFO), G = 64, unlimited PS port;
* chunked updates (docs/protocol.md "Chunks"), each beside single-frame updates of the same
  frame size: ``append350`` / ``chunks28_append`` (G = L = 350: Stable-Baselines3's LunarLander
  network, 9,797 parameters, at MTU 1500 is K = 28 chunks of 350) and ``aggregate350`` /
  ``chunks28_aggregate`` (4 clusters, PS port at ``AGGREGATE_PPS``, 8 updates = 224 segments). Chunk frames
  cycle through the chunk indices, so every key (cluster, chunk) is hit. (K = 5 needs jumbo frames
  on the PTF veths, which this harness does not set up.)

BMv2's traffic manager fixes a packet's departure time when it is enqueued (the rate limiter of
``bm_sim/queueing.h``), so raising a port's rate does not hurry tokens already queued: before
the next workload's pipeline push the harness waits until every token issued has reached
egress (Σ ``token_fates`` = Σ APPEND decisions), at most ``224 / AGGREGATE_PPS`` s.

Then the latency from ``olafctl move`` returning to the first update aggregated in the new
cluster (ms), and the PS's updates/s (bench/ps_throughput.py) for the same table.

Usage (root): python bench/switch_throughput.py [--seconds 5] [--out docs/performance.md]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "ptf_tests"))  # the PTF port map and addresses (olaf_base)

SENDER = r"""
import socket, sys, time
iface, path, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
frames = open(path, "rb").read().split(b"\n--frame--\n")
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
s.bind((iface, 0))
end = time.monotonic() + seconds
n = i = 0
while time.monotonic() < end:
    for _ in range(256):
        try:
            s.send(frames[i])
        except BlockingIOError:
            pass
        i = (i + 1) % len(frames)
        n += 1
print(n)
"""


AGGREGATE_PPS = 50
"""PS port rate of the aggregate workloads, pkt/s: far below the blast (thousands of updates/s
over at most 112 keys, so >= 99 % are folded in), yet a full 224-segment queue drains in 4.5 s."""


def _switch_pid(launcher: int) -> int:
    """The simple_switch_grpc process under ``ip netns exec`` (which execs it: the same pid)."""
    return launcher


def _frames(kind: str, g: int, num_chunks: int = 1, clusters: int = 1) -> list[bytes]:
    """Prebuilt frames: one IPv4 frame, or updates that cycle through the chunk indices, then the
    clusters, then :data:`WORKERS` workers (the source addresses are set by the caller)."""
    from olaf_base import PS_IP, SW_MAC, worker_ip, worker_mac
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from olaf import wire
    from olaf.update import Update

    if kind == "ipv4":
        return [bytes(Ether(src=worker_mac(1), dst=SW_MAC) / IP(src=worker_ip(1), dst=PS_IP)
                      / UDP(sport=1234, dport=5678, chksum=0) / (b"x" * (wire.UPDATE_HEADER_LEN + 4 * g)))]
    out = []
    for i in range(max(64, num_chunks * clusters * WORKERS)):
        u = Update(cluster_id=0, worker_id=0, seq=i, reward_sum=0, gen_ts=i + 1, grads=tuple([i] * g),
                   chunk=i % num_chunks, num_chunks=num_chunks)
        out.append(bytes(Ether(src=worker_mac(1), dst=SW_MAC) / IP(src=worker_ip(1), dst=PS_IP, id=i)
                         / UDP(sport=wire.ACK_PORT, dport=wire.UPDATE_PORT, chksum=0) / wire.update_layer(u)))
    return out


WORKERS = 4


def _cpu_s(pid: int) -> float:
    """CPU time (user + system, s) the process ``pid`` has used, all threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def inner(seconds: float, rounds: int, build: Path, out_json: Path, switch_pid: int) -> None:
    """Runs inside the namespace: program the switch per workload, blast, read counters."""
    from olaf_base import PS_IP, PS_MAC, PS_PORT, SW_MAC, worker_ip, worker_mac

    from olaf.controller.counters import OlafCounters
    from olaf.controller.forwarding import Ipv4Forwarding
    from olaf.controller.olaf_params import OlafParams, PathParams, QueueParams
    from olaf.controller.p4rt import SwitchConnection
    from olaf.controller.tm import TrafficManager, push_pipeline
    from olaf.controller.update_identifier import UpdateIdentifier, WorkerEntry

    sw = SwitchConnection("127.0.0.1:9559", name="s1")
    sw.connect()
    tm = TrafficManager(9090, name="s1")
    counters = OlafCounters(sw)

    def drain() -> None:
        """Wait until every token issued since the last push has reached egress: a pipeline
        push behind queued tokens waits for their (already fixed) departure times."""
        if sw.pipeline is None:   # nothing pushed yet
            return
        deadline = time.monotonic() + 60 + 224 / AGGREGATE_PPS   # a hang guard only
        while sum(counters.token_fates().values()) < counters.decisions().get("append", 0):
            if time.monotonic() > deadline:
                raise RuntimeError(f"tokens still queued after {deadline:.0f} s: {counters.token_fates()}")
            time.sleep(0.2)

    def setup(g: int, rate_pps: int, discipline: str = "olaf", size: int = 64, num_chunks: int = 1):
        drain()
        push_pipeline(sw, tm, build / "olaf.p4info.txt", build / "olaf.json")
        tm.set_queue_depth(4096)
        tm.set_queue_rate(rate_pps, PS_PORT)
        Ipv4Forwarding(sw).route(PS_IP, 32, PS_PORT, SW_MAC, PS_MAC)
        Ipv4Forwarding(sw).route(worker_ip(1), 32, 1, SW_MAC, worker_mac(1))
        OlafParams(sw).set(QueueParams(queue_size=size, num_grads=g, discipline=discipline, num_chunks=num_chunks),
                           PathParams(PS_IP, PS_PORT, 0))

    def processed() -> int:
        return (sum(counters.traffic().values()) + sum(counters.decisions().values())
                + sum(counters.malformed().values()))

    def blast(kind: str, g: int, clusters: int, num_chunks: int = 1) -> dict:
        ident = UpdateIdentifier(sw)
        # one source address per cluster: the frames cycle through them
        frames = _frames(kind, g, num_chunks, clusters)
        if kind != "ipv4":
            from scapy.layers.inet import IP
            from scapy.layers.l2 import Ether
            # WORKERS workers per cluster, taking turns: consecutive updates of a cluster come
            # from different workers, so a waiting update is aggregated, not replaced
            fixed = []
            for i, f in enumerate(frames):
                p = Ether(f)
                c, w = (i // num_chunks) % clusters, (i // (num_chunks * clusters)) % WORKERS
                p[IP].src = f"10.9.{c}.{w + 1}"
                del p[IP].chksum
                fixed.append(bytes(p))
            frames = fixed
            for c in range(clusters):
                for w in range(WORKERS):
                    ident.set_worker((f"10.9.{c}.{w + 1}", 0), WorkerEntry(c * WORKERS + w + 1, c, 1))
        path = Path(f"/tmp/olaf-bench-{os.getpid()}.frames")
        path.write_bytes(b"\n--frame--\n".join(frames))
        before_n, t0, cpu0 = processed(), time.monotonic(), _cpu_s(switch_pid)
        sender = subprocess.run([sys.executable, "-c", SENDER, "ptf1", str(path), str(seconds)],
                                capture_output=True, text=True, check=True)
        # let the switch finish what is buffered on the port, then read
        time.sleep(0.5)
        after_n, t1, cpu1 = processed(), time.monotonic(), _cpu_s(switch_pid)
        path.unlink()
        dec = counters.decisions()
        n = after_n - before_n
        return {"processed": n, "seconds": t1 - t0, "pps": n / seconds, "per_cpu_s": n / (cpu1 - cpu0),
                "switch_cpu_s": cpu1 - cpu0, "offered": int(sender.stdout.strip() or 0), "decisions": dec}

    workloads = {  # name: (setup arguments, blast arguments)
        "ipv4": ((64, 0), ("ipv4", 64, 1)),
        "append": ((64, 0), ("olaf", 64, 16)),
        "aggregate64": ((64, AGGREGATE_PPS, "olaf", 8), ("olaf", 64, 4)),
        "aggregate360": ((360, AGGREGATE_PPS, "olaf", 8), ("olaf", 360, 4)),
        "fifo": ((64, 0, "fifo"), ("olaf", 64, 16)),
        "append350": ((350, 0, "olaf", 224), ("olaf", 350, 16)),
        "chunks28_append": ((350, 0, "olaf", 224, 28), ("olaf", 350, 16, 28)),
        "aggregate350": ((350, AGGREGATE_PPS, "olaf", 8), ("olaf", 350, 4)),
        "chunks28_aggregate": ((350, AGGREGATE_PPS, "olaf", 224, 28), ("olaf", 350, 4, 28)),
    }
    runs: dict[str, list[dict]] = {k: [] for k in workloads}
    for _ in range(rounds):  # interleaved rounds: a load change on the machine hits every workload
        for name, (s_args, b_args) in workloads.items():
            setup(*s_args)
            runs[name].append(blast(*b_args))
    drain()  # before the move test's pipeline push
    sw.close()
    move = [move_latency_ms(build) for _ in range(rounds)]
    out_json.write_text(json.dumps({"throughput": runs, "move_latency_ms": move}, indent=1))


def move_latency_ms(build: Path) -> float:
    """``olafctl move w2 --to 1`` while w2 sends an update every millisecond and cluster 1 has
    an update waiting: ms from olafctl returning until the switch has aggregated one of w2's
    updates into cluster 1 (polled over P4Runtime, so it includes up to one read's time)."""
    import yaml
    from olaf_base import PS_IP, PS_MAC, PS_PORT, SW_MAC, worker_ip, worker_mac
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from olaf import wire
    from olaf.constants import Decision
    from olaf.controller import config as cfgmod
    from olaf.controller.controller import OlafController
    from olaf.update import Update

    hosts = {"ps": {"ip": PS_IP, "mac": PS_MAC, "switch": "s1", "port": PS_PORT}}
    for k in (1, 2, 3):
        hosts[f"w{k}"] = {"ip": worker_ip(k), "mac": worker_mac(k), "switch": "s1", "port": k, "worker_id": k}
    net = {"num_grads": 4, "ps": "ps", "hosts": hosts, "clusters": {0: ["w1", "w2"], 1: ["w3"]},
           "switches": {"s1": {"grpc": "127.0.0.1:9559", "thrift_port": 9090, "mac": SW_MAC,
                               "queue": {"size": 4}, "bottleneck": {"rate_pps": 1, "depth": 64}}}}
    net_file = Path(f"/tmp/olaf-bench-move-{os.getpid()}/network.yaml")
    net_file.parent.mkdir(exist_ok=True)
    net_file.write_text(yaml.safe_dump(net))
    ctl = OlafController(cfgmod.load(net_file), build / "olaf.p4info.txt", build / "olaf.json")
    ctl.deploy(push_pipeline=True)
    sc = ctl.switches["s1"]

    def frame(k: int, seq: int) -> bytes:
        u = Update(cluster_id=0, worker_id=0, seq=seq, gen_ts=seq + 1, grads=(1, 1, 1, 1))
        return bytes(Ether(src=worker_mac(k), dst=SW_MAC) / IP(src=worker_ip(k), dst=PS_IP)
                     / UDP(sport=wire.ACK_PORT, dport=wire.UPDATE_PORT, chksum=0) / wire.update_layer(u))

    import socket
    socks = {}
    for k in (1, 2, 3):
        socks[k] = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        socks[k].bind((f"ptf{k}", 0))
    stop = {"now": False}

    def w2_sends():  # w3 keeps an update of cluster 1 waiting; w2 sends every millisecond
        seq = 2
        while not stop["now"]:
            socks[2].send(frame(2, seq))
            if seq % 5 == 0:
                socks[3].send(frame(3, seq))
            seq += 1
            time.sleep(0.001)

    import threading
    th = threading.Thread(target=w2_sends, daemon=True)
    th.start()
    olafctl = str(Path(sys.executable).parent / "olafctl")
    subprocess.run([olafctl, "--network", str(net_file), "--p4info", str(build / "olaf.p4info.txt"),
                    "--bmv2-json", str(build / "olaf.json"), "move", "w2", "--to", "1"], check=True,
                   capture_output=True)
    t_ret = time.monotonic()
    def aggregated() -> int:
        return sc.counters.cluster_decision(1, Decision.AGGREGATE)

    before = aggregated()
    while aggregated() <= before:   # w3 alone replaces; w2 aggregates
        if time.monotonic() - t_ret > 10:
            raise RuntimeError("no aggregation in cluster 1 within 10 s after the move")
    latency = (time.monotonic() - t_ret) * 1000
    stop["now"] = True
    th.join()
    ctl.close()
    return latency


@click.command()
@click.option("--seconds", default=5.0, show_default=True, help="Blast time per workload, s.")
@click.option("--build", type=click.Path(file_okay=False, path_type=Path), default=ROOT / "build", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the Markdown table here too.")
@click.option("--rounds", default=3, show_default=True, help="Interleaved rounds; the table shows medians.")
@click.option("--profile", type=click.Path(dir_okay=False, path_type=Path),
              help="Also sample the switch with `perf record -e cpu-clock` into this file.")
@click.option("--inner-json", type=click.Path(path_type=Path), hidden=True)
@click.option("--switch-pid", type=int, hidden=True)
def main(seconds: float, build: Path, out: Path | None, rounds: int, profile: Path | None,
         inner_json: Path | None, switch_pid: int | None) -> None:
    """Throughput of the Olaf program on simple_switch_grpc, as ratios to plain forwarding (root)."""
    if inner_json is not None:
        assert switch_pid is not None
        inner(seconds, rounds, build, inner_json, switch_pid)
        return
    from olaf.ptf_runner import PtfEnvironment, environment_problems

    problems = environment_problems(build)
    if problems:
        raise click.ClickException("; ".join(problems))
    res_path = Path(f"/tmp/olaf-bench-{os.getpid()}.json")
    with PtfEnvironment(build, ROOT / "ptf_tests", build / "bench-logs", log_level="off") as env:
        assert env.switch is not None and env.switch.proc is not None
        perf = None
        if profile is not None:
            perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-g", "-o", str(profile), "-p",
                                     str(_switch_pid(env.switch.proc.pid))], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "netns", "exec", env.ns, sys.executable, __file__, "--seconds", str(seconds),
                        "--rounds", str(rounds), "--build", str(build), "--inner-json", str(res_path),
                        "--switch-pid", str(env.switch.proc.pid)], check=True)
        if perf is not None:
            perf.send_signal(2)
            perf.wait()
    res = json.loads(res_path.read_text())
    res_path.unlink()
    runs = res["throughput"]
    med = {k: statistics.median(r["pps"] for r in rs) for k, rs in runs.items()}
    cpu = {k: statistics.median(r["per_cpu_s"] for r in rs) for k, rs in runs.items()}
    lines = ["| workload | packets/s (median) | ratio to IPv4 | packets per switch CPU-second (median) | ratio to IPv4 "
             "| range of that ratio | decisions (last round) |", "|---|---|---|---|---|---|---|"]
    for k, rs in runs.items():
        ratios = [r["per_cpu_s"] / b["per_cpu_s"] for r, b in zip(rs, runs["ipv4"])]
        dec = ", ".join(f"{d} {n}" for d, n in rs[-1]["decisions"].items() if n) or "—"
        lines.append(f"| {k} | {med[k]:.0f} | {med[k] / med['ipv4']:.2f} | {cpu[k]:.0f} | {cpu[k] / cpu['ipv4']:.2f} "
                     f"| {min(ratios):.2f}–{max(ratios):.2f} | {dec} |")
    moves = res["move_latency_ms"]
    lines += ["", f"`olafctl move` returning → first update aggregated in the new cluster: median "
                  f"{statistics.median(moves):.1f} ms (runs: {', '.join(f'{m:.1f}' for m in moves)} ms)"]
    ps = _ps_updates_per_s()
    lines += [f"PS (`olaf ps`, loopback, G = 32): {ps['olaf_ps']:.0f} updates/s, "
              f"{ps['ratio']:.2f}× a raw UDP echo in the same run"]
    table = "\n".join(lines)
    click.echo(table)
    load = os.getloadavg()
    click.echo(f"(load average {load[0]:.2f}; {seconds:g} s per workload; offered > processed in every row)")
    if out is not None:
        out.write_text(table + "\n")


def _ps_updates_per_s() -> dict:
    """bench/ps_throughput.py's measurement (PS updates/s and its ratio to a raw UDP echo)."""
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "ps_throughput.py"), "--json"], capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()

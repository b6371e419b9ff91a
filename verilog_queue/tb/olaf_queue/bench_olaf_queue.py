"""Throughput benchmark of the OlafQueue RTL (``make rtl-bench``).

Runs the paper's configuration (8 segments of 24 beats = 1500 B frames, 9
clusters) on Verilator and streams back-to-back 1512-byte update frames
(360 gradients, the most a 1500 B MTU holds in protocol version 2) with no
idle input cycle, for several traffic mixes; then a chunked configuration
(224 segments, 16 clusters, MAX_CHUNKS 28) with the chunks of 27 workers (9
clusters x 3) interleaved, K = 5 and K = 28. Every run is also checked
against the reference model by the differential scoreboard, so a fast but
wrong queue fails the benchmark.

Measured: the sustained input rate = beats accepted on s_axis / cycles from
the first to the last accepted beat; the output rate over the same window;
the decisions taken. Printed, one line per mix::

    mix=<name> beats_per_clock=<x> gbit_s_at_250mhz=<y>

(512 bit x 250 MHz = 128 Gbit/s at one beat per clock). Details go to stderr
and to ``sim_build/bench.json``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import cocotb
from cocotb.triggers import RisingEdge
from olaf_queue_frames import beats
from olaf_queue_scoreboard import DifferentialScoreboard
from olaf_queue_tb import OlafQueueTB

from olaf.queue_model import Decision, OlafQueue, QueueConfig
from olaf.update import Update
from olaf.wire import update_frame_len

PAPER = {"SEGMENTS": 8, "NUM_CLUSTERS": 9, "BEATS_PER_SEGMENT": 24}
CHUNKED = {"SEGMENTS": 224, "NUM_CLUSTERS": 16, "BEATS_PER_SEGMENT": 24, "MAX_CHUNKS": 28}
NUM_GRADS = 360          # 14 + 20 + 8 + 30 + 4 * 360 = 1512 bytes = 24 beats of 64 bytes
FRAMES = 240
WORKERS = 27             # chunked mixes: 9 clusters x 3 workers
DATA_BITS = 512
CLOCK_HZ = 250e6


def mix_updates(mix: str, n: int, num_grads: int, num_chunks: int = 1):
    """The update stream of a traffic mix."""
    grads = tuple(range(-(num_grads // 2), num_grads - num_grads // 2))
    for i in range(n):
        if mix.startswith("chunks"):
            # round robin over the workers, each sending its next chunk: the workers of one
            # cluster send the same chunk back to back (same key), then the next cluster's
            w = i % WORKERS
            k = (i // WORKERS) % num_chunks
            seq = i // (WORKERS * num_chunks) + 1
            yield Update(cluster_id=w // 3, worker_id=w, seq=seq, count=1, reward_sum=65536 * (w % 7),
                         gen_ts=1_000_000 + seq, grads=grads, chunk=k, num_chunks=num_chunks)
            continue
        if mix.startswith("append_only"):
            c, w = i % 9, (i % 9) * 3            # a different cluster each time
        elif mix.startswith("merge_heavy"):
            c, w = 0, i % 3                      # one cluster, workers take turns
        elif mix.startswith("replace_heavy"):
            c, w = 0, 0                          # one worker's successive updates
        else:
            raise ValueError(mix)
        yield Update(cluster_id=c, worker_id=w, seq=i, count=1, reward_sum=65536 * (i % 7),
                     gen_ts=1_000_000 + i, grads=grads)


MIXES = {
    # name: (build, departure pacing as a fraction of the line rate, gradients per update, K, frames)
    "append_only": ("paper", 1.0, NUM_GRADS, 1, FRAMES),
    "merge_heavy": ("paper", 1.0, NUM_GRADS, 1, FRAMES),
    "replace_heavy": ("paper", 1.0, NUM_GRADS, 1, FRAMES),
    # the same traffic with departures paced to a quarter of the line rate,
    # so that most updates meet a waiting one
    "merge_heavy_paced_output": ("paper", 0.25, NUM_GRADS, 1, FRAMES),
    "replace_heavy_paced_output": ("paper", 0.25, NUM_GRADS, 1, FRAMES),
    # the smallest updates (4 gradients, 88 bytes, two beats) back to back:
    # a merge every other cycle, each meeting the previous one's write
    "merge_heavy_2beat_frames_paced_output": ("paper", 0.25, 4, 1, FRAMES),
    # chunks of 27 workers interleaved: two generations at K = 5, one at K = 28
    "chunks_k5_interleaved": ("chunked", 1.0, NUM_GRADS, 5, 2 * WORKERS * 5),
    "chunks_k5_interleaved_paced_output": ("chunked", 0.25, NUM_GRADS, 5, 2 * WORKERS * 5),
    "chunks_k28_interleaved": ("chunked", 1.0, NUM_GRADS, 28, WORKERS * 28),
    "chunks_k28_interleaved_paced_output": ("chunked", 0.25, NUM_GRADS, 28, WORKERS * 28),
    # two-beat chunks: the three workers of a cluster send one key back to back, every
    # other cycle, each meeting the previous one's key-table and segment writes
    "chunks_k28_2beat_frames_paced_output": ("chunked", 0.25, 4, 28, WORKERS * 28),
}
BUILDS = {"paper": PAPER, "chunked": CHUNKED}


@cocotb.test()
async def throughput(dut):
    """Back-to-back frames per mix; measure input and output beats per clock."""
    results = {}
    tb = OlafQueueTB(dut)
    for mix in json.loads(os.environ["OLAF_BENCH_MIXES"]):
        _, pace, num_grads, k_chunks, frames = MIXES[mix]
        await tb.reset()
        await tb.configure(activity_window_ns=1_000_000, num_chunks=k_chunks)
        model = OlafQueue(QueueConfig(segments=tb.segments, num_clusters=tb.num_clusters, num_grads=num_grads,
                                      activity_window_ns=1_000_000, num_chunks=k_chunks))
        sb = DifferentialScoreboard(tb, model, check_structures=False)
        seen = {"in": [], "out": []}

        def count(rec, seen=seen):
            if rec.beat_in:
                seen["in"].append(rec.index)
            if rec.beat_out:
                seen["out"].append(rec.index)

        tb.listeners[:] = [sb, count]
        frame_beats = beats(update_frame_len(num_grads))

        async def pace_departures(frame_beats=frame_beats, pace=pace):
            # departure_enable high for one frame time out of 1/pace frame times; runs until cancelled
            period = round(frame_beats / pace)
            k = 0
            while True:
                tb.dut.departure_enable.value = 1 if pace >= 1.0 or k % period < frame_beats else 0
                k += 1
                await RisingEdge(dut.clk)

        pacer = cocotb.start_soon(pace_departures())
        for u in mix_updates(mix, frames, num_grads, k_chunks):
            tb.source.send_nowait(tb.frame(u, data=sb.expect_frame(u)))
        await tb.source.wait()
        pacer.cancel()
        tb.dut.departure_enable.value = 1
        for _ in range(100000):
            if model.occupancy == 0 and not sb.sent and int(dut.status_queue_util.value) == 0:
                break
            await RisingEdge(dut.clk)
        await tb.cycles(4)
        sb.assert_clean()
        first, last = seen["in"][0], seen["in"][-1]
        window = last - first + 1
        bpc_in = len(seen["in"]) / window
        out_in_window = sum(1 for c in seen["out"] if first <= c <= last)
        results[mix] = {
            "beats_in": len(seen["in"]),
            "cycles": window,
            "beats_per_clock": bpc_in,
            "gbit_s_at_250mhz": bpc_in * DATA_BITS * CLOCK_HZ / 1e9,
            "output_beats_per_clock": out_in_window / window,
            "decisions": {d.label: sb.decisions[d] for d in Decision},
            "frames_compared": sb.frames_compared,
            "num_chunks": k_chunks,
            "frames": frames,
        }
        dut._log.info("%s: %s", mix, results[mix])
    Path(os.environ["OLAF_REPORT"]).write_text(json.dumps(results, indent=1))


def main() -> int:
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    import olaf_queue_sim as sim

    reason = sim.missing_simulator_reason()
    if reason:
        print(f"rtl-bench skipped: {reason}", file=sys.stderr)
        return 1
    results = {}
    for build, params in BUILDS.items():
        report = sim.BUILD_ROOT / f"bench_{build}.json"
        report.unlink(missing_ok=True)
        mixes = [m for m, spec in MIXES.items() if spec[0] == build]
        sim.run(params, "throughput", test_module="bench_olaf_queue",
                extra_env={"OLAF_REPORT": str(report), "OLAF_BENCH_MIXES": json.dumps(mixes)})
        results.update(json.loads(report.read_text()))
    (sim.BUILD_ROOT / "bench.json").write_text(json.dumps(results, indent=1))
    for mix, r in results.items():
        print(f"mix={mix} beats_per_clock={r['beats_per_clock']:.3f} gbit_s_at_250mhz={r['gbit_s_at_250mhz']:.1f}")
    for mix, r in results.items():
        dec = ", ".join(f"{k} {v}" for k, v in r["decisions"].items() if v)
        print(f"  {mix} (K = {r['num_chunks']}, {r['frames']} frames): {r['beats_in']} beats in {r['cycles']} "
              "cycles; output "
              f"{r['output_beats_per_clock']:.3f} beats/clock; {dec}; {r['frames_compared']} frames compared "
              "with the model", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

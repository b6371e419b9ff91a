"""cocotb testbench of the OlafQueue RTL: clock, reset, AXI4-Stream source and
sink, AXI4-Lite master, and a per-cycle monitor of the event side band.

The monitor turns every clock cycle into a :class:`Cycle` record: the first
beats accepted on s_axis (with ``now`` at that moment) and the events the RTL
reports one cycle after they happen (m_decision_*, m_release_*, m_lock_*),
together with the registered status outputs that were updated at the same
clock edge. Listeners get the records in order; within one record the events
took effect in the order decision, release, lock (olaf_queue_ctrl.v).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Callable, Optional

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import (
    AxiLiteBus,
    AxiLiteMaster,
    AxiResp,
    AxiStreamBus,
    AxiStreamFrame,
    AxiStreamSink,
    AxiStreamSource,
)
from olaf_queue_frames import pack_tuser, update_frame

from olaf.update import Update

CLK_NS = 4
"""Clock period: 250 MHz, the paper's OpenNIC user-logic clock."""

REG_ID = 0x00
REG_CTRL = 0x04
REG_THRESHOLD = 0x08
REG_QUEUE_SIZE = 0x0C
REG_WINDOW_LO = 0x10
REG_WINDOW_HI = 0x14
REG_SEGMENTS = 0x18
REG_NUM_CLUSTERS = 0x1C
REG_BEATS = 0x20
REG_QUEUE_UTIL = 0x24
REG_ACTIVE = 0x28
REG_NUM_CHUNKS = 0x2C
REG_MAX_CHUNKS = 0x30
REG_CHUNK_ERRORS = 0x34
REG_OCCUPANCY = 0x38

CTRL_REWARD_FILTER = 0x1
CTRL_FIFO_MODE = 0x2

_KEEP = object()


@dataclass(frozen=True)
class Decision:
    code: int
    segment: int
    cluster_id: int
    update: bool
    chunk: int = 0
    chunk_error: bool = False


@dataclass(frozen=True)
class Cycle:
    """What the monitor saw in one clock cycle."""

    index: int
    now: int
    accepted: Optional[int]          # `now` of a first beat accepted on s_axis this cycle
    decision: Optional[Decision]     # reported this cycle (decided the cycle before)
    release: Optional[tuple[int, int]]  # (segment, cluster_id)
    lock: Optional[int]              # segment
    queue_util: int
    active_clusters: int
    beat_in: bool                    # a beat was accepted on s_axis
    beat_out: bool                   # a beat was taken from m_axis


def rtl_params() -> dict[str, int]:
    """Parameters the simulation was built with (set by sim.run)."""
    return json.loads(os.environ["OLAF_RTL_PARAMS"])


class OlafQueueTB:
    def __init__(self, dut):
        self.dut = dut
        self.params = rtl_params()
        self.segments = self.params["SEGMENTS"]
        self.num_clusters = self.params["NUM_CLUSTERS"]
        self.beats_per_segment = self.params["BEATS_PER_SEGMENT"]
        self.max_chunks = self.params.get("MAX_CHUNKS", 1)
        cocotb.start_soon(Clock(dut.clk, CLK_NS, unit="ns").start())
        for bus in ("s_axis", "m_axis", "s_axil"):  # no per-frame log lines
            logging.getLogger(f"cocotb.{dut._name}.{bus}").setLevel(logging.WARNING)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.listeners: list[Callable[[Cycle], None]] = []
        self.cycle = 0
        self.ctrl = 0
        self._monitor_task = None

    # -- reset, clock, time ----------------------------------------------------

    async def reset(self) -> None:
        d = self.dut
        d.departure_enable.value = 0
        d.now.value = 0
        d.rst.value = 1
        for _ in range(4):
            await RisingEdge(d.clk)
        d.rst.value = 0
        self.ctrl = 0
        self.source.clear()
        self.sink.clear()
        for _ in range(2):
            await RisingEdge(d.clk)
        if self._monitor_task is None:
            self._monitor_task = cocotb.start_soon(self._monitor())

    async def cycles(self, n: int) -> None:
        for _ in range(n):
            await RisingEdge(self.dut.clk)

    def set_now(self, t_ns: int) -> None:
        self.dut.now.value = t_ns

    # -- configuration -----------------------------------------------------------

    async def write_reg(self, addr: int, value: int) -> AxiResp:
        resp = await self.axil.write(addr, value.to_bytes(4, "little"))
        return resp.resp

    async def read_reg(self, addr: int) -> tuple[int, AxiResp]:
        resp = await self.axil.read(addr, 4)
        return int.from_bytes(resp.data, "little"), resp.resp

    async def _write_ok(self, addr: int, value: int) -> None:
        resp = await self.write_reg(addr, value)
        assert resp == AxiResp.OKAY, f"register write 0x{addr:02x} <- {value} answered {resp}"

    async def configure(self, *, queue_size: Optional[int] = None, reward_threshold: object = _KEEP,
                        activity_window_ns: Optional[int] = None, fifo_mode: Optional[bool] = None,
                        num_chunks: Optional[int] = None) -> None:
        """Register writes, as the controller would do them (vector ``configure`` events).

        ``num_chunks`` (K) is written with the queue idle: first, and before a ``queue_size``
        below the current K would be refused, after it when it grows K beyond the current
        queue size (the register refuses K > QUEUE_SIZE and QUEUE_SIZE < K).
        """
        if num_chunks is not None:
            current, _ = await self.read_reg(REG_QUEUE_SIZE)
            if num_chunks > current and queue_size is not None:
                await self._write_ok(REG_QUEUE_SIZE, queue_size)
                queue_size = None
            await self._write_ok(REG_NUM_CHUNKS, num_chunks)
        ctrl = self.ctrl
        if reward_threshold is not _KEEP:
            if reward_threshold is None:
                ctrl &= ~CTRL_REWARD_FILTER
            else:
                await self._write_ok(REG_THRESHOLD, int(reward_threshold))
                ctrl |= CTRL_REWARD_FILTER
        if fifo_mode is not None:
            ctrl = (ctrl | CTRL_FIFO_MODE) if fifo_mode else (ctrl & ~CTRL_FIFO_MODE)
        if ctrl != self.ctrl:
            await self._write_ok(REG_CTRL, ctrl)
            self.ctrl = ctrl
        if queue_size is not None:
            await self._write_ok(REG_QUEUE_SIZE, queue_size)
        if activity_window_ns is not None:
            await self._write_ok(REG_WINDOW_HI, activity_window_ns >> 32)
            await self._write_ok(REG_WINDOW_LO, activity_window_ns & 0xFFFF_FFFF)

    # -- traffic -----------------------------------------------------------------

    def frame(self, u: Update, update_valid: bool = True, data: Optional[bytes] = None) -> AxiStreamFrame:
        return AxiStreamFrame(update_frame(u) if data is None else data, tuser=pack_tuser(u, update_valid))

    async def send(self, u: Update, update_valid: bool = True, data: Optional[bytes] = None) -> None:
        await self.source.send(self.frame(u, update_valid, data))

    # -- monitor -------------------------------------------------------------------

    async def _monitor(self) -> None:
        d = self.dut
        in_frame = False
        while True:
            await RisingEdge(d.clk)
            self.cycle += 1
            now = int(d.now.value)
            accepted = None
            beat_in = bool(d.s_axis_tvalid.value and d.s_axis_tready.value)
            if beat_in:
                if not in_frame:
                    accepted = now
                in_frame = not d.s_axis_tlast.value
            beat_out = bool(d.m_axis_tvalid.value and d.m_axis_tready.value)
            decision = release = lock = None
            if d.m_decision_valid.value:
                decision = Decision(int(d.m_decision.value), int(d.m_decision_segment.value),
                                    int(d.m_decision_cluster_id.value), bool(d.m_decision_update.value),
                                    int(d.m_decision_chunk.value), bool(d.m_decision_chunk_error.value))
            if d.m_release_valid.value:
                release = (int(d.m_release_segment.value), int(d.m_release_cluster_id.value))
            if d.m_lock_valid.value:
                lock = int(d.m_lock_segment.value)
            rec = Cycle(self.cycle, now, accepted, decision, release, lock,
                        int(d.status_queue_util.value), int(d.status_active_clusters.value), beat_in, beat_out)
            for listener in self.listeners:
                listener(rec)


class EventLog:
    """Listener that keeps every event for a driver that waits for them."""

    def __init__(self):
        self.decisions: list[Decision] = []
        self.releases: list[tuple[int, int]] = []
        self.locks: list[int] = []
        self.last: Optional[Cycle] = None

    def __call__(self, rec: Cycle) -> None:
        if rec.decision is not None:
            self.decisions.append(rec.decision)
        if rec.release is not None:
            self.releases.append(rec.release)
        if rec.lock is not None:
            self.locks.append(rec.lock)
        self.last = rec

    def counts(self) -> tuple[int, int, int]:
        return len(self.decisions), len(self.releases), len(self.locks)

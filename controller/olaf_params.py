"""OlafQueue runtime parameters (P4 control ``OlafParams``, p4src/include/olaf_params.p4).

Owns the default action of the keyless ``olaf_params`` table, which the OlafQueue
extern reads on every update and ACK (P4Info does not describe user externs, so the
parameters travel as action data). Writes and reads go through this module only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from olaf.constants import (
    DEFAULT_ACTIVITY_WINDOW_NS,
    DEFAULT_NUM_CHUNKS,
    DEFAULT_NUM_GRADS,
    DEFAULT_QUEUE_SIZE,
    MAX_CHUNKS,
    MAX_ELEMENTS,
    PARAM_FIFO,
    PARAM_REWARD_FILTER,
    SEGMENTS,
)

if TYPE_CHECKING:  # the P4Runtime packages (extra 'p4') are needed only to talk to a switch
    from olaf.controller.p4rt import SwitchConnection


@dataclass(frozen=True)
class QueueParams:
    """What the extern reads on every update and ACK.

    Attributes:
        queue_size: occupancy limit Q_max in segments (``num_chunks``..``SEGMENTS`` of the P4
            build); the switch reports ⌊queue_size / num_chunks⌋ updates in ACKs.
        num_grads: gradient elements per update (per chunk, L) in this deployment.
        num_chunks: K, chunks per update in this deployment (1..``MAX_CHUNKS`` of the P4 build;
            docs/protocol.md "Chunks"); the queue keeps one key per (cluster, chunk).
        reward_threshold: T in Q15.16, or None to disable reward filtering.
        activity_window_ns: window for counting active clusters, ns.
        discipline: "olaf" or "fifo" (FIFO baseline; takes effect when the queue is empty).
    """

    queue_size: int = DEFAULT_QUEUE_SIZE
    num_grads: int = DEFAULT_NUM_GRADS
    reward_threshold: int | None = None
    activity_window_ns: int = DEFAULT_ACTIVITY_WINDOW_NS
    discipline: str = "olaf"
    num_chunks: int = DEFAULT_NUM_CHUNKS

    def __post_init__(self) -> None:
        if self.discipline not in ("olaf", "fifo"):
            raise ValueError(f"discipline={self.discipline!r}: expected 'olaf' or 'fifo'")
        if not 1 <= self.queue_size <= SEGMENTS:
            raise ValueError(f"queue_size={self.queue_size} must be in 1..{SEGMENTS} (segments of the P4 build)")
        if self.reward_threshold is not None and not 0 <= self.reward_threshold < (1 << 31):
            raise ValueError(f"reward_threshold={self.reward_threshold} must be in 0..2**31-1 (Q15.16)")
        if not 0 <= self.num_grads <= MAX_ELEMENTS:
            raise ValueError(f"num_grads={self.num_grads} must be in 0..{MAX_ELEMENTS}")
        if not 1 <= self.num_chunks <= MAX_CHUNKS:
            raise ValueError(f"num_chunks={self.num_chunks} must be in 1..{MAX_CHUNKS} (MAX_CHUNKS of the P4 build): "
                             "use a larger MTU (longer, fewer chunks) or a smaller model")
        if self.queue_size < self.num_chunks:
            raise ValueError(f"queue_size={self.queue_size} segments is below num_chunks={self.num_chunks}: it holds "
                             f"no whole update (Q_max = ⌊queue_size / num_chunks⌋ = 0); give a queue size of at least "
                             f"{self.num_chunks} segments")

    @property
    def flags(self) -> int:
        return (PARAM_REWARD_FILTER if self.reward_threshold is not None else 0) | (
            PARAM_FIFO if self.discipline == "fifo" else 0)


MAX_SOJOURN_MARGIN_NS = 1_000_000_000
"""Added to the traffic manager's worst-case queueing delay before a token counts as lost:
covers BMv2's own scheduling delays on a loaded machine (a late token is counted stale
and dropped, never mis-delivered; docs/dataplane.md)."""


def max_sojourn_ns(rate_pps: int, depth: int) -> int:
    """Longest time a token can wait in a traffic-manager queue of ``depth`` packets drained
    at ``rate_pps`` packets/s (``depth / rate_pps``, ns), plus :data:`MAX_SOJOURN_MARGIN_NS`;
    with no rate limit (0) only the margin."""
    return (depth * 1_000_000_000 // rate_pps if rate_pps else 0) + MAX_SOJOURN_MARGIN_NS


@dataclass(frozen=True)
class PathParams:
    """Where the PS is, seen from one switch.

    Attributes:
        ps_addr: the PS's IPv4 address: only updates addressed to it are queued, only
            ACKs from it are accepted.
        ps_port: this switch's port toward the PS: tokens leave by it, ACKs arrive on it.
        max_sojourn_ns: :func:`max_sojourn_ns` of that port's queue.
    """

    ps_addr: str = "0.0.0.0"
    ps_port: int = 0
    max_sojourn_ns: int = 0


class OlafParams:
    """Owns the default action of ``olaf_params``."""

    TABLE = "OlafIngress.params.olaf_params"
    ACTION = "OlafIngress.params.set_params"

    def __init__(self, sw: SwitchConnection):
        self.sw = sw

    def set(self, p: QueueParams, path: PathParams) -> None:
        e = self.sw.require_pipeline().table_entry(self.TABLE, {}, self.ACTION, {
            "queue_size": p.queue_size,
            "flags": p.flags,
            "reward_threshold": p.reward_threshold or 0,
            "activity_window_ns": p.activity_window_ns,
            "num_grads": p.num_grads,
            "ps_addr": path.ps_addr,
            "ps_port": path.ps_port,
            "max_sojourn_ns": path.max_sojourn_ns,
            "num_chunks": p.num_chunks,
        })
        e.is_default_action = True
        self.sw.write([self.sw.update("modify", e)])

    def get(self) -> tuple[QueueParams, PathParams]:
        from p4.v1 import p4runtime_pb2  # noqa: PLC0415

        from olaf.controller.p4rt import ip_str  # noqa: PLC0415

        pl = self.sw.require_pipeline()
        e = pl.table_entry(self.TABLE, {})
        e.is_default_action = True
        ent = p4runtime_pb2.Entity()
        ent.table_entry.CopyFrom(e)
        for x in self.sw.read(ent):
            v = pl.param_values(x.table_entry.action.action)
            return QueueParams(
                queue_size=v["queue_size"], num_grads=v["num_grads"],
                reward_threshold=v["reward_threshold"] if v["flags"] & PARAM_REWARD_FILTER else None,
                activity_window_ns=v["activity_window_ns"],
                discipline="fifo" if v["flags"] & PARAM_FIFO else "olaf", num_chunks=v["num_chunks"]), PathParams(
                ip_str(v["ps_addr"]), v["ps_port"], v["max_sojourn_ns"])
        raise RuntimeError(f"{self.sw.name}: olaf_params has no default action")

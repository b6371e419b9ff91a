"""The model update as the OlafQueue sees it (docs/protocol.md, paper Alg. 1).

This is the wire-independent value type shared by the reference model, the test
vectors, the hosts and the metrics. :mod:`olaf.wire` converts it to and from
packets.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from olaf.fixedpoint import INT32_MAX, INT32_MIN, UINT16_MAX, UINT64_MAX


@dataclass(frozen=True)
class Update:
    """One model update (worker → PS), possibly an aggregate of several.

    Attributes:
        cluster_id: cluster of the update (uint16), stamped by the switch.
        worker_id: worker that produced it (uint16), stamped by the switch;
            for an aggregate, the worker of the update that holds the segment.
        seq: that worker's sequence number (uint32).
        count: worker updates folded in (uint16, 1 from a worker; saturates).
        reward_sum: sum of the folded updates' mean episode rewards, Q15.16 int32
            (saturating). Mean reward = ``reward_sum / count``.
        gen_ts: generation time of the freshest update folded in, ns (uint64).
        grads: gradient elements, Q7.24 int32 each (saturating sums).
        chunk: index of the model slice the grads belong to, 0..num_chunks−1 (uint16;
            :mod:`olaf.chunks`). The OlafQueue's key is (cluster_id, chunk).
        num_chunks: K, chunks per update of the deployment (uint16, ≥ 1; 1: the whole model).

    Raises:
        ValueError: a field is outside its wire range.
    """

    cluster_id: int
    worker_id: int
    seq: int = 0
    count: int = 1
    reward_sum: int = 0
    gen_ts: int = 0
    grads: tuple[int, ...] = field(default_factory=tuple)
    chunk: int = 0
    num_chunks: int = 1

    def __post_init__(self) -> None:
        self._check_header()
        if not isinstance(self.grads, tuple):
            object.__setattr__(self, "grads", tuple(self.grads))
        g = self.grads
        if g and not (all(type(x) is int for x in g) and min(g) >= INT32_MIN and max(g) <= INT32_MAX):
            for i, x in enumerate(g):  # slow path, only to name the bad element
                _check_range(f"grads[{i}]", x, INT32_MIN, INT32_MAX)

    @classmethod
    def decoded(cls, *, cluster_id: int, worker_id: int, seq: int, count: int, reward_sum: int, gen_ts: int,
                grads: tuple[int, ...], chunk: int, num_chunks: int) -> Update:
        """An update from a decoder whose ``grads`` are int32 by construction (a tuple from
        ``struct`` format ``i``): the header fields are checked as in the constructor, the P
        elements are not walked again — that walk was 60 % of the PS's time per update of 9,797
        parameters (``bench/ps_profile.py``).

        Raises:
            ValueError: a header field outside its wire range.
        """
        u = cls.__new__(cls)
        for name, value in (("cluster_id", cluster_id), ("worker_id", worker_id), ("seq", seq), ("count", count),
                            ("reward_sum", reward_sum), ("gen_ts", gen_ts), ("grads", grads), ("chunk", chunk),
                            ("num_chunks", num_chunks)):
            object.__setattr__(u, name, value)
        u._check_header()
        return u

    def _check_header(self) -> None:
        _check_range("cluster_id", self.cluster_id, 0, UINT16_MAX)
        _check_range("worker_id", self.worker_id, 0, UINT16_MAX)
        _check_range("seq", self.seq, 0, (1 << 32) - 1)
        _check_range("count", self.count, 1, UINT16_MAX)
        _check_range("reward_sum", self.reward_sum, INT32_MIN, INT32_MAX)
        _check_range("gen_ts", self.gen_ts, 0, UINT64_MAX)
        _check_range("num_chunks", self.num_chunks, 1, UINT16_MAX)
        _check_range("chunk", self.chunk, 0, self.num_chunks - 1)

    def with_(self, **changes: Any) -> "Update":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (field names as in the vectors format); ``chunk`` and ``num_chunks``
        only when the update is one of several chunks (``num_chunks`` > 1)."""
        out = {
            "cluster_id": self.cluster_id,
            "worker_id": self.worker_id,
            "seq": self.seq,
            "count": self.count,
            "reward_sum": self.reward_sum,
            "gen_ts": self.gen_ts,
            "grads": list(self.grads),
        }
        if self.num_chunks != 1:
            out["chunk"], out["num_chunks"] = self.chunk, self.num_chunks
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Update":
        """Inverse of :meth:`to_json`; raises ValueError naming a missing or bad field."""
        missing = {"cluster_id", "worker_id", "count", "reward_sum", "gen_ts", "grads"} - set(d)
        if missing:
            raise ValueError(f"update is missing field(s): {', '.join(sorted(missing))}")
        return cls(
            cluster_id=int(d["cluster_id"]),
            worker_id=int(d["worker_id"]),
            seq=int(d.get("seq", 0)),
            count=int(d["count"]),
            reward_sum=int(d["reward_sum"]),
            gen_ts=int(d["gen_ts"]),
            grads=tuple(int(g) for g in d["grads"]),
            chunk=int(d.get("chunk", 0)),
            num_chunks=int(d.get("num_chunks", 1)),
        )


def _check_range(name: str, value: int, lo: int, hi: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name}={value} is outside [{lo}, {hi}]")

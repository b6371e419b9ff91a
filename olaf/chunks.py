"""Update fragmentation: how a parameter vector of P elements travels as K chunks of L elements.

Olaf never reassembles: each chunk is an independent update of its *slice* of the model
(docs/protocol.md "Chunks"). The switch aggregates chunks per key (cluster, chunk) and the PS
applies each chunk to its slice as it arrives (paper §10 "Update Fragmentation" names this the
missing piece; iSwitch, §3.2 of its paper, fragments too but waits for a threshold of vectors
per segment, which Olaf never does).

A deployment fixes one :class:`Chunking` for every cluster (different model sizes per cluster
group are out of scope: the switch checks one ``num_grads`` and one ``num_chunks``):

* a model that fits one frame (``P ≤ max_chunk_elements(mtu)``) travels as one message:
  ``K = 1``, ``L = P``, exactly the single-frame update;
* otherwise ``K = ⌈P / Lmax⌉`` and ``L = ⌈P / K⌉`` (chunks as even as possible, so the
  padding is below K elements); chunk ``i`` carries elements ``[i·L, min((i+1)·L, P))`` and
  the last one is **zero-padded** to L, so every update of the deployment has the same
  ``num_grads`` (the switch's length check, ``p4src/include/validate.p4``). Zero is the
  neutral element of the aggregation (saturating addition), so padding stays zero in any
  aggregate; receivers ignore it.
* An ACK slice carries the slice's weights, unpadded: ``num_weights`` is the slice length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from olaf.constants import MAX_CHUNKS_WIRE, MAX_ELEMENTS, max_chunk_elements


class ChunkingError(ValueError):
    """A model that cannot be chunked as asked; the message names the size, K and the limit."""


@dataclass(frozen=True)
class Chunking:
    """The chunking of one deployment's model.

    Attributes:
        num_params: P, elements of the parameter vector (≥ 1).
        chunk_len: L, elements per chunk (``num_grads`` on the wire), 1..65535.
        num_chunks: K = ⌈P / L⌉, 1..65535.

    Raises:
        ChunkingError: inconsistent sizes (the message names them).
    """

    num_params: int
    chunk_len: int
    num_chunks: int

    def __post_init__(self) -> None:
        if self.num_params < 1:
            raise ChunkingError(f"num_params={self.num_params}: a model has at least one parameter")
        if not 1 <= self.chunk_len <= MAX_ELEMENTS:
            raise ChunkingError(f"chunk_len={self.chunk_len} must be in 1..{MAX_ELEMENTS}")
        if self.num_chunks != math.ceil(self.num_params / self.chunk_len):
            raise ChunkingError(f"num_chunks={self.num_chunks} is not ⌈{self.num_params} / {self.chunk_len}⌉")
        if self.num_chunks > MAX_CHUNKS_WIRE:
            raise ChunkingError(f"{self.num_params} parameters need {self.num_chunks} chunks of "
                                f"{self.chunk_len}; the wire allows {MAX_CHUNKS_WIRE}")

    @classmethod
    def for_model(cls, num_params: int, mtu: int, *, max_chunks: int = MAX_CHUNKS_WIRE) -> "Chunking":
        """The chunking of a ``num_params``-element model on links of ``mtu`` bytes (module docstring).

        Args:
            num_params: P.
            mtu: IPv4 MTU of the links, bytes (an update chunk and its ACK slice each fit one packet).
            max_chunks: the deployment's build limit on K (e.g. :data:`olaf.constants.MAX_CHUNKS`
                for the BMv2 program).

        Raises:
            ChunkingError: P < 1, an MTU too small for one element, or K above ``max_chunks``
                (the message names P, K and the limit).
        """
        lmax = max_chunk_elements(mtu)
        if lmax < 1:
            raise ChunkingError(f"mtu={mtu} B leaves no room for one element; use at least 68 B")
        if num_params < 1:
            raise ChunkingError(f"num_params={num_params}: a model has at least one parameter")
        k = math.ceil(num_params / lmax)
        if k > max_chunks:
            raise ChunkingError(
                f"a model of {num_params} parameters needs K = {k} chunks of at most {lmax} elements at "
                f"MTU {mtu} B; this deployment allows K <= {max_chunks}: use a smaller network or a larger MTU")
        return cls(num_params, math.ceil(num_params / k), k)

    @classmethod
    def single(cls, num_params: int) -> "Chunking":
        """One message per update (K = 1, L = P)."""
        return cls(num_params, num_params, 1)

    @property
    def padding(self) -> int:
        """Zero elements after the model in the last chunk: ``K·L − P``."""
        return self.num_chunks * self.chunk_len - self.num_params

    def bounds(self, chunk: int) -> tuple[int, int]:
        """``(start, stop)`` of chunk ``chunk``'s slice of the model (stop exclusive, unpadded).

        Raises:
            ChunkingError: ``chunk`` outside 0..K−1.
        """
        if not 0 <= chunk < self.num_chunks:
            raise ChunkingError(f"chunk={chunk} is outside 0..{self.num_chunks - 1}")
        start = chunk * self.chunk_len
        return start, min(start + self.chunk_len, self.num_params)

    def slice_len(self, chunk: int) -> int:
        """Elements of the model in chunk ``chunk`` (L, or fewer for the last)."""
        start, stop = self.bounds(chunk)
        return stop - start

    def split(self, values: Sequence[int]) -> list[tuple[int, ...]]:
        """The K chunks of a P-element vector, each L elements (the last zero-padded).

        Raises:
            ChunkingError: ``len(values) != P``.
        """
        if len(values) != self.num_params:
            raise ChunkingError(f"vector has {len(values)} elements, the model has {self.num_params}")
        out = []
        for i in range(self.num_chunks):
            start, stop = self.bounds(i)
            part = tuple(values[start:stop])
            out.append(part + (0,) * (self.chunk_len - len(part)))
        return out

    def unpad(self, chunk: int, values: Sequence[int]) -> tuple[int, ...]:
        """The model's elements of chunk ``chunk`` (L elements) without the padding.

        Raises:
            ChunkingError: ``len(values) != L`` or ``chunk`` out of range.
        """
        if len(values) != self.chunk_len:
            raise ChunkingError(f"chunk has {len(values)} elements, the deployment's chunks have {self.chunk_len}")
        return tuple(values[: self.slice_len(chunk)])

    def to_json(self) -> dict[str, int]:
        return {"num_params": self.num_params, "chunk_len": self.chunk_len, "num_chunks": self.num_chunks}

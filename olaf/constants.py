"""Every constant shared by the P4 program, the C++ queue extern, the RTL and Python: the one source.

The other languages get generated copies (``olaf codegen generate``, ``make generate``):

* ``p4src/include/constants.p4`` — P4_16 ``const`` declarations;
* ``p4src/extern/olaf_constants.hpp`` — C++ ``constexpr`` in ``namespace olaf::constants``, with the
  worker-side codes (:data:`HOST_ENUMS`) the simulated workers share with Python;
* the RTL's decision ``localparam`` lines (``verilog_queue/rtl/olaf_queue_ctrl.v``) are
  checked against :class:`Decision` instead (Verilog include paths differ between tools).

``tests/test_constants.py`` fails if a generated file differs from what this module
generates, so a change here that is not regenerated (or a hand edit there) cannot land.
Python code imports these names; it never repeats a value.

Sources: the wire format is ``docs/protocol.md`` (paper §7 "Packet Format"); the
decision codes are the enqueue outcomes of paper Alg. 1 (``docs/vectors.md``);
the counters are described in ``docs/dataplane.md``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


@dataclass(frozen=True)
class Const:
    """A named integer constant.

    Attributes:
        value: the value.
        bits: width of the P4 type (``bit<bits>``) and the C++ unsigned type it fits.
        doc: one line for the generated files.
    """

    value: int
    bits: int
    doc: str


# --- Frame layout (docs/protocol.md "Transport") ---------------------------------------------
ETH_HEADER_LEN = 14
"""Ethernet II header, bytes (BMv2 ports carry no FCS)."""
IPV4_HEADER_LEN = 20
"""IPv4 header without options (IHL = 5), bytes."""
UDP_HEADER_LEN = 8
"""UDP header, bytes."""
ETHERTYPE_IPV4 = 0x0800
IPPROTO_UDP = 17
IPV4_IHL_NO_OPTIONS = 5
IPV4_FLAG_MF = 0b001
"""IPv4 ``flags`` bit "more fragments" (RFC 791)."""
IPV4_IHL_MAX = 15
"""Largest IHL (4-bit field), 32-bit words."""
IPV4_WORD_BITS = 32
"""IHL counts 32-bit words."""
IPV4_MAX_OPTIONS_BITS = 320
"""Longest IPv4 options field: (15 − 5) 32-bit words (RFC 791)."""

# --- Olaf messages (docs/protocol.md) ---------------------------------------------------------
PROTOCOL_VERSION = 2
"""Version this implementation speaks; receivers drop (and count) any other. Version 2 added the
``chunk`` / ``num_chunks`` fields (update fragmentation, docs/protocol.md "Chunks")."""
UPDATE_PORT = 50100
"""UDP destination port of model updates (the PS listens here)."""
ACK_PORT = 50101
"""UDP destination port of ACKs (workers listen here)."""
MSG_UPDATE = 1
MSG_ACK = 2
UPDATE_HEADER_LEN = 30
"""Bytes of the update header before the gradient elements."""
ACK_HEADER_LEN = 38
"""Bytes of the ACK header before the weight elements."""
CHUNK_OFFSET = 4
"""Offset of ``chunk`` (uint16, then ``num_chunks``, uint16) in both messages, bytes: frame
offset 46, inside the first 64-byte beat of a 512-bit datapath (docs/protocol.md "Chunks")."""
MAX_CHUNKS_WIRE = (1 << 16) - 1
"""Most chunks a message can announce (16-bit ``num_chunks``)."""
ELEMENT_LEN = 4
"""Bytes per gradient / weight element (int32, Q7.24)."""
UPDATE_FLAG_INIT = 0x01
"""Update flag: the elements are the worker's initial weights (paper §2.1); never queued."""
ACK_FLAG_STATUS_VALID = 0x01
"""ACK flag: the queue-status fields were written by an Olaf switch."""
ACK_FLAG_REFUSED_NUM_GRADS = 0x02
ACK_FLAG_REFUSED_NUM_CHUNKS = 0x04
ACK_FLAG_REFUSED_REWARD = 0x08
ACK_FLAG_REFUSED_GEN_TS = 0x10
ACK_FLAG_REFUSED_NO_MODEL = 0x20
ACK_FLAG_REFUSED_INIT_SOURCE = 0x40
ACK_REFUSAL_FLAGS = {"num_grads": ACK_FLAG_REFUSED_NUM_GRADS, "num_chunks": ACK_FLAG_REFUSED_NUM_CHUNKS,
                     "reward": ACK_FLAG_REFUSED_REWARD, "gen_ts": ACK_FLAG_REFUSED_GEN_TS,
                     "no_model": ACK_FLAG_REFUSED_NO_MODEL, "init_source": ACK_FLAG_REFUSED_INIT_SOURCE}
"""ACK flags of a **refusal** (docs/protocol.md "Refusal"): the PS did not apply the update or INIT
this ACK answers, and says why with exactly one of these bits (its scapy name is ``refused_<reason>``):

* ``num_grads``, ``num_chunks``: the update is of another model size (``L``) or chunk count (``K``);
* ``reward``, ``gen_ts``: the PS's trust checks refused its reward or its generation time;
* ``no_model``: an update before the PS has the slice's initial weights (no INIT yet);
* ``init_source``: an INIT from a host that may not set the initial weights (``olaf ps --init-from``),
  while the PS has none.

A refusal carries no weights (``num_weights`` = 0). A receiver that ignores these bits sees an ACK
without weights, which changes nothing. Bit 7 stays reserved."""
MAX_ELEMENTS = (1 << 16) - 1
"""Most elements a message can announce (16-bit ``num_grads`` / ``num_weights``)."""

MTU = 1500
JUMBO_MTU = 9000
IPV4_MAX_LEN = 65535
"""Largest IPv4 datagram (16-bit total length, RFC 791): the "MTU" of the loopback network of the
``local`` backend (Linux's ``lo`` has 65536), whose update of a 9,797-parameter model is one datagram."""


def max_elements(mtu: int) -> int:
    """Most gradient elements an update can carry in one IPv4 packet of ``mtu`` bytes.

    ``(mtu − 20 − 8 − 26) / 4``, rounded down (docs/protocol.md "Constants").
    """
    return (mtu - IPV4_HEADER_LEN - UDP_HEADER_LEN - UPDATE_HEADER_LEN) // ELEMENT_LEN


def max_chunk_elements(mtu: int) -> int:
    """Most elements one chunk can have so that its update and its ACK slice both fit one IPv4
    packet of ``mtu`` bytes: the same as :func:`max_model_elements` (358 at 1500 B, 2233 at 9000 B)."""
    return max_model_elements(mtu)


def max_model_elements(mtu: int) -> int:
    """Most weights a model can have so that both its update and its ACK fit one IPv4 packet of ``mtu`` bytes.

    The ACK header is 8 bytes longer than the update header, so this is
    ``(mtu − 20 − 8 − 38) / 4`` rounded down: 358 in a 1500 B MTU, 2233 in a
    9000 B jumbo frame (``docs/protocol.md`` "Constants"). A larger model travels in chunks
    (:mod:`olaf.chunks`).
    """
    return min(max_elements(mtu), (mtu - IPV4_HEADER_LEN - UDP_HEADER_LEN - ACK_HEADER_LEN) // ELEMENT_LEN)


MAX_G = max_elements(MTU)
"""360: the most gradient elements of one update in a standard 1500 B MTU."""
MAX_G_JUMBO = max_elements(JUMBO_MTU)
"""2235: the most gradient elements of one update in a 9000 B jumbo frame."""

# --- Build limits of the BMv2 program (p4src/) ---------------------------------------------------
SEGMENTS = 256
"""Physical segments of the OlafQueue extern; ``queue_size`` (the occupancy limit, segments) is
1..SEGMENTS. With K chunks per update the status reports ``Q_max = ⌊queue_size / K⌋`` updates,
so Q = 8 updates at K = 28 needs 224 segments (docs/dataplane.md "Chunks")."""
MAX_CHUNKS = 64
"""Chunks per update K the BMv2 extern keeps per-key state for (key = (cluster, chunk)): 1..MAX_CHUNKS.
64 holds RLlib's default network (137,477 parameters) in jumbo frames (62 chunks)."""
SOCKET_RCVBUF = 4 << 20
"""UDP receive buffer asked for by the PS's and every worker's socket, bytes (at least; the kernel
caps it at ``net.core.rmem_max`` unless the process has ``CAP_NET_ADMIN``, and doubles it:
:mod:`olaf.udpsock`). A worker's receive thread drains its socket during iterations too; the
buffer holds what arrives while that thread waits for a core: a 9000 B ACK slice takes 16.3 KiB
of it, so 4 MiB (8 MiB granted) holds about 500 of them. Linux's default of 208 KiB lost half of
the slices of K = 61 answers through BMv2 when the worker read only between iterations."""
WORKER_NICE = 10
"""Nice value of the emulated workers (processes, or threads in a Ray actor; a Mininet host's
worker also its session's autogroup) and of the evaluator, 0..19; 0 = the harness's own.
Training is CPU-bound and outnumbers the cores many times over, while the switch (BMv2), the PS
and the harness need little CPU but need it at once; at equal priority BMv2 held the SB3-size
model's chunks 0.6 s (median) between ingress and the PS port, at 10 7.4 ms (:mod:`olaf.priority`,
docs/training.md "The workers run below the network")."""
ACCESS_QUEUE_DEPTH = 16 * MAX_CHUNKS
"""Egress queue depth of every switch port except the one toward the PS, packets (BMv2's
default is 64). The PRE writes a whole ACK answer — K slices — into each worker port of the
cluster at once, and several answers of one cluster may overlap: 64 would tail-drop replicas of
a chunked model, which no P4 counter sees. 1024 holds 16 answers of K = MAX_CHUNKS; BMv2's
queues allocate per packet queued, so a deep bound costs nothing while empty."""
MAX_CLUSTERS = 1024
"""Cluster ids 0..MAX_CLUSTERS−1 (OlafQueue extern, ``cluster_mcast``, per-cluster counters)."""
MAX_WORKERS = 4096
"""``worker_table`` and ``ack_rewrite`` entries; worker ids 1..MAX_WORKERS−1 (egress_rid 0 = no rewrite)."""
MAX_ROUTES = 1024
"""``ipv4_lpm`` entries (hosts and PS of a deployment)."""

# --- Defaults of the runtime queue parameters (``olaf_params``; paper §8.1 queue size) -------------
DEFAULT_QUEUE_SIZE = 8
"""Q_max, segments, until the controller writes ``olaf_params``."""
DEFAULT_ACTIVITY_WINDOW_NS = 1_000_000_000
"""Window for counting active clusters (paper §5), ns: the one default of every layer (queue model,
controller, run plan, simulation). It must be at least the longest update period of a cluster, or
a cluster between two updates is not counted (paper Table 3's slowest group: 300 ms)."""
DEFAULT_ACTIVITY_WINDOW_MS = DEFAULT_ACTIVITY_WINDOW_NS / 1_000_000
""":data:`DEFAULT_ACTIVITY_WINDOW_NS` in ms (the unit of configuration files and options)."""
DEFAULT_NUM_GRADS = 16
"""Gradient elements per update of a deployment that does not say."""
DEFAULT_PERIOD_MS = 50.0
"""Update period of each worker of ``olaf run``'s microbenchmark job (and of a network file's
admission section that does not say), ms: 27 workers at 20 updates/s offer 540 updates/s.
A run plan's cluster group without a period has 100 ms (paper §8.1's workers,
:class:`olaf.plan.plan.ClusterGroup`)."""
DEFAULT_JITTER_MS = 10.0
"""Jitter of :data:`DEFAULT_PERIOD_MS`, ms (each gap is period + U(−jitter, +jitter))."""
DEFAULT_NUM_CHUNKS = 1
"""Chunks per update K of a deployment that does not say (a model that fits one frame)."""


class LabelledEnum(enum.IntEnum):
    """An IntEnum whose members have a lower-case label (vectors, counters, reports)."""

    @property
    def label(self) -> str:
        """Lower-case name used in vectors, counters and reports (e.g. ``"drop_full"``)."""
        return self.name.lower()

    @classmethod
    def from_label(cls, label: str):
        """The member named ``label``; ValueError lists the valid labels."""
        try:
            return cls[label.upper()]
        except KeyError:
            raise ValueError(f"unknown {cls.__name__} {label!r}; expected one of "
                             + ", ".join(m.label for m in cls)) from None


class Decision(LabelledEnum):
    """Enqueue decision of the OlafQueue (paper Alg. 1); the codes are shared by the P4
    program, the BMv2 extern, the RTL (``m_decision``) and the vectors."""

    APPEND = 0
    AGGREGATE = 1
    REPLACE_WORKER = 2
    REPLACE_REWARD = 3
    DROP_REWARD = 4
    DROP_FULL = 5

    @property
    def keeps_packet(self) -> bool:
        """True if the arriving packet itself goes on (carries a new segment)."""
        return self is Decision.APPEND

    @property
    def is_drop(self) -> bool:
        return self in (Decision.DROP_REWARD, Decision.DROP_FULL)


DECISION_ERROR = 255
"""The extern rejected the update (cluster id out of range, wrong length): counted as malformed."""
DECISION_SLOTS = 8
"""Stride of the per-cluster decision counter: index ``cluster_id * DECISION_SLOTS + decision``."""

PARAM_REWARD_FILTER = 0x01
"""``olaf_params.flags``: reward filtering with threshold T (paper §4)."""
PARAM_FIFO = 0x02
"""``olaf_params.flags``: FIFO baseline discipline instead of the OlafQueue."""


class Malformed(enum.IntEnum):
    """Index of the ingress ``malformed`` counter: why an Olaf packet (UDP 50100/50101) was dropped."""

    VERSION = 0      # version is not PROTOCOL_VERSION
    MSG_TYPE = 1     # msg_type does not match the port
    LENGTH = 2       # UDP / IPv4 / frame length disagree with the element count, or too short
    NUM_GRADS = 3    # update with another element count than the deployment's
    COUNT = 4        # update with count 0
    EXTERN = 5       # the OlafQueue extern refused it (cluster id out of range)
    IP_OPTIONS = 6   # an Olaf message in an IPv4 packet with options (docs/protocol.md "Transport")
    DESTINATION = 7  # an update not addressed to the PS
    FRAGMENT = 8     # an Olaf message in an IPv4 fragment
    CHUNK = 9        # num_chunks other than the deployment's K, or chunk >= num_chunks


class Traffic(enum.IntEnum):
    """Index of the ingress ``traffic`` counter: what happened to a packet that is not a
    queued update and not malformed. With ``malformed`` and ``decisions`` it counts every
    frame exactly once (docs/dataplane.md "Counters")."""

    BYPASS = 0          # non-Olaf IPv4, forwarded
    UNKNOWN_SOURCE = 1  # Olaf update/INIT from a source not in worker_table: dropped
    INIT = 2            # INIT of a known worker: ids stamped, forwarded without queueing
    ACK_MULTICAST = 3   # ACK from the PS, replicated to its cluster's group
    ACK_UNICAST = 4     # ACK from the PS of a cluster without group, forwarded
    NON_IPV4 = 5        # not IPv4 (or too short for it): dropped
    NO_ROUTE = 6        # no ipv4_lpm entry: dropped
    SPOOFED_SOURCE = 7  # a worker's source address from another port (or UDP port): dropped
    FORGED_ACK = 8      # an ACK not from the PS address and port: dropped
    IPV4_CHECKSUM = 9   # bad IPv4 header checksum: dropped
    TTL_EXPIRED = 10    # TTL 0 or 1: dropped


class EgressError(enum.IntEnum):
    """Index of the egress ``egress_errors`` counter. The ns-3 switch counts here a token of its
    own token FIFO that found the core empty (a bug there: that FIFO cannot lose tokens); on
    BMv2 a token without a live segment is :attr:`TokenFate.STALE` instead (docs/dataplane.md
    "The token ledger"), so the P4 program does not write this counter."""

    DEQUEUE_EMPTY = 0   # a token found no segment to carry (dropped)


class TokenFate(LabelledEnum):
    """What a token reaching egress did (``OlafQueue.dequeue_token``; index of the egress
    ``token_fates`` counter). Every APPEND gets a token, a 32-bit serial number (RFC 1982);
    the departure order holds the live tokens in issue order (docs/dataplane.md "The token
    ledger")."""

    DEPARTED = 0             # the token was the head's: the head departed in it
    DEPARTED_AFTER_LOSS = 1  # older heads whose tokens never came were reclaimed (lost), then its own segment departed
    STALE = 2                # its segment was already reclaimed (or it was never issued): nothing departs, dropped


class Reclaim(LabelledEnum):
    """Why a segment was reclaimed without departing (index kind of the ``reclaimed`` counters)."""

    LOST = 0     # its token was overtaken by a newer token at egress: the traffic manager dropped it
    EXPIRED = 1  # it waited longer than max_sojourn_ns: its token is presumed lost


class TxReading(LabelledEnum):
    """Which reading of the worker's transmission control (paper §5/§6) a worker applies; the code
    crosses into the simulated workers (``olaf/sim/cpp/txcontrol.hpp``).

    * ``PROBABILISTIC``: §5 as written: every update in the congestion regime is sent with
      probability ``P_s = min(Q_max/N + f(Δ̂), 1)``, each draw independent of the last.
    * ``BACKOFF``: §6's "Δ̄_T … decides on the base time to backoff": the same draw, but a skipped
      update starts a back-off during which the worker sends nothing, until its next ACK arrives
      or ``Δ̄_T`` has elapsed since the skip.
    """

    PROBABILISTIC = 0
    BACKOFF = 1


class TxReason(LabelledEnum):
    """Why transmission control sent or skipped an update (``olaf.txcontrol.Decision.reason``,
    the simulated workers' generation records)."""

    TC_OFF = 0       # transmission control is off: sent
    NO_STATUS = 1    # no ACK with a queue status yet: sent
    NO_QMAX = 2      # a status without a usable Q_max and no override: sent
    UNCONGESTED = 3  # N <= Q_max: sent
    DRAW = 4         # congested: sent iff the uniform draw < P_s
    BACKOFF = 5      # congested, reading backoff, within the back-off after a skip: not sent


RECLAIM_SLOTS = SEGMENTS + 1
"""Stride of the ``reclaimed`` histogram counters: index ``kind * RECLAIM_SLOTS + n`` counts
the extern calls that reclaimed ``n`` (1..SEGMENTS) segments of that kind at once, so the
segments reclaimed are Σ n · count (a P4 counter adds one per call)."""


# Groups that are generated into the other languages, in order. Enums are emitted as
# PREFIX_MEMBER constants plus NUM_PREFIX (the counter size).
_P4_SCALARS: dict[str, Const] = {
    "ETHERTYPE_IPV4": Const(ETHERTYPE_IPV4, 16, "EtherType of IPv4"),
    "IPPROTO_UDP": Const(IPPROTO_UDP, 8, "IPv4 protocol number of UDP"),
    "IPV4_IHL_NO_OPTIONS": Const(IPV4_IHL_NO_OPTIONS, 4, "IHL of an IPv4 header without options"),
    "IPV4_IHL_MAX": Const(IPV4_IHL_MAX, 4, "largest IHL, 32-bit words"),
    "IPV4_WORD_BITS": Const(IPV4_WORD_BITS, 32, "bits per IHL word"),
    "IPV4_FLAG_MF": Const(IPV4_FLAG_MF, 3, "IPv4 flags: more fragments"),
    "ETH_HEADER_LEN": Const(ETH_HEADER_LEN, 32, "Ethernet II header, bytes"),
    "IPV4_HEADER_LEN": Const(IPV4_HEADER_LEN, 16, "IPv4 header without options, bytes"),
    "UDP_HEADER_LEN": Const(UDP_HEADER_LEN, 16, "UDP header, bytes"),
    "UPDATE_PORT": Const(UPDATE_PORT, 16, "UDP dst port of updates (worker -> PS)"),
    "ACK_PORT": Const(ACK_PORT, 16, "UDP dst port of ACKs (PS -> cluster)"),
    "PROTOCOL_VERSION": Const(PROTOCOL_VERSION, 4, "Olaf protocol version"),
    "MSG_UPDATE": Const(MSG_UPDATE, 4, "msg_type of an update"),
    "MSG_ACK": Const(MSG_ACK, 4, "msg_type of an ACK"),
    "UPDATE_FLAG_INIT": Const(UPDATE_FLAG_INIT, 8, "update flag: initial weights, bypass the queue"),
    "ACK_FLAG_STATUS_VALID": Const(ACK_FLAG_STATUS_VALID, 8, "ACK flag: queue status written by a switch"),
    "UPDATE_HEADER_LEN": Const(UPDATE_HEADER_LEN, 16, "update header, bytes"),
    "CHUNK_OFFSET": Const(CHUNK_OFFSET, 16, "offset of chunk / num_chunks in both messages, bytes"),
    "ACK_HEADER_LEN": Const(ACK_HEADER_LEN, 16, "ACK header, bytes"),
    "ELEMENT_LEN": Const(ELEMENT_LEN, 16, "bytes per gradient / weight element"),
    "SEGMENTS": Const(SEGMENTS, 32, "physical segments of the OlafQueue extern"),
    "MAX_CLUSTERS": Const(MAX_CLUSTERS, 32, "cluster ids 0..MAX_CLUSTERS-1"),
    "MAX_CHUNKS": Const(MAX_CHUNKS, 32, "chunks per update K the OlafQueue extern keeps state for"),
    "MAX_WORKERS": Const(MAX_WORKERS, 32, "worker_table / ack_rewrite entries"),
    "MAX_ROUTES": Const(MAX_ROUTES, 32, "ipv4_lpm entries"),
    "DEFAULT_QUEUE_SIZE": Const(DEFAULT_QUEUE_SIZE, 32, "Q_max before the controller writes olaf_params"),
    "DEFAULT_ACTIVITY_WINDOW_NS": Const(DEFAULT_ACTIVITY_WINDOW_NS, 64, "activity window default, ns"),
    "DEFAULT_NUM_GRADS": Const(DEFAULT_NUM_GRADS, 16, "gradient elements default"),
    "DEFAULT_NUM_CHUNKS": Const(DEFAULT_NUM_CHUNKS, 16, "chunks per update default"),
    "DECISION_ERROR": Const(DECISION_ERROR, 8, "the extern rejected the update"),
    "DECISION_SLOTS": Const(DECISION_SLOTS, 32, "per-cluster decision counter stride"),
    "PARAM_REWARD_FILTER": Const(PARAM_REWARD_FILTER, 8, "olaf_params flag: reward filtering"),
    "PARAM_FIFO": Const(PARAM_FIFO, 8, "olaf_params flag: FIFO baseline"),
    "RECLAIM_SLOTS": Const(RECLAIM_SLOTS, 32, "reclaimed counter stride: kind * RECLAIM_SLOTS + n"),
}

ENUMS: list[tuple[str, type[enum.IntEnum], int]] = [
    # (prefix, enum, P4 width of its members)
    ("DECISION", Decision, 8),
    ("MALFORMED", Malformed, 32),
    ("TRAFFIC", Traffic, 32),
    ("EGRESS_ERROR", EgressError, 32),
    ("TOKEN_FATE", TokenFate, 8),
    ("RECLAIM", Reclaim, 32),
]

HOST_ENUMS: list[tuple[str, type[enum.IntEnum]]] = [
    # Worker-side codes shared by Python and the simulated workers (C++ only; the P4 program has none).
    ("TX_READING", TxReading),
    ("TX_REASON", TxReason),
]


def shared_constants() -> dict[str, Const]:
    """Every generated constant by name, enums expanded (``DECISION_APPEND``, ``NUM_DECISION``)."""
    out = dict(_P4_SCALARS)
    for prefix, en, bits in ENUMS:
        for m in en:
            out[f"{prefix}_{m.name}"] = Const(int(m), bits, f"{en.__name__}.{m.name}")
        out[f"NUM_{prefix}"] = Const(len(en), 32, f"number of {en.__name__} codes (counter size)")
    return out


def host_constants() -> dict[str, Const]:
    """The :data:`HOST_ENUMS` codes by name (``TX_REASON_DRAW``, ``NUM_TX_REASON``), for the C++ copy only."""
    out = {}
    for prefix, en in HOST_ENUMS:
        for m in en:
            out[f"{prefix}_{m.name}"] = Const(int(m), 8, f"{en.__name__}.{m.name}")
        out[f"NUM_{prefix}"] = Const(len(en), 32, f"number of {en.__name__} codes")
    return out

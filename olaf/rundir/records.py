"""The records of a run directory's host logs and summaries, as pydantic models.

Every host (``olaf worker``, ``olaf ps``, and the simulated hosts of the ns-3 backend)
writes ``hosts/<name>.jsonl`` — one record a line — and ``hosts/<name>.summary.json``. Their
content is defined here, once: the hosts build these models and write them
(:meth:`Record.line`, :meth:`Record.dump`); the readers (:mod:`olaf.rundir.jsonl`) validate
every line against them. The JSON Schemas in ``docs/schemas/`` are generated from these
models (``olaf codegen``).

A record is written with the fields its writer set (``exclude_unset``): a field whose
default is None and that the writer does not know (a bandit worker's PPO losses, the
simulated PS's optimizer) is left out rather than written as null. Times are
``CLOCK_REALTIME`` ns (simulated ns, from 0, in an ns-3 run).

Worker log (first record :class:`WorkerStart`): :class:`GoRecord`, :class:`InitRecord`,
:class:`GenRecord`, :class:`AckRecord`, :class:`MalformedAckRecord`, :class:`ErrorRecord`,
:class:`StopRecord`. PS log (first record :class:`PsStart`): :class:`UpdateRecord`,
:class:`FlushRecord`, :class:`MalformedRecord`, :class:`UntrustedRecord`,
:class:`StopRecord`. :data:`LogRecord` is their union, told apart by ``ev`` (and ``role``
for ``start``). ``regroups.jsonl`` (``olafctl``'s membership changes) holds
:class:`RegroupRecord`.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter

U16 = Annotated[int, Field(ge=0, le=0xFFFF)]
U32 = Annotated[int, Field(ge=0, le=0xFFFF_FFFF)]
U64 = Annotated[int, Field(ge=0, le=(1 << 64) - 1)]
I32 = Annotated[int, Field(ge=-(1 << 31), le=(1 << 31) - 1)]
Count = Annotated[int, Field(ge=0)]
"""A counter (≥ 0)."""


class Outcome(str, enum.Enum):
    """What the PS did with one received update (``update`` records' ``outcome``, summary counters)."""

    INITIALISED = "initialised"
    INIT_IGNORED = "init_ignored"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    BEFORE_INIT = "before_init"
    WRONG_SIZE = "wrong_size"
    BUFFERED = "buffered"
    """Held for a periodic or synchronous aggregate (:mod:`olaf.hosts.modes`), applied at its flush."""


NOT_MODELLED = "not_modelled"
"""``outcome`` of the ns-3 backend's PS, which has no global model (and its summary counter)."""


class Record(BaseModel):
    """Base of the log records and summaries: unknown fields are errors; NaN and ±∞ are
    written as JSON's ``NaN``/``Infinity`` extension (as Python's ``json`` does)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    def line(self) -> str:
        """The record as one compact JSON line (no newline), with the fields that were set."""
        return self.model_dump_json(exclude_unset=True)

    def dump(self) -> dict[str, Any]:
        """The record as a JSON-ready dict, with the fields that were set."""
        return self.model_dump(mode="json", exclude_unset=True)


# -- worker log ----------------------------------------------------------------


class WorkerStart(Record):
    """First record of a worker log: the worker is up and bound; its configuration."""

    ev: Literal["start"]
    role: Literal["worker"]
    t_ns: U64
    name: str
    start_at_ns: Optional[int] = None
    start_file: Optional[str] = None
    bind: str = Field(description="the worker's IP (ACKs arrive on it)")
    ps: str = Field(description="the PS, IP:port")
    cluster_id: Optional[U16] = Field(default=None, description="--cluster-id (None: learned from its ACKs)")
    worker_id: Optional[U16] = None
    pid: Optional[int] = Field(default=None, description="the process it ran in (several workers may share one: "
                               "the ray backend's actors)")
    udp_port: Optional[int] = Field(default=None, description="its UDP port when not the ACK port (workers "
                                    "sharing an address)")
    seed: int
    backend: Optional[str] = Field(default=None, description="the backend that simulated this worker (ns3)")
    group: Optional[str] = Field(default=None, description="its cluster group (ns3)")
    schedule: dict[str, Any] = Field(description="olaf.hosts.schedule.ScheduleSpec.describe()")
    task_kind: Optional[str] = None
    task: Optional[dict[str, Any]] = Field(description="the task's parameters (bandit or PPO); None: synthetic")
    num_weights: Optional[int] = None
    num_chunks: Optional[int] = Field(default=None, description="K, chunks per update (only when > 1)")
    ack_wait_ms: Optional[float] = None
    tx: dict[str, Any] = Field(description="transmission control parameters")
    resumed: Optional[bool] = Field(default=None, description="a restarted incarnation appending to the "
                                    "log of the same worker (its Ray actor was restarted)")


class GoRecord(Record):
    """The worker's start ``t0`` came (never earlier than the moment it got there)."""

    ev: Literal["go"]
    t_ns: U64
    t0_ns: U64
    requested_t0_ns: U64


class InitRecord(Record):
    """An INIT update (the worker's initial weights) sent; ``retry`` for a repetition."""

    ev: Literal["init"]
    t_ns: U64
    retry: bool


class GenRecord(Record):
    """One generated update (olaf/hosts/worker.py's module docstring).

    ``t_ns`` is its ``gen_ts``; ``seq``/``folded``/``saturated`` are set when it was sent;
    ``reward`` the mean reward sent (of this generation if skipped; None if no episode
    ended); the decision fields are those of :class:`olaf.txcontrol.Decision`; a PPO
    task adds its iteration's fields.
    """

    ev: Literal["gen"]
    t_ns: U64
    idx: Count
    late_ms: float = Field(description="how long after its due time it was generated, ms")
    sent: bool
    seq: Optional[U32]
    reward: Optional[float]
    folded: Optional[Count] = Field(description="generations folded into the sent update")
    adopted: Optional[bool] = Field(default=None, description="started from newly received global weights")
    base: Optional[tuple[U16, U32, U64]] = Field(
        default=None, description="[worker_id, seq, gen_ts] of the ACK whose slice 0 the worker last adopted: the "
                                  "update it answered, whose PS record gives the global model's version the "
                                  "iteration started from (None before any adoption)")
    exp_reward: Optional[float] = Field(description="the bandit's J(w) of the weights used (None: PPO, ns3)")
    reason: str = Field(description="transmission control's reason, or no_episode")
    p_send: float
    draw: Optional[float]
    delta_hat_ms: Optional[float]
    N: Optional[int] = Field(description="active clusters of the latest status")
    q_max: Optional[int]
    steps: Optional[Count] = Field(default=None, description="PPO: environment steps of this iteration")
    episodes: Optional[Count] = Field(default=None, description="PPO: episodes that ended in it")
    env_steps: Optional[Count] = Field(default=None, description="PPO: environment steps so far")
    policy_loss: Optional[float] = None
    value_loss: Optional[float] = None
    entropy: Optional[float] = None
    clip_fraction: Optional[float] = None
    approx_kl: Optional[float] = None
    grad_norm: Optional[float] = None
    kl_stopped: Optional[float] = Field(default=None, description="PPO with target_kl: 1 when the early stop "
                                        "ended the iteration's epochs, else 0")
    drift_scale: Optional[float] = Field(default=None, description="PPO with target_drift: the scale on the "
                                         "update sent (olaf/rl/drift.py)")
    kl_adopted: Optional[float] = Field(default=None, description="PPO: KL(π_rollout ‖ π_adopted), nats, over the "
                                        "previous rollout's states: how far the global weights adopted for this "
                                        "iteration are from the policy that collected the previous rollout")
    saturated: Optional[Count] = Field(default=None, description="Q7.24 elements clamped (sent updates)")
    adopted_slices: Optional[Count] = Field(default=None, description="ACK slices adopted at the start of the "
                                            "iteration (only when the model has K > 1 chunks)")
    chunks: Optional[Count] = Field(default=None, description="chunks of the update sent (K > 1, sent updates)")


class AckRecord(Record):
    """An ACK received; ``status`` = ``[queue_util, active_clusters, queue_size]`` or None."""

    ev: Literal["ack"]
    t_ns: U64
    cluster_id: U16
    worker_id: U16
    seq: U32
    count: U16
    gen_ts: U64
    global_reward: Optional[float] = Field(description="None: −∞ (no accepted update yet)")
    weights: Count = Field(description="weight elements carried")
    own: bool = Field(description="answers one of this worker's sent updates")
    status: Optional[tuple[int, int, int]]
    chunk: Optional[U16] = Field(default=None, description="the slice answered (only when the model has K > 1 chunks)")
    num_chunks: Optional[U16] = Field(default=None, description="K (only when > 1)")
    refusal: Optional[str] = Field(default=None, description="a refusal: why the PS did not apply the update "
                                   "(docs/protocol.md \"Refusal\")")


class MalformedAckRecord(Record):
    """A datagram from the PS that is not a valid ACK (dropped)."""

    ev: Literal["malformed_ack"]
    t_ns: U64
    len: Count
    reason: str


class ErrorRecord(Record):
    """The worker's task failed (NaN/inf loss); the worker stops."""

    ev: Literal["error"]
    t_ns: U64
    error: str


class StopRecord(Record):
    """Last record of a host log on a clean shutdown."""

    ev: Literal["stop"]
    t_ns: U64
    reason: str


# -- PS log --------------------------------------------------------------------


class PsStart(Record):
    """First record of a PS log: the PS is listening; its configuration."""

    ev: Literal["start"]
    role: Literal["ps"]
    t_ns: U64
    bind: str = Field(description="IP:port it listens on")
    ack_port: int
    lr: Optional[float]
    lr_final: Optional[float] = None
    lr_decay_updates: Optional[int] = None
    step: Optional[str] = None
    gate: Optional[bool] = None
    mode: Optional[str] = None
    modes: Optional[dict[str, Any]] = None
    duration_s: Optional[float]
    backend: Optional[str] = Field(default=None, description="the backend that simulated this PS (ns3)")


class UpdateRecord(Record):
    """One decodable update received (``t_ns`` its reception); ``reward`` = reward_sum/count."""

    ev: Literal["update"]
    t_ns: U64
    src: str
    cluster_id: U16
    worker_id: U16
    seq: U32
    count: Annotated[int, Field(ge=1, le=0xFFFF)]
    gen_ts: U64
    reward_sum: I32 = Field(description="Q15.16")
    reward: float
    init: bool
    outcome: Union[Outcome, Literal["not_modelled"]]
    global_reward: Optional[float] = Field(description="after this update; None: −∞ or not modelled")
    chunk: Optional[U16] = Field(default=None, description="the update's chunk (only when it announces K > 1)")
    num_chunks: Optional[U16] = Field(default=None, description="K announced (only when > 1)")
    reason: Optional[str] = Field(default=None, description="wrong_size: the field that differs from the PS's "
                                  "model (num_chunks, num_grads)")
    version: Optional[Count] = Field(default=None, description="the slice's version after this update: chunks "
                                     "(updates or aggregates) applied to it so far (the global model an ACK of "
                                     "this update carries)")
    staleness: Optional[Count] = Field(default=None, description="the PS's estimate of the update's staleness "
                                       "(olaf/hosts/staleness.py)")
    norm: Optional[float] = Field(default=None, description="applied updates: ‖g‖ of the update's mean direction "
                                  "on its slice")
    cos_prev: Optional[float] = Field(default=None, description="applied updates: cosine between its direction and "
                                      "the slice's previous applied direction")


class FlushRecord(Record):
    """An aggregation window applied as one update (``by`` size or time) and its ACKs broadcast."""

    ev: Literal["flush"]
    t_ns: U64
    updates: Count
    count: Count
    reward: float
    outcome: Outcome
    global_reward: Optional[float]
    acks: Count
    by: Literal["size", "time"] = Field(description="size: full (async_with_aggr, sync) or of mean staleness "
                                       "≤ β_k (stellaris); time: the cutoff timer")
    chunk: Optional[U16] = Field(default=None, description="the slice the window updated (only when K > 1)")
    staleness: Optional[float] = Field(default=None, description="the window's mean staleness δ̄ (Σ count·δ̂ / "
                                       "count), when its updates carried one")
    beta: Optional[float] = Field(default=None, description="stellaris: the threshold β_k the window met (None: "
                                  "round 0, pure asynchrony)")


class MalformedRecord(Record):
    """A datagram that is not a valid update (dropped, no ACK)."""

    ev: Literal["malformed"]
    t_ns: U64
    src: str
    len: Count
    reason: str


class UntrustedRecord(Record):
    """A decoded update the trust checks refused (no ACK): ``reason`` source, reward or gen_ts."""

    ev: Literal["untrusted"]
    t_ns: U64
    src: str
    reason: str
    init: bool
    cluster_id: U16
    worker_id: U16
    seq: U32
    count: U16


class EvalRecord(Record):
    """One evaluation of the global model (``hosts/evaluator.jsonl``, :mod:`olaf.training.evaluator`):
    the PS checkpoint's weights run deterministically for ``episodes`` episodes."""

    ev: Literal["eval"]
    t_ns: U64 = Field(description="when the evaluation ended")
    ckpt_t_ns: U64 = Field(description="when the PS wrote the evaluated checkpoint")
    ps_messages: Count = Field(description="update messages the PS had received by then (an aggregate is one)")
    ps_updates: Count = Field(description="worker updates in them (Σ count)")
    episodes: Count
    mean: float = Field(description="mean episode return")
    std: float
    min: float
    max: float
    mean_length: float = Field(description="mean episode length, steps")
    eval_s: float = Field(description="wall time the evaluation took, s")


def _tag(v: Any) -> Optional[str]:
    ev = v.get("ev") if isinstance(v, dict) else getattr(v, "ev", None)
    if ev == "start":
        role = v.get("role") if isinstance(v, dict) else getattr(v, "role", None)
        return f"start:{role}"
    return ev if isinstance(ev, str) else None


LogRecord = Annotated[
    Union[
        Annotated[WorkerStart, Tag("start:worker")],
        Annotated[PsStart, Tag("start:ps")],
        Annotated[GoRecord, Tag("go")],
        Annotated[InitRecord, Tag("init")],
        Annotated[GenRecord, Tag("gen")],
        Annotated[AckRecord, Tag("ack")],
        Annotated[MalformedAckRecord, Tag("malformed_ack")],
        Annotated[ErrorRecord, Tag("error")],
        Annotated[UpdateRecord, Tag("update")],
        Annotated[FlushRecord, Tag("flush")],
        Annotated[MalformedRecord, Tag("malformed")],
        Annotated[UntrustedRecord, Tag("untrusted")],
        Annotated[StopRecord, Tag("stop")],
        Annotated[EvalRecord, Tag("eval")],
    ],
    Discriminator(_tag, custom_error_type="unknown_record",
                  custom_error_message="not a known host log record (ev, and role for start)"),
]
"""Any record of a host log, told apart by ``ev`` (and ``role`` for ``start``)."""

LOG_RECORD: TypeAdapter[Any] = TypeAdapter(LogRecord)


class RegroupRecord(Record):
    """One membership change of ``olafctl`` (``regroups.jsonl``): the clusters (id as a string →
    worker names) from ``t_ns`` on, when the switches held the change."""

    t_ns: U64
    clusters: dict[str, list[str]]


# -- summaries -----------------------------------------------------------------


class WorkerSummary(Record):
    """``<name>.summary.json`` of a worker: counters and final state at shutdown.

    The task's own summary follows: bandit ``final_exp_reward``; PPO ``env_steps``,
    ``episodes``, ``iterations``, ``num_params`` (and ``learner`` ``rllib`` when RLlib computed the updates).
    """

    role: Literal["worker"]
    name: str
    task: Optional[str] = Field(default=None, description="bandit or ppo (None: a simulated worker)")
    bind: str
    cluster_id: Optional[U16]
    worker_id: Optional[U16]
    learned_cluster_id: Optional[U16]
    learned_worker_id: Optional[U16]
    t0_ns: Optional[int]
    gen_end_ns: Optional[int]
    t_stop_ns: int
    stop_reason: str
    generated: Count
    sent: Count
    skipped: Count
    init_sent: Count
    init_chunks_sent: Count = Field(default=0, description="INIT datagrams: K for the first INIT, the missing "
                                    "slices' chunks for a repetition")
    send_errors: Count
    acks: Count
    acks_own: Count
    acks_malformed: Count
    acks_foreign: Count = 0
    acks_wrong_size: Count
    recv_errors: Count
    callback_errors: Count = Field(default=0, description="event hooks or on_weights calls that raised (logged)")
    handling_errors: Count = Field(default=0, description="datagrams whose handling raised in the receive thread "
                                   "(a bug; logged, the thread went on)")
    socket_drops: Count = 0
    slices_superseded: Count = Field(default=0, description="ACK slices replaced by a newer slice of the same "
                                     "chunk before the worker adopted them (kept: the newest per chunk)")
    rcvbuf_bytes: Optional[Count] = Field(default=None, description="receive buffer the kernel granted the "
                                          "worker's socket, bytes (olaf.udpsock)")
    rcvbuf_advice: Optional[str] = Field(default=None, description="set when the kernel granted less than "
                                         "asked for: the cap and how to lift it")
    saturated_elements: Count = 0
    saturated_updates: Count = 0
    model_acked: bool
    last_seq: U32
    last_global_reward: Optional[float]
    last_reward: Optional[float] = None
    error: Optional[str] = None
    final_exp_reward: Optional[float] = None
    env_steps: Optional[Count] = None
    episodes: Optional[Count] = None
    iterations: Optional[Count] = None
    num_params: Optional[Count] = None
    learner: Optional[Literal["rllib"]] = None
    num_chunks: Optional[Count] = Field(default=None, description="K, chunks per update (olaf.chunks)")
    chunks_sent: Optional[Count] = Field(default=None, description="update chunks sent (K per sent update, "
                                         "less send errors)")
    ack_slices: Optional[dict[str, int]] = Field(
        default=None, description="sent updates by how many of their K ACK slices arrived (own ACKs): "
                                  "slices seen -> updates; the values sum to sent")
    ack_events: Optional[Count] = Field(default=None, description="first ACK slices of an answered update "
                                        "(the event of Δ̂ and --ack-wait-ms, docs/hosts.md)")


class PsSummary(Record):
    """``<name>.summary.json`` of the PS: counters (one per :class:`Outcome` too), per-cluster
    counts, the final global reward and weights, its rule and trust policy."""

    role: Literal["ps"]
    name: str
    bind: str
    lr: Optional[float]
    lr_final: Optional[float] = None
    lr_decay_updates: Optional[int] = None
    step: Optional[str] = None
    gate: Optional[bool] = None
    mode: Optional[str] = None
    t_start_ns: int
    t_stop_ns: int
    stop_reason: str
    datagrams: Count
    updates: Count
    inits: Count
    malformed: Count
    untrusted: Count = 0
    init_source: Count = 0
    socket_drops: Count = 0
    rcvbuf_bytes: Optional[Count] = Field(default=None, description="receive buffer the kernel granted the PS's "
                                          "socket, bytes (olaf.udpsock)")
    rcvbuf_advice: Optional[str] = Field(default=None, description="set when the kernel granted less than "
                                         "asked for: the cap and how to lift it")
    acks_sent: Count
    refusals_sent: Count = Field(default=0, description="refusals sent (docs/protocol.md \"Refusal\"); not in acks_sent")
    ack_errors: Count
    flushes: Count = 0
    checkpoints: Count = Field(default=0, description="checkpoints written (olaf.hosts.checkpoint)")
    checkpoint_errors: Count = 0
    initialised: Count = 0
    init_ignored: Count = 0
    accepted: Count = 0
    rejected: Count = 0
    before_init: Count = 0
    wrong_size: Count = 0
    buffered: Count = 0
    not_modelled: Optional[Count] = Field(default=None, description="updates of a PS without a model (ns3)")
    malformed_reasons: dict[str, int]
    untrusted_reasons: dict[str, int] = Field(default_factory=dict)
    trust: Optional[dict[str, Any]] = None
    per_cluster: dict[str, dict[str, int]] = Field(default_factory=dict)
    per_chunk: Optional[dict[str, dict[str, dict[str, int]]]] = Field(
        default=None, description="cluster -> chunk -> counters: chunks (messages received), worker_updates "
                                  "(Σ count), acked, and one per outcome (docs/hosts.md)")
    wrong_size_reasons: Optional[dict[str, int]] = Field(
        default=None, description="refused chunks of another model size by field (num_chunks, num_grads)")
    refusal_reasons: dict[str, int] = Field(default_factory=dict, description="refusals sent by reason "
                                            "(num_grads, num_chunks, reward, gen_ts, no_model, init_source)")
    num_chunks: Optional[Count] = Field(default=None, description="K of the PS's model")
    chunk_len: Optional[Count] = Field(default=None, description="L of the PS's model")
    global_rewards: Optional[list[Optional[float]]] = Field(default=None, description="r_g per slice (null: −∞)")
    global_reward: Optional[float]
    num_weights: Optional[Count]
    weights: Optional[list[float]]
    resumed_from: Optional[str] = Field(default=None, description="the checkpoint the PS continued from")
    cpu_s: Optional[float] = Field(default=None, description="CPU time of the PS's process (user + system), s")


class WorkersTotal(Record):
    """``workers.summary.json`` of an ns-3 run without per-update records: the workers' sums."""

    workers: Count
    generated: Count
    sent: Count
    skipped: Count
    send_errors: Count
    acks: Count
    acks_own: Count

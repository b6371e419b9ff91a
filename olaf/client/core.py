"""The client's protocol engine: :class:`OlafClient` (the package docstring, :mod:`olaf.client`, says what it does)."""

from __future__ import annotations

import dataclasses
import logging
import math
import socket
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Optional, Union

import numpy as np

from olaf.chunks import Chunking
from olaf.client.events import AckKey, ClientEvents
from olaf.constants import MTU, SOCKET_RCVBUF
from olaf.experience import Experience, Generation
from olaf.fixedpoint import INT32_MIN, UINT16_MAX, pack_q724, reward_from_fixed, reward_to_fixed, unpack_q724
from olaf.plan.tx import TxParams
from olaf.txcontrol import Decision, TransmissionControl
from olaf.udpsock import ANC_SPACE, dropped, rcvbuf_advice, rcvbuf_granted, udp_bound
from olaf.update import Update
from olaf.wire import ACK_PORT, REFUSALS, UPDATE_PORT, Ack, MalformedOlafPacket, encode_update, parse_ack

__all__ = ["Adoption", "ClientEvents", "ClientStats", "ModelTimeout", "OlafClient", "OlafError", "PushResult", "as_vector",
           "endpoint"]

RECV_BUF = 65535
"""Receive buffer per datagram, bytes (the largest UDP payload)."""
SENT_MEMORY = 4096
"""Sent ``(seq, gen_ts)`` pairs (and answered updates) remembered to recognise own ACKs."""
RECV_POLL_S = 0.05
"""The receive thread's socket timeout: how soon it notices :meth:`OlafClient.close`."""
SATURATION_WARN_EVERY = 100
"""A clamped update is logged as a warning the first time and every this many times after
(each one is counted: ``saturated_updates``, ``saturated_elements``, :attr:`PushResult.saturated`)."""
INIT_RETRY_S = 1.0
"""The first INIT repetition's delay, s (:func:`init_retry_interval_s`)."""
INIT_RETRY_MAX_S = 30.0
"""The longest delay between INIT repetitions before the random factor, s (the back-off's cap)."""
INIT_RETRY_RANDOM_FACTOR = 1.5
"""Each INIT repetition's delay is its back-off interval times a factor drawn uniformly from
[1, INIT_RETRY_RANDOM_FACTOR) (:func:`init_retry_delay_s`; CoAP's ``ACK_RANDOM_FACTOR``, RFC 7252 §4.8)."""


def init_retry_interval_s(n: int, first_s: float = INIT_RETRY_S, max_s: float = INIT_RETRY_MAX_S) -> float:
    """Delay before INIT repetition ``n`` (n ≥ 1) after the previous INIT, s:
    ``min(first_s · 2^(n−1), max_s)`` (binary exponential back-off, RFC 8085 §3.1.3).

    Raises:
        ValueError: ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"n={n!r}: INIT repetitions are numbered from 1")
    return min(first_s * 2.0 ** min(n - 1, 64), max_s)


def init_retry_delay_s(n: int, u: float, first_s: float = INIT_RETRY_S, max_s: float = INIT_RETRY_MAX_S) -> float:
    """Delay before INIT repetition ``n`` (n ≥ 1) for the uniform draw ``u`` ∈ [0, 1), s:
    :func:`init_retry_interval_s` times ``1 + (INIT_RETRY_RANDOM_FACTOR − 1) · u``, so in
    [interval, 1.5 · interval) (RFC 7252 §4.8). Workers that started together then repeat at
    different times and in a different order each time.

    Raises:
        ValueError: ``n < 1`` or ``u`` outside [0, 1).
    """
    if not 0.0 <= u < 1.0:
        raise ValueError(f"u={u!r}: the draw must be in [0, 1)")
    return init_retry_interval_s(n, first_s, max_s) * (1.0 + (INIT_RETRY_RANDOM_FACTOR - 1.0) * u)


_log = logging.getLogger(__name__)

VectorLike = Any
"""A flat float vector: a numpy array or sequence of P numbers, a torch tensor, a
``torch.nn.Module`` (its parameters) or an iterable of tensors (see :func:`as_vector`)."""


def as_vector(values: VectorLike, num_params: int, name: str) -> np.ndarray:
    """``values`` as a float64 vector of shape ``(num_params,)``.

    Accepts a numpy array or sequence of numbers (any float or int dtype), a torch tensor, a
    ``torch.nn.Module`` (its ``parameters()``) or an iterable of tensors, flattened in order —
    the order of ``torch.nn.utils.parameters_to_vector``. Tensors are read through their own
    methods (``detach``, ``cpu``, ``numpy``): torch is never imported here.

    Raises:
        ValueError: not numeric, not one-dimensional, not ``num_params`` long, or a NaN
            element; the message names ``name`` and P.
    """
    parameters = getattr(values, "parameters", None)
    if callable(parameters):
        values = list(parameters())
    if hasattr(values, "detach"):
        values = [values]
    if not isinstance(values, np.ndarray):
        items = list(values) if hasattr(values, "__iter__") and not isinstance(values, (str, bytes)) else values
        if isinstance(items, list) and items and any(hasattr(v, "detach") for v in items):
            items = np.concatenate([np.asarray(_tensor_numpy(v), dtype=np.float64).reshape(-1) for v in items])
        values = items
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be a flat numeric vector of P={num_params} elements: {e}") from None
    if v.ndim != 1:
        raise ValueError(f"{name} must be a flat vector of P={num_params} elements, got shape {v.shape} "
                         f"(flatten it, e.g. parameters_to_vector)")
    if v.shape[0] != num_params:
        raise ValueError(f"{name} has {v.shape[0]} elements, the model has P={num_params} (num_params)")
    nan = np.flatnonzero(np.isnan(v))
    if nan.size:
        raise ValueError(f"{name} has {nan.size} NaN element(s), the first at index {int(nan[0])}")
    return v


def _tensor_numpy(t: Any) -> Any:
    """A torch tensor's values as numpy (detached, on the CPU)."""
    t = t.detach()
    return t.cpu().numpy() if hasattr(t, "cpu") else t.numpy()


def _float_dtype(x: Any) -> np.dtype:
    """``x``'s dtype if it is a floating numpy dtype, else float64."""
    d = getattr(x, "dtype", None)
    return d if isinstance(d, np.dtype) and np.issubdtype(d, np.floating) else np.dtype(np.float64)


def endpoint(value: Any, name: str, default_port: int) -> tuple[str, int]:
    """``(IPv4 address, port)`` of an ``ip``, ``(ip, port)`` or ``"ip:port"`` argument; host names
    are resolved once.

    Raises:
        ValueError: not of that form, a port outside 1..65535, or a host that does not resolve.
    """
    if isinstance(value, str):
        host, _, port_s = value.partition(":")
        try:
            port = int(port_s) if port_s else default_port
        except ValueError:
            raise ValueError(f"{name}={value!r}: the port must be an integer (IP[:PORT])") from None
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        host, port = value
    else:
        raise ValueError(f"{name}={value!r} must be an (ip, port) pair or 'ip[:port]'")
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        raise ValueError(f"{name}={value!r}: the port must be an integer in 1..65535")
    try:
        return socket.gethostbyname(str(host)), port
    except OSError as e:
        raise ValueError(f"{name}={value!r}: cannot resolve {host!r} to an IPv4 address ({e})") from None


class OlafError(Exception):
    """An Olaf job that cannot go on as configured; the message says what was seen and what to check."""


class ModelTimeout(OlafError, TimeoutError):
    """:meth:`OlafClient.init` waited ``wait_s`` and the whole global model did not come back."""


class ModelRefused(OlafError):
    """The PS refused this client's INIT for a reason that repeating it cannot change (another
    model size, or a ``gen_ts`` outside its lifetime: docs/protocol.md "Refusal"); ``reason`` names it."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


REFUSAL_CAUSES = {
    "num_grads": "the PS's model has another size: start it with `olaf ps --num-params P` of this model",
    "num_chunks": "the PS's model travels in another number of chunks: give the PS this model's "
                  "`--num-params` and the client's `--mtu`",
    "reward": "the update's mean reward is outside the PS's bound (`olaf ps --max-abs-reward`): scale the "
              "reward or raise the bound",
    "gen_ts": "the update's gen_ts is outside the PS's lifetime (`olaf ps --gen-ts-slack-s`): check the "
              "hosts' clocks (CLOCK_REALTIME)",
    "no_model": "the PS has no initial weights for that slice yet (no INIT of it has arrived)",
    "init_source": "this host may not set the initial weights (`olaf ps --init-from`); the designated "
                   "worker's INIT will",
}
"""What each refusal reason (:data:`olaf.wire.REFUSALS`) means for the sender, and the fix."""
assert set(REFUSAL_CAUSES) == set(REFUSALS), "every refusal reason needs its cause"
FATAL_INIT_REFUSALS = frozenset({"num_grads", "num_chunks", "gen_ts"})
"""Refusals of an INIT that its repetitions cannot turn (the same size and ``gen_ts`` each time)."""


def _uint16_or_none(value: Optional[int], name: str) -> Optional[int]:
    if value is not None and not (isinstance(value, int) and 0 <= value <= UINT16_MAX):
        raise ValueError(f"{name}={value!r} must be None or an integer in 0..{UINT16_MAX}")
    return value


@dataclass(frozen=True)
class PushResult:
    """What :meth:`OlafClient.push` did.

    Attributes:
        sent: the update left (at least one of its K datagrams).
        reason: ``decision.reason`` (``tc_off``, ``no_status``, ``no_qmax``, ``uncongested``, ``draw``:
            :class:`~olaf.txcontrol.Decision`) when transmission control decided; ``no_episode``
            when it would have sent but no episode has ended since the first push (an update needs a
            reward; the push is folded into the next one); ``send_error`` when every datagram failed
            to leave (counted in ``send_errors``; the folded experience is gone with it).
        decision: transmission control's decision (``p_send``, ``draw``, ``delta_hat_ms``, ``N``, ``Q_max``).
        gen_ts: the update's generation time, ``CLOCK_REALTIME`` ns (also of a skipped push).
        seq: the update's sequence number (1, 2, … per sent update, wrapping at 2³²), None if not sent.
        reward: the mean reward sent (over every episode folded in), None if not sent.
        folded: pushes folded into the sent update (1 + those skipped before it), None if not sent.
        saturated: elements clamped to the Q7.24 range in the sent update, None if not sent.
        chunks: datagrams sent (K, less send errors).
        refused: the reasons of the refusals (docs/protocol.md "Refusal") of this client's earlier
            updates that arrived since the previous push, one per refused chunk (also counted in
            :attr:`ClientStats.refusals`, and warned about once per reason).
    """

    sent: bool
    reason: str
    decision: Decision
    gen_ts: int
    seq: Optional[int] = None
    reward: Optional[float] = None
    folded: Optional[int] = None
    saturated: Optional[int] = None
    chunks: int = 0
    refused: tuple[str, ...] = ()


class Adoption(NamedTuple):
    """What :meth:`OlafClient.adopt` hands over: ``weights`` (None if no ACK slice arrived since
    the previous adoption), how many of the K slices in it come from ACKs, and ``base``: the key
    (:data:`AckKey`) of the ACK whose slice 0 the weights hold (None if slice 0 was not among them),
    from which the staleness of the next update is measured (``docs/training.md`` "Staleness")."""

    weights: Optional[np.ndarray]
    slices: int
    base: Optional[AckKey] = None


@dataclass(frozen=True)
class ClientStats:
    """A consistent snapshot of an :class:`OlafClient`'s counters (:meth:`OlafClient.stats`).

    Attributes:
        pushes: calls of :meth:`~OlafClient.push`; ``sent`` + ``skipped``.
        sent, skipped: pushes sent / not sent (transmission control, ``no_episode``, ``send_error``).
        skipped_by_reason: ``skipped`` by :attr:`PushResult.reason`.
        chunks_sent: update datagrams sent (K per sent update, less send errors).
        init_sent: INITs sent: the first and its repetitions (a repetition carries only the
            chunks whose slices had not come back).
        init_chunks_sent: INIT datagrams sent (K for the first INIT, fewer for a repetition).
        send_errors, recv_errors: datagrams whose ``sendto`` / ``recvmsg`` failed.
        callback_errors: calls of ``on_weights`` or an ``events`` hook that raised (logged, ignored).
        handling_errors: datagrams whose handling raised in the receive thread (a bug: logged, and
            the thread went on).
        socket_drops: datagrams (ACK slices) the kernel dropped because the socket's receive buffer
            was full (``SO_RXQ_OVFL``, :mod:`olaf.udpsock`): lost on this host, after the network.
        slices_superseded: ACK slices with weights replaced by a newer slice of the same chunk
            before :meth:`~OlafClient.adopt` took them (not lost: the newer one holds the PS's later weights).
        rcvbuf_bytes: the receive buffer the kernel granted the socket, bytes (:func:`olaf.udpsock.rcvbuf_granted`).
        rcvbuf_advice: None, or (when the kernel granted less than asked for) the cap and how to lift it.
        acks: ACK datagrams decoded (from the PS's address).
        acks_own: ACKs answering this client's own sent updates (INIT included), refusals apart.
        acks_others: ACKs of the right model size answering other workers' updates (multicast to the cluster).
        acks_wrong_size: ACKs of another K or slice length (another deployment), ignored.
        refusals: refusals received, by reason (:data:`olaf.wire.REFUSALS`); ``refusals_own`` those
            answering this client's own updates or INIT (a refusal is not counted in ``acks``' other
            counters and does not restart transmission control's ``Δ̂`` timer).
        acks_malformed: datagrams from the PS's address that do not decode as an ACK, dropped.
        acks_foreign: datagrams from any other address (forged or stray), dropped.
        ack_events: ACK events (K = 1: ACKs; K > 1: first slices answering an update).
        saturated_elements, saturated_updates: Q7.24 clamping of sent directions.
        num_chunks: K.
        ack_slices: sent updates by how many of their own K ACK slices came back, ``{"3": n, …}``
            (the values sum to ``sent``).
        model_acked: every slice of the global model has arrived at least once.
        learned_cluster_id, learned_worker_id: the ids an Olaf switch stamped (from own ACKs), or None.
        last_seq: ``seq`` of the last sent update (0 before any).
        last_global_reward: the PS's global reward in the latest ACK (float; None: −∞ or no ACK yet).
        last_reward: the mean reward of the last sent update (None before any).
        aom_ms: age of the global model held, ms (module docstring; None until every slice arrived).
    """

    pushes: int
    sent: int
    skipped: int
    skipped_by_reason: dict[str, int]
    chunks_sent: int
    init_sent: int
    init_chunks_sent: int
    send_errors: int
    recv_errors: int
    callback_errors: int
    handling_errors: int
    socket_drops: int
    slices_superseded: int
    rcvbuf_bytes: int
    rcvbuf_advice: Optional[str]
    acks: int
    acks_own: int
    acks_others: int
    acks_wrong_size: int
    acks_malformed: int
    acks_foreign: int
    ack_events: int
    saturated_elements: int
    saturated_updates: int
    num_chunks: int
    ack_slices: dict[str, int]
    model_acked: bool
    learned_cluster_id: Optional[int]
    learned_worker_id: Optional[int]
    last_seq: int
    last_global_reward: Optional[float]
    last_reward: Optional[float]
    aom_ms: Optional[float] = field(default=None)
    refusals: dict[str, int] = field(default_factory=dict)
    refusals_own: int = 0


class OlafClient:
    """An Olaf endpoint toward a parameter server.

    Args:
        ps: the PS, ``(ip, port)`` or ``"ip[:port]"`` (port 50100 by protocol); only datagrams
            from this address are taken as ACKs.
        num_params: P, elements of the model's parameter vector (≥ 1).
        bind: where ACKs arrive, ``(ip, port)`` or ``"ip[:port]"``; updates leave from it too.
            Default ``("0.0.0.0", 50101)`` (the ACK port by protocol: the PS answers there).
        mtu: the links' IPv4 MTU, bytes: the update travels as ``Chunking.for_model(P, mtu)``
            chunks (the PS needs the same ``--num-params P --mtu MTU`` when K > 1). None: one
            message per update whatever P (K = 1, loopback or jumbo links only).
        tx: transmission-control parameters (:class:`olaf.plan.tx.TxParams`; default: off, every
            update is sent).
        rng: the random stream of transmission control's draws (a seed or a numpy Generator);
            the INIT repetitions' random delays draw from a stream spawned from it.
        cluster_id, worker_id: header values (uint16, 0 if None); an Olaf switch overwrites them
            from its tables, and the client learns the stamped ones from its own ACKs.
        init_retry_s: delay of the first INIT repetition, s (> 0); each later one waits twice
            as long as the one before, up to ``init_retry_max_s`` (:func:`init_retry_interval_s`).
        init_retry_max_s: the longest delay between INIT repetitions, s (≥ ``init_retry_s``;
            equal: a fixed period).
        background: receive ACKs in a daemon thread (default); False: only inside the waits
            (module docstring, "Threading").
        on_weights: called with the global model (float32, shape ``(P,)``, a copy) each time an
            update's whole answer (all K slices) has arrived and when the model is first complete;
            from the receive thread (or inside a wait), without the lock held. Exceptions are
            logged and counted, never raised into the receive loop.
        events: protocol event hooks (:class:`ClientEvents`).
        rcvbuf: the socket's receive buffer to ask for, bytes (≥ 1; :func:`olaf.udpsock.udp_socket`).
        stop: an event that ends any wait early when set (e.g. from a signal handler).

    Raises:
        ValueError: a bad argument; the message names it and what is accepted.
        olaf.chunks.ChunkingError: a model too large for the wire at ``mtu`` (a ValueError).
        OSError: ``bind`` cannot be bound; the message names the address and the likely cause
            (:func:`olaf.udpsock.udp_bound`: the port in use, not an address of this host …).
    """

    def __init__(self, ps: Any, *, num_params: int, bind: Any = ("0.0.0.0", ACK_PORT), mtu: Optional[int] = MTU,
                 tx: Optional[TxParams] = None, rng: Union[int, np.random.Generator, None] = None,
                 cluster_id: Optional[int] = None, worker_id: Optional[int] = None, init_retry_s: float = INIT_RETRY_S,
                 init_retry_max_s: float = INIT_RETRY_MAX_S,
                 background: bool = True, on_weights: Optional[Callable[[np.ndarray], None]] = None,
                 events: Optional[ClientEvents] = None, stop: Optional[threading.Event] = None,
                 rcvbuf: int = SOCKET_RCVBUF) -> None:
        self.ps = endpoint(ps, "ps", UPDATE_PORT)
        self.bind = endpoint(bind, "bind", ACK_PORT)
        if not isinstance(num_params, (int, np.integer)) or isinstance(num_params, bool) or num_params < 1:
            raise ValueError(f"num_params={num_params!r} must be a positive integer (P, the model's parameter count)")
        self.num_params = int(num_params)
        if mtu is not None and (not isinstance(mtu, (int, np.integer)) or isinstance(mtu, bool)):
            raise ValueError(f"mtu={mtu!r} must be an integer number of bytes (e.g. 1500) or None")
        self.chunking = Chunking.single(self.num_params) if mtu is None else Chunking.for_model(self.num_params, int(mtu))
        if tx is not None and not isinstance(tx, TxParams):
            raise ValueError(f"tx={tx!r} must be an olaf.plan.tx.TxParams (or None: transmission control off)")
        if not 0 < init_retry_s < math.inf:
            raise ValueError(f"init_retry_s={init_retry_s!r} must be > 0 seconds")
        if not init_retry_s <= init_retry_max_s < math.inf:
            raise ValueError(f"init_retry_max_s={init_retry_max_s!r} must be finite and >= init_retry_s "
                             f"({init_retry_s!r} s; equal for a fixed INIT period)")
        self.cluster_id = _uint16_or_none(cluster_id, "cluster_id")
        self.worker_id = _uint16_or_none(worker_id, "worker_id")
        if not isinstance(rcvbuf, (int, np.integer)) or isinstance(rcvbuf, bool) or rcvbuf < 1:
            raise ValueError(f"rcvbuf={rcvbuf!r} must be a positive integer number of bytes")
        if on_weights is not None and not callable(on_weights):
            raise ValueError(f"on_weights={on_weights!r} must be callable (weights) -> None")
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self.tx = tx or TxParams()
        """Transmission control's parameters (off unless given)."""
        self._tc = TransmissionControl(self.tx, gen)
        self._retry_s = (float(init_retry_s), float(init_retry_max_s))
        self._on_weights = on_weights
        self._events = events or ClientEvents()
        self._stop = stop or threading.Event()
        self._closed = threading.Event()
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)

        k = self.chunking.num_chunks
        self._experience = Experience(self.num_params)
        self._c: Counter[str] = Counter()
        self._skipped: Counter[str] = Counter()
        self._refusals: Counter[str] = Counter()
        self._warned_refusals: set[str] = set()  # reasons of own refusals already warned about
        self._refused_since_push: list[str] = []
        self._init_refusal: Optional[str] = None
        self._seq = 0
        self._sent: OrderedDict[int, int] = OrderedDict()  # seq -> gen_ts of sent updates
        self._own_slices: OrderedDict[int, int] = OrderedDict()  # own sent seq -> bit mask of slices seen
        self._ack_slices: Counter[int] = Counter()  # sent updates by own ACK slices seen (finalised ones)
        # updates with an ACK event -> bit mask of their slices with weights seen
        self._answered: OrderedDict[tuple[int, int, int], int] = OrderedDict()
        self._answers_complete = 0  # updates whose K ACK slices with weights all arrived
        self._answers_at_send = 0  # _answers_complete when the last update was sent
        self._new: dict[int, np.ndarray] = {}  # ACK slices received since the last adoption, by chunk
        self._new_key: Optional[AckKey] = None  # the ACK of the newest slice 0 in _new
        self._global = np.zeros(self.num_params)  # the newest value of every slice received
        self._slice_gen_ts = np.zeros(k, dtype=np.int64)  # newest gen_ts reflected in each slice held
        self._have = np.zeros(k, dtype=bool)  # slices received at least once
        self.model_acked = False
        self._learned: Optional[tuple[int, int]] = None
        self._last_global_reward: Optional[float] = None
        self._init_raw: Optional[list[int]] = None
        self._init_gen_ts = 0
        self._init_rounds = 0  # INITs sent (the first and its repetitions)
        # the INIT repetitions' random factors and first rotation: a stream of their own, spawned
        # from ``rng`` (so transmission control's draws are the same with or without repetitions)
        try:
            self._init_rng = gen.spawn(1)[0]
        except TypeError:  # a Generator whose bit generator has no SeedSequence to spawn from
            self._init_rng = np.random.default_rng()
        self._adopted_since_push = 0  # ACK slices adopted since the last push (the events' pushed hook)
        self._base: Optional[AckKey] = None  # the ACK of the newest slice 0 adopted
        self._init_offset = 0  # where the repetitions' rotation of the missing chunks starts (drawn at init())
        self._next_init_ns = 0  # when the next INIT repetition is due

        self._sock = udp_bound(self.bind, int(rcvbuf), who="Olaf client")
        self._rcvbuf = (int(rcvbuf), rcvbuf_granted(self._sock))  # asked for, granted
        self._thread: Optional[threading.Thread] = None
        if background:
            self._sock.settimeout(RECV_POLL_S)
            self._thread = threading.Thread(target=self._receive_loop, name=f"olaf-client-{self.bind[0]}", daemon=True)
            self._thread.start()

    @classmethod
    def from_env(cls, num_params: int, *, environ: Optional[Any] = None, wait_s: Optional[float] = None,
                 **kwargs: Any) -> OlafClient:
        """A client as ``olaf launch`` set this process up (:mod:`olaf.launchenv`): the PS, this
        worker's address, cluster and worker ids and the MTU from the launch's environment; the
        model's size ``num_params`` is told to the launcher, which starts the PS for it, and this
        call returns once the PS is up. Its worker log goes into the launch's run directory
        (:func:`olaf.client.log.recorder_from_env`) unless ``events`` is given. ``kwargs`` are the
        constructor's other arguments (``tx``, ``rng``, …).

        Raises:
            olaf.launchenv.LaunchEnvError: not started by ``olaf launch`` (the message says how), or
                the launch's PS was started for another model (another worker's P came first), or
                the PS was not up within ``wait_s`` (default :data:`olaf.launchenv.RENDEZVOUS_S`).
        """
        from olaf.client.log import recorder_from_env  # noqa: PLC0415
        from olaf.launchenv import RENDEZVOUS_S, LaunchEnv, register_model  # noqa: PLC0415

        env = LaunchEnv.read(environ)
        register_model(env, num_params, RENDEZVOUS_S if wait_s is None else wait_s)
        recorder = None if "events" in kwargs else recorder_from_env(environ)
        if recorder is not None:
            kwargs["events"] = recorder
        client = cls(env.ps, num_params=num_params, bind=env.bind, mtu=env.mtu, cluster_id=env.cluster_id,
                     worker_id=env.worker_id, **kwargs)
        if recorder is not None:
            recorder.start(client, seed=env.rank)
        return client

    # -- the caller's side ----------------------------------------------------------------------

    def init(self, weights: VectorLike, *, wait_s: Optional[float] = None, lenient: bool = False) -> bool:
        """Send the INIT with the initial weights (P elements, Q7.24 on the wire, saturated) and
        repeat it every ``init_retry_s`` until the model is acked (in the background, or inside
        the waits with ``background=False``).

        Args:
            weights: the initial weights, a flat vector of P (see :func:`as_vector`).
            wait_s: wait at most this long (s) for the whole global model to come back; None: do not
                wait (the INIT goes on repeating; :attr:`model_acked` says when it is back).
            lenient: with ``wait_s``, return False instead of raising when the model is not back
                (a job that may start before its PS, or behind a congested path, and polls later).

        Returns:
            Whether the whole global model has arrived (:attr:`model_acked`; always True when
            ``wait_s`` is given and ``lenient`` is not).

        Raises:
            ModelTimeout: ``wait_s`` passed without the whole model (not ``lenient``); the message
                names the PS, P, K, the MTU, the slices that did come back and the likely causes.
            ModelRefused: (with ``wait_s``, even ``lenient``) the PS refused the INIT for a reason its
                repetitions cannot change: another model size or a ``gen_ts`` outside its lifetime;
                the message names the reason and the fix.
            ValueError: ``weights`` not a vector of P numbers (the message names P).
            RuntimeError: ``init`` was already called, or the client is closed.
        """
        w = as_vector(weights, self.num_params, "weights")
        with self._lock:
            self._check_open()
            if self._init_raw is not None:
                raise RuntimeError("init() was already called on this client; its INIT repeats until the model is acked")
            self._init_raw = pack_q724(w)[0]
            self._init_gen_ts = time.time_ns()
            self._init_offset = int(self._init_rng.integers(self.chunking.num_chunks))
            self._send_init(retry=False, now=self._init_gen_ts)
        if wait_s is None:
            return self.model_acked
        self.wait_for_model(wait_s)
        with self._lock:
            refusal, got = self._init_refusal, self.model_acked
        if refusal is not None and not got:
            raise ModelRefused(f"the PS at {self.ps[0]}:{self.ps[1]} refused this client's INIT ({refusal}): "
                               f"{REFUSAL_CAUSES[refusal]}", refusal)
        if got or lenient:
            return self.model_acked
        raise ModelTimeout(self._no_model_message(wait_s))

    def _no_model_message(self, wait_s: float) -> str:
        """Why :meth:`init` got no global model: what came back, and what to check."""
        with self._lock:
            have, wrong = int(self._have.sum()), self._c["acks_wrong_size"]
            foreign, malformed = self._c["acks_foreign"], self._c["acks_malformed"]
        c, ps = self.chunking, f"{self.ps[0]}:{self.ps[1]}"
        size = (f"P = {self.num_params} parameters in K = {c.num_chunks} chunks of at most {c.chunk_len}"
                if c.num_chunks > 1 else f"P = {self.num_params} parameters in one message")
        seen = [f"{have} of {c.num_chunks} slices came back"]
        with self._lock:
            refusals = dict(self._refusals)
        if refusals:
            seen.append("refusals " + ", ".join(f"{r} × {n}" for r, n in sorted(refusals.items())))
        if wrong:
            seen.append(f"{wrong} ACKs of another model size (the PS's P or K differs)")
        if foreign:
            seen.append(f"{foreign} datagrams from another source than the PS")
        if malformed:
            seen.append(f"{malformed} malformed")
        return (f"no global model from the PS at {ps} within {wait_s:g} s ({size}): {', '.join(seen)}. "
                f"Check that `olaf ps` runs and listens there; that it has this model's size (`olaf ps "
                f"--num-params {self.num_params}" + (" --mtu MTU` with this client's MTU" if c.num_chunks > 1 else "`")
                + "; through an Olaf switch, an update of another size is dropped as malformed before the PS, "
                "so nothing answers); a congested path slows the INIT: wait longer, or pass lenient=True and "
                "watch model_acked")

    def push(self, direction: VectorLike, mean_reward: Optional[float], *, episodes: Optional[int] = None,
             samples: int = 1) -> PushResult:
        """Offer one update: fold it into the experience since the last sent update, and send
        the folded update if transmission control says so (see the module docstring).

        Args:
            direction: the update direction, a flat vector of P (float32/float64 array, tensor,
                module or iterable of parameters: :func:`as_vector`): what the PS adds, scaled by
                its learning rate, to the global weights (e.g. new parameters − parameters at the
                start of the iteration). Q7.24 on the wire: elements outside [−128, 128) saturate
                and are counted.
            mean_reward: the mean return of the ``episodes`` episodes that ended in this
                iteration (Q15.16 on the wire), or None if none ended (the push is folded, and
                an update is sent only once some episode has ended: reason ``no_episode``).
            episodes: how many episodes ``mean_reward`` averages (default 1; must be None or 0
                with ``mean_reward`` None): the weight of this reward when pushes are folded.
            samples: samples behind ``direction`` (e.g. environment steps, ≥ 1): the weight of
                this direction when pushes are folded (a sample-weighted mean).

        Returns:
            :class:`PushResult`.

        Raises:
            ValueError: a bad argument (the message names it; a direction of the wrong length names P).
            RuntimeError: the client is closed.
        """
        d = as_vector(direction, self.num_params, "direction")
        if mean_reward is None:
            if episodes:
                raise ValueError(f"episodes={episodes} with mean_reward=None: pass the episodes' mean reward, "
                                 "or episodes=0 if none ended")
            n = 0
        else:
            try:
                r = float(mean_reward)
            except (TypeError, ValueError):
                raise ValueError(f"mean_reward={mean_reward!r} must be a number (or None: no episode ended)") from None
            if not np.isfinite(r):
                raise ValueError(f"mean_reward={mean_reward!r} must be finite (Q15.16 on the wire)")
            n = 1 if episodes is None else episodes
            if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
                raise ValueError(f"episodes={episodes!r} must be a positive integer with a mean_reward")
        if not isinstance(samples, (int, np.integer)) or isinstance(samples, bool) or samples < 1:
            raise ValueError(f"samples={samples!r} must be a positive integer (the direction's weight when folded)")
        rewards = np.full(int(n), r) if n else np.zeros(0)
        return self.push_generation(Generation(rewards=rewards, direction=d, samples=int(samples)))

    def push_generation(self, gen: Generation) -> PushResult:
        """:meth:`push` for a :class:`~olaf.experience.Generation` of an Olaf task (the returns of
        the episodes that ended, the direction (P,) and its samples), as ``olaf worker`` pushes.

        Raises:
            ValueError: ``gen.direction`` is not of shape ``(P,)``.
            RuntimeError: the client is closed.
        """
        if np.shape(gen.direction) != (self.num_params,):
            raise ValueError(f"direction has shape {np.shape(gen.direction)}, the model has P={self.num_params}")
        with self._lock:
            self._check_open()
            self._experience.add(gen)
            gen_ts = time.time_ns()
            self._c["pushes"] += 1
            d = self._tc.decide(gen_ts)
            result = PushResult(sent=False, reason=d.reason, decision=d, gen_ts=gen_ts)
            if d.send and not self._experience.ready:
                result = PushResult(sent=False, reason="no_episode", decision=d, gen_ts=gen_ts)
            elif d.send:
                reward, direction, folded, _episodes = self._experience.take()
                raw, saturated = pack_q724(direction)
                if saturated:
                    self._c["saturated_elements"] += saturated
                    self._c["saturated_updates"] += 1
                    if self._c["saturated_updates"] % SATURATION_WARN_EVERY == 1 or SATURATION_WARN_EVERY == 1:
                        _log.warning("update %d: %d of its %d elements were outside Q7.24's [-128, 128) and were "
                                     "clamped (largest |x| %.3g; %d update(s) clamped so far): the PS applies the "
                                     "clamped values; scale the update or check the loss",
                                     self._seq % 0xFFFFFFFF + 1, saturated, self.num_params,
                                     float(np.max(np.abs(direction))), self._c["saturated_updates"])
                seq = self._seq = self._seq % 0xFFFFFFFF + 1
                chunks = self._send(self._header(seq, reward_to_fixed(reward), gen_ts), raw, init=False)
                if chunks:
                    self._c["sent"] += 1
                    self._c["chunks_sent"] += chunks
                    self._answers_at_send = self._answers_complete
                    result = PushResult(sent=True, reason=d.reason, decision=d, gen_ts=gen_ts, seq=seq, reward=reward,
                                        folded=folded, saturated=saturated, chunks=chunks)
                else:
                    result = PushResult(sent=False, reason="send_error", decision=d, gen_ts=gen_ts)
            if self._refused_since_push:
                result = dataclasses.replace(result, refused=tuple(self._refused_since_push))
                self._refused_since_push.clear()
            if not result.sent:
                self._c["skipped"] += 1
                self._skipped[result.reason] += 1
            adopted, self._adopted_since_push = self._adopted_since_push, 0
            self._event("pushed", result, adopted, self._base)
            return result

    def adopt(self, current: Union[VectorLike, Callable[[], np.ndarray]]) -> Adoption:
        """The weights to start the next iteration from: ``current`` with every ACK slice received
        since the previous :meth:`adopt` written over its part (K = 1: the global weights
        themselves). Call it between iterations, never during one (paper §8.2).

        Args:
            current: the caller's current weights (P,), or a function returning them (called
                only when some but not all K slices arrived). The result has its dtype if it
                is a floating numpy array (e.g. float32), else float64.

        Returns:
            :class:`Adoption`: ``weights`` None if nothing arrived since the previous adoption.

        Raises:
            ValueError: ``current`` is not a vector of P numbers.
        """
        with self._lock:
            new, self._new = self._new, {}
            key, self._new_key = self._new_key, None
            self._adopted_since_push += len(new)
            if key is not None:
                self._base = key
        if not new:
            return Adoption(None, 0)
        lazy = callable(current) and not hasattr(current, "parameters")
        if len(new) == self.chunking.num_chunks:
            w = np.empty(self.num_params, dtype=np.float64 if lazy else _float_dtype(current))
        else:
            base = current() if lazy else current
            w = as_vector(base, self.num_params, "current").astype(_float_dtype(base))
        for chunk, values in new.items():
            start, stop = self.chunking.bounds(chunk)
            w[start:stop] = values
        return Adoption(w, len(new), key)

    @property
    def adopted_base(self) -> Optional[AckKey]:
        """The ACK whose slice 0 the caller last adopted (:attr:`Adoption.base` of the newest
        adoption that had one): the update the weights it trains from answered. None before any."""
        with self._lock:
            return self._base

    def latest_weights(self, dtype: Any = np.float32) -> Optional[np.ndarray]:
        """The newest global model received: every slice at the value of its latest ACK, shape
        ``(P,)`` (a copy; default float32, the dtype of a torch model — Q7.24 is exact in float64).
        None until every slice has arrived once. It does not consume anything: :meth:`adopt`
        still hands over the slices that arrived since its previous call."""
        with self._lock:
            if not self.model_acked:
                return None
            return self._global.astype(dtype)

    def wait_for_model(self, timeout_s: float) -> bool:
        """Wait at most ``timeout_s`` for every slice of the global model to have arrived; True if it has."""
        return self.wait_until(time.time_ns() + int(timeout_s * 1e9), "model")

    def wait_for_answer(self, timeout_s: float) -> bool:
        """Wait at most ``timeout_s`` for the whole answer (all K ACK slices with weights) of an
        update answered after the last sent push (K = 1: the next ACK event with weights), so
        that the next iteration starts from global weights that include it (on a fast network).
        True if it came."""
        return self.wait_until(time.time_ns() + int(timeout_s * 1e9), "answer")

    def poll(self, timeout_s: float = 0.0) -> None:
        """Receive for ``timeout_s`` (s), taking every datagram already queued (``background=False``;
        with the thread it only waits)."""
        self.wait_until(time.time_ns() + int(timeout_s * 1e9))

    def wait_until(self, deadline_ns: int, condition: Optional[str] = None) -> bool:
        """Wait until ``deadline_ns`` (``CLOCK_REALTIME`` ns), until ``condition`` holds, or until
        the ``stop`` event is set; with ``background=False`` receive meanwhile (repeating the INIT
        when due) and take every queued datagram once the deadline has passed.

        Args:
            deadline_ns: when to give up.
            condition: None (wait out the deadline), ``"model"`` (every slice has arrived) or
                ``"answer"`` (see :meth:`wait_for_answer`).

        Returns:
            Whether ``condition`` holds at the end (True for None).

        Raises:
            ValueError: an unknown ``condition``.
        """
        done: Optional[Callable[[], bool]]
        if condition is None:
            done = None
        elif condition == "model":
            def done() -> bool:
                return self.model_acked or self._init_refusal is not None
        elif condition == "answer":
            with self._lock:
                target = self._answers_at_send + 1

            def done() -> bool:
                return self._answers_complete >= target
        else:
            raise ValueError(f"condition={condition!r} must be None, 'model' or 'answer'")
        if self._thread is None:
            self._pump(deadline_ns, done)
        else:
            with self._cond:
                while not (done is not None and done()) and not self._stop.is_set() and not self._closed.is_set():
                    left = deadline_ns - time.time_ns()
                    if left <= 0:
                        break
                    self._cond.wait(min(left / 1e9, 0.1))
        with self._lock:
            return True if done is None else done()

    def stats(self) -> ClientStats:
        """A consistent snapshot of the counters (:class:`ClientStats`)."""
        with self._lock:
            c = self._c
            h = Counter(self._ack_slices)
            for mask in self._own_slices.values():
                h[mask.bit_count()] += 1
            aom = None
            if self.model_acked:
                aom = (time.time_ns() - int(self._slice_gen_ts.min())) / 1e6
            return ClientStats(
                pushes=c["pushes"], sent=c["sent"], skipped=c["skipped"], skipped_by_reason=dict(self._skipped),
                chunks_sent=c["chunks_sent"], init_sent=c["init_sent"],
                init_chunks_sent=c["init_chunks_sent"], send_errors=c["send_errors"],
                recv_errors=c["recv_errors"], callback_errors=c["callback_errors"],
                handling_errors=c["handling_errors"], socket_drops=c["socket_drops"],
                slices_superseded=c["slices_superseded"], rcvbuf_bytes=self._rcvbuf[1],
                rcvbuf_advice=rcvbuf_advice(*self._rcvbuf), acks=c["acks"], acks_own=c["acks_own"],
                acks_others=c["acks"] - c["acks_own"] - c["acks_wrong_size"] - sum(self._refusals.values()),
                acks_wrong_size=c["acks_wrong_size"],
                acks_malformed=c["acks_malformed"], acks_foreign=c["acks_foreign"], ack_events=c["ack_events"],
                saturated_elements=c["saturated_elements"], saturated_updates=c["saturated_updates"],
                num_chunks=self.chunking.num_chunks, ack_slices={str(k): v for k, v in sorted(h.items())},
                model_acked=self.model_acked,
                learned_cluster_id=None if self._learned is None else self._learned[0],
                learned_worker_id=None if self._learned is None else self._learned[1],
                last_seq=self._seq, last_global_reward=self._last_global_reward,
                last_reward=self._experience.last_reward, aom_ms=aom, refusals=dict(self._refusals),
                refusals_own=c["refusals_own"])

    def close(self) -> None:
        """Stop the receive thread and close the socket (idempotent); the ``events`` hook ``closed``
        gets the final counters. Pushes raise afterwards."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._sock.close()
        stats = self.stats()
        with self._lock:
            self._event("closed", stats)

    def __enter__(self) -> "OlafClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- sending --------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise RuntimeError("the OlafClient is closed")

    def _header(self, seq: int, reward_sum: int, gen_ts: int) -> Update:
        """An update header (no elements yet) with the configured ids (0 if unset: a switch stamps them)."""
        return Update(cluster_id=self.cluster_id or 0, worker_id=self.worker_id or 0, seq=seq, count=1,
                      reward_sum=reward_sum, gen_ts=gen_ts)

    def _send(self, u: Update, raw: list[int], init: bool, order: Optional[Sequence[int]] = None) -> int:
        """Send ``u`` with the model vector ``raw`` (Q7.24, ``(P,)``) as its K chunks (``order``: just
        these chunk indices, in this order); return the chunks sent (a chunk whose send fails is
        counted in ``send_errors``). Lock held: an own ACK is recognised even if it is back before
        the last chunk leaves."""
        self._sent[u.seq] = u.gen_ts
        if len(self._sent) > SENT_MEMORY:
            self._sent.popitem(last=False)
        if not init:
            self._track_own(u.seq)
        sent = 0
        parts = self.chunking.split(raw)
        for i in range(len(parts)) if order is None else order:
            part = parts[i]
            c = u.with_(grads=part, chunk=i, num_chunks=self.chunking.num_chunks)
            try:
                self._sock.sendto(encode_update(c, init=init), self.ps)
                sent += 1
            except OSError:
                self._c["send_errors"] += 1
        if not sent:
            self._sent.pop(u.seq, None)
            if not init:
                self._own_slices.pop(u.seq, None)
        return sent

    def _send_init(self, retry: bool, now: int) -> None:
        """Send the INIT (a repetition: only the chunks whose slices have not come back, starting
        at a different one each time, from a random first one) and schedule the next repetition
        after :func:`init_retry_delay_s` (lock held).

        The rotation: behind a full tail-drop queue the last datagrams of a burst are the ones
        dropped, so a repetition always in index order could lose the same high chunks every time.
        """
        assert self._init_raw is not None
        order = None
        if retry:
            missing = np.flatnonzero(~self._have)
            order = np.roll(missing, -((self._init_offset + self._init_rounds) % len(missing))).tolist()
        n = self._send(self._header(0, 0, self._init_gen_ts), self._init_raw, init=True, order=order)
        if n:
            self._c["init_sent"] += 1
            self._c["init_chunks_sent"] += n
        self._init_rounds += 1
        delay = init_retry_delay_s(self._init_rounds, float(self._init_rng.random()), *self._retry_s)
        self._next_init_ns = now + int(delay * 1e9)
        self._event("init_sent", time.time_ns(), retry)

    def _event(self, name: str, *args: Any) -> None:
        """Call the ``events`` hook ``name`` (lock held). A hook that raises is a caller's bug: it is
        logged with its traceback and counted (``callback_errors``), and never stops the receive
        thread, which would leave the client deaf to every later ACK."""
        try:
            getattr(self._events, name)(*args)
        except Exception:
            self._c["callback_errors"] += 1
            _log.exception("OlafClient events.%s hook failed", name)

    def _retry_init(self, now: int) -> None:
        """Repeat the INIT if it is due (lock held)."""
        if self._init_raw is not None and not self.model_acked and now >= self._next_init_ns:
            self._send_init(retry=True, now=now)

    def _track_own(self, seq: int) -> None:
        """Start counting the ACK slices of sent update ``seq`` (the oldest leaves the memory
        into the ``ack_slices`` histogram)."""
        self._own_slices.pop(seq, None)
        self._own_slices[seq] = 0
        if len(self._own_slices) > SENT_MEMORY:
            _, mask = self._own_slices.popitem(last=False)
            self._ack_slices[mask.bit_count()] += 1

    # -- receiving ------------------------------------------------------------------------------

    def _on_datagram(self, data: bytes, t_ns: int, src: tuple[str, int]) -> None:
        """Handle one datagram (takes the lock; calls ``on_weights`` after releasing it)."""
        with self._cond:
            notify = self._handle(data, t_ns, src)
            self._cond.notify_all()
            weights = self._global.astype(np.float32) if notify and self._on_weights is not None else None
        if weights is not None:
            try:
                self._on_weights(weights)  # type: ignore[misc]
            except Exception:  # a caller's bug must not stop the receive loop
                with self._lock:
                    self._c["callback_errors"] += 1
                _log.exception("OlafClient on_weights callback failed")

    def _handle(self, data: bytes, t_ns: int, src: tuple[str, int]) -> bool:
        """The protocol's receive rules (module docstring); lock held. True if the model just
        became complete or an update's whole answer just arrived (``on_weights`` is due)."""
        if src != self.ps:
            # only the PS answers (its update port; the switch forwards its ACKs unchanged in
            # address): anything else could silence or mislead this client (docs/reliability.md)
            self._c["acks_foreign"] += 1
            return False
        try:
            ack = parse_ack(data)
        except MalformedOlafPacket as e:
            self._c["acks_malformed"] += 1
            self._event("malformed", t_ns, len(data), str(e))
            return False
        self._c["acks"] += 1
        c = self.chunking
        if ack.refusal is not None:
            return self._on_refusal(ack, t_ns)
        if ack.num_chunks != c.num_chunks or (ack.weights and len(ack.weights) != c.slice_len(ack.chunk)):
            # another model size: neither an event nor weights (the PS refuses such updates too)
            self._c["acks_wrong_size"] += 1
            self._tc.on_status(ack.status)
            return False
        key = (ack.worker_id, ack.seq, ack.gen_ts)
        if self._first_answer(key):  # the first ACK slice answering this update: Δ̂ restarts, the wait ends
            self._tc.on_ack(t_ns, ack.status)
            self._c["ack_events"] += 1
        else:
            self._tc.on_status(ack.status)
        own = self._sent.get(ack.seq) == ack.gen_ts
        if own:
            self._c["acks_own"] += 1
            self._learned = (ack.cluster_id, ack.worker_id)
            if ack.seq in self._own_slices:
                self._own_slices[ack.seq] |= 1 << ack.chunk
        notify = False
        if ack.weights:
            values = unpack_q724(ack.weights)
            start, stop = c.bounds(ack.chunk)
            if ack.chunk in self._new:  # the newest slice is what adoption needs
                self._c["slices_superseded"] += 1
            self._new[ack.chunk] = values
            if ack.chunk == 0:
                self._new_key = key
            self._global[start:stop] = values
            self._slice_gen_ts[ack.chunk] = max(int(self._slice_gen_ts[ack.chunk]), ack.gen_ts)
            self._have[ack.chunk] = True
            mask = self._answered.get(key)
            if mask is not None and not mask >> ack.chunk & 1:
                mask |= 1 << ack.chunk
                self._answered[key] = mask
                if mask == (1 << c.num_chunks) - 1:  # the whole answer is here
                    self._answers_complete += 1
                    notify = self.model_acked
            if not self.model_acked and self._have.all():
                self.model_acked = notify = True
        self._last_global_reward = None if ack.global_reward == INT32_MIN else reward_from_fixed(ack.global_reward)
        self._event("ack", t_ns, ack, own)
        return notify

    def _first_answer(self, key: AckKey) -> bool:
        """Remember that update ``key`` has been answered (lock held; the oldest of
        :data:`SENT_MEMORY` are forgotten); True if this is its first answer."""
        if key in self._answered:
            return False
        self._answered[key] = 0
        if len(self._answered) > SENT_MEMORY:
            self._answered.popitem(last=False)
        return True

    def _on_refusal(self, ack: Ack, t_ns: int) -> bool:
        """A refusal (docs/protocol.md "Refusal"; lock held): counted by reason; the queue status it
        carries is read, but ``Δ̂`` is not restarted (it is no answer with the model). Of an own
        update: warned about once per reason, handed to the next :class:`PushResult`, and it ends a
        :meth:`wait_for_answer` (the answer is no). Of the own INIT, for a reason its repetitions
        cannot change: :meth:`init` raises :class:`ModelRefused`. Never triggers ``on_weights``."""
        reason = ack.refusal
        assert reason is not None
        self._refusals[reason] += 1
        self._tc.on_status(ack.status)
        own = self._sent.get(ack.seq) == ack.gen_ts
        if own:
            self._c["refusals_own"] += 1
            is_init = ack.seq == 0 and ack.gen_ts == self._init_gen_ts
            if is_init and reason in FATAL_INIT_REFUSALS:
                self._init_refusal = reason
            elif not is_init:
                self._refused_since_push.append(reason)
                if self._first_answer((ack.worker_id, ack.seq, ack.gen_ts)):  # the whole answer is this refusal
                    self._answers_complete += 1
            if reason not in self._warned_refusals:
                self._warned_refusals.add(reason)
                _log.warning("the PS at %s:%d refused %s (%s): %s", self.ps[0], self.ps[1],
                             "this client's INIT" if is_init else f"update {ack.seq}", reason, REFUSAL_CAUSES[reason])
        self._event("ack", t_ns, ack, own)
        return False

    def _receive_one(self) -> bool:
        """Receive one datagram (with the socket's current timeout or blocking mode) and handle it.
        False if none came (timeout, nothing queued) or the receive failed (counted in
        ``recv_errors`` unless the client is closing)."""
        try:
            data, ancdata, _flags, src = self._sock.recvmsg(RECV_BUF, ANC_SPACE)
        except (socket.timeout, BlockingIOError, InterruptedError):
            return False
        except OSError:
            if not self._closed.is_set():
                with self._lock:
                    self._c["recv_errors"] += 1
            return False
        n = dropped(ancdata)
        if n is not None:
            with self._lock:
                self._c["socket_drops"] = max(self._c["socket_drops"], n)
        self._on_datagram(data, time.time_ns(), src)
        return True

    def _receive_loop(self) -> None:
        """The receive thread: take datagrams until :meth:`close`, repeating the INIT when due. An
        exception while handling one (a bug) is logged and counted (``handling_errors``) and the
        thread goes on: a dead receive thread would leave the client deaf, silently."""
        while not self._closed.is_set():
            try:
                with self._lock:
                    self._retry_init(time.time_ns())
                self._receive_one()
            except Exception:
                with self._lock:
                    self._c["handling_errors"] += 1
                _log.exception("OlafClient receive thread: handling a datagram failed")

    def _pump(self, deadline_ns: int, done: Optional[Callable[[], bool]]) -> None:
        """``background=False``: receive ACKs (and repeat the INIT when due) until ``deadline_ns``,
        the stop event or ``done()``. Datagrams already queued are taken even when the deadline
        has passed."""
        while not self._stop.is_set():
            now = time.time_ns()
            with self._lock:
                self._retry_init(now)
            if done is not None and done():
                return
            left = deadline_ns - now
            if left <= 0:
                self._drain()
                return
            wait = min(left, 100_000_000)
            if self._init_raw is not None and not self.model_acked:
                wait = min(wait, max(self._next_init_ns - now, 0))
            self._sock.settimeout(max(wait, 1) / 1e9)
            self._receive_one()

    def _drain(self) -> None:
        """Take every datagram already queued on the socket, without waiting."""
        self._sock.setblocking(False)
        try:
            while self._receive_one():
                pass
        finally:
            self._sock.setblocking(True)

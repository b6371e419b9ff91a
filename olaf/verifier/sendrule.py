"""The worker's send rule (paper §5) as the verifier uses it: one truth for the
SMT model (:mod:`olaf.verifier.model`) and the executable replay
(:mod:`olaf.verifier.replay`).

Paper §5: with queue status ``(N, Q_max)`` from the last ACK and ``Δ̂`` the time
since that ACK, a worker sends every update if ``N ≤ Q_max``; otherwise with
probability ``P_s = min(Q_max/N + f(Δ̂), 1)``, ``f(Δ̂) = v·(Δ̂ − Δ̄_T)`` if
``Δ̂ > Δ̄_T`` else 0.

The verifier turns the probability into a classification of each send decision
(:class:`Kind`): decisions with ``P_s = 1`` must send; the others may skip,
subject to the run-length envelope of :func:`run_bounds` (docs/verifier.md,
"Send decisions").

Reading ``backoff`` (``Transmission.reading``, paper §6 "Δ̄_T … decides on the base
time to backoff"; :mod:`olaf.txcontrol`): a skipped draw starts a back-off; a
decision within it (:func:`in_backoff`) is of kind ``backoff`` and must skip. The
run-length envelope counts draws only: back-off decisions neither extend nor end a run.
"""

from __future__ import annotations

import enum
import math
from fractions import Fraction
from typing import Optional

from olaf import txcontrol
from olaf.constants import TxReading
from olaf.verifier.config import Transmission, VerifyConfig


class Kind(enum.Enum):
    """Class of one send decision. ``forced`` kinds have ``P_s = 1``."""

    UNCONGESTED = "uncongested"  # N <= Q_max
    ALWAYS = "always"            # transmission control disabled (model "always")
    STALE = "stale"              # Δ̂ >= threshold: f(Δ̂) lifts P_s to 1
    BOOSTED = "boosted"          # Δ̄_T < Δ̂ < threshold: Q_max/N < P_s < 1
    BASE = "base"                # Δ̂ <= Δ̄_T: P_s = Q_max/N
    BACKOFF = "backoff"          # reading backoff, within the back-off of a skipped draw: P_s = 0

    @property
    def forced(self) -> bool:
        """The decision must send (``P_s = 1``)."""
        return self in (Kind.UNCONGESTED, Kind.ALWAYS, Kind.STALE)

    @property
    def forced_skip(self) -> bool:
        """The decision must skip (a back-off)."""
        return self is Kind.BACKOFF


def in_backoff(t_ms: int, skip_ms: Optional[int], last_ack_ms: int, delta_t_ms: int) -> bool:
    """Reading ``backoff``: a decision at ``t_ms`` is within the back-off of the last skipped draw at
    ``skip_ms`` (None: none yet) — no ACK received after the skip (``last_ack_ms ≤ skip_ms``; an ACK at
    the skip's own instant is received before it) and ``t − skip < Δ̄_T``. The worker's rule
    (:meth:`olaf.txcontrol.TransmissionControl.in_backoff`) in integer ms."""
    return skip_ms is not None and last_ack_ms <= skip_ms and t_ms - skip_ms < delta_t_ms


def base_probability(q_max: int, n: int) -> Fraction:
    """``min(Q_max/N, 1)`` (paper §5), exact."""
    if q_max < 1 or n < 1:
        raise ValueError(f"need q_max >= 1 and n >= 1, got q_max={q_max}, n={n}")
    return min(Fraction(q_max, n), Fraction(1))


def send_probability(q_max: int, n: int, dhat_ms: int, delta_t_ms: int, v: Fraction) -> Fraction:
    """``P_s`` of paper §5 for status ``(N, Q_max)`` and ``Δ̂`` ms since the last ACK (``v`` in 1/ms).

    The worker's own rule (:func:`olaf.txcontrol.send_probability`) evaluated
    exactly in Fractions.
    """
    base_probability(q_max, n)  # validates q_max, n
    # txcontrol's rule is plain arithmetic: given Fractions it computes exactly
    return Fraction(txcontrol.send_probability(n, Fraction(q_max), Fraction(dhat_ms),  # type: ignore[arg-type]
                                               Fraction(delta_t_ms), v * 1000))  # type: ignore[arg-type]


def stale_threshold_ms(q_max: int, n: int, delta_t_ms: int, v: Fraction) -> Optional[int]:
    """Smallest integer ``Δ̂`` (ms) with ``P_s = 1``; None if ``P_s`` never reaches 1 (v = 0).

    From paper §5: ``Q_max/N + v·(Δ̂ − Δ̄_T) ≥ 1`` and ``Δ̂ > Δ̄_T`` give
    ``Δ̂ ≥ Δ̄_T + max(1, ⌈(1 − Q_max/N)/v⌉)``; 0 when uncongested.
    """
    p = base_probability(q_max, n)
    if p == 1:
        return 0
    if v == 0:
        return None
    return delta_t_ms + max(1, math.ceil((1 - p) / v))


def classify(dhat_ms: int, *, congested: bool, delta_t_ms: int, stale_ms: Optional[int]) -> Kind:
    """Kind of a decision taken ``dhat_ms`` after the worker's last ACK.

    The verifier's clusters receive a first ACK at t = 0 (the PS's initial
    model, carrying the status), so ``Δ̂`` is always defined.
    """
    if not congested:
        return Kind.UNCONGESTED
    if stale_ms is not None and dhat_ms >= stale_ms:
        return Kind.STALE
    if dhat_ms > delta_t_ms:
        return Kind.BOOSTED
    return Kind.BASE


def run_bounds(p: Fraction, tr: Transmission) -> tuple[Optional[int], Optional[int]]:
    """``(max_skip_run, max_send_run)`` for base probability ``p`` (None = unbounded).

    ``envelope``: the rounded-up mean run lengths of a Bernoulli(p) sequence,
    ``⌈(1−p)/p⌉`` skips and ``⌈p/(1−p)⌉`` sends at base probability, unless the
    config sets them; ``free``: no bound; ``always``: no skip at all (0, None).
    """
    if tr.model == "always" or p >= 1:
        return 0, None
    if tr.model == "free":
        return None, None
    if p <= 0:
        raise ValueError("base probability must be > 0")
    skip = tr.max_skip_run if tr.max_skip_run is not None else math.ceil((1 - p) / p)
    send = tr.max_send_run if tr.max_send_run is not None else math.ceil(p / (1 - p))
    return skip, send


class Rule:
    """The send rule of every cluster of a config: thresholds, run bounds, kinds.

    Attributes:
        active: transmission control acts (congested, ``N = F > Q_max``, and the
            model is not ``always``); otherwise every update is sent.
        backoff: ``active`` and the reading is ``backoff`` (skipped draws start back-offs).
        p_base: ``Q_max/N`` with ``N = F``.
        stale_ms: per cluster, :func:`stale_threshold_ms` (None: never).
        max_skip_run, max_send_run: :func:`run_bounds` (None: unbounded).
    """

    def __init__(self, cfg: VerifyConfig) -> None:
        self.cfg = cfg
        q, n = cfg.engine.q_max, cfg.num_clusters
        self.active = cfg.congested and cfg.transmission.model != "always"
        self.backoff = self.active and cfg.transmission.reading == TxReading.BACKOFF.label
        self.p_base = base_probability(q, n)
        self.stale_ms = [stale_threshold_ms(q, n, c.delta_t_ms, c.v) for c in cfg.clusters]
        self.max_skip_run, self.max_send_run = run_bounds(self.p_base, cfg.transmission)

    def kind(self, u: int, dhat_ms: int, backing_off: bool = False) -> Kind:
        """Kind of cluster ``u``'s decision ``dhat_ms`` after its last ACK; ``backing_off``: it falls
        within a back-off (:func:`in_backoff`; only acts under reading ``backoff``)."""
        if not self.cfg.congested:
            return Kind.UNCONGESTED
        if not self.active:
            return Kind.ALWAYS
        if self.backoff and backing_off:
            return Kind.BACKOFF
        return classify(dhat_ms, congested=True, delta_t_ms=self.cfg.clusters[u].delta_t_ms,
                        stale_ms=self.stale_ms[u])

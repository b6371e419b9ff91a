"""Worker-side transmission control (paper §5 "Worker-side Protocol").

The switch writes the queue status into every ACK (``docs/protocol.md`` §ACK):
``N`` = active clusters, ``Q_max`` = queue size in updates. With the latest
status and ``Δ̂`` = time since the worker's last ACK (of any worker of its
cluster: ACKs are multicast to the cluster; with K chunks, the first ACK slice
answering an update), a worker that has a new update (all its K chunks or none)

* sends it if transmission control is off, if it has no status yet, or if
  ``N ≤ Q_max`` (no congestion: "the workers transmit updates at will");
* otherwise sends it with probability
  ``P_s = min(Q_max / N + f(Δ̂), 1)``, ``f(Δ̂) = v · (Δ̂ − Δ̄_T)`` if
  ``Δ̂ > Δ̄_T`` else 0.

Two readings (``TxParams.reading``, :class:`olaf.constants.TxReading`):

* ``probabilistic`` (default) — §5 as written: every update of the congestion
  regime draws anew;
* ``backoff`` — §6's "Δ̄_T … decides on the base time to backoff": a skipped
  draw starts a back-off; while it lasts, an update of the congestion regime is
  not sent and draws nothing (reason ``backoff``). It ends at the worker's next
  ACK event (the one that restarts ``Δ̂``) or once ``Δ̄_T`` has elapsed since the
  skip (``t − t_skip ≥ Δ̄_T``); the first update after it draws again.

Units here: ``Δ̂`` and ``Δ̄_T`` in ms on the interface, ``v`` in 1/s (so
``f = v · (Δ̂ − Δ̄_T) / 1000``). The paper's two suggested slopes are
``v = 1/Δ̄_T`` (urgency; ``Δ̄_T = 400 ms`` → ``v = 2.5 /s``) and ``v = Δ̄_T``
(fairness, with ``Δ̄_T`` read in seconds: ``v = 0.4 /s``).

The parameters are :class:`olaf.plan.tx.TxParams`. A worker that does not send keeps training; its next update subsumes the
skipped one (:class:`olaf.hosts.task.Experience`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from olaf.constants import TxReading, TxReason
from olaf.plan.tx import TxParams
from olaf.wire import QueueStatus


def staleness_boost(delta_hat_ms: float, delta_t_ms: float, v_per_s: float) -> float:
    """``f(Δ̂) = v·(Δ̂ − Δ̄_T)`` if ``Δ̂ > Δ̄_T`` else 0 (paper §5); ms in, ``v`` in 1/s.

    Exact when the arguments are :class:`fractions.Fraction` (the verifier uses it so).
    """
    excess_ms = delta_hat_ms - delta_t_ms
    return v_per_s * excess_ms / 1000 if excess_ms > 0 else 0


def send_probability(
    active_clusters: int, queue_size: int, delta_hat_ms: float, delta_t_ms: float, v_per_s: float
) -> float:
    """``P_s`` of paper §5 for status ``(N, Q_max)`` and ``Δ̂`` (ms).

    Returns 1 in the no-congestion regime ``N ≤ Q_max``, else
    ``min(Q_max/N + f(Δ̂), 1)``. This is the one implementation of the rule:
    the worker calls it with floats, the SMT verifier
    (:mod:`olaf.verifier.sendrule`) with Fractions for exact arithmetic.

    Raises:
        ValueError: ``queue_size`` < 1 (an unknown ``Q_max`` gives no probability).
    """
    if queue_size < 1:
        raise ValueError(f"Q_max must be >= 1 to compute P_s, got {queue_size}")
    if active_clusters <= queue_size:
        return 1
    return min(queue_size / active_clusters + staleness_boost(delta_hat_ms, delta_t_ms, v_per_s), 1)


@dataclass(frozen=True)
class Decision:
    """Outcome of one transmission decision.

    ``reason`` is a :class:`olaf.constants.TxReason` label: ``tc_off``, ``no_status`` (no ACK with a
    status yet), ``no_qmax`` (status without a usable ``Q_max`` and no override),
    ``uncongested`` (``N ≤ Q_max``), ``draw`` (congested: sent iff ``draw < p_send``) or
    ``backoff`` (congested, reading ``backoff``, within the back-off after a skip: not sent,
    ``p_send`` 0, no draw). ``delta_hat_ms`` is None before the first ACK.
    """

    send: bool
    reason: str
    p_send: float
    draw: Optional[float] = None
    delta_hat_ms: Optional[float] = None
    active_clusters: Optional[int] = None
    queue_size: Optional[int] = None


class TransmissionControl:
    """Per-worker state of paper §5: the latest queue status and the last ACK time.

    ``rng`` supplies one uniform draw (its ``random()``) per ``draw`` decision only (none in a
    back-off), so a seeded worker makes reproducible decisions for a given ACK history.
    """

    def __init__(self, params: TxParams, rng: np.random.Generator) -> None:
        self.params = params
        self._rng = rng
        self._backoff = TxReading.from_label(params.reading) is TxReading.BACKOFF
        self._status: Optional[QueueStatus] = None
        self._last_ack_ns: Optional[int] = None
        self._skip_ns: Optional[int] = None  # reading backoff: the skip that started the back-off

    def in_backoff(self, t_ns: int) -> bool:
        """Reading ``backoff``: ``t_ns`` is within the back-off of the last skipped draw (no ACK event
        since it, less than ``Δ̄_T`` after it). Always False under ``probabilistic``."""
        return self._skip_ns is not None and (t_ns - self._skip_ns) / 1e6 < self.params.delta_t_ms

    def on_ack(self, t_ns: int, status: Optional[QueueStatus]) -> None:
        """Record the ACK event at ``t_ns`` (restarts ``Δ̂``); a status (STATUS_VALID) replaces the last one.

        With a model in K chunks the event is the **first** ACK slice answering an update (the
        worker calls this once per answered update, :meth:`on_status` for its other slices;
        docs/hosts.md "Chunks at the worker")."""
        self._last_ack_ns = t_ns
        self._skip_ns = None
        self.on_status(status)

    def on_status(self, status: Optional[QueueStatus]) -> None:
        """A status (STATUS_VALID) from an ACK slice that is not an ACK event replaces the last one;
        ``Δ̂`` is unchanged."""
        if status is not None:
            self._status = status

    def decide(self, t_ns: int) -> Decision:
        """Whether to send the update generated at ``t_ns`` (see module docstring)."""
        dh = None if self._last_ack_ns is None else (t_ns - self._last_ack_ns) / 1e6
        st = self._status
        if not self.params.enabled:
            return Decision(True, TxReason.TC_OFF.label, 1.0, delta_hat_ms=dh)
        if st is None or dh is None:  # no ACK event yet: a status can come first with a refusal
            return Decision(True, TxReason.NO_STATUS.label, 1.0, delta_hat_ms=dh)
        q_max = self.params.q_max if self.params.q_max is not None else st.queue_size
        n = st.active_clusters
        if q_max < 1:
            return Decision(True, TxReason.NO_QMAX.label, 1.0, delta_hat_ms=dh, active_clusters=n, queue_size=q_max)
        if n <= q_max:
            return Decision(True, TxReason.UNCONGESTED.label, 1.0, delta_hat_ms=dh, active_clusters=n,
                            queue_size=q_max)
        if self.in_backoff(t_ns):
            return Decision(False, TxReason.BACKOFF.label, 0.0, delta_hat_ms=dh, active_clusters=n, queue_size=q_max)
        p = send_probability(n, q_max, dh, self.params.delta_t_ms, self.params.v_per_s)
        u = float(self._rng.random())
        if self._backoff and not u < p:
            self._skip_ns = t_ns
        return Decision(u < p, TxReason.DRAW.label, p, draw=u, delta_hat_ms=dh, active_clusters=n, queue_size=q_max)

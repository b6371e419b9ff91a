"""Transmission-control parameters of a worker (paper §5): the one definition, used by the
worker (:mod:`olaf.txcontrol`), every backend, the run plan and the controller's
admission model.

Defaults: ``Δ̄_T = 400 ms`` and ``v = 1/Δ̄_T = 2.5 /s`` (paper §5's urgency slope, the
values of §8.3).
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import ConfigDict, Field

from olaf.configfile import FileModel
from olaf.constants import TxReading

DEFAULT_DELTA_T_MS = 400.0
"""Timer threshold ``Δ̄_T``, ms (paper §8.3)."""
DEFAULT_V_PER_S = 2.5
"""Slope ``v`` of ``f(Δ̂) = v·(Δ̂ − Δ̄_T)``, 1/s (paper §5: ``v = 1/Δ̄_T``)."""
READINGS: tuple[str, ...] = tuple(m.label for m in TxReading)
"""Labels of :class:`olaf.constants.TxReading`: ``probabilistic`` (paper §5 as written, the default)
and ``backoff`` (paper §6's "base time to backoff")."""
ReadingLabel = Literal[READINGS]  # type: ignore[valid-type]


class TxParams(FileModel):
    """Transmission-control parameters of one worker (immutable).

    Attributes:
        enabled: apply paper §5; when False every update is sent.
        delta_t_ms: timer threshold ``Δ̄_T`` in ms (> 0).
        v_per_s: slope ``v`` of ``f`` in 1/s (≥ 0).
        q_max: if set, ``Q_max`` to use instead of the one in the ACK status (segments, ≥ 1).
        reading: ``probabilistic`` — paper §5: in the congestion regime each update is sent with
            probability ``P_s``; ``backoff`` — paper §6 ("Δ̄_T … decides on the base time to
            backoff"): the same draw, and a skipped update starts a back-off in which the worker
            sends nothing until its next ACK or until ``Δ̄_T`` has elapsed since the skip
            (:class:`olaf.constants.TxReading`).

    Raises:
        pydantic.ValidationError (a ValueError): a value out of range, naming the field.
    """

    model_config = ConfigDict(allow_inf_nan=False)

    enabled: bool = Field(default=False, description="apply paper §5 (off: every update is sent)")
    delta_t_ms: float = Field(default=DEFAULT_DELTA_T_MS, gt=0, description="timer threshold Δ̄_T, ms")
    v_per_s: float = Field(default=DEFAULT_V_PER_S, ge=0, description="slope v of f, 1/s")
    q_max: Optional[int] = Field(default=None, ge=1, description="Q_max instead of the ACK's (segments)")
    reading: ReadingLabel = Field(default=TxReading.PROBABILISTIC.label,  # type: ignore[valid-type]
                                  description="probabilistic (paper §5: P_s per update) or backoff (paper §6: a "
                                  "skip silences the worker until its next ACK or Δ̄_T)")

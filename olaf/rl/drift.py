"""Drift control: a worker scales the update it sends so that the global policy moves, between
two of its iterations, about as far as its data can speak for.

A worker's PPO update is computed from a rollout of the global policy it adopted, π_b. By the
time the PS applies it, N − 1 other workers' updates have moved the global model to π_now (an
asynchronous job's staleness, ``docs/training.md`` "Staleness"). The next time the worker adopts
the global weights it measures how far the model moved from its previous rollout's policy:
``kl_adopted`` = KL(π_b ‖ π_adopted) over that rollout's states
(:meth:`olaf.rl.rollout.RolloutCollector.kl_from_rollout_policy`). Measured with 27 workers on
LunarLander at the PS's γ = 1 it was about 1.3 nats — a hundred times a PPO update's trust region —
and the job collapsed after learning fast.

The worker keeps a scale ``s`` ∈ [:data:`SCALE_MIN`, 1] on the update it sends (``s·d``; its own
weights take the same step) and adapts it after each adoption as the adaptive-learning-rate rule of
PPO implementations (rl_games' and IsaacGymEnvs' ``schedule: adaptive``; PPO's adaptive KL
coefficient, Schulman et al. 2017 §4, uses the same thresholds): ``s ← s / 1.5`` when the drift
exceeds twice the target, ``s ← s · 1.5`` when it is below half of it. Every worker sees about the
same drift, so together they hold the global policy's motion near the target: the closest
substitute here for Stellaris' cross-learner truncation of importance ratios (Eq. 2), which needs
every learner's policy in one place.

This module is small arithmetic on purpose; the measurement is the rollout collector's.
"""

from __future__ import annotations

import math

SCALE_MIN = 1e-3
"""The smallest scale: an update is never dropped altogether."""
SCALE_STEP = 1.5
"""Factor by which the scale changes at a time."""
BAND = 2.0
"""The scale changes when the drift leaves [target / BAND, target · BAND]."""


def adapt_scale(scale: float, drift: float, target: float) -> float:
    """The next scale after a measured ``drift`` (nats) against ``target`` (nats, > 0): ``scale``
    divided by :data:`SCALE_STEP` above ``BAND · target``, multiplied by it below ``target / BAND``,
    else unchanged; clipped to [:data:`SCALE_MIN`, 1].

    Raises:
        ValueError: ``target`` ≤ 0, or ``drift`` negative or not finite.
    """
    if not target > 0:
        raise ValueError(f"target={target!r} must be > 0 nats")
    if not (drift >= 0 and math.isfinite(drift)):
        raise ValueError(f"drift={drift!r} must be a finite KL >= 0")
    if drift > BAND * target:
        scale /= SCALE_STEP
    elif drift < target / BAND:
        scale *= SCALE_STEP
    return min(1.0, max(SCALE_MIN, scale))

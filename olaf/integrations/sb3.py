"""Stable-Baselines3 as an Olaf worker: :class:`OlafCallback`, one argument of ``model.learn``.

    from olaf.integrations.sb3 import OlafCallback
    model = PPO("MlpPolicy", "CartPole-v1")
    model.learn(total_timesteps=100_000, callback=OlafCallback(ps="10.0.0.1", bind="10.0.0.2"))

What the callback does, on SB3's own hooks (``BaseCallback``; SB3's ``learn`` alternates
``collect_rollouts`` and ``train``):

* **training start**: opens an :class:`~olaf.client.OlafClient` for the policy's P parameters
  (unless one is given), sends the INIT with the policy's weights and waits for the global model
  (``init_wait_s``; :class:`~olaf.client.ModelTimeout` names the PS and the likely causes), then
  loads the global model into the policy: every worker starts from the same weights.
* **every step**: counts the episodes that ended (the ``episode`` entry SB3's ``Monitor``
  wrapper puts in ``infos``) and their returns.
* **rollout start** after a ``train``: the update is what that ``train`` changed, the policy's
  parameters now minus at the previous adoption (paper §2.1's update direction: ``olaf worker``'s
  ``--update delta``); it is pushed with the mean return of the episodes that ended since the
  previous push and ``samples`` = the rollout's ``n_steps · n_envs``. Then the callback waits at
  most ``ack_wait_s`` for the PS's answer (on a fast network the next rollout starts from the
  global model with this update in it) and adopts what arrived — between iterations only,
  never during one (paper §8.2). The optimizer's state (Adam's moments) stays the worker's own.
* **training end**: pushes the last ``train``'s update, waits for its answer, and closes the
  client it opened.

Scalars go to SB3's logger under ``olaf/`` (``sent``, ``skipped``, ``refusals_own``, ``adopted_slices``,
``aom_ms``, ``global_reward``), so TensorBoard shows them beside SB3's own when the model has a
``tensorboard_log``.

Not shared through the PS: a ``VecNormalize`` wrapper's running observation and return
statistics (each worker keeps its own; the global policy then sees observations normalised by
each worker's statistics, which converge to the same values for workers of one environment);
SB3's learning-rate and clip-range schedules (each worker's ``progress_remaining`` is its own).

Torch threads: ``torch_threads`` (default 1) is set at training start: several workers on one
machine each using every core slow each other down (three workers over loopback took 300 s
for 40 iterations with torch's default against 40 s for 60 with one thread each); None leaves
torch's setting alone.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from olaf.integrations import missing_framework

try:
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
except ImportError as _e:  # the framework is an extra: say which
    raise missing_framework(__name__, _e) from _e

from olaf.client import OlafClient
from olaf.constants import MTU
from olaf.integrations._worker import NO_PS, ModelParams, launched, open_client
from olaf.plan.tx import TxParams
from olaf.wire import ACK_PORT

__all__ = ["OlafCallback"]

INIT_WAIT_S = 60.0
"""Default ``init_wait_s``: how long the first ``learn`` waits for the global model, s."""
ACK_WAIT_S = 0.5
"""Default ``ack_wait_s``: how long each iteration waits for its update's answer, s (the PPO job's
``--ack-wait-ms`` is 100 ms; an SB3 worker's iteration is seconds long, so half a second costs little)."""


class OlafCallback(BaseCallback):
    """Train a Stable-Baselines3 on-policy model (PPO, A2C) as an Olaf worker (module docstring).

    Args:
        ps: the parameter server, ``"ip[:port]"`` or ``(ip, port)`` (ignored with ``client``); None in a
            script started by ``olaf launch``: the PS, this worker's address, ids and MTU come from the
            launch (:meth:`olaf.client.OlafClient.from_env`; ``bind``, ``mtu`` and the ids are then ignored).
        bind: this worker's address (ACKs arrive on its port; default ``0.0.0.0:50101``).
        mtu: the links' MTU, bytes: the update travels in K chunks of it (the PS needs the same
            ``--num-params P --mtu MTU``); None: one datagram (loopback or jumbo frames only).
        tx: transmission control (paper §5; default off: every update is sent).
        cluster_id, worker_id: header values (an Olaf switch stamps its own).
        client: an open :class:`~olaf.client.OlafClient` for the policy's P parameters instead of
            one the callback opens (and closes at training end).
        init_wait_s: seconds the first ``learn`` waits for the global model (> 0).
        ack_wait_s: seconds each iteration waits for its update's answer (≥ 0).
        torch_threads: torch's intra-op threads, set at training start (None: unchanged).
        verbose: SB3's verbosity (1: a line per push).

    Raises:
        ValueError: a bad argument, naming it; at training start, a ``client`` whose P is not the
            policy's, or a model that is not on-policy (no rollout buffer).
        olaf.client.ModelTimeout: no global model within ``init_wait_s`` (the message names the
            PS, P, K, the MTU and what to check).
        OSError: ``bind`` cannot be bound (the message names the address and the likely cause).
    """

    def __init__(self, ps: Any = None, *, bind: Any = ("0.0.0.0", ACK_PORT), mtu: Optional[int] = MTU,
                 tx: Optional[TxParams] = None, cluster_id: Optional[int] = None, worker_id: Optional[int] = None,
                 client: Optional[OlafClient] = None, init_wait_s: float = INIT_WAIT_S, ack_wait_s: float = ACK_WAIT_S,
                 torch_threads: Optional[int] = 1, verbose: int = 0) -> None:
        super().__init__(verbose)
        if ps is None and client is None and not launched():
            raise ValueError(NO_PS)
        if not 0 < init_wait_s < float("inf"):
            raise ValueError(f"init_wait_s={init_wait_s!r} must be > 0 seconds")
        if not 0 <= ack_wait_s < float("inf"):
            raise ValueError(f"ack_wait_s={ack_wait_s!r} must be >= 0 seconds")
        if torch_threads is not None and (not isinstance(torch_threads, int) or torch_threads < 1):
            raise ValueError(f"torch_threads={torch_threads!r} must be a positive integer (or None: torch's own)")
        self._client_args = dict(ps=ps, bind=bind, mtu=mtu, tx=tx, cluster_id=cluster_id, worker_id=worker_id)
        self.client: Optional[OlafClient] = client
        self._owns_client = client is None
        self.init_wait_s, self.ack_wait_s, self.torch_threads = float(init_wait_s), float(ack_wait_s), torch_threads
        self._model: Optional[ModelParams] = None
        self._updates_at_start = 0  # the model's _n_updates then: a train since changes it
        self._returns: list[float] = []  # returns of the episodes that ended since the last push
        self.pushes = 0

    @property
    def adopted_slices(self) -> int:
        """ACK slices adopted into the policy so far."""
        return 0 if self._model is None else self._model.adopted_slices

    # -- SB3's hooks ----------------------------------------------------------------------------
    def _on_training_start(self) -> None:
        if getattr(self.model, "rollout_buffer", None) is None:
            raise ValueError(f"{type(self.model).__name__} is not an on-policy model (no rollout buffer): "
                             "OlafCallback pushes after each rollout's train (PPO, A2C)")
        if self.torch_threads is not None:
            torch.set_num_threads(self.torch_threads)
        model = self._model = ModelParams(self.model.policy.parameters())
        args = {k: v for k, v in self._client_args.items() if k != "ps"}
        self.client, owns = open_client(model.num_params, self._client_args["ps"], self.client, **args)
        self._owns_client = owns
        if not self.client.model_acked:  # a later learn() on the same callback keeps its model
            self.client.init(model.vector(), wait_s=self.init_wait_s)
        self._adopt()

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", ()):
            ep = info.get("episode") if isinstance(info, dict) else None
            if ep is not None:
                self._returns.append(float(ep["r"]))
        return True

    def _on_rollout_start(self) -> None:
        if self._trained():
            self._push()
            self._adopt()

    def _on_training_end(self) -> None:
        try:
            if self._trained():
                self._push()
                self._adopt()
        finally:
            if self._owns_client and self.client is not None:
                self.client.close()
                self.client = None

    # -- the iteration's update -----------------------------------------------------------------
    def _trained(self) -> bool:
        return (self._model is not None and self._model.adopted
                and getattr(self.model, "_n_updates", 0) != self._updates_at_start)

    def _push(self) -> None:
        assert self.client is not None and self._model is not None
        direction = self._model.change()
        returns, self._returns = self._returns, []
        samples = int(self.model.rollout_buffer.buffer_size * self.model.n_envs)  # type: ignore[attr-defined]
        r = self.client.push(direction, float(np.mean(returns)) if returns else None, episodes=len(returns),
                             samples=samples)
        self.pushes += 1
        if r.sent and self.ack_wait_s > 0:
            self.client.wait_for_answer(self.ack_wait_s)
        st = self.client.stats()
        self.logger.record("olaf/sent", st.sent)
        self.logger.record("olaf/skipped", st.skipped)
        if st.aom_ms is not None:
            self.logger.record("olaf/aom_ms", st.aom_ms)
        if st.last_global_reward is not None:
            self.logger.record("olaf/global_reward", st.last_global_reward)
        self.logger.record("olaf/refusals_own", st.refusals_own)  # docs/protocol.md "Refusal"
        if self.verbose:
            print(f"olaf: push {self.pushes}: {'sent seq ' + str(r.seq) if r.sent else 'skipped (' + r.reason + ')'}, "
                  f"{len(returns)} episodes")

    def _adopt(self) -> None:
        """Load the global model's slices that arrived since the last adoption into the policy,
        and remember the parameters the next update is measured from."""
        assert self.client is not None and self._model is not None
        if self._model.adopt(self.client):
            self.logger.record("olaf/adopted_slices", self.adopted_slices)
        self._updates_at_start = getattr(self.model, "_n_updates", 0)

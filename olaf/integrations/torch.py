"""PyTorch (CleanRL and any hand-written loop) as an Olaf worker: :class:`DistributedOptimizer`,
a wrapper around any ``torch.optim`` optimizer in Horovod's shape
(``hvd.DistributedOptimizer(opt)``).

    from olaf.integrations.torch import DistributedOptimizer
    optimizer = DistributedOptimizer(optim.Adam(agent.parameters(), lr=2.5e-4), agent)
    for iteration in range(num_iterations):
        optimizer.sync()                      # push the last iteration's change, adopt the global model
        ... collect a rollout; optimizer.episode(return) for each episode that ended ...
        ... epochs of minibatches: loss.backward(); optimizer.step() ...
    optimizer.close()                         # push the last change, close the client

What it does:

* **construction**: opens an :class:`~olaf.client.OlafClient` for the model's P parameters
  (``ps``/``bind``, or the ``olaf launch`` environment: :meth:`~olaf.client.OlafClient.from_env`;
  or a given ``client``), sends the INIT with the current parameters, waits for the global model
  (``init_wait_s``; :class:`~olaf.client.ModelTimeout` names the PS and what to check) and loads
  it: every worker starts from the same weights. Torch's intra-op threads are set to
  ``torch_threads`` (1: several workers on one machine must not each take every core).
* :meth:`step`: the wrapped optimizer's step; with ``push_every`` = n, every n-th step also
  pushes and adopts (:meth:`sync`) — off by default: an RL iteration's update is what all its
  minibatch steps did together, pushed once per rollout.
* :meth:`sync` (call it between iterations, never inside one: paper §8.2): pushes what the
  parameters changed since the last adoption (the update direction: ``olaf worker``'s ``--update
  delta``) with the mean return of the episodes reported since the last push and ``samples``;
  waits at most ``ack_wait_s`` for the PS's answer; loads the slices of the global model that
  arrived. Nothing is pushed before the first optimizer step. The wrapped optimizer's state
  (Adam's moments) stays this worker's own.
* :meth:`episode`: reports one finished episode's return (the update's reward, paper §2.1).

The wrapper is itself a ``torch.optim.Optimizer`` to the caller where it matters: ``zero_grad``,
``param_groups`` (a learning-rate schedule that sets ``param_groups[i]["lr"]`` works),
``state_dict``/``load_state_dict`` go to the wrapped optimizer.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

import numpy as np

from olaf.integrations import missing_framework

try:
    import torch
except ImportError as _e:  # the framework is an extra: say which
    raise missing_framework(__name__, _e) from _e

from olaf.client import OlafClient, PushResult
from olaf.constants import MTU
from olaf.integrations._worker import ModelParams, open_client
from olaf.plan.tx import TxParams
from olaf.wire import ACK_PORT

__all__ = ["DistributedOptimizer"]

INIT_WAIT_S = 60.0
"""Default ``init_wait_s``, s."""
ACK_WAIT_S = 0.5
"""Default ``ack_wait_s``, s."""


class DistributedOptimizer:
    """``optimizer`` of ``model``'s parameters, as an Olaf worker (module docstring).

    Args:
        optimizer: any ``torch.optim.Optimizer`` over (a superset of) ``model``'s parameters.
        model: the ``torch.nn.Module`` (or an iterable of its parameters) whose flat parameter
            vector travels to the PS: P elements.
        ps, bind, mtu, tx, cluster_id, worker_id: the :class:`~olaf.client.OlafClient`'s; ``ps``
            None in a script started by ``olaf launch`` (its environment has them).
        client: an open client for P parameters instead (not closed by :meth:`close`).
        push_every: also :meth:`sync` every this many optimizer steps (None: only when called).
        samples_per_push: the ``samples`` of each push (e.g. the rollout's environment steps;
            ≥ 1): its weight when the client folds skipped pushes.
        init_wait_s, ack_wait_s: seconds to wait for the global model at start, for an answer
            after each push.
        torch_threads: torch's intra-op threads (None: unchanged).

    Raises:
        ValueError: a bad argument (named), or a ``client`` of another P.
        olaf.client.ModelTimeout: no global model within ``init_wait_s``.
        olaf.launchenv.LaunchEnvError: ``ps`` None and not started by ``olaf launch``.
        OSError: ``bind`` cannot be bound (the message names it).
    """

    def __init__(self, optimizer: torch.optim.Optimizer, model: Union[torch.nn.Module, Iterable[torch.Tensor]], *,
                 ps: Any = None, bind: Any = ("0.0.0.0", ACK_PORT), mtu: Optional[int] = MTU,
                 tx: Optional[TxParams] = None, cluster_id: Optional[int] = None, worker_id: Optional[int] = None,
                 client: Optional[OlafClient] = None, push_every: Optional[int] = None, samples_per_push: int = 1,
                 init_wait_s: float = INIT_WAIT_S, ack_wait_s: float = ACK_WAIT_S,
                 torch_threads: Optional[int] = 1) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise ValueError(f"optimizer={optimizer!r} must be a torch.optim.Optimizer")
        if push_every is not None and (not isinstance(push_every, int) or push_every < 1):
            raise ValueError(f"push_every={push_every!r} must be a positive number of optimizer steps (or None)")
        if not isinstance(samples_per_push, int) or samples_per_push < 1:
            raise ValueError(f"samples_per_push={samples_per_push!r} must be a positive integer")
        if not 0 < init_wait_s < float("inf") or not 0 <= ack_wait_s < float("inf"):
            raise ValueError(f"init_wait_s={init_wait_s!r} must be > 0 and ack_wait_s={ack_wait_s!r} >= 0 seconds")
        if torch_threads is not None:
            if not isinstance(torch_threads, int) or torch_threads < 1:
                raise ValueError(f"torch_threads={torch_threads!r} must be a positive integer (or None)")
            torch.set_num_threads(torch_threads)
        self.optimizer = optimizer
        self._model = ModelParams(model.parameters() if isinstance(model, torch.nn.Module) else model)
        owned = {id(p) for g in optimizer.param_groups for p in g["params"]}
        if any(id(p) not in owned for p in self._model.params):
            raise ValueError("the optimizer does not update every parameter of model: wrap the optimizer of "
                             "model.parameters()")
        self.client, self._owns_client = open_client(self._model.num_params, ps, client, bind=bind, mtu=mtu, tx=tx,
                                                     cluster_id=cluster_id, worker_id=worker_id)
        self.push_every, self.samples_per_push = push_every, samples_per_push
        self.ack_wait_s = float(ack_wait_s)
        self._returns: list[float] = []
        self._steps = 0  # optimizer steps since the last sync
        self.pushes = 0
        self.last_push: Optional[PushResult] = None
        self._closed = False
        if not self.client.model_acked:
            self.client.init(self._model.vector(), wait_s=init_wait_s)
        self._adopt()

    @property
    def adopted_slices(self) -> int:
        """ACK slices adopted into the model so far."""
        return self._model.adopted_slices

    # -- torch.optim.Optimizer's face -----------------------------------------------------------
    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure: Any = None) -> Any:
        """The wrapped optimizer's step; every ``push_every`` steps also :meth:`sync`."""
        loss = self.optimizer.step(closure)
        self._steps += 1
        if self.push_every is not None and self._steps >= self.push_every:
            self.sync()
        return loss

    def state_dict(self) -> dict[str, Any]:
        return self.optimizer.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state)

    # -- Olaf -----------------------------------------------------------------------------------
    def episode(self, episode_return: float) -> None:
        """Report the return of one episode that ended (the next push's reward is their mean)."""
        r = float(episode_return)
        if not np.isfinite(r):
            raise ValueError(f"episode_return={episode_return!r} must be finite")
        self._returns.append(r)

    def sync(self, samples: Optional[int] = None) -> Optional[PushResult]:
        """Between iterations: push what the optimizer changed since the last adoption (if it
        stepped), wait at most ``ack_wait_s`` for the answer, adopt what arrived. Returns the
        push's result (None: no step since the last sync).

        Raises:
            ValueError: ``samples`` < 1.
            RuntimeError: after :meth:`close`.
        """
        result = None
        if self._steps > 0:
            direction = self._model.change()
            returns, self._returns = self._returns, []
            n = self.samples_per_push if samples is None else samples
            result = self.client.push(direction, float(np.mean(returns)) if returns else None,
                                      episodes=len(returns), samples=n)
            self.pushes += 1
            self.last_push = result
            if result.sent and self.ack_wait_s > 0:
                self.client.wait_for_answer(self.ack_wait_s)
        self._adopt()
        return result

    def close(self) -> None:
        """Push the last iteration's change, then close the client this wrapper opened (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.sync()
        finally:
            if self._owns_client:
                self.client.close()

    def __enter__(self) -> DistributedOptimizer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _adopt(self) -> None:
        self._model.adopt(self.client)
        self._steps = 0

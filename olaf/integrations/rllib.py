"""RLlib as Olaf workers: :func:`with_olaf` turns Olaf on in an *existing* ``PPOConfig``.

    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=2).training(lr=3e-4)
    algo = with_olaf(config, ps="10.0.0.1", endpoints=["10.0.0.2", "10.0.0.3"]).build_algo()

Every setting of ``config`` is kept (environment, EnvRunners, training, RL module, …); the
result is an :class:`~olaf.rl.rllib.OlafPPOConfig`, whose remote EnvRunners are asynchronous
Olaf workers (:class:`~olaf.rl.rllib.OlafEnvRunner`: each learns on its own rollout, pushes the
update and adopts the global model between iterations) and whose Algorithm is
:class:`~olaf.rl.rllib.OlafPPO` (``docs/rllib.md``). The keywords are
:meth:`OlafPPOConfig.olaf <olaf.rl.rllib.OlafPPOConfig.olaf>`'s.

Which algorithms: PPO (and subclasses of ``PPOConfig``). An Olaf worker computes its own update
from its own on-policy rollout, which PPO's learner does per EnvRunner; off-policy algorithms
with a replay buffer (DQN, SAC) and IMPALA/APPO (a central learner on everybody's samples) have
no per-worker update to send, so they are refused by name.

Errors on the driver: ``config.validate()`` (which RLlib calls in ``build_algo``) checks the
Olaf side first — the PS set, an endpoint per EnvRunner, a minibatch that fits one EnvRunner's
rollout, and with ``network=`` the endpoints, the PS and the model size against the deployment —
so a misconfigured job fails where it was started, not in an EnvRunner's log.
"""

from __future__ import annotations

import copy
from typing import Any

from olaf.integrations import missing_framework

try:
    from ray.rllib.algorithms.ppo import PPOConfig
except ImportError as _e:  # the framework is an extra: say which
    raise missing_framework(__name__, _e) from _e

from olaf.rl.rllib import OlafEnvRunner, OlafPPO, OlafPPOConfig

__all__ = ["with_olaf"]

_NOT_COPIED = ("algo_class", "env_runner_cls", "_is_frozen")
"""What the Olaf config sets itself (its Algorithm and EnvRunner classes) and RLlib's freeze flag."""


def with_olaf(config: Any, **olaf: Any) -> OlafPPOConfig:
    """``config`` (an RLlib ``PPOConfig``; not changed) with Olaf turned on: a new
    :class:`~olaf.rl.rllib.OlafPPOConfig` with every setting of ``config`` and the Olaf side of
    ``olaf`` (``ps``, ``endpoints``, ``mtu``, ``tx``, ``ack_wait_s``, ``init_wait_s``, ``linger_s``,
    ``log_dir``, ``network``).

    Raises:
        TypeError: ``config`` is not a ``PPOConfig`` (the message says which algorithms work, and why).
        ValueError: an Olaf argument out of range, or an EnvRunner class that is not an
            :class:`~olaf.rl.rllib.OlafEnvRunner` (a custom one must subclass it).
    """
    if not isinstance(config, PPOConfig):
        raise TypeError(f"{type(config).__name__}: Olaf runs PPO (PPOConfig and its subclasses): an Olaf worker sends "
                        "the update it learned from its own on-policy rollout; off-policy algorithms (DQN, SAC) and "
                        "IMPALA/APPO learn centrally from everybody's samples and have no per-worker update")
    if isinstance(config, OlafPPOConfig):
        out = config.copy(copy_frozen=False)
    else:
        out = OlafPPOConfig()
        state = {k: copy.deepcopy(v) for k, v in vars(config).items() if k not in _NOT_COPIED}
        for k, v in state.items():
            setattr(out, k, v)
        runner = config.env_runner_cls
        if runner is not None and not (isinstance(runner, type) and issubclass(runner, OlafEnvRunner)):
            raise ValueError(f"env_runner_cls={runner!r}: Olaf's EnvRunners are OlafEnvRunner; make a custom "
                             "EnvRunner a subclass of olaf.rl.rllib.OlafEnvRunner")
        out.env_runner_cls = runner or OlafEnvRunner  # type: ignore[assignment]
        out.algo_class = OlafPPO
    return out.olaf(**olaf)

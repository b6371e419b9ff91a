"""Olaf in the training loops RL users already have, each a few lines for the user
(``docs/client.md``):

* :mod:`olaf.integrations.sb3` — Stable-Baselines3: ``model.learn(callback=OlafCallback(ps=...))``;
* :mod:`olaf.integrations.torch` — PyTorch and CleanRL: ``DistributedOptimizer(optimizer, model)``,
  Horovod's shape.

* :mod:`olaf.integrations.rllib` — RLlib: ``with_olaf(ppo_config, ps=..., endpoints=...)`` turns Olaf
  on in an existing ``PPOConfig`` (:class:`olaf.rl.rllib.OlafPPOConfig`, ``docs/rllib.md``).

Each module imports its framework; this package imports none, so ``import olaf.integrations``
works on the client install alone.
"""

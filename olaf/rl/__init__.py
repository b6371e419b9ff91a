"""Distributed PPO for Olaf's workers (paper §2.1, §8.2): the learner behind ``olaf worker --task ppo``.

One concern per module:

* :mod:`olaf.rl.config` — hyperparameters and the task specification (no torch);
* :mod:`olaf.rl.extra` — the ``train`` extra check (clear message and install command);
* :mod:`olaf.rl.envs` — Gymnasium environments (discrete actions), vectorised;
* :mod:`olaf.rl.network` — the shared-trunk actor-critic and its fit in a frame;
* :mod:`olaf.rl.rollout` — rollout collection and GAE;
* :mod:`olaf.rl.ppo` — the PPO loss;
* :mod:`olaf.rl.flat` — parameters/gradients as a flat vector (the wire's element order);
* :mod:`olaf.rl.learner` — one PPO iteration and the update direction it yields;
* :mod:`olaf.rl.task` — the learner as a worker task (:class:`olaf.hosts.learning.Task`).

Only :mod:`olaf.rl.config` and :mod:`olaf.rl.extra` import without the ``train``
extra; ``docs/training.md`` describes the algorithm and the measured results.
"""

"""Distributed PPO for Olaf's workers (paper §2.1, §8.2): the ``ppo`` task plug-in of ``olaf worker``
(registered in the task registry of :mod:`olaf.hosts.learning` by :func:`olaf.rl.plugin.ppo_task`;
the hosts never import this package).

One concern per module:

* :mod:`olaf.rl.extra` — the ``train`` extra check (clear message and install command);
* :mod:`olaf.rl.plugin` — the task registry's ``ppo`` entry;
* :mod:`olaf.rl.envs` — Gymnasium environments (discrete actions), vectorised;
* :mod:`olaf.rl.network` — the shared-trunk actor-critic and its fit in a frame;
* :mod:`olaf.rl.rollout` — rollout collection and GAE;
* :mod:`olaf.rl.ppo` — the PPO loss;
* :mod:`olaf.rl.flat` — parameters/gradients as a flat vector (the wire's element order);
* :mod:`olaf.rl.learner` — one PPO iteration and the update direction it yields;
* :mod:`olaf.rl.task` — the learner as a worker task (:class:`olaf.hosts.learning.Task`).

The hyper-parameters and the task specification are torch-free models of the shared layer
(:mod:`olaf.plan.workload`); only :mod:`olaf.rl.extra` imports here without the ``train``
extra; ``docs/training.md`` describes the algorithm and the measured results.
"""

"""Shared models of a run (the layer between the core and the components).

* :mod:`olaf.plan.workload` — what the workers run: the PPO task's hyper-parameters and the
  training job (torch-free, so a plan is written, read and validated on a base install).
"""

"""Training jobs (orchestration layer): ``olaf train`` (:mod:`olaf.training.cli`), a job's plan and
run (:mod:`olaf.training.job`) and the paper's training figures (:mod:`olaf.training.figures`).

Workers run the ``ppo`` task plug-in (:mod:`olaf.rl`); this package starts and watches them, it
does not learn.
"""

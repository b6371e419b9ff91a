"""Training jobs (components): a job's plan (:mod:`olaf.training.job`), the monitor that follows it
and the files it leaves (:mod:`olaf.training.monitor`), the evaluator of the global model, the
staleness and solve measurements. The runs themselves are orchestrated by :mod:`olaf.experiments`:
``olaf train`` (:mod:`olaf.experiments.train_cmd`) and the paper's training figures
(:mod:`olaf.experiments.train_figures`).

Workers run the ``ppo`` task plug-in (:mod:`olaf.rl`); this package starts and watches them, it
does not learn.
"""

"""Host programs: the worker (with transmission control) and the asynchronous PS.

* :mod:`olaf.hosts.worker` — ``olaf worker``: generates model updates of a
  learning task (:mod:`olaf.hosts.learning`: the numpy bandit of
  :mod:`olaf.hosts.task`, or PPO, :mod:`olaf.rl`) on a schedule
  (:mod:`olaf.hosts.schedule`), sends them as Olaf updates over UDP, receives
  ACKs and applies the transmission control of paper §5
  (:mod:`olaf.txcontrol`).
* :mod:`olaf.hosts.ps` — ``olaf ps``: the parameter server of paper §2.1; its
  update rule is :mod:`olaf.hosts.global_model`, its training modes (paper
  Fig. 2) :mod:`olaf.hosts.modes`.
* :mod:`olaf.hosts.runlog` — where both write their JSONL logs and JSON summaries
  (whose records are the models of :mod:`olaf.rundir.records`, read by
  :mod:`olaf.report`), the start file and the shutdown signals.

All times are ``CLOCK_REALTIME`` integers in ns (``time.time_ns()``), one clock
shared by the workers and the PS (Mininet hosts share the kernel's clock).
"""

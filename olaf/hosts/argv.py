"""Command lines of ``olaf worker`` / ``olaf ps`` built from their configuration objects.

A harness that starts hosts in other network namespaces (Mininet, :mod:`olaf.topologies`)
describes each host by its :class:`~olaf.hosts.worker.WorkerConfig` or
:class:`~olaf.hosts.ps.PsConfig` and gets the command line from here, so the flags are
spelled in one place beside the commands that parse them. ``tests/test_hosts_cli.py``
parses these command lines back with the real commands and requires the same object.
"""

from __future__ import annotations

from olaf.constants import ACK_PORT
from olaf.hosts.ps import PsConfig
from olaf.hosts.worker import WorkerConfig


def _opt(flag: str, value: object) -> list[str]:
    return [] if value is None else [flag, str(value)]


def worker_argv(cfg: WorkerConfig) -> list[str]:
    """Arguments of ``olaf worker`` (after the subcommand) that reproduce ``cfg`` (with ``--task ppo``
    the bandit's ``cfg.task`` is not carried: it must be the default).

    Raises:
        ValueError: a trace schedule without its file (``schedule.trace_path``: ``olaf worker --trace
            FILE`` reads it; :func:`olaf.hosts.schedule.write_trace`).
    """
    s = cfg.schedule
    if s.trace_ms is not None and s.trace_path is None:
        raise ValueError("a trace schedule goes to `olaf worker` as --trace FILE; write it to a file first "
                         "(olaf.hosts.schedule.write_trace) and set schedule.trace_path")
    t, tx = cfg.task, cfg.tx
    if cfg.task_kind == "ppo":
        task = _ppo_argv(cfg)
    else:
        task = ["--grads", str(t.num_weights), "--batch", str(t.batch), "--reward-scale", repr(t.reward_scale),
                "--sigma", repr(t.sigma), "--task-seed", str(t.task_seed), *_opt("--mtu", cfg.mtu)]
    return [
        "--ps", f"{cfg.ps_ip}:{cfg.ps_port}",
        "--bind", cfg.bind_ip if cfg.ack_port == ACK_PORT else f"{cfg.bind_ip}:{cfg.ack_port}",
        *(["--period-ms", repr(s.period_ms), "--jitter-ms", repr(s.jitter_ms), "--burst", str(s.burst)]
          if s.trace_ms is None else ["--trace", str(s.trace_path), "--trace-scale", repr(s.trace_scale)]),
        "--start-phase-ns", str(s.phase_ns),
        *_opt("--duration", s.duration_s), *_opt("--updates", s.max_updates),
        *_opt("--start-at-ns", cfg.start_at_ns), *_opt("--start-file", cfg.start_file),
        *task, "--seed", str(cfg.seed),
        "--ack-wait-ms", repr(cfg.ack_wait_ms),
        "--tc" if tx.enabled else "--no-tc", "--tc-delta-t-ms", repr(tx.delta_t_ms),
        "--tc-v-per-s", repr(tx.v_per_s), "--tc-reading", tx.reading, *_opt("--tc-q-max", tx.q_max),
        *_opt("--cluster-id", cfg.cluster_id), *_opt("--worker-id", cfg.worker_id),
        "--init-retry-ms", repr(cfg.init_retry_ms), "--linger-ms", repr(cfg.linger_ms),
        "--out-dir", str(cfg.out_dir), "--name", cfg.name,
    ]


def _ppo_argv(cfg: WorkerConfig) -> list[str]:
    """The ``--task ppo`` options of ``cfg.ppo`` (the bandit options are left out: ``olaf worker``
    refuses them with ``--task ppo``)."""
    spec, p = cfg.ppo, cfg.ppo.ppo
    return [
        "--task", "ppo", "--env", spec.env_id, "--hidden", ",".join(map(str, p.hidden)), "--update", spec.update,
        "--apply-locally" if spec.apply_locally else "--no-apply-locally", "--mtu", str(spec.mtu),
        "--ppo-n-steps", str(p.n_steps), "--ppo-n-envs", str(p.n_envs), "--ppo-epochs", str(p.n_epochs),
        "--ppo-batch", str(p.batch_size), "--ppo-lr", repr(p.lr), "--ppo-gamma", repr(p.gamma),
        "--ppo-gae-lambda", repr(p.gae_lambda), "--ppo-clip", repr(p.clip_range), "--ppo-ent-coef", repr(p.ent_coef),
        "--ppo-vf-coef", repr(p.vf_coef), "--ppo-max-grad-norm", repr(p.max_grad_norm),
        "--ppo-reward-scale", repr(p.reward_scale), "--arch", p.arch, "--learner", spec.learner,
        *_opt("--ppo-target-kl", None if p.target_kl is None else repr(p.target_kl)),
        *_opt("--ppo-target-drift", None if p.target_drift is None else repr(p.target_drift)),
    ]


def ps_argv(cfg: PsConfig) -> list[str]:
    """Arguments of ``olaf ps`` (after the subcommand) that reproduce ``cfg``."""
    m, t = cfg.modes, cfg.trust
    if t.max_abs_reward is None or t.gen_ts_slack_s is None:
        raise ValueError("`olaf ps` always checks rewards and gen_ts; give bounds (docs/hosts.md)")
    gate = [] if cfg.gate is None else ["--reward-gate" if cfg.gate else "--no-reward-gate"]
    return [
        "--bind", f"{cfg.bind_ip}:{cfg.port}", "--lr", repr(cfg.lr), "--step", cfg.step, *gate,
        *_opt("--lr-final", None if cfg.lr_final is None else repr(cfg.lr_final)),
        *_opt("--lr-decay-updates", cfg.lr_decay_updates),
        "--mode", m.mode.value, "--aggr-k", str(m.aggr_k), "--aggr-t-ms", repr(m.aggr_t_ms),
        *_opt("--sync-workers", m.sync_workers), "--round-timeout-ms", repr(m.round_timeout_ms),
        *_opt("--round-updates", m.round_updates), "--stellaris-decay", repr(m.stellaris_decay),
        "--beta-min", repr(m.beta_min), *_opt("--staleness-v", cfg.staleness_root),
        *(["--ack-each-worker"] if cfg.ack_each_worker else []), "--worker-ack-wait-ms", repr(cfg.worker_ack_wait_ms),
        *_opt("--duration", cfg.duration_s),
        "--out-dir", str(cfg.out_dir), "--name", cfg.name, "--flush-ms", repr(cfg.flush_s * 1000),
        "--rcvbuf", str(cfg.rcvbuf),
        *[a for ip in sorted(t.allowed_sources or ()) for a in ("--allow", ip)], *_opt("--init-from", t.init_from),
        *_opt("--max-abs-reward", None if t.max_abs_reward is None else repr(t.max_abs_reward)),
        *_opt("--gen-ts-slack-s", None if t.gen_ts_slack_s is None else repr(t.gen_ts_slack_s)),
        *_opt("--checkpoint-s", None if cfg.checkpoint_s is None else repr(cfg.checkpoint_s)),
        *_opt("--snapshot-s", None if cfg.snapshot_s is None else repr(cfg.snapshot_s)),
        *_opt("--resume", cfg.resume_from),
        *_opt("--num-params", cfg.num_params), "--mtu", str(cfg.mtu),
    ]

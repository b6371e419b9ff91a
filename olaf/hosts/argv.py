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
    """Arguments of ``olaf worker`` (after the subcommand) that reproduce ``cfg``.

    Raises:
        ValueError: a trace schedule (give it to ``olaf worker --trace FILE``), or a
            non-protocol ACK port (``olaf worker`` always listens on 50101).
    """
    s = cfg.schedule
    if s.trace_ms is not None:
        raise ValueError("a trace schedule goes to `olaf worker` as --trace FILE; write it to a file first")
    if cfg.ack_port != ACK_PORT:
        raise ValueError(f"ack_port={cfg.ack_port}: `olaf worker` listens on the protocol's port {ACK_PORT}")
    t, tx = cfg.task, cfg.tx
    return [
        "--ps", f"{cfg.ps_ip}:{cfg.ps_port}", "--bind", cfg.bind_ip,
        "--period-ms", repr(s.period_ms), "--jitter-ms", repr(s.jitter_ms),
        *_opt("--duration", s.duration_s), *_opt("--updates", s.max_updates),
        *_opt("--start-at-ns", cfg.start_at_ns), *_opt("--start-file", cfg.start_file),
        "--grads", str(t.num_weights), "--batch", str(t.batch), "--reward-scale", repr(t.reward_scale),
        "--sigma", repr(t.sigma), "--task-seed", str(t.task_seed), "--seed", str(cfg.seed),
        "--tc" if tx.enabled else "--no-tc", "--tc-delta-t-ms", repr(tx.delta_t_ms),
        "--tc-v-per-s", repr(tx.v_per_s), *_opt("--tc-q-max", tx.q_max),
        *_opt("--cluster-id", cfg.cluster_id), *_opt("--worker-id", cfg.worker_id),
        "--init-retry-ms", repr(cfg.init_retry_ms), "--linger-ms", repr(cfg.linger_ms),
        "--out-dir", str(cfg.out_dir), "--name", cfg.name,
    ]


def ps_argv(cfg: PsConfig) -> list[str]:
    """Arguments of ``olaf ps`` (after the subcommand) that reproduce ``cfg``."""
    return [
        "--bind", f"{cfg.bind_ip}:{cfg.port}", "--lr", repr(cfg.lr), *_opt("--duration", cfg.duration_s),
        "--out-dir", str(cfg.out_dir), "--name", cfg.name, "--flush-ms", repr(cfg.flush_s * 1000),
        "--rcvbuf", str(cfg.rcvbuf),
    ]

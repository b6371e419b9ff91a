"""The host configurations of a job: the PS and the workers that every backend with real host
processes (Mininet, local) starts, from the job's parts.

One place decides how a training job (:class:`~olaf.plan.workload.TrainJob`) changes a host:
the PS takes its step, ``γ``, gating and mode (sync rounds wait for every worker of the job),
and the model's size and MTU (the chunks K its workers send, :mod:`olaf.chunks`) and a receive
buffer that holds one update of every worker at once (:func:`olaf.udpsock.rcvbuf_for`);
a worker runs the ``ppo`` task and waits ``ack_wait_ms`` for the ACK's weights. Without a job
the workers run the ``bandit`` task with ``num_weights`` weights. The PS trusts the job's
workers only, and the first worker's INIT (:mod:`olaf.hosts.trust`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional, Sequence

from olaf.chunks import Chunking
from olaf.constants import ACK_PORT, ELEMENT_LEN, UPDATE_HEADER_LEN
from olaf.hosts.modes import Mode, ModeParams
from olaf.hosts.ps import PsConfig
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.task import TaskParams
from olaf.hosts.trust import TrustPolicy
from olaf.hosts.worker import WorkerConfig
from olaf.plan.tx import TxParams
from olaf.plan.workload import TrainJob
from olaf.udpsock import rcvbuf_for

EVAL_CHECKPOINT_S = 5.0
"""The PS of a job whose global model is evaluated writes its checkpoint this often, s (or at the
evaluation period if shorter): an evaluation scores weights at most this old."""


PS_NAME = "ps"
"""File-name stem of a job's PS (``hosts/ps.jsonl``, ``ps.summary.json``, ``ps.checkpoint.npz``)."""


def ps_checkpoint(hosts_dir: Path) -> Path:
    """Where the PS of a job whose host files are in ``hosts_dir`` writes its checkpoint."""
    return PsConfig(out_dir=hosts_dir, name=PS_NAME).checkpoint_path


def ps_snapshots(hosts_dir: Path) -> Path:
    """Where the PS of a job whose host files are in ``hosts_dir`` keeps its snapshot series
    (:attr:`PsConfig.snapshot_s`: every ``eval_every_s`` of a job that is evaluated)."""
    return PsConfig(out_dir=hosts_dir, name=PS_NAME).snapshot_dir


def ps_config(job: Optional[TrainJob], *, bind_ip: str, worker_ips: Sequence[str], out_dir: Path,
              name: str = PS_NAME, switch: bool = True) -> PsConfig:
    """The PS at ``bind_ip`` of a job whose workers (in worker-id order) are at ``worker_ips``;
    ``switch``: an Olaf switch in front multicasts a cluster's ACKs (without one, the aggregating
    modes answer every worker: :attr:`PsConfig.ack_each_worker`)."""
    trust = TrustPolicy(allowed_sources=frozenset(worker_ips), init_from=worker_ips[0] if worker_ips else None)
    if job is None:
        return PsConfig(bind_ip=bind_ip, out_dir=out_dir, name=name, trust=trust)
    modes = ModeParams(mode=Mode(job.mode), aggr_k=job.aggr_k, aggr_t_ms=job.aggr_t_ms,
                       sync_workers=len(worker_ips) if job.mode == Mode.SYNC.value else None,
                       round_timeout_ms=job.round_timeout_ms,
                       round_updates=len(worker_ips) if job.mode == Mode.STELLARIS.value else None,
                       stellaris_decay=job.stellaris_decay, beta_min=job.beta_min)
    checkpoint_s = None if job.eval_every_s is None else min(job.eval_every_s, EVAL_CHECKPOINT_S)
    chunking = Chunking.for_model(job.num_params, job.task.mtu)
    datagram = UPDATE_HEADER_LEN + ELEMENT_LEN * chunking.chunk_len  # one update chunk's UDP payload
    rcvbuf = rcvbuf_for(len(worker_ips) * chunking.num_chunks, datagram)
    return PsConfig(bind_ip=bind_ip, out_dir=out_dir, name=name, lr=job.ps_lr, step=job.ps_step, gate=job.ps_gate,
                    lr_final=job.ps_lr_final, lr_decay_updates=job.ps_lr_decay_updates,
                    modes=modes, trust=trust, checkpoint_s=checkpoint_s, snapshot_s=job.eval_every_s,
                    num_params=job.num_params,
                    mtu=job.task.mtu, rcvbuf=rcvbuf, staleness_root=job.ps_staleness_root,
                    worker_ack_wait_ms=job.ack_wait_ms,
                    ack_each_worker=not switch)


def worker_config(job: Optional[TrainJob], *, ps_ip: str, bind_ip: str, schedule: ScheduleSpec, num_weights: int,
                  task_seed: int, tx: TxParams, seed: int, cluster_id: int, worker_id: Optional[int],
                  start_file: Optional[Path], out_dir: Path, name: str, ack_port: int = ACK_PORT) -> WorkerConfig:
    """One worker of a job: the bandit of ``num_weights`` weights (``task_seed``), or the job's PPO task;
    it sends from and receives its ACKs on ``(bind_ip, ack_port)``."""
    cfg = WorkerConfig(ps_ip=ps_ip, bind_ip=bind_ip, schedule=schedule, ack_port=ack_port,
                       task=TaskParams(num_weights=num_weights, task_seed=task_seed), tx=tx, seed=seed,
                       cluster_id=cluster_id, worker_id=worker_id, start_file=start_file, out_dir=out_dir, name=name)
    if job is None:
        return cfg
    return replace(cfg, task_kind="ppo", ppo=job.task, ack_wait_ms=job.ack_wait_ms)

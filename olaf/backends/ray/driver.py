"""A job of RLlib-learner workers run as one RLlib algorithm (:class:`RLlibDriver`,
:class:`olaf.rl.rllib.OlafPPO`), with a handle per worker for the emulation (:class:`DriverWorker`).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Optional

from olaf.harness import RunFailed
from olaf.hosts.runlog import wait_for_start_file, wait_until
from olaf.hosts.worker import WorkerConfig
from olaf.netns import host_netns_path


class RLlibDriver:
    """A training job whose workers all use RLlib's learner, run as one RLlib algorithm
    (:class:`olaf.rl.rllib.OlafPPO`): one EnvRunner actor per worker, each with its Olaf socket in
    its Mininet host's namespace, and this thread calling ``algo.train()`` from the run's start
    (the start file) until its generation limit or :meth:`stop`. The job's PPO hyper-parameters map
    onto RLlib's (:func:`olaf.rl.rllib.rllib_ppo_config`); the workers must share their settings
    (one ``AlgorithmConfig``).

    Raises (from the constructor):
        RunFailed: the workers' settings differ (seed aside), or RLlib is missing.
    """

    def __init__(self, net: Any, configs: dict[str, WorkerConfig], logs_dir: Path) -> None:
        from olaf.rl.extra import RLlibExtraMissing, require_rllib  # noqa: PLC0415

        try:
            require_rllib()
        except RLlibExtraMissing as e:
            raise RunFailed(str(e)) from None
        from olaf.rl.rllib import OlafEndpoint, OlafPPOConfig, rllib_ppo_config  # noqa: PLC0415

        first = next(iter(configs.values()))
        shared = ("ps_ip", "ps_port", "ppo", "tx", "ack_wait_ms", "linger_ms", "out_dir", "start_file")
        for name, c in configs.items():
            differ = [f for f in shared if getattr(c, f) != getattr(first, f)]
            if c.schedule.duration_s != first.schedule.duration_s:
                differ.append("schedule.duration_s")
            if differ:
                raise RunFailed(f"the RLlib learner runs a job as one RLlib algorithm: worker {name} differs from the "
                                f"others in {', '.join(differ)}")
        self.names = list(configs)
        self.logs = [logs_dir / f"{n}.out" for n in self.names]
        self.start_file, self.duration_s = first.start_file, first.schedule.duration_s
        n = len(configs)
        spec = first.ppo
        base: Any = rllib_ppo_config(spec, first.seed, cls=OlafPPOConfig)
        self.config = (base
                       .env_runners(num_env_runners=n, num_cpus_per_env_runner=(os.cpu_count() or 1) / n)
                       .fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=False)
                       .olaf(ps=f"{first.ps_ip}:{first.ps_port}", mtu=spec.mtu, tx=first.tx,
                             ack_wait_s=first.ack_wait_ms / 1000, linger_s=first.linger_ms / 1000,
                             log_dir=first.out_dir,
                             endpoints=[OlafEndpoint(bind=f"{c.bind_ip}:{c.ack_port}", name=name,
                                                     netns=str(host_netns_path(net.host(name).pid)))
                                        for name, c in configs.items()]))
        self._stop = threading.Event()
        self.code: Optional[int] = None
        for log in self.logs:
            log.write_text("")
        self._thread = threading.Thread(target=self._run, name="olaf-rllib-driver", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        algo = None
        try:
            algo = self.config.build_algo()
            algo.env_runner_group.foreach_env_runner("olaf_announce", local_env_runner=False)  # start records
            t0 = wait_for_start_file(self.start_file, self._stop) if self.start_file is not None else time.time_ns()
            if t0 is not None and wait_until(t0, self._stop):
                end = None if self.duration_s is None else t0 + int(self.duration_s * 1e9)
                while not self._stop.is_set() and (end is None or time.time_ns() < end):
                    algo.train()
            algo.stop()  # every EnvRunner lingers and writes its summary
            algo = None
            self.code = 0
        except BaseException:  # noqa: BLE001 (reported as every worker's exit code and log)
            text = traceback.format_exc()
            for log in self.logs:
                log.write_text(text)
            self.code = 1
        finally:
            if algo is not None:
                try:
                    algo.stop()
                except Exception:  # noqa: BLE001 (already failed; its traceback is in the logs)
                    pass

    def stop(self) -> None:
        """End the job after the current training step (the EnvRunners then write their summaries)."""
        self._stop.set()


class DriverWorker:
    """One worker of an :class:`RLlibDriver`'s job seen as a process (``poll``, ``wait``,
    ``returncode``, ``terminate``, ``kill``); stopping one stops the job."""

    def __init__(self, driver: RLlibDriver, name: str) -> None:
        self.driver, self.name = driver, name
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self.returncode = self.driver.code
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        self.driver._thread.join(timeout)
        if self.poll() is None:
            raise subprocess.TimeoutExpired(self.name, timeout or 0)
        return self.returncode  # type: ignore[return-value]

    def terminate(self) -> None:
        self.driver.stop()

    def kill(self) -> None:
        self.driver.stop()


def rllib_job(configs: dict[str, WorkerConfig]) -> bool:
    """Every worker is a PPO worker with RLlib's learner (``--learner rllib``)."""
    return bool(configs) and all(c.task_kind == "ppo" and c.ppo.learner == "rllib" for c in configs.values())

"""RLlib through Olaf: an A3C-style PPO whose EnvRunners exchange their own updates with an Olaf
parameter server (PS), and the same learning step as an Olaf worker's task.

RLlib's own PPO (new API stack) samples on its EnvRunners, ships the episodes to one
``LearnerGroup``, updates there and broadcasts the weights through Ray's object store. Olaf's
training is asynchronous and per worker (paper §2.1, §8.2): each worker computes its own update
from its own samples, sends it through the Olaf switch, and adopts the global model the PS's ACKs
bring between its iterations. Here that worker is an RLlib EnvRunner:

* :class:`RLlibLearning` — the learning step shared by everything below: one RLlib
  ``SingleAgentEnvRunner`` and one RLlib ``Learner`` of the algorithm's config (built with
  ``AlgorithmConfig.build_learner`` in the same process). A step samples one rollout with the
  EnvRunner (RLlib's env-to-module and module-to-env connectors, its RLModule), runs the
  Learner's update on those episodes (RLlib's learner connectors — GAE —, loss, optimizer,
  ``num_epochs`` × minibatches), and returns the parameter change as the update direction (a
  :class:`olaf.experience.Generation`). The flat vector is the Learner module's
  ``parameters()`` in order (``torch.nn.utils.parameters_to_vector``); its length is the model
  size P the PS and the switches are built for.
* :class:`OlafEnvRunner`, :class:`OlafPPO`, :class:`OlafPPOConfig` — the RLlib algorithm: an
  RLlib user turns Olaf on by building their PPO config as ``OlafPPOConfig`` (a ``PPOConfig``:
  models, connectors, hyper-parameters, metrics all RLlib's) and calling ``.olaf(ps=...,
  endpoints=...)``. Each EnvRunner opens an :class:`olaf.client.OlafClient` at its endpoint (inside
  a network namespace if given, e.g. a Mininet host's ``/proc/<pid>/ns/net``), INITs, and every
  ``olaf_step`` adopts, learns and pushes. ``OlafPPO.training_step`` keeps one ``olaf_step``
  outstanding on every EnvRunner (RLlib's asynchronous ``foreach_env_runner_async_fetch_ready``,
  as IMPALA/APPO sample) and aggregates the EnvRunners' metrics as RLlib does; there is no
  ``LearnerGroup.update`` and no weight broadcast. The algorithm's own module (``get_module()``,
  checkpoints, evaluation) holds the PS's global model as last heard by an EnvRunner.
  RLlib restarts a failed EnvRunner with the same ``worker_index`` (``config.fault_tolerance(
  restart_failed_env_runners=True)``); it takes the same endpoint, i.e. the same Olaf identity,
  and INITs again (the PS answers with the global model).
* :class:`RLlibPPOTask` — the learning step behind the worker's task interface
  (:class:`olaf.hosts.learning.Task`), for ``olaf worker --learner rllib`` and ``olaf train
  --learner rllib``: the project's own job (schedule, logs, report, figures, every backend) with
  RLlib's PPO. :func:`rllib_ppo_config` maps the job's :class:`~olaf.plan.workload.PPOConfig` onto
  RLlib's (same network shape, so the same P: :func:`olaf.rl.network.param_count`).

The adapter is thin on purpose: RLlib's new API stack moves between releases, so it is pinned
(``ray[rllib]`` == :data:`olaf.rl.extra.RAY_VERSION`, the ``rllib`` extra) and touches only
``SingleAgentEnvRunner.sample``/``get_metrics``, ``AlgorithmConfig.build_learner``,
``Learner.update`` and the EnvRunner group's async calls. Every method that overrides one of
RLlib's carries RLlib's own ``@override(Parent)`` (``ray.rllib.utils.annotations``), which raises
when the class is defined if the parent no longer has that method: an upgrade that renames one
fails at import, not silently at run time.

Units: times in seconds (float) in this API; weights and directions float32/float64 vectors of P
elements (Q7.24 on the wire, ``docs/protocol.md``); rewards are RLlib's undiscounted episode
returns (Q15.16 on the wire).
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import torch
from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from olaf.client import OlafError, endpoint
from olaf.constants import IPV4_MAX_LEN, MTU
from olaf.experience import Generation
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.worker import Worker, WorkerConfig
from olaf.netns import call_in_netns
from olaf.plan.tx import TxParams
from olaf.plan.workload import PPOTaskSpec
from olaf.rl.network import check_fits
from olaf.wire import ACK_PORT, UPDATE_PORT

__all__ = ["OlafEndpoint", "OlafEnvRunner", "OlafPPO", "OlafPPOConfig", "RLlibLearning", "RLlibPPOTask",
           "RLlibTask", "rllib_ppo_config"]

OLAF_PPO_PS_LR = 1.0
"""The PS's γ (paper step, no reward gate) for ``OlafPPO``: every EnvRunner's whole change reaches the
model (``docs/rllib.md`` measured 0.3 at 4 × the samples of RLlib's PPO, 1 at 1.6 ×)."""

LOSS_KEYS = {"policy_loss": "policy_loss", "vf_loss": "value_loss", "entropy": "entropy", "mean_kl_loss": "approx_kl"}
"""RLlib PPO learner results → the worker's ``gen`` record fields (:class:`olaf.rundir.records.GenRecord`)."""


def _scalar(v: Any) -> Optional[float]:
    """A learner result (a number, tensor or RLlib ``Stats``) as a float, None if it is none."""
    if hasattr(v, "peek"):
        v = v.peek()
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class RLlibLearning:
    """One RLlib EnvRunner and one RLlib Learner: the learning step of an Olaf worker.

    Args:
        env_runner: a built ``SingleAgentEnvRunner`` (it has its environments and RLModule).
        config: the algorithm config both come from (``build_learner`` makes the Learner, with the
            EnvRunner's spaces).

    Attributes:
        num_weights: P, the Learner module's parameter count (the flat vector's length).
    """

    def __init__(self, env_runner: SingleAgentEnvRunner, config: Any) -> None:
        self.runner: Any = env_runner  # RLlib's types are loose (Optional modules, invariant lists)
        self.config: Any = config
        self.learner: Any = config.build_learner(spaces=env_runner.get_spaces())
        self.module: Any = self.learner.module[DEFAULT_MODULE_ID]
        self._params = list(self.module.parameters())
        self.num_weights = int(sum(p.numel() for p in self._params))
        self._partial: dict[str, float] = {}  # episode id -> return of its earlier chunks
        self.start: Optional[np.ndarray] = None  # the weights the last iteration started from
        self.env_steps = 0
        self.episodes = 0
        self.iterations = 0
        self._sync_runner()

    def current_weights(self) -> np.ndarray:
        """The Learner module's weights, float64 ``(P,)`` (a copy)."""
        return parameters_to_vector(self._params).detach().cpu().numpy().astype(np.float64)

    def set_weights(self, weights: np.ndarray) -> None:
        """Load ``weights`` (``(P,)``) into the Learner module and the EnvRunner's module."""
        with torch.no_grad():
            vector_to_parameters(torch.as_tensor(np.asarray(weights), dtype=self._params[0].dtype), self._params)
        self._sync_runner()

    def _sync_runner(self) -> None:
        self.runner.module.set_state(self.module.get_state(inference_only=True))

    def _returns(self, episodes: Sequence[Any]) -> np.ndarray:
        """The whole returns of the episodes that ended in ``episodes`` (chunks of an episode that
        spans rollouts carry the same id: their returns are summed)."""
        done = []
        for e in episodes:
            total = self._partial.pop(e.id_, 0.0) + float(e.get_return())
            if e.is_done:
                done.append(total)
            else:
                self._partial[e.id_] = total
        return np.asarray(done, dtype=np.float64)

    def generate(self, adopt: Optional[np.ndarray]) -> Generation:
        """One iteration: adopt ``adopt`` if given, sample one rollout (the config's
        ``rollout_fragment_length`` × ``num_envs_per_env_runner`` steps), update the Learner on it.

        Raises:
            FloatingPointError: the update made a weight NaN or infinite.
        """
        if adopt is not None:
            self.set_weights(adopt)
        before = self.start = self.current_weights()
        episodes = self.runner.sample()
        steps = int(sum(len(e) for e in episodes))
        self.env_steps += steps
        returns = self._returns(episodes)
        self.episodes += int(returns.size)
        self.iterations += 1
        cfg = self.config
        results = self.learner.update(
            episodes=episodes, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: self.env_steps},
            num_epochs=cfg.num_epochs, minibatch_size=cfg.minibatch_size, shuffle_batch_per_epoch=True)
        after = self.current_weights()
        if not np.isfinite(after).all():
            raise FloatingPointError(f"RLlib's PPO update made {int((~np.isfinite(after)).sum())} weights non-finite "
                                     f"(iteration {self.iterations})")
        self._sync_runner()
        stats = results.get(DEFAULT_MODULE_ID, {}) if isinstance(results, dict) else {}
        info: dict[str, Any] = {"steps": steps, "episodes": int(returns.size), "env_steps": self.env_steps}
        for key, field_name in LOSS_KEYS.items():
            value = _scalar(stats.get(key))
            if value is not None and np.isfinite(value):
                info[field_name] = round(value, 6)
        return Generation(returns, after - before, steps, info)


def rllib_ppo_config(spec: PPOTaskSpec, seed: int, cls: type[PPOConfig] = PPOConfig) -> PPOConfig:
    """RLlib's ``PPOConfig`` (or ``cls``, e.g. :class:`OlafPPOConfig`) for the job's PPO task
    ``spec``: the same environment, network shape and hyper-parameters, one EnvRunner in this
    process (``num_env_runners=0``; an ``OlafPPOConfig`` sets its own).

    Mapping (RLlib name ← :class:`~olaf.plan.workload.PPOConfig` field): ``fcnet_hiddens`` ← ``hidden``,
    ``fcnet_activation`` tanh (the job's network), ``vf_share_layers`` ← ``arch == "shared"``,
    ``rollout_fragment_length`` ← ``n_steps``, ``num_envs_per_env_runner`` ← ``n_envs``,
    ``train_batch_size_per_learner`` ← ``n_steps·n_envs``, ``minibatch_size`` ← ``batch_size``,
    ``num_epochs`` ← ``n_epochs``, ``lr``, ``gamma``, ``lambda_`` ← ``gae_lambda``, ``clip_param`` ←
    ``clip_range``, ``entropy_coeff`` ← ``ent_coef``, ``vf_loss_coeff`` ← ``vf_coef``, ``grad_clip`` ←
    ``max_grad_norm`` (global norm), ``use_kl_loss`` off (the clipped surrogate alone, as the job's
    learner). RLlib's own choices stay: advantages standardised per batch, its value clipping
    (``vf_clip_param``); the job's ``reward_scale`` has no RLlib counterpart and is not applied.
    """
    p = spec.ppo
    return (cls()
            .environment(spec.env_id)
            .env_runners(num_env_runners=0, num_envs_per_env_runner=p.n_envs, rollout_fragment_length=p.n_steps)
            .training(lr=p.lr, gamma=p.gamma, lambda_=p.gae_lambda, clip_param=p.clip_range, entropy_coeff=p.ent_coef,
                      vf_loss_coeff=p.vf_coef, grad_clip=p.max_grad_norm, grad_clip_by="global_norm",
                      num_epochs=p.n_epochs, minibatch_size=p.batch_size,
                      train_batch_size_per_learner=p.n_steps * p.n_envs, use_kl_loss=False)
            .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=list(p.hidden), fcnet_activation="tanh",
                                                       vf_share_layers=p.arch == "shared"))
            .debugging(seed=seed))


class RLlibTask:
    """An :class:`RLlibLearning` behind the worker's task interface (``kind`` = ``"ppo"``, learner
    ``rllib``; :class:`olaf.hosts.learning.Task`).

    Args:
        learning: the EnvRunner and Learner; their weights now are the initial weights.
        apply_locally: keep each iteration's own step; without it the weights go back to where the
            iteration started (the worker keeps only what the PS sends back).
    """

    kind = "ppo"

    def __init__(self, learning: RLlibLearning, apply_locally: bool = True) -> None:
        self.learning = learning
        self.apply_locally = apply_locally
        self.num_weights = learning.num_weights
        self._initial = learning.current_weights()

    def initial_weights(self) -> np.ndarray:
        return self._initial.copy()

    def current_weights(self) -> np.ndarray:
        return self.learning.current_weights()

    def generate(self, adopt: Optional[np.ndarray]) -> Generation:
        """One iteration (:meth:`RLlibLearning.generate`)."""
        gen = self.learning.generate(adopt)
        if not self.apply_locally and self.learning.start is not None:
            self.learning.set_weights(self.learning.start)
        return gen

    def summary(self) -> dict[str, Any]:
        lr = self.learning
        return {"env_steps": lr.env_steps, "episodes": lr.episodes, "iterations": lr.iterations,
                "num_params": self.num_weights, "learner": "rllib"}

    def close(self) -> None:
        """Nothing: whoever made the EnvRunner stops it."""


class RLlibPPOTask(RLlibTask):
    """RLlib's PPO for the job's PPO task, with its own EnvRunner (``olaf worker --learner rllib``).

    Args:
        spec: the job's PPO task (:func:`rllib_ppo_config` maps it).
        seed: the worker's seed (RLlib's ``debugging(seed=...)``: environments, module init, sampling).

    Raises:
        ModelTooLarge: the network needs more chunks than the wire allows at ``spec.mtu``.
        gymnasium.error.Error: an unknown environment id.
    """

    def __init__(self, spec: PPOTaskSpec, seed: int) -> None:
        torch.set_num_threads(1)
        config = rllib_ppo_config(spec, seed)
        super().__init__(RLlibLearning(SingleAgentEnvRunner(config=config, worker_index=1), config),
                         spec.apply_locally)
        self.chunking = check_fits(self.num_weights, spec.mtu)

    def close(self) -> None:
        self.learning.runner.stop()


@dataclass(frozen=True)
class OlafEndpoint:
    """Where one EnvRunner speaks Olaf.

    Attributes:
        bind: ``"IP"`` or ``"IP:PORT"``: the address the switch knows the worker by (its worker
            table), and the UDP port it sends from and receives ACKs on (50101 by protocol; workers
            sharing an address each have their own, the five-tuple identity of ``docs/controller.md``).
        netns: a network namespace handle (``/proc/<pid>/ns/net`` of a Mininet host,
            ``/var/run/netns/<name>``) to open the socket in, or None (the process's own).
        name: the worker's name in its log and summary file names (default ``runner<worker_index>``).
    """

    bind: str
    netns: Optional[str] = None
    name: Optional[str] = None


class OlafPPOConfig(PPOConfig):
    """RLlib's ``PPOConfig`` plus where the Olaf PS and each EnvRunner's endpoint are
    (:meth:`olaf`); builds :class:`OlafPPO`, whose EnvRunners are :class:`OlafEnvRunner`."""

    @override(PPOConfig)
    def __init__(self, algo_class: Optional[type] = None) -> None:
        super().__init__(algo_class=algo_class or OlafPPO)
        self.env_runner_cls = OlafEnvRunner  # type: ignore[assignment]
        self.olaf_ps: Optional[str] = None
        self.olaf_endpoints: tuple[OlafEndpoint, ...] = ()
        self.olaf_mtu: int = MTU
        self.olaf_tx = TxParams()
        self.olaf_ack_wait_s = 0.1
        self.olaf_init_wait_s = 10.0
        self.olaf_linger_s = 0.5
        self.olaf_log_dir = str(Path(tempfile.gettempdir()) / "olaf-rllib")
        self.olaf_network: Optional[str] = None

    def olaf(self, *, ps: str, endpoints: Sequence[OlafEndpoint | str], mtu: int = MTU,
             tx: Optional[TxParams] = None, ack_wait_s: float = 0.1, init_wait_s: float = 10.0,
             linger_s: float = 0.5, log_dir: Optional[Path | str] = None,
             network: Optional[Path | str] = None) -> "OlafPPOConfig":
        """Set the Olaf side.

        Args:
            ps: the PS, ``"IP[:PORT]"`` (port 50100 by protocol); start it for this model's size
                (``olaf ps --num-params P --mtu MTU``, P from :meth:`olaf_num_params`).
            endpoints: one per remote EnvRunner, in ``worker_index`` order (EnvRunner i uses
                ``endpoints[i - 1]``); a string is an :class:`OlafEndpoint` ``bind``.
            mtu: the links' IPv4 MTU, bytes (68..65535): the update travels as ``⌈P / elements
                per chunk⌉`` chunks (:mod:`olaf.chunks`); 65535 on loopback.
            tx: transmission control (paper §5); default off.
            ack_wait_s: after a sent update, wait at most this long for its whole answer before
                the next iteration (≥ 0).
            init_wait_s: an EnvRunner waits at most this long for the global model after its INIT,
                then raises (the PS unreachable).
            linger_s: a stopping EnvRunner keeps receiving ACKs this long before its summary.
            log_dir: where each EnvRunner writes its Olaf worker log and summary (``<name>.jsonl``,
                ``<name>.summary.json``; ``docs/hosts.md``); default ``$TMPDIR/olaf-rllib``.
            network: the deployment's ``network.yaml`` (``docs/controller.md``): :meth:`validate`
                then refuses, before any EnvRunner starts, an endpoint that is not a worker host of
                it (address and UDP port: the switch would drop its updates as ``unknown_source``),
                a PS that is not its PS, and a model of another size than its ``num_grads``.

        Raises:
            ValueError: an argument out of range; the message names it.
        """
        if not endpoints:
            raise ValueError("olaf(endpoints=...) needs one endpoint per EnvRunner (num_env_runners)")
        if ack_wait_s < 0 or init_wait_s <= 0 or linger_s < 0:
            raise ValueError(f"olaf(ack_wait_s={ack_wait_s}, init_wait_s={init_wait_s}, linger_s={linger_s}): "
                             "ack_wait_s and linger_s must be >= 0, init_wait_s > 0")
        if not 68 <= mtu <= IPV4_MAX_LEN:
            raise ValueError(f"olaf(mtu={mtu}): an IPv4 MTU is 68..{IPV4_MAX_LEN} bytes ({IPV4_MAX_LEN} on loopback)")
        self.olaf_ps = ps
        self.olaf_endpoints = tuple(e if isinstance(e, OlafEndpoint) else OlafEndpoint(bind=e) for e in endpoints)
        self.olaf_mtu = mtu
        self.olaf_tx = tx or TxParams()
        self.olaf_ack_wait_s = float(ack_wait_s)
        self.olaf_init_wait_s = float(init_wait_s)
        self.olaf_linger_s = float(linger_s)
        if log_dir is not None:
            self.olaf_log_dir = str(log_dir)
        self.olaf_network = None if network is None else str(network)
        return self

    @override(PPOConfig)
    def validate(self) -> None:
        super().validate()
        if self.in_evaluation:  # RLlib's evaluation EnvRunners only sample: no Olaf side
            return
        if self.olaf_ps is None:
            raise ValueError("OlafPPOConfig: call .olaf(ps=..., endpoints=...) first: where the Olaf PS is")
        if not self.enable_env_runner_and_connector_v2:
            raise ValueError("OlafPPOConfig needs RLlib's new API stack (api_stack(enable_rl_module_and_learner=True, "
                             "enable_env_runner_and_connector_v2=True), the default)")
        if self.num_env_runners < 1:
            raise ValueError(f"num_env_runners={self.num_env_runners}: every Olaf worker is a remote EnvRunner; "
                             "set env_runners(num_env_runners=N) with N >= 1")
        if len(self.olaf_endpoints) < self.num_env_runners:
            raise ValueError(f"olaf(endpoints=...) has {len(self.olaf_endpoints)} endpoint(s) for "
                             f"num_env_runners={self.num_env_runners}: give one per EnvRunner")
        if not (isinstance(self.env_runner_cls, type) and issubclass(self.env_runner_cls, OlafEnvRunner)):
            raise ValueError(f"env_runner_cls={self.env_runner_cls!r}: OlafPPO needs OlafEnvRunner (or a subclass)")
        if self.olaf_network is not None:
            self._check_network(Path(self.olaf_network))

    def _check_network(self, path: Path) -> None:
        """The endpoints, the PS and the model size against the deployment at ``path``.

        Raises:
            ValueError: one of them does not match (the message names it and the fix);
                :class:`olaf.configfile.ConfigError` for a ``network.yaml`` that is not valid.
        """
        from olaf.controller import config as netcfg  # noqa: PLC0415

        d = netcfg.load(path)
        workers = {(h.ip, h.udp_port): name for name, h in d.hosts.items() if h.worker_id is not None}
        for i, ep in enumerate(self.olaf_endpoints[:self.num_env_runners]):
            if endpoint(ep.bind, f"endpoints[{i}].bind", ACK_PORT) not in workers:
                known = ", ".join(f"{n} {ip}:{port}" for (ip, port), n in sorted(workers.items(), key=lambda x: x[1]))
                raise ValueError(f"olaf(endpoints[{i}]={ep.bind!r}) is not a worker host of {path} ({known}): the "
                                 "switch would drop its updates as unknown_source; add it to the file's hosts and "
                                 "deploy it (olafctl), or use one of these")
        ps_ip = endpoint(self.olaf_ps, "ps", UPDATE_PORT)[0]
        if ps_ip != d.hosts[d.ps].ip:
            raise ValueError(f"olaf(ps={self.olaf_ps!r}): the PS of {path} is {d.ps} at {d.hosts[d.ps].ip}")
        p = self.olaf_num_params()
        if p != d.num_grads:
            raise ValueError(f"this config's model has {p} parameters, {path} is deployed for num_grads "
                             f"{d.num_grads}: redeploy for {p} (and start the PS with --num-params {p})")

    @override(PPOConfig)
    def validate_train_batch_size_vs_rollout_fragment_length(self) -> None:
        """Each EnvRunner updates on its own rollout (``rollout_fragment_length`` ×
        ``num_envs_per_env_runner`` steps), not on a batch gathered from all of them: RLlib's check
        of ``train_batch_size`` against the EnvRunners' total does not apply; the minibatch must fit
        one rollout."""
        if self.in_evaluation:  # evaluation EnvRunners only sample
            return
        fragment = self.get_rollout_fragment_length()
        rollout = fragment * self.num_envs_per_env_runner
        if self.minibatch_size is not None and self.minibatch_size > rollout:
            raise ValueError(f"minibatch_size={self.minibatch_size} is larger than one EnvRunner's rollout "
                             f"(rollout_fragment_length {fragment} x num_envs_per_env_runner "
                             f"{self.num_envs_per_env_runner} = {rollout}): each EnvRunner learns from its own")

    def olaf_num_params(self) -> int:
        """P: the parameter count of this config's Learner module (what ``olaf ps --num-params`` needs)."""
        runner = SingleAgentEnvRunner(config=self.copy(copy_frozen=False).env_runners(num_env_runners=0),
                                      worker_index=1)
        try:
            module: Any = self.get_rl_module_spec(spaces=runner.get_spaces()).build()
            return int(sum(p.numel() for p in module.parameters()))
        finally:
            runner.stop()


class _RunnerTask(RLlibTask):
    """An :class:`OlafEnvRunner`'s learning as its worker's task (the worker owns the log, the client
    and the summary; RLlib owns the EnvRunner's life); its start record describes the algorithm."""

    def __init__(self, learning: RLlibLearning, env_id: str) -> None:
        super().__init__(learning)
        self.env_id = env_id

    def describe(self) -> dict[str, Any]:
        return {"env_id": self.env_id, "learner": "rllib", "algorithm": "OlafPPO", "num_params": self.num_weights}


class OlafEnvRunner(SingleAgentEnvRunner):
    """An RLlib EnvRunner that is an Olaf worker: :meth:`olaf_step` adopts the global model's news,
    samples, updates its own Learner and pushes the change.

    The Olaf side is an :class:`olaf.hosts.worker.Worker` (the class an ``olaf worker`` process
    runs) driven one step per call, with this EnvRunner's learning as its task: its client
    (:class:`olaf.client.OlafClient`) opens on the first step at ``config.olaf_endpoints[worker_index
    - 1]``, and it writes the worker log and summary (``<log_dir>/<name>.jsonl``,
    ``.summary.json``; ``olaf report`` reads them) until RLlib stops the EnvRunner.
    """

    @override(SingleAgentEnvRunner)
    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        self._learning: Optional[RLlibLearning] = None
        self._worker: Optional[Worker] = None
        self._started = False
        self._inits = 0
        self._shipped_acks = -1
        """The client's ACK slices received when :meth:`olaf_step` last returned the global weights."""

    def _endpoint(self) -> OlafEndpoint:
        if not self.worker_index:
            raise RuntimeError("olaf_step runs on remote EnvRunners only (worker_index >= 1)")
        ep: OlafEndpoint = self.config.olaf_endpoints[self.worker_index - 1]  # type: ignore[attr-defined]
        return ep

    def _open(self) -> None:
        cfg: Any = self.config
        ep = self._endpoint()
        torch.set_num_threads(1)
        learning = self._learning = RLlibLearning(self, cfg)
        task = _RunnerTask(learning, str(cfg.env))
        ps_ip, ps_port = endpoint(cfg.olaf_ps, "ps", UPDATE_PORT)
        bind_ip, ack_port = endpoint(ep.bind, "bind", ACK_PORT)
        seed = (cfg.seed or 0) + self.worker_index
        wcfg = WorkerConfig(ps_ip=ps_ip, ps_port=ps_port, bind_ip=bind_ip, ack_port=ack_port,
                            schedule=ScheduleSpec(period_ms=1.0, max_updates=2**31 - 1), task_kind="ppo",
                            ppo=PPOTaskSpec(env_id=str(cfg.env), mtu=cfg.olaf_mtu, learner="rllib"),
                            ack_wait_ms=cfg.olaf_ack_wait_s * 1000, tx=cfg.olaf_tx, seed=seed,
                            linger_ms=cfg.olaf_linger_s * 1000, out_dir=Path(cfg.olaf_log_dir),
                            name=ep.name or f"runner{self.worker_index}")
        Path(cfg.olaf_log_dir).mkdir(parents=True, exist_ok=True)

        def make() -> Worker:
            return Worker(wcfg, task=task)

        worker = make() if ep.netns is None else call_in_netns(ep.netns, make)
        worker.announce()
        self._worker = worker
        self._shipped_acks = -1  # a new client counts from 0

    def olaf_announce(self) -> str:
        """Build this EnvRunner's Learner and Olaf worker and write the worker's ``start`` record
        (bound, not started: a harness waits for every start record before it starts the run);
        the first :meth:`olaf_step` INITs. Returns the worker's name."""
        if self._worker is None:
            self._open()
        assert self._worker is not None
        return self._worker.cfg.name

    def _begin(self) -> None:
        """The ``go`` record and the INIT; raise if the global model does not come back."""
        cfg: Any = self.config
        worker, learning, ep = self._worker, self._learning, self._endpoint()
        assert worker is not None and learning is not None
        self._inits += 1
        self._started = True
        worker.begin()
        worker.client.wait_until(time.time_ns() + int(cfg.olaf_init_wait_s * 1e9), "model")
        if not worker.model_acked:
            worker.end("no_global_model")
            self._worker, self._started = None, False
            raise TimeoutError(f"EnvRunner {self.worker_index} at {ep.bind}: no global model from the Olaf PS "
                               f"{cfg.olaf_ps} within {cfg.olaf_init_wait_s} s (is it running, with --num-params "
                               f"{learning.num_weights}?)")
        latest = worker.client.latest_weights()
        if latest is not None:
            learning.set_weights(latest)

    def olaf_step(self) -> dict[str, Any]:
        """One Olaf iteration; returns ``{"worker_index", "env_runner"`` (RLlib's metrics),
        ``"olaf"`` (the client's counters, the process id and endpoint), ``"weights"`` (the global
        model as last heard, float32 ``(P,)``, when an ACK has brought weights since the last
        step that returned them; else None)}``; or ``{"worker_index", "error"}`` when the job's
        configuration keeps this EnvRunner from starting (the PS did not answer its INIT, its
        address cannot be bound): returned, not raised, so that RLlib's fault tolerance does not
        swallow it and :class:`OlafPPO` raises it on the driver.

        Raises:
            FloatingPointError: the update was not finite (the worker log ends with the error).
        """
        try:
            if self._worker is None:
                self._open()
            if not self._started:
                self._begin()
        except (TimeoutError, OSError) as e:  # the job's configuration: said on the driver (OlafPPO.training_step)
            return {"worker_index": self.worker_index, "error": f"{type(e).__name__}: {e}"}
        worker = self._worker
        assert worker is not None
        try:
            worker.step()
        except FloatingPointError:
            worker.end()
            self._worker, self._started = None, False
            raise
        st = worker.client.stats()
        counters = {k: getattr(st, k) for k in ("pushes", "sent", "skipped", "chunks_sent", "acks", "acks_own",
                                                 "ack_events", "send_errors", "socket_drops", "init_sent", "refusals_own")}
        counters.update(aom_ms=st.aom_ms, learned_cluster_id=st.learned_cluster_id,
                        learned_worker_id=st.learned_worker_id, inits=self._inits, pid=os.getpid(),
                        bind=self._endpoint().bind, name=worker.cfg.name)
        weights = None
        if st.acks != self._shipped_acks:  # only news crosses the object store
            weights = worker.client.latest_weights()
            if weights is not None:
                self._shipped_acks = st.acks
        return {"worker_index": self.worker_index, "env_runner": self.get_metrics(), "olaf": counters,
                "weights": weights}

    @override(SingleAgentEnvRunner)
    def stop(self) -> None:
        """Close the Olaf worker (linger, summary), then RLlib's stop."""
        if self._worker is not None:
            self._worker.end()
            self._worker, self._started = None, False
        super().stop()


class OlafJobError(OlafError):
    """An Olaf EnvRunner could not start for the job's configuration (no global model from the PS,
    an endpoint that cannot be bound): raised by ``OlafPPO.train()`` on the driver, with each
    EnvRunner's reason (the PS, ``--num-params P``, the address)."""


class OlafPPO(PPO):
    """PPO trained through Olaf: every EnvRunner is an asynchronous Olaf worker (module docstring).

    ``train()`` returns RLlib's result dict; its ``"olaf"`` entry holds, per EnvRunner
    (``"runner_<i>"``), the client's latest counters and, summed over them, ``updates_sent``,
    ``updates_skipped`` and ``olaf_steps`` (steps that returned so far).
    """

    @classmethod
    @override(PPO)
    def get_default_config(cls) -> OlafPPOConfig:
        return OlafPPOConfig()

    @override(PPO)
    def setup(self, config: Any) -> None:
        super().setup(config)
        self._olaf_counters: dict[int, dict[str, Any]] = {}
        self._olaf_steps = 0

    @override(PPO)
    def training_step(self) -> None:
        """Keep one ``olaf_step`` outstanding on every healthy EnvRunner; take the ones that are
        done (at least one, waiting up to ``sample_timeout_s``) and aggregate their metrics."""
        group: Any = self.env_runner_group
        metrics: Any = self.metrics
        cfg: Any = self.config
        deadline = time.monotonic() + cfg.sample_timeout_s
        results: list[Any] = []
        while not results:
            results = group.foreach_env_runner_async_fetch_ready("olaf_step", tag="olaf", timeout_seconds=0.1)
            if not results and time.monotonic() > deadline:
                return
        failed = [r for r in results if r.get("error")]
        if failed:
            raise OlafJobError("Olaf EnvRunner(s) could not start: " + "; ".join(
                f"EnvRunner {r['worker_index']}: {r['error']}" for r in failed))
        metrics.aggregate([r["env_runner"] for r in results], key=ENV_RUNNER_RESULTS)
        for r in results:
            self._olaf_counters[r["worker_index"]] = r["olaf"]
        self._olaf_steps += len(results)
        newest = next((r["weights"] for r in reversed(results) if r["weights"] is not None), None)
        if newest is not None:
            self._set_global(newest)
        summary: dict[str, Any] = {f"runner_{i}": {k: v for k, v in c.items() if v is not None}
                                   for i, c in sorted(self._olaf_counters.items())}
        summary.update(updates_sent=sum(c["sent"] for c in self._olaf_counters.values()),
                       updates_skipped=sum(c["skipped"] for c in self._olaf_counters.values()),
                       olaf_steps=self._olaf_steps)
        metrics.log_dict(summary, key="olaf", reduce="item")

    def _set_global(self, weights: np.ndarray) -> None:
        """The PS's global model into the Learner and the local EnvRunner (``get_module()``)."""
        def load(learner: Any) -> Any:
            module = learner.module[DEFAULT_MODULE_ID]
            params = list(module.parameters())
            with torch.no_grad():
                vector_to_parameters(torch.tensor(weights, dtype=params[0].dtype), params)
            return module.get_state(inference_only=True)

        learners: Any = self.learner_group
        states = [r.get() for r in learners.foreach_learner(load)]
        if states and self.env_runner is not None and self.env_runner.module is not None:
            self.env_runner.module.set_state(states[0])

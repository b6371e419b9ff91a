"""Configuration of the PPO task, without torch (so a worker's configuration can be built and
turned into a command line on a base install).

* :class:`PPOConfig` — PPO hyperparameters (Stable-Baselines3's names);
* :class:`PPOTaskSpec` — the whole task of one worker: environment, hyperparameters,
  what the update carries and the frame it must fit.

Defaults are the settings ``docs/training.md`` measured for LunarLander-v3.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Optional, Sequence

from olaf.constants import MTU

DEFAULT_ENV = "LunarLander-v3"
"""The environment of paper §2.1 and §8.2."""

SOLVED_EPISODES = 100
"""Episodes of an environment's definition of "solved": the mean return over 100 consecutive
episodes reaches Gymnasium's ``reward_threshold`` (LunarLander-v3: 200)."""
SOLVE_CONFIRM_MARGIN = 10.0
"""A solved evaluation counts only if the next evaluation's mean is at least the threshold less
this: a single lucky evaluation of an oscillating model is not "solved" (:func:`first_solved`)."""


def first_solved(evaluations: Sequence[tuple[int, float]], solve_at: float) -> Optional[int]:
    """Index of the first evaluation that shows a solved model, given ``(episodes, mean)`` per
    evaluation in order: at least :data:`SOLVED_EPISODES` episodes with a mean ≥ ``solve_at``, and
    the next evaluation also of that many episodes with a mean ≥ ``solve_at`` −
    :data:`SOLVE_CONFIRM_MARGIN`. None if none does (yet: the last one awaits its confirmation)."""
    for i, (episodes, mean) in enumerate(evaluations[:-1]):
        n2, m2 = evaluations[i + 1]
        if episodes >= SOLVED_EPISODES and mean >= solve_at and n2 >= SOLVED_EPISODES and \
                m2 >= solve_at - SOLVE_CONFIRM_MARGIN:
            return i
    return None


UPDATE_KINDS = ("delta", "grad")
"""What a PPO update carries (:mod:`olaf.rl.learner`)."""
ARCHS = ("shared", "separate")
LEARNERS = ("olaf", "rllib")
"""Who computes a PPO worker's update: the project's own learner (:mod:`olaf.rl.learner`) or RLlib's
PPO Learner and EnvRunner (:mod:`olaf.rl.rllib`, the ``rllib`` extra)."""
"""Actor-critic architectures (:mod:`olaf.rl.network`): one trunk for policy and value, or two MLPs."""


@dataclass(frozen=True)
class PPOConfig:
    """PPO hyperparameters of one worker.

    Attributes:
        n_steps: environment steps per env and rollout (≥ 1).
        n_envs: environments stepped side by side (≥ 1); a rollout has
            ``n_steps·n_envs`` samples.
        gamma: discount factor ``γ_RL`` in (0, 1].
        gae_lambda: GAE ``λ`` in [0, 1].
        clip_range: ``ε`` of the clipped surrogate (> 0).
        ent_coef: entropy bonus coefficient ``c_H`` (≥ 0).
        vf_coef: value-loss coefficient ``c_V`` (≥ 0).
        max_grad_norm: global L2 norm the gradient is clipped to before it is
            used (> 0; Stable-Baselines3's default 0.5).
        n_epochs: passes over the rollout per iteration (≥ 1).
        batch_size: minibatch size of a pass (≥ 1; capped by the rollout size).
        lr: the worker's local Adam learning rate (> 0).
        normalize_advantage: normalise ``Â`` per minibatch.
        hidden: layer widths of :class:`~olaf.rl.network.ActorCritic` (its trunk, or each of its
            two MLPs).
        arch: ``"shared"`` (one trunk) or ``"separate"`` (policy and value MLPs, as
            Stable-Baselines3's and RLlib's default models).
        reward_scale: rewards are multiplied by this before GAE (> 0); the value
            head then learns returns of order 1 so the value loss does not drown
            the policy gradient in the shared trunk. Reported episode returns are
            unscaled.
        target_kl: stop the iteration's epochs early once a minibatch's approximate KL from the
            rollout policy exceeds ``1.5 · target_kl`` (Stable-Baselines3's ``target_kl``; > 0,
            None: never). The rollout policy is the global model the worker adopted, so this bounds
            how far one worker's update moves the policy from the model its data came from.
        target_drift: the global policy's drift a worker aims for between its iterations, nats:
            the KL of the global model it adopts from the policy of its previous rollout
            (``kl_adopted``; > 0, None: off). The worker scales the update it sends by ``s`` and
            adapts ``s`` after each adoption (:func:`olaf.rl.drift.adapt_scale`): fewer steps when
            the model it will be applied to moved further than its data can speak for.
    """

    n_steps: int = 128
    n_envs: int = 4
    gamma: float = 0.999
    gae_lambda: float = 0.98
    clip_range: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    n_epochs: int = 4
    batch_size: int = 64
    lr: float = 3e-4
    normalize_advantage: bool = True
    hidden: tuple[int, ...] = (24,)
    reward_scale: float = 0.01
    arch: str = "shared"
    target_kl: Optional[float] = None
    target_drift: Optional[float] = None

    def __post_init__(self) -> None:
        def need(ok: bool, name: str, rule: str) -> None:
            if not ok:
                raise ValueError(f"PPO {name}={getattr(self, name)!r} {rule}")

        need(self.n_steps >= 1, "n_steps", "must be >= 1")
        need(self.n_envs >= 1, "n_envs", "must be >= 1")
        need(0 < self.gamma <= 1, "gamma", "must be in (0, 1]")
        need(0 <= self.gae_lambda <= 1, "gae_lambda", "must be in [0, 1]")
        need(self.clip_range > 0, "clip_range", "must be > 0")
        need(self.ent_coef >= 0, "ent_coef", "must be >= 0")
        need(self.vf_coef >= 0, "vf_coef", "must be >= 0")
        need(self.max_grad_norm > 0, "max_grad_norm", "must be > 0")
        need(self.n_epochs >= 1, "n_epochs", "must be >= 1")
        need(self.batch_size >= 1, "batch_size", "must be >= 1")
        need(self.lr > 0, "lr", "must be > 0")
        need(self.target_kl is None or (math.isfinite(self.target_kl) and self.target_kl > 0), "target_kl",
             "must be > 0 (or None: no early stop)")
        need(self.target_drift is None or (math.isfinite(self.target_drift) and self.target_drift > 0),
             "target_drift", "must be > 0 nats (or None: off)")
        need(len(self.hidden) >= 1 and min(self.hidden) >= 1, "hidden", "needs at least one layer, each >= 1 wide")
        need(self.reward_scale > 0, "reward_scale", "must be > 0")
        need(self.arch in ARCHS, "arch", f"must be one of {', '.join(ARCHS)}")
        for name in ("reward_scale", "gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef", "max_grad_norm", "lr"):
            need(math.isfinite(getattr(self, name)), name, "must be finite")

    def describe(self) -> dict[str, Any]:
        """JSON-ready dict of the fields."""
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        return d


@dataclass(frozen=True)
class NetPreset:
    """A named network (``olaf train --net``).

    Attributes:
        arch, hidden: as :class:`PPOConfig`.
        reward_scale: :class:`PPOConfig`'s; a separate value MLP learns unscaled returns as
            Stable-Baselines3 does (1.0), a shared trunk needs them scaled down (0.01).
        source: where the shape comes from.
    """

    arch: str
    hidden: tuple[int, ...]
    reward_scale: float
    source: str


NETS: dict[str, NetPreset] = {
    "olaf": NetPreset("shared", (24,), 0.01, "the default job: 341 parameters on LunarLander-v3, one 1500 B frame"),
    "sb3": NetPreset("separate", (64, 64), 1.0, "Stable-Baselines3 PPO MlpPolicy: 9,797 parameters on LunarLander-v3"),
    "rllib": NetPreset("separate", (256, 256), 1.0, "RLlib's default model (256,256, value layers not shared): 137,477 "
                                                     "parameters on LunarLander-v3"),
}
"""Networks by name; ``--hidden`` overrides a preset's widths."""


@dataclass(frozen=True)
class PPOTaskSpec:
    """The PPO task of one worker.

    Attributes:
        env_id: Gymnasium id with a discrete action space.
        ppo: hyperparameters.
        update: ``"delta"`` or ``"grad"`` (:mod:`olaf.rl.learner`).
        apply_locally: the worker keeps its own step on its weights until it
            adopts the next global weights (:mod:`olaf.rl.task`).
        mtu: IPv4 MTU of the network, bytes; the model must fit an update and an
            ACK of it (:func:`olaf.constants.max_model_elements`).
        learner: one of :data:`LEARNERS`; ``rllib`` takes ``update`` ``delta`` only (RLlib's Learner
            owns its optimizer step).
    """

    env_id: str = DEFAULT_ENV
    ppo: PPOConfig = field(default_factory=lambda: PPOConfig())
    update: str = "delta"
    apply_locally: bool = True
    mtu: int = MTU
    learner: str = "olaf"

    def __post_init__(self) -> None:
        if self.update not in UPDATE_KINDS:
            raise ValueError(f"PPO update={self.update!r} must be one of {', '.join(UPDATE_KINDS)}")
        if self.learner not in LEARNERS:
            raise ValueError(f"PPO learner={self.learner!r} must be one of {', '.join(LEARNERS)}")
        if self.learner == "rllib" and self.update != "delta":
            raise ValueError(f"PPO update={self.update!r} with learner=rllib: RLlib's Learner takes its own optimizer "
                             "step, so its update is the parameter change; use update=delta")
        if self.mtu < 68:
            raise ValueError(f"mtu={self.mtu} is below the IPv4 minimum of 68 bytes")

    def describe(self) -> dict[str, Any]:
        """JSON-ready dict (for the worker's start record)."""
        return {"env_id": self.env_id, "update": self.update, "apply_locally": self.apply_locally,
                "mtu": self.mtu, "ppo": self.ppo.describe(),
                **({"learner": self.learner} if self.learner != "olaf" else {})}


JOB_PS: dict[str, Any] = {"step": "paper", "lr": 0.3, "gate": False}
"""PS settings of the default PPO job (``olaf ps --step … --lr … --no-reward-gate``); why these
and not paper §2.1's printed ones (reward gating, ``γ`` = 0.001) is measured in ``docs/training.md``."""

MODES = ("async", "async_with_aggr", "sync", "stellaris")
"""The PS's training modes (:class:`olaf.hosts.modes.Mode`'s values; drift-checked by the tests)."""
STELLARIS_DECAY = 0.96
"""``d`` of Stellaris Eq. 3, the value of its evaluation (§VIII-A)."""
STELLARIS_ROOT = 3
"""``v`` of Stellaris Eq. 4, the value of its evaluation (§VIII-A)."""

JOB_ACK_WAIT_MS = 100.0
"""``olaf worker --ack-wait-ms`` of the default PPO job (``docs/training.md``)."""


@dataclass(frozen=True)
class TrainJob:
    """What turns a run (:class:`olaf.plan.plan.RunPlan`'s ``workload``) into a training job
    (``olaf train``): every worker runs the PPO task, the PS the chosen step and mode.

    Torch-free, so a run's parameters (``run.json``) can be written and read on a base install.

    Attributes:
        task: each worker's PPO task (environment, hyperparameters, MTU).
        num_params: the task's parameter count ``G`` (:func:`olaf.rl.network.param_count`);
            the switches are built for updates of ``G`` elements.
        ps_step, ps_lr, ps_gate: the PS's optimizer step (``paper``, ``sgd``, ``adam``, ``nesterov``:
            :class:`olaf.hosts.global_model.Step`), its ``γ``, and reward gating (None: the step's
            default) — paper §2.1, ``docs/hosts.md``.
        ps_lr_final, ps_lr_decay_updates: ``γ`` falls linearly to ``ps_lr_final`` over this many
            worker updates at the PS (None: constant; :mod:`olaf.hosts.global_model`).
        mode: training mode (paper Fig. 2): ``async``, ``async_with_aggr`` or ``sync``, or Stellaris'
            staleness-aware aggregation ``stellaris`` (:mod:`olaf.hosts.modes`); ``aggr_k``/``aggr_t_ms``,
            ``round_timeout_ms``, ``stellaris_decay`` (``d`` of Eq. 3) and ``beta_min`` as ``olaf ps``
            (a stellaris round is one update of every worker of the job).
        ps_staleness_root: the PS scales each update by ``1/δ^(1/v)`` with this ``v`` (Stellaris
            Eq. 4, :func:`olaf.hosts.modes.staleness_scale`; None: off).
        ack_wait_ms: a worker waits at most this long after each sent update for the ACK's
            weights before its next iteration, ms (sync mode: at least ``round_timeout_ms``).
        target: the job ends when every worker has a reward and their mean reaches this
            (with ``stop_at_target``; otherwise it runs its whole budget and the time the
            target was first reached is still recorded).
        window: iterations with an ended episode averaged per worker (the mean worker reward).
        iterations: the job ends once every worker has done this many iterations (None: no
            such limit; the target or the budget ends it).
        ps_updates: the job ends once the PS has received this many worker updates (Σ
            ``count``: an aggregate carries several; None: no such limit). Whether the target
            is reached within a number of iterations or of updates at the PS does not depend
            on how fast the machine iterates, unlike within a wall-time budget.
        eval_every_s: evaluate the PS's global model at most this often, s (:mod:`olaf.training.evaluator`;
            None: no evaluation).
        eval_episodes: deterministic episodes per evaluation (100: the environment's "solved").
        solve_at: with ``stop_at_target``, the job ends when an evaluation of at least 100 episodes
            scores a mean of at least this (then ``target`` is only recorded); requires evaluation.
    """

    task: PPOTaskSpec = field(default_factory=PPOTaskSpec)
    num_params: int = 341
    ps_step: str = JOB_PS["step"]
    ps_lr: float = JOB_PS["lr"]
    ps_gate: Optional[bool] = JOB_PS["gate"]
    ps_lr_final: Optional[float] = None
    ps_lr_decay_updates: Optional[int] = None
    mode: str = "async"
    aggr_k: int = 8
    aggr_t_ms: float = 100.0
    round_timeout_ms: float = 5000.0
    stellaris_decay: float = STELLARIS_DECAY
    beta_min: float = 1.0
    ps_staleness_root: Optional[int] = None
    ack_wait_ms: float = JOB_ACK_WAIT_MS
    target: float = 0.0
    stop_at_target: bool = True
    window: int = 5
    iterations: Optional[int] = None
    ps_updates: Optional[int] = None
    eval_every_s: Optional[float] = None
    eval_episodes: int = SOLVED_EPISODES
    solve_at: Optional[float] = None

    def __post_init__(self) -> None:
        if self.eval_every_s is not None and not (math.isfinite(self.eval_every_s) and self.eval_every_s > 0):
            raise ValueError(f"eval_every_s={self.eval_every_s!r} must be > 0 (or None: no evaluation)")
        if (self.ps_lr_final is None) != (self.ps_lr_decay_updates is None):
            raise ValueError("a PS step-size schedule needs both ps_lr_final and ps_lr_decay_updates")
        if self.ps_lr_final is not None and not (math.isfinite(self.ps_lr_final) and self.ps_lr_final > 0):
            raise ValueError(f"ps_lr_final={self.ps_lr_final!r} must be > 0")
        if self.ps_lr_decay_updates is not None and self.ps_lr_decay_updates < 1:
            raise ValueError(f"ps_lr_decay_updates={self.ps_lr_decay_updates} must be >= 1")
        if self.eval_episodes < 1:
            raise ValueError(f"eval_episodes={self.eval_episodes} must be >= 1")
        if self.solve_at is not None:
            if not math.isfinite(self.solve_at):
                raise ValueError(f"solve_at={self.solve_at!r} must be finite")
            if self.eval_every_s is None:
                raise ValueError("solve_at needs the global model's evaluation: set eval_every_s")
        if self.num_params < 1:
            raise ValueError(f"num_params={self.num_params} must be >= 1")
        if self.window < 1:
            raise ValueError(f"window={self.window} must be >= 1")
        for name in ("iterations", "ps_updates"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
        for name in ("ps_lr", "target", "ack_wait_ms"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name}={getattr(self, name)!r} must be finite")
        if self.ack_wait_ms < 0:
            raise ValueError(f"ack_wait_ms={self.ack_wait_ms} must be >= 0")
        if self.mode not in MODES:
            raise ValueError(f"mode={self.mode!r} must be one of {', '.join(MODES)}")
        if not 0 < self.stellaris_decay <= 1:
            raise ValueError(f"stellaris_decay={self.stellaris_decay!r} must be in (0, 1]")
        if not (math.isfinite(self.beta_min) and self.beta_min >= 0):
            raise ValueError(f"beta_min={self.beta_min!r} must be a finite number >= 0")
        if self.ps_staleness_root is not None and self.ps_staleness_root < 1:
            raise ValueError(f"ps_staleness_root={self.ps_staleness_root} must be an integer >= 1 (Stellaris' v)")
        if self.mode == "sync" and self.ack_wait_ms < self.round_timeout_ms:
            # a sync worker waits for its round's ACK (docs/training.md)
            object.__setattr__(self, "ack_wait_ms", self.round_timeout_ms)

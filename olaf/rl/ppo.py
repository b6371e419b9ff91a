"""The PPO objective: clipped surrogate, value loss and entropy bonus (Schulman et al. 2017).

For a batch of ``B`` samples (observation ``s``, action ``a``, behaviour
log-probability ``log π_old(a|s)``, GAE advantage ``Â`` and return ``R̂``,
:mod:`olaf.rl.rollout`) and the network's ``π_θ`` and ``V_θ``:

* ratio ``ρ = exp(log π_θ(a|s) − log π_old(a|s))``;
* advantages normalised over the batch, ``Â ← (Â − mean Â) / (std Â + 1e−8)``
  (when ``normalize_advantage`` and ``B > 1``; std with Bessel's correction, as torch);
* policy loss ``L_π = −mean(min(ρ·Â, clip(ρ, 1 − ε, 1 + ε)·Â))``;
* value loss ``L_V = mean((R̂ − V_θ(s))²)``;
* entropy ``H = mean(−Σ_a π_θ(a|s) log π_θ(a|s))``;
* loss ``L = L_π + c_V·L_V − c_H·H``.

These are Stable-Baselines3's ``PPO.train`` losses (no value clipping, its
default). :func:`ppo_loss` computes them with torch so that autograd gives
``∇_θ L``; ``tests/test_rl_ppo.py`` checks loss and gradient against an
independent numpy implementation. A non-finite loss raises :class:`NonFiniteLoss`.

:class:`~olaf.plan.workload.PPOConfig` holds the hyperparameters.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from olaf.rl.network import ActorCritic


class NonFiniteLoss(FloatingPointError):
    """The PPO loss (or its gradient) is NaN or infinite; training cannot go on from these weights."""


class Batch(NamedTuple):
    """A (mini)batch of ``B`` samples (torch tensors)."""

    obs: torch.Tensor
    """``(B, obs_dim)`` float32."""
    actions: torch.Tensor
    """``(B,)`` int64."""
    old_log_prob: torch.Tensor
    """``(B,)`` float32, ``log π_old(a|s)`` of the behaviour policy."""
    advantages: torch.Tensor
    """``(B,)`` float32, GAE advantages."""
    returns: torch.Tensor
    """``(B,)`` float32, ``Â + V_old`` (TD(λ) returns)."""


class LossParts(NamedTuple):
    """The loss and its parts (``loss`` keeps its graph; the others are floats)."""

    loss: torch.Tensor
    policy_loss: float
    value_loss: float
    entropy: float
    clip_fraction: float
    approx_kl: float


def ppo_loss(net: ActorCritic, b: Batch, clip_range: float, ent_coef: float, vf_coef: float,
             normalize_advantage: bool = True) -> LossParts:
    """``L = L_π + c_V·L_V − c_H·H`` on batch ``b`` (formulas in the module docstring).

    ``clip_fraction`` is the share of samples with ``|ρ − 1| > ε`` and ``approx_kl``
    ``mean((ρ − 1) − log ρ)`` (Stable-Baselines3's estimator), both for logging.

    Raises:
        NonFiniteLoss: the loss is NaN or ±inf.
    """
    logits, values = net(b.obs)
    log_p_all = F.log_softmax(logits, dim=-1)
    log_p = log_p_all.gather(1, b.actions.view(-1, 1)).squeeze(1)
    entropy = -(log_p_all.exp() * log_p_all).sum(-1).mean()
    adv = b.advantages
    if normalize_advantage and adv.numel() > 1:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    log_ratio = log_p - b.old_log_prob
    ratio = log_ratio.exp()
    surrogate = torch.min(ratio * adv, ratio.clamp(1 - clip_range, 1 + clip_range) * adv)
    policy_loss = -surrogate.mean()
    value_loss = F.mse_loss(values, b.returns)
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy
    if not torch.isfinite(loss):
        raise NonFiniteLoss(f"PPO loss is {loss.item()} (policy {policy_loss.item()}, value {value_loss.item()}, "
                            f"entropy {entropy.item()}): the weights or the rollout hold NaN/inf")
    with torch.no_grad():
        clip_fraction = ((ratio - 1).abs() > clip_range).float().mean().item()
        approx_kl = ((ratio - 1) - log_ratio).mean().item()
    return LossParts(loss, policy_loss.item(), value_loss.item(), entropy.item(), clip_fraction, approx_kl)

"""The actor-critic network: one trunk shared by the policy and the value head (paper §8.2).

Paper §8.2 shares parameters between the PPO policy and value networks so that
a whole model update fits one UDP packet. :class:`ActorCritic` is

* trunk: ``obs_dim → h_1 → … → h_k``, each a Linear layer and tanh;
* policy head: Linear ``h_k → n_actions`` (logits of a categorical policy);
* value head: Linear ``h_k → 1``.

Initialisation as in Stable-Baselines3's ``ActorCriticPolicy`` (orthogonal,
gain √2 in the trunk, 0.01 for the policy head, 1 for the value head, zero
biases). Its parameter count :func:`param_count` is
``Σ_i (h_{i−1} + 1)·h_i + (h_k + 1)·(n_actions + 1)`` with ``h_0 = obs_dim``;
for LunarLander-v3 (8 observations, 4 actions) the default trunk ``(24,)``
has 341 parameters (a trunk ``(32, 32)`` would have 1,509). Every parameter is one Q7.24 element of an update and
of an ACK, so the model must fit :func:`olaf.constants.max_model_elements` of
the frame: 359 in a 1500 B MTU, 2,234 in a 9000 B jumbo frame
(:func:`check_fits` raises :class:`ModelTooLarge` otherwise).

Written here rather than taken from Stable-Baselines3: its ``ActorCriticPolicy``
gives the policy and value heads separate MLPs since version 1.8 (a shared trunk
needs a custom feature extractor plus its preprocessing and distribution
objects), and the flat parameter order that the wire carries must be fixed and
documented (:mod:`olaf.rl.flat`).
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from olaf.constants import JUMBO_MTU, MTU, max_model_elements


class ModelTooLarge(ValueError):
    """The network has more parameters than an update/ACK of the frame can carry."""


def param_count(obs_dim: int, n_actions: int, hidden: Sequence[int]) -> int:
    """Number of parameters of :class:`ActorCritic` (formula in the module docstring)."""
    n, prev = 0, obs_dim
    for h in hidden:
        n += (prev + 1) * h
        prev = h
    return n + (prev + 1) * (n_actions + 1)


def check_fits(num_params: int, mtu: int) -> None:
    """Raise :class:`ModelTooLarge` unless ``num_params`` weights fit an update and an ACK of ``mtu`` bytes.

    The message states the count, the limit and, for a 1500 B MTU, whether jumbo frames would do.
    """
    limit = max_model_elements(mtu)
    if num_params <= limit:
        return
    hint = ""
    if mtu < JUMBO_MTU and num_params <= max_model_elements(JUMBO_MTU):
        hint = f"; it fits a {JUMBO_MTU} B jumbo frame (--mtu {JUMBO_MTU})"
    elif mtu == MTU or num_params > max_model_elements(JUMBO_MTU):
        hint = "; choose smaller hidden layers (--hidden)"
    raise ModelTooLarge(f"the network has {num_params} parameters but an update and its ACK in a {mtu} B MTU "
                        f"carry at most {limit} elements{hint}")


class ActorCritic(nn.Module):
    """Shared-trunk actor-critic for a flat observation and a discrete action space.

    Args:
        obs_dim: observation size (≥ 1).
        n_actions: number of discrete actions (≥ 2).
        hidden: trunk widths ``(h_1, …, h_k)`` (k ≥ 1, each ≥ 1).

    ``forward(obs)`` takes ``obs`` of shape ``(B, obs_dim)`` (float32) and returns
    ``(logits (B, n_actions), value (B,))``.
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden: Sequence[int] = (24,)) -> None:
        super().__init__()
        if obs_dim < 1 or n_actions < 2 or not hidden or min(hidden) < 1:
            raise ValueError(f"bad network shape: obs_dim={obs_dim}, n_actions={n_actions}, hidden={tuple(hidden)}")
        layers: list[nn.Module] = []
        prev = obs_dim
        for h in hidden:
            lin = nn.Linear(prev, h)
            _ortho(lin, math.sqrt(2))
            layers += [lin, nn.Tanh()]
            prev = h
        self.trunk = nn.Sequential(*layers)
        self.pi = nn.Linear(prev, n_actions)
        _ortho(self.pi, 0.01)
        self.v = nn.Linear(prev, 1)
        _ortho(self.v, 1.0)
        self.obs_dim, self.n_actions, self.hidden = obs_dim, n_actions, tuple(hidden)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.trunk(obs)
        return self.pi(z), self.v(z).squeeze(-1)

    @property
    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def _ortho(layer: nn.Linear, gain: float) -> None:
    nn.init.orthogonal_(layer.weight, gain=gain)
    nn.init.zeros_(layer.bias)

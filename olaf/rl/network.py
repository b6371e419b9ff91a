"""The actor-critic network, in one of two architectures (:data:`olaf.plan.workload.ARCHS`).

``shared`` (the default job's; paper §8.2 shares parameters between the PPO policy and value
networks so that a whole model update fits one UDP packet):

* trunk: ``obs_dim → h_1 → … → h_k``, each a Linear layer and tanh;
* policy head: Linear ``h_k → n_actions`` (logits of a categorical policy);
* value head: Linear ``h_k → 1``.

``separate`` (Stable-Baselines3's ``MlpPolicy`` since 1.8 and RLlib's default model: a user's
network): a policy MLP ``obs_dim → h_1 → … → h_k`` (tanh) with the policy head, and a value MLP
of the same widths with the value head; nothing is shared. SB3's default ``(64, 64)`` has
9,797 parameters for LunarLander-v3, RLlib's ``(256, 256)`` 137,477.

Initialisation as in Stable-Baselines3's ``ActorCriticPolicy`` (orthogonal,
gain √2 in the trunk, 0.01 for the policy head, 1 for the value head, zero
biases). Its parameter count :func:`param_count` is, with ``T = Σ_i (h_{i−1} + 1)·h_i``
and ``h_0 = obs_dim``, ``T + (h_k + 1)·(n_actions + 1)`` (shared) or
``2·T + (h_k + 1)·(n_actions + 1)`` (separate); for LunarLander-v3 (8 observations, 4 actions) the default trunk ``(24,)``
has 341 parameters (a trunk ``(32, 32)`` would have 1,509). Every parameter is one Q7.24 element of an update and
of an ACK; a model larger than :func:`olaf.constants.max_chunk_elements` of the frame (358 in a 1500 B
MTU, 2,233 in a 9000 B jumbo frame) travels as K chunks (:mod:`olaf.chunks`: SB3's 9,797
parameters are 28 chunks at 1500 B, 5 at 9000 B). :func:`check_fits` gives the chunking and raises
:class:`ModelTooLarge` only when K exceeds the wire's limit (or the MTU holds no element).

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

from olaf.chunks import Chunking, ChunkingError
from olaf.constants import MAX_CHUNKS_WIRE
from olaf.plan.workload import ARCHS


class ModelTooLarge(ValueError):
    """The network needs more chunks than allowed at the frame's MTU (or the MTU holds no element)."""


def param_count(obs_dim: int, n_actions: int, hidden: Sequence[int], arch: str = "shared") -> int:
    """Number of parameters of :class:`ActorCritic` (formula in the module docstring).

    Raises:
        ValueError: ``arch`` is not one of :data:`~olaf.plan.workload.ARCHS`.
    """
    if arch not in ARCHS:
        raise ValueError(f"arch={arch!r} must be one of {', '.join(ARCHS)}")
    n, prev = 0, obs_dim
    for h in hidden:
        n += (prev + 1) * h
        prev = h
    return n * (2 if arch == "separate" else 1) + (prev + 1) * (n_actions + 1)


def check_fits(num_params: int, mtu: int, max_chunks: int = MAX_CHUNKS_WIRE) -> Chunking:
    """The chunking of a ``num_params``-parameter network on links of ``mtu`` bytes (K = 1 when an
    update and its ACK fit one packet).

    Raises:
        ModelTooLarge: more than ``max_chunks`` chunks would be needed, or the MTU holds no element;
            the message states the count, K, the limit and the fix.
    """
    try:
        return Chunking.for_model(num_params, mtu, max_chunks=max_chunks)
    except ChunkingError as e:
        raise ModelTooLarge(f"the network has {num_params} parameters: {e}") from None


class ActorCritic(nn.Module):
    """Actor-critic for a flat observation and a discrete action space (module docstring).

    Args:
        obs_dim: observation size (≥ 1).
        n_actions: number of discrete actions (≥ 2).
        hidden: layer widths ``(h_1, …, h_k)`` (k ≥ 1, each ≥ 1) of the trunk (``shared``) or of
            each of the two MLPs (``separate``).
        arch: ``"shared"`` or ``"separate"``.

    Parameter order (the wire's element order, :mod:`olaf.rl.flat`): shared — trunk, policy head,
    value head; separate — policy MLP, value MLP, policy head, value head.

    ``forward(obs)`` takes ``obs`` of shape ``(B, obs_dim)`` (float32) and returns
    ``(logits (B, n_actions), value (B,))``.
    """

    def __init__(self, obs_dim: int, n_actions: int, hidden: Sequence[int] = (24,), arch: str = "shared") -> None:
        super().__init__()
        if obs_dim < 1 or n_actions < 2 or not hidden or min(hidden) < 1 or arch not in ARCHS:
            raise ValueError(f"bad network shape: obs_dim={obs_dim}, n_actions={n_actions}, hidden={tuple(hidden)}, "
                             f"arch={arch!r} (one of {', '.join(ARCHS)})")
        self.trunk = _mlp(obs_dim, hidden)
        self.vf_trunk = _mlp(obs_dim, hidden) if arch == "separate" else None
        self.pi = nn.Linear(hidden[-1], n_actions)
        _ortho(self.pi, 0.01)
        self.v = nn.Linear(hidden[-1], 1)
        _ortho(self.v, 1.0)
        self.obs_dim, self.n_actions, self.hidden, self.arch = obs_dim, n_actions, tuple(hidden), arch

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.trunk(obs)
        zv = z if self.vf_trunk is None else self.vf_trunk(obs)
        return self.pi(z), self.v(zv).squeeze(-1)

    @property
    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def _mlp(obs_dim: int, hidden: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    prev = obs_dim
    for h in hidden:
        lin = nn.Linear(prev, h)
        _ortho(lin, math.sqrt(2))
        layers += [lin, nn.Tanh()]
        prev = h
    return nn.Sequential(*layers)


def _ortho(layer: nn.Linear, gain: float) -> None:
    nn.init.orthogonal_(layer.weight, gain=gain)
    nn.init.zeros_(layer.bias)

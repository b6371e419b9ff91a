"""A network's parameters and gradients as one flat vector, and that vector in the wire's Q7.24.

Order: ``module.parameters()`` order (for :class:`~olaf.rl.network.ActorCritic`:
each trunk layer's weight (row-major, ``(out, in)``) then bias, then the policy
head's weight and bias, then the value head's), every tensor flattened
row-major. This order is the element order of updates and ACKs.

The vector goes on the wire as Q7.24 with :func:`olaf.fixedpoint.pack_q724`
(saturating, counted).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def get_flat_params(net: nn.Module) -> np.ndarray:
    """The parameters as one float64 vector, shape ``(num_params,)``."""
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()]).double().numpy()


def set_flat_params(net: nn.Module, flat: np.ndarray) -> None:
    """Load parameters from a vector of shape ``(num_params,)``.

    Raises:
        ValueError: wrong length.
    """
    n = sum(p.numel() for p in net.parameters())
    if flat.shape != (n,):
        raise ValueError(f"flat parameter vector has shape {flat.shape}, the network has {n} parameters")
    t = torch.as_tensor(flat)
    i = 0
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(t[i:i + p.numel()].view_as(p))
            i += p.numel()


def get_flat_grad(net: nn.Module) -> np.ndarray:
    """The ``.grad`` of every parameter as one float64 vector (zeros where a parameter has none)."""
    return torch.cat([(torch.zeros_like(p) if p.grad is None else p.grad.detach()).reshape(-1)
                      for p in net.parameters()]).double().numpy()

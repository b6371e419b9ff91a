"""What every torch integration does as an Olaf worker, once: open the client (an address, a given
client, or ``olaf launch``'s environment) and hold the model's parameters as the flat vector the
client sends (:class:`ModelParams`: adopt the global model's slices into them, the change since
the last adoption as the update direction)."""

from __future__ import annotations

import os
from typing import Any, Iterable, Optional

import numpy as np

from olaf.integrations import missing_framework

try:
    import torch
    from torch.nn.utils import parameters_to_vector, vector_to_parameters
except ImportError as _e:  # the framework is an extra: say which
    raise missing_framework(__name__, _e) from _e

from olaf.client import OlafClient
from olaf.launchenv import ENV_PS

NO_PS = ("ps=None: give the parameter server's address (ps='IP[:PORT]'), an open client=, or start the "
         "script with `olaf launch -n N -- python SCRIPT` (its environment has the PS)")
"""The error of an integration given no PS, no client and not started by ``olaf launch``."""


def launched() -> bool:
    """This process was started by ``olaf launch`` (its environment names the PS)."""
    return bool(os.environ.get(ENV_PS))


def open_client(num_params: int, ps: Any, client: Optional[OlafClient], **client_args: Any) -> tuple[OlafClient, bool]:
    """The client of a model of ``num_params`` parameters and whether the caller owns it (closes it):
    ``client`` if given (its P checked), else from ``olaf launch``'s environment when ``ps`` is None
    (:meth:`~olaf.client.OlafClient.from_env`, with ``client_args["tx"]``), else a new one at ``ps``
    with ``client_args`` (``bind``, ``mtu``, ``tx``, ``cluster_id``, ``worker_id``).

    Raises:
        ValueError: ``client`` of another P, or no PS at all (:data:`NO_PS`).
    """
    if client is not None:
        if client.num_params != num_params:
            raise ValueError(f"client has num_params={client.num_params}, the model has P={num_params}: open the "
                             "client with the model's parameter count")
        return client, False
    if ps is None:
        if not launched():
            raise ValueError(NO_PS)
        return OlafClient.from_env(num_params, tx=client_args.get("tx")), True
    return OlafClient(ps, num_params=num_params, **client_args), True


class ModelParams:
    """``params`` (a model's parameters, in ``parameters()`` order) as an Olaf worker holds them.

    Attributes:
        params: the parameters.
        num_params: P, their elements together.
        adopted_slices: ACK slices adopted so far.
    """

    def __init__(self, params: Iterable[torch.Tensor]) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("model has no parameters")
        self.num_params = int(parameters_to_vector(self.params).numel())
        self.adopted_slices = 0
        self._start: Optional[torch.Tensor] = None

    def vector(self) -> np.ndarray:
        """The parameters now, flat, shape ``(P,)`` (a copy)."""
        return parameters_to_vector(self.params).detach().cpu().numpy()

    def adopt(self, client: OlafClient) -> int:
        """Load the global model's slices that arrived since the last adoption into the parameters
        and measure the next update from here; the slices loaded."""
        got = client.adopt(self.vector)
        if got.weights is not None:
            with torch.no_grad():
                vector_to_parameters(torch.as_tensor(got.weights, dtype=self.params[0].dtype,
                                                     device=self.params[0].device), self.params)
            self.adopted_slices += got.slices
        self._start = parameters_to_vector(self.params).detach().cpu().clone()
        return got.slices if got.weights is not None else 0

    @property
    def adopted(self) -> bool:
        """:meth:`adopt` has run (there is a start to measure a change from)."""
        return self._start is not None

    def change(self) -> np.ndarray:
        """What the parameters changed since the last adoption, shape ``(P,)``: the update direction
        (``olaf worker``'s ``--update delta``).

        Raises:
            RuntimeError: before the first :meth:`adopt`.
        """
        if self._start is None:
            raise RuntimeError("no adoption yet: adopt() first")
        return (parameters_to_vector(self.params).detach().cpu() - self._start).numpy()

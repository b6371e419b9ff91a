"""The contract between ``olaf launch`` and the workers it starts: environment variables and the
rendezvous that gives the PS the model's size before it starts.

``olaf launch -n N -- CMD`` (:mod:`olaf.launch`) starts N copies of CMD, each with:

=====================  ==========================================================================
``OLAF_PS``            the PS, ``IP:PORT``
``OLAF_BIND``          this worker's own address, ``IP`` (its ACKs arrive on the ACK port there)
``OLAF_RANK``          0..N−1
``OLAF_WORLD_SIZE``    N
``OLAF_CLUSTER_ID``    this worker's cluster (its rank: without a switch every worker is its own)
``OLAF_WORKER_ID``     rank + 1
``OLAF_MTU``           the links' MTU, bytes (updates travel in K chunks of it)
``OLAF_LAUNCH_DIR``    the rendezvous directory
=====================  ==========================================================================

The PS needs the model's parameter count P (with the MTU it fixes K) before the first update
arrives, and only the training script knows it. So the PS starts after the first worker has
told it (:func:`register_model`): each worker's :meth:`olaf.client.OlafClient.from_env` writes
``model.<rank>.json`` (``{"num_params": P, "mtu": MTU}``) into ``OLAF_LAUNCH_DIR`` and waits
for ``ps.ready`` (the P and MTU the PS was started with); the launcher starts the PS with the
first file's P and refuses a later worker whose P differs (naming both). An INIT cannot carry P
itself: a chunk carries K and L only (``docs/protocol.md``).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from olaf.rundir.atomic import write_json

ENV_PS = "OLAF_PS"
ENV_BIND = "OLAF_BIND"
ENV_RANK = "OLAF_RANK"
ENV_WORLD_SIZE = "OLAF_WORLD_SIZE"
ENV_CLUSTER_ID = "OLAF_CLUSTER_ID"
ENV_WORKER_ID = "OLAF_WORKER_ID"
ENV_MTU = "OLAF_MTU"
ENV_LAUNCH_DIR = "OLAF_LAUNCH_DIR"
REQUIRED = (ENV_PS, ENV_BIND, ENV_RANK, ENV_WORLD_SIZE, ENV_MTU, ENV_LAUNCH_DIR)

READY_FILE = "ps.ready"
"""What the launcher writes once the PS listens: ``{"num_params": P, "mtu": MTU}``."""
RENDEZVOUS_S = 120.0
"""How long a worker waits for the PS by default, s: a hang guard (the launcher starts the PS
within seconds of the first worker's model file)."""


class LaunchEnvError(RuntimeError):
    """The process was not started by ``olaf launch`` (a variable missing or bad: the message names
    it), or the launch's PS was started for another model."""


def model_file(launch_dir: Path, rank: int) -> Path:
    """Where worker ``rank`` writes its model's size."""
    return launch_dir / f"model.{rank}.json"


@dataclass(frozen=True)
class LaunchEnv:
    """This worker's place in a launch (module docstring)."""

    ps: str
    bind: str
    rank: int
    world_size: int
    cluster_id: int
    worker_id: int
    mtu: int
    launch_dir: Path

    @classmethod
    def read(cls, environ: Optional[Mapping[str, str]] = None) -> LaunchEnv:
        """The launch's variables from ``environ`` (default ``os.environ``).

        Raises:
            LaunchEnvError: a variable missing (all missing: not started by ``olaf launch``) or not a
                number where one is needed.
        """
        env = os.environ if environ is None else environ
        missing = [k for k in REQUIRED if not env.get(k)]
        if missing:
            raise LaunchEnvError(f"{', '.join(missing)} not set: start this script with `olaf launch -n N -- "
                                 "python SCRIPT` (or give the client its PS address and bind address yourself)")
        try:
            rank = int(env[ENV_RANK])
            return cls(ps=env[ENV_PS], bind=env[ENV_BIND], rank=rank, world_size=int(env[ENV_WORLD_SIZE]),
                       cluster_id=int(env.get(ENV_CLUSTER_ID, rank)), worker_id=int(env.get(ENV_WORKER_ID, rank + 1)),
                       mtu=int(env[ENV_MTU]), launch_dir=Path(env[ENV_LAUNCH_DIR]))
        except ValueError as e:
            raise LaunchEnvError(f"a launch variable is not an integer ({e}): start the script with `olaf launch`") \
                from None


def register_model(env: LaunchEnv, num_params: int, wait_s: float = RENDEZVOUS_S) -> None:
    """Tell the launcher this worker's model size and wait until the PS is up for it.

    Raises:
        LaunchEnvError: the PS was started for another P or MTU (another worker's model came
            first: every worker of a launch trains the same model), or it was not up within
            ``wait_s`` (the launcher's output says why).
    """
    write_json(model_file(env.launch_dir, env.rank), {"num_params": int(num_params), "mtu": env.mtu})
    ready = env.launch_dir / READY_FILE
    deadline = time.monotonic() + wait_s
    while not ready.exists():
        if time.monotonic() > deadline:
            raise LaunchEnvError(f"the launch's PS was not up within {wait_s:g} s ({ready} missing): see the "
                                 "launcher's output")
        time.sleep(0.05)
    got = json.loads(ready.read_text())
    if (got["num_params"], got["mtu"]) != (int(num_params), env.mtu):
        raise LaunchEnvError(f"rank {env.rank}'s model has P={num_params} parameters at MTU {env.mtu}, but the "
                             f"launch's PS was started for P={got['num_params']} at MTU {got['mtu']} (the first "
                             "worker's model): every worker of a launch must train the same model")

"""The PS's checkpoint: its global model's whole state in one file, written atomically.

``<name>.checkpoint.npz`` beside the PS's log (``numpy.savez``; every entry an array):

* ``format`` — :data:`CHECKPOINT_FORMAT`;
* ``t_ns`` — when it was written (``CLOCK_REALTIME`` ns);
* ``updates`` — update messages the PS had received (an aggregate is one);
* ``worker_updates`` — worker updates in them (Σ ``count``);
* ``updates`` and ``worker_updates`` count chunk 0's messages when the model travels in K > 1
  chunks (every chunk of an update is a message; chunk 0 stands for the update, as in the
  training monitor);
* the model's state per slice (:meth:`olaf.hosts.global_model.GlobalModel.state`): ``weights``
  (``(P,)`` float64), ``avg_grad``, ``adam_m``, ``adam_v`` (``(P,)`` or empty), ``avg_grad_set``
  (``(K,)``, the slices with a ``g_a``), ``reward`` (``(K, 2)``: per slice ``(reward_sum Q15.16,
  count)`` of ``r_g``, count 0 for −∞), ``accepted`` (``(K,)``, chunks applied per slice),
  ``applied`` (``(K,)``, worker updates in them: each slice's step-size schedule position),
  ``num_chunks`` and ``chunk_len`` (K and L).

Format 1 (before chunks) held one slice with a scalar ``r_g`` and counts; it is still read (as
``K = 1``).

The PS writes it every ``checkpoint_s`` seconds and when it stops (SIGTERM included); a PS
started with ``--resume`` continues from it (workers' INITs are then answered with its weights).
The evaluator of the global model (:mod:`olaf.training.evaluator`) reads it while the PS runs:
the file is always whole (:func:`olaf.rundir.atomic.write_bytes_atomic`).
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from olaf.rundir.atomic import write_bytes_atomic

CHECKPOINT_FORMAT = 2
"""Version of the checkpoint's layout (2: per-slice state)."""
READABLE_FORMATS = (1, 2)
"""Layouts :func:`read_checkpoint` accepts (1: the whole model as one slice)."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be read (missing, not an npz, another format, inconsistent)."""


@dataclass(frozen=True)
class Checkpoint:
    """A PS checkpoint (module docstring)."""

    t_ns: int
    updates: int
    worker_updates: int
    state: dict[str, np.ndarray]

    @property
    def weights(self) -> np.ndarray:
        """The global weights, shape ``(P,)`` float64."""
        return self.state["weights"]


def write_checkpoint(path: Path, state: dict[str, np.ndarray], t_ns: int, updates: int, worker_updates: int) -> Path:
    """Write ``state`` (:meth:`GlobalModel.state <olaf.hosts.global_model.GlobalModel.state>`) and the
    counts to ``path`` atomically. Raises OSError as :func:`~olaf.rundir.atomic.write_bytes_atomic`."""
    buf = io.BytesIO()
    arrays: dict[str, np.ndarray] = {"format": np.array(CHECKPOINT_FORMAT), "t_ns": np.array(t_ns, dtype=np.int64),
                                     "updates": np.array(updates, dtype=np.int64),
                                     "worker_updates": np.array(worker_updates, dtype=np.int64), **state}
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return write_bytes_atomic(path, buf.getvalue())


def read_checkpoint(path: Path) -> Checkpoint:
    """Read a checkpoint written by :func:`write_checkpoint`.

    Raises:
        CheckpointError: the file is missing, not a checkpoint, of another format, or lacks an entry.
    """
    if Path(path).exists() and not zipfile.is_zipfile(path):
        raise CheckpointError(f"{path}: not a PS checkpoint (not an .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise CheckpointError(f"{path}: not a PS checkpoint ({e})") from None
    try:
        fmt = int(d.pop("format"))
        if fmt not in READABLE_FORMATS:
            raise CheckpointError(f"{path}: checkpoint format {fmt}, this Olaf reads "
                                  f"{', '.join(map(str, READABLE_FORMATS))}")
        return Checkpoint(t_ns=int(d.pop("t_ns")), updates=int(d.pop("updates")),
                          worker_updates=int(d.pop("worker_updates")), state=d)
    except KeyError as e:
        raise CheckpointError(f"{path}: the checkpoint has no {e.args[0]!r}") from None

"""The PS's checkpoint: its global model's whole state in one file, written atomically.

``<name>.checkpoint.npz`` beside the PS's log (``numpy.savez``; every entry an array):

* ``format`` — :data:`CHECKPOINT_FORMAT`;
* ``t_ns`` — when it was written (``CLOCK_REALTIME`` ns);
* ``updates`` — update messages the PS had received (an aggregate is one);
* ``worker_updates`` — worker updates in them (Σ ``count``);
* the model's state (:meth:`olaf.hosts.global_model.GlobalModel.state`): ``weights`` (``(G,)``
  float64), ``avg_grad``, ``adam_m``, ``adam_v`` (``(G,)`` or empty), ``reward``
  (``(reward_sum Q15.16, count)`` of ``r_g``, empty for −∞), ``accepted`` (updates applied) and
  ``applied`` (worker updates in them: the step-size schedule's position).

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

CHECKPOINT_FORMAT = 1
"""Version of the checkpoint's layout."""


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
        """The global weights, shape ``(G,)`` float64."""
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
        if fmt != CHECKPOINT_FORMAT:
            raise CheckpointError(f"{path}: checkpoint format {fmt}, this Olaf reads {CHECKPOINT_FORMAT}")
        return Checkpoint(t_ns=int(d.pop("t_ns")), updates=int(d.pop("updates")),
                          worker_updates=int(d.pop("worker_updates")), state=d)
    except KeyError as e:
        raise CheckpointError(f"{path}: the checkpoint has no {e.args[0]!r}") from None

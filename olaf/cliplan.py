"""The command-line options that ``olaf run``/``olaf compare`` and ``olaf train`` share: one
definition of each (name, range, default, help), taken from the run plan's shared models
(:mod:`olaf.plan.topology`) and the backends' options, so the commands cannot drift apart.

Each command adds its own options beside these (``olaf run``: the emulation's load and
queues; ``olaf train``: the PPO job).
"""

from __future__ import annotations

from pathlib import Path

import click

from olaf.bmv2 import BMV2_LOG_LEVEL, BMV2_LOG_LEVELS
from olaf.constants import SEGMENTS
from olaf.paths import build_dir
from olaf.plan.topology import (
    DEFAULT_CLUSTERS,
    DEFAULT_QUEUE_SIZES,
    DEFAULT_WORKERS_PER_CLUSTER,
    MAX_CLUSTERS_PER_SWITCH,
    MAX_WORKERS_PER_CLUSTER,
    TOPOLOGIES,
)


def plan_options(f):
    """``--topo``, ``--clusters``, ``--workers-per-cluster``, ``--workers-per-host``, ``--queue-size``,
    ``--tc``, ``--seed``, ``--bmv2-log-level``, ``--build``, ``--results``."""
    root_q = DEFAULT_QUEUE_SIZES["tor"]["s1"]
    opts = [
        click.option("--topo", default="tor", show_default=True, type=click.Choice(TOPOLOGIES),
                     help="tor: one switch; multihop: paper Fig. 9 (s1, s2 -> s3 -> PS)."),
        click.option("--clusters", default=DEFAULT_CLUSTERS, show_default=True,
                     type=click.IntRange(1, MAX_CLUSTERS_PER_SWITCH), help="Clusters (multihop: per edge switch)."),
        click.option("--workers-per-cluster", default=DEFAULT_WORKERS_PER_CLUSTER, show_default=True,
                     type=click.IntRange(1, MAX_WORKERS_PER_CLUSTER)),
        click.option("--workers-per-host", default=1, show_default=True, type=click.IntRange(1, MAX_WORKERS_PER_CLUSTER),
                     help="A cluster's workers share a host (one address and switch port) in runs of this many, "
                          "each with its own UDP port: the switch tells them apart by the five-tuple (paper §7; "
                          "mininet backend)."),
        click.option("--queue-size", type=click.IntRange(1, SEGMENTS),
                     help=f"Q_max of the switch attached to the PS, updates (K segments each for a model in K "
                          f"chunks) [default: the topology's, {root_q}]."),
        click.option("--tc/--no-tc", default=False, show_default=True, help="Worker transmission control (paper §5)."),
        click.option("--seed", default=1, show_default=True, type=int),
        click.option("--bmv2-log-level", default=BMV2_LOG_LEVEL, show_default=True,
                     type=click.Choice(BMV2_LOG_LEVELS), help="Log level of the BMv2 switches (logs/<switch>.log.txt)."),
        click.option("--build", type=click.Path(file_okay=False, path_type=Path), default=build_dir(),
                     show_default=True, help="The P4 build outputs (make build)."),
        click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
                     show_default=True),
    ]
    for o in reversed(opts):
        f = o(f)
    return f

"""The topologies a run plan names (paper §8): their switches, edges and the path toward the PS.

* ``tor`` — every cluster behind one switch ``s1`` attached to the PS (the §8.1 testbed);
* ``multihop`` — paper Fig. 9: edge switches ``s1`` and ``s2``, both uplinked to the core
  ``s3``, which connects the PS.

The one definition of these shapes: the run plan validates against it, the Mininet
builders (:mod:`olaf.topologies.build`) and the simulation (:mod:`olaf.sim.topology`) build it.
"""

from __future__ import annotations

from typing import Optional

from olaf.constants import DEFAULT_QUEUE_SIZE as QUEUE_SIZE

TOPOLOGIES = ("tor", "multihop")
SWITCHES = {"tor": ("s1",), "multihop": ("s1", "s2", "s3")}
EDGE_SWITCHES = {"tor": ("s1",), "multihop": ("s1", "s2")}
PARENT: dict[str, dict[str, Optional[str]]] = {"tor": {"s1": None}, "multihop": {"s1": "s3", "s2": "s3", "s3": None}}
"""The next switch toward the PS (None: the switch attached to the PS)."""
EDGE_QUEUE_SIZE = 5
"""Q_max of the multihop edge switches s1, s2 (paper §8.3), segments."""
DEFAULT_QUEUE_SIZE = {"tor": {"s1": QUEUE_SIZE}, "multihop": {"s1": EDGE_QUEUE_SIZE, "s2": EDGE_QUEUE_SIZE, "s3": QUEUE_SIZE}}
"""Q_max of every switch by topology, segments: paper §8.1 (8) and §8.3 (SW1/SW2 5, SW3 8)."""
MAX_CLUSTERS_PER_SWITCH = 250
"""Clusters behind one edge switch of an emulated network (worker addressing 10.0.x.y)."""
MAX_WORKERS_PER_CLUSTER = 16
"""Workers of one cluster in an emulated network (the ACK multicast group's replicas)."""

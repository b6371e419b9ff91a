"""Olaf control plane (import name ``olaf.controller``).

One module per P4 control, each owning that control's tables
(``p4src/include/<control>.p4`` ↔ ``controller/<module>.py``):

* :mod:`.forwarding` — ``Ipv4Forwarding`` (``ipv4_lpm``)
* :mod:`.workers` — ``UpdateIdentifier`` (``worker_table``)
* :mod:`.params` — ``OlafParams`` (``olaf_params``: queue size, reward threshold, …)
* :mod:`.clusters` — ``AckMulticast`` (``cluster_mcast``, PRE groups, ``ack_rewrite``)
* :mod:`.counters` — the per-decision / per-cluster counters
* :mod:`.tm` — traffic-manager queue rate and depth (BMv2 Thrift, not P4Runtime)

:mod:`.p4rt` holds the P4Runtime connection.
"""

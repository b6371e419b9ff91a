"""Olaf control plane (import name ``olaf.controller``).

One module per P4 control, each owning that control's tables for write and read
(``p4src/include/<control>.p4`` ↔ ``controller/<module>.py``):

* :mod:`.forwarding` — ``Ipv4Forwarding`` (``ipv4_lpm``)
* :mod:`.update_identifier` — ``UpdateIdentifier`` (``worker_table``)
* :mod:`.olaf_params` — ``OlafParams`` (``olaf_params``: queue size, reward threshold, …)
* :mod:`.ack_multicast` — ``AckMulticast`` and ``AckReplicaRewrite`` (``cluster_mcast``, PRE
  multicast groups, ``ack_rewrite``)
* :mod:`.counters` — the per-decision / per-cluster / malformed / traffic / egress counters
* :mod:`.tm` — traffic-manager queue rate and depth (BMv2 Thrift, not P4Runtime)

:mod:`.p4rt` holds the P4Runtime connection, :mod:`.config` the deployment file,
:mod:`.state` the desired state of each switch, :mod:`.controller` the read-diff-write
sync over all switches and :mod:`.cli` the ``olafctl`` command.
"""

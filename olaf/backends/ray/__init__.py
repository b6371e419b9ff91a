"""The ``ray`` backend (:class:`~olaf.backends.ray.backend.RayBackend`): the mininet backend's
network — BMv2 switches with the OlafQueue extern, the P4Runtime controller, the PS — with every
worker inside a Ray actor (Ray Core, ``ray`` extra, pinned to :data:`olaf.rl.extra.RAY_VERSION`).

On one machine the Ray cluster (GCS, raylet, the actor processes) runs in the root network
namespace (:class:`~olaf.backends.ray.cluster.LocalRayHead`), so none of Ray's own traffic crosses BMv2. Each worker runs
in a thread of its actor that first joins its Mininet host's network namespace
(:func:`olaf.netns.join_netns` on ``/proc/<host pid>/ns/net``) and then opens its Olaf socket
there: only Olaf updates and ACKs cross the switch, with the identity of the host (address, and
the UDP port of :attr:`~olaf.plan.topology.LayoutHost.udp_port`). A worker is the same
:class:`olaf.hosts.worker.Worker` an ``olaf worker`` process runs (same log, summary, report);
``workers_per_actor`` of them share an actor process (:class:`~olaf.backends.base.BackendOptions`), each actor
asking Ray for an equal share of the machine's CPUs (Ray's default of one CPU per actor would
schedule only as many actors as cores). The Ray cluster is started for the run and stopped by
its process group (:class:`~olaf.backends.ray.cluster.RayProcesses`); ``ray stop``, which kills every Ray process on the
machine, is never used.

Modules: :mod:`~olaf.backends.ray.cluster` (Ray and its cluster of the run),
:mod:`~olaf.backends.ray.actors` (the workers' actors and their launcher),
:mod:`~olaf.backends.ray.driver` (a job of RLlib learners as one RLlib algorithm) and
:mod:`~olaf.backends.ray.backend` (the backend).
"""

"""The worker side of the Olaf protocol as a library: :class:`OlafClient`.

Modules: :mod:`olaf.client.core` (the client), :mod:`olaf.client.events` (its event hooks),
:mod:`olaf.client.log` (a worker log for any client, :class:`~olaf.client.log.ClientRecorder`).

Any training loop (Stable-Baselines3, CleanRL, RLlib, a hand-written one) can speak Olaf
through this module: it sends model updates to a parameter server (PS), receives the PS's ACKs
(multicast to the cluster by an Olaf switch, carrying the global weights and the switch's queue
status) and runs transmission control (paper §5). ``olaf worker`` (:mod:`olaf.hosts.worker`) is
one user of it; ``docs/client.md`` is the guide, with a complete Stable-Baselines3 loop.

What it does for a caller:

* **INIT** (:meth:`OlafClient.init`): sends the initial weights (flag INIT, ``seq`` 0; paper
  §2.1) as K INIT chunks and repeats, until every slice of the global model has come back in an
  ACK at least once (the model is *acked*), only the chunks whose slices have not come back, with
  randomised exponential back-off (:func:`init_retry_delay_s`: ``init_retry_s``, twice that, …
  up to ``init_retry_max_s``, each stretched by a random factor in [1, 1.5); RFC 8085 §3.1.3 asks
  a UDP sender's retransmissions to back off, RFC 7252 §4.8 randomises them so). A fixed period
  with every chunk would flood a slow bottleneck: 27 workers' INITs of K = 28 chunks are 756
  packets, 18 s of a 42-packet/s link, repeated every second. Without the random factor the
  workers that started together repeat together, in the same order every time, and a tail-drop
  queue loses the same workers' chunks at the end of each burst.
* **Push** (:meth:`OlafClient.push`): folds the caller's update direction and mean episode
  reward into the experience collected since the last sent update (sample-weighted mean
  direction, episode-weighted mean reward: :class:`olaf.experience.Experience`), asks
  transmission control (:class:`olaf.txcontrol.TransmissionControl`) whether to send,
  and if so packs the folded direction as Q7.24 (saturated and counted, never wrapped) and the
  reward as Q15.16, splits it into the deployment's K chunks (:class:`olaf.chunks.Chunking`)
  and sends all K datagrams with one ``seq`` and ``gen_ts``. A skipped push is not lost: it is
  folded into the next one that is sent.
* **ACKs**: with K = 1 every ACK is an *ACK event*; with K > 1 the event is the first ACK
  slice answering an update (one ``(worker_id, seq, gen_ts)``, of any worker of the cluster;
  ``docs/hosts.md`` "Chunks at the worker"). An ACK event restarts transmission control's
  ``Δ̂`` timer; every slice's queue status (if STATUS_VALID) becomes the latest status; every
  slice's weights are stored. An ACK whose ``(seq, gen_ts)`` is one of this client's sent
  updates is *own*: it tells the client its switch-assigned cluster and worker ids. An ACK of
  another model size (K or slice length) is counted and ignored; a malformed one, or any
  datagram that does not come from the PS's address, is counted and dropped.
* **Adoption** (:meth:`OlafClient.adopt`, :meth:`OlafClient.latest_weights`): weights are
  only ever handed over when the caller asks, so a training iteration is never preempted
  (paper §8.2).

**Threading.** By default (``background=True``) a daemon thread receives the ACKs: a training
framework's ``learn()`` call blocks for seconds in code that cannot be interrupted, and
meanwhile ACKs must be taken off the socket (K slices per update per worker of the cluster
would otherwise fill the kernel's receive buffer), stamped with their real arrival time (``Δ̂``
is the time since the last ACK event, not since the caller got round to reading it) and INITs
must be repeated. The caller only *reads* what the thread collected, between its iterations.
The thread keeps only what adoption needs, the newest slice of every chunk (memory bounded by K
slices however many answers arrive during an iteration: a slice replaced before it was adopted is
counted in ``slices_superseded``, apart from what the kernel dropped, ``socket_drops``), so a
caller busy for any length of time loses no answer to a full receive buffer
(``docs/reliability.md``). Every piece of shared state is guarded by one lock; the counters of
:meth:`OlafClient.stats` are a consistent snapshot. With ``background=False`` there is no thread: datagrams are received
only inside :meth:`OlafClient.wait_until` (and the ``wait_for_*``/:meth:`OlafClient.poll`
helpers) — for a single-threaded process that owns its timeline, as ``olaf worker`` does.

**Age of the model (AoM) at the client.** Paper §2.2 defines the AoM at the PS as the time
since the generation of the latest update it received, a sawtooth that jumps, on each
reception, to the age of that update. The client's view (:attr:`ClientStats.aom_ms`): the time
since the ``gen_ts`` of the newest update reflected in the global weights it holds, i.e. in
the ACKs whose weights it stored (an ACK carries the PS's weights after it processed the
update whose ``gen_ts`` it echoes; a rejected update counts as received, as in the paper's
PS-side AoM). With K slices it is the oldest slice's value: the newest update reflected in
*every* slice. It exceeds the PS's AoM by the ACK's path delay; it is None until every slice
has arrived once.

Units: times are ``CLOCK_REALTIME`` ns on the wire and in ``gen_ts``; seconds (float) in this
API's arguments; ms in :class:`ClientStats`. Weights and directions are float vectors of
``num_params`` (P) elements, Q7.24 on the wire (range [−128, 128), resolution 2⁻²⁴); rewards
are Q15.16 on the wire (range [−32768, 32768), resolution 2⁻¹⁶).
"""

from olaf.client.core import (
    INIT_RETRY_MAX_S,
    INIT_RETRY_RANDOM_FACTOR,
    INIT_RETRY_S,
    RECV_BUF,
    RECV_POLL_S,
    SENT_MEMORY,
    Adoption,
    ClientStats,
    ModelRefused,
    ModelTimeout,
    OlafClient,
    OlafError,
    PushResult,
    VectorLike,
    as_vector,
    endpoint,
    init_retry_delay_s,
    init_retry_interval_s,
)
from olaf.client.events import AckKey, ClientEvents

__all__ = ["INIT_RETRY_MAX_S", "INIT_RETRY_RANDOM_FACTOR", "INIT_RETRY_S", "RECV_BUF", "RECV_POLL_S", "SENT_MEMORY",
           "AckKey", "Adoption", "ClientEvents", "ClientStats", "ModelRefused", "ModelTimeout", "OlafClient", "OlafError",
           "PushResult", "VectorLike", "as_vector", "endpoint", "init_retry_delay_s", "init_retry_interval_s"]

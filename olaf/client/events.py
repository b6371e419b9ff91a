"""The hooks of an :class:`~olaf.client.OlafClient`'s protocol events (:class:`ClientEvents`):
``olaf worker`` and :class:`~olaf.client.log.ClientRecorder` write worker logs from them."""

from __future__ import annotations

from typing import Any, Optional

from olaf.wire import Ack

AckKey = tuple[int, int, int]
"""An ACK's ``(worker_id, seq, gen_ts)``: the update it answers (the PS's log has the update's
record under the same key, so the global model's version an ACK carries can be found there)."""


class ClientEvents:
    """Hooks into a client's protocol events (``olaf worker`` writes its log from them).

    The client calls them with its lock held, in the order the events happen (from the receive
    thread, or inside a wait with ``background=False``); they must return quickly. The default
    methods do nothing.
    """

    def init_sent(self, t_ns: int, retry: bool) -> None:
        """An INIT was sent at ``t_ns`` (``retry``: a repetition, of the chunks whose slices had not come back)."""

    def ack(self, t_ns: int, ack: Ack, own: bool) -> None:
        """An ACK of this deployment's model size arrived at ``t_ns`` (``own``: it answers this client's update)."""

    def malformed(self, t_ns: int, length: int, reason: str) -> None:
        """A datagram of ``length`` bytes from the PS's address did not decode as an ACK (``reason``)."""

    def pushed(self, result: Any, adopted_slices: int, base: Optional[AckKey]) -> None:
        """:meth:`OlafClient.push` returned ``result`` (a :class:`~olaf.client.PushResult`);
        ``adopted_slices``: ACK slices the caller adopted since the previous push, ``base``: the ACK
        of the newest slice 0 adopted so far."""

    def closed(self, stats: Any) -> None:
        """The client was closed; ``stats``: its final counters (:class:`~olaf.client.ClientStats`)."""

"""An Olaf parameter server in this process, for notebooks and tests: :func:`serve`.

    from olaf.ps import serve
    with serve("127.0.0.1", num_params=P, step="sgd", lr=1.0) as ps:   # listening on return
        ...                                # clients (OlafClient, the integrations) train against it
    print(ps.summary["accepted"])          # the PS's summary, as `olaf ps` writes it

The same :class:`~olaf.hosts.ps.ParameterServer` as ``olaf ps`` (its rule, modes, trust checks,
log and summary), run in a daemon thread until the ``with`` block ends. ``olaf ps`` is the
process form; ``olaf launch`` starts one for a script.
"""

from __future__ import annotations

import tempfile
import threading
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterator, Optional

from olaf.hosts.ps import ParameterServer, PsConfig

__all__ = ["RunningPs", "serve"]

READY_S = 30.0
"""Hang guard: the PS's socket is bound and its log open within this long, s."""


class RunningPs:
    """A PS serving in a thread (:func:`serve`): ``server`` the
    :class:`~olaf.hosts.ps.ParameterServer`, ``address`` its ``(ip, port)``, ``log_path`` its log;
    ``summary`` its summary (a :class:`~olaf.rundir.records.PsSummary` as a dict) once stopped."""

    def __init__(self, server: ParameterServer) -> None:
        self.server = server
        self.address = (server.cfg.bind_ip, server.cfg.port)
        self.log_path = server.cfg.log_path
        self.summary: Optional[dict[str, Any]] = None
        self.error: Optional[BaseException] = None


@contextmanager
def serve(bind: str = "127.0.0.1", *, out_dir: Optional[Path | str] = None, **config: Any) -> Iterator[RunningPs]:
    """Run a PS at ``bind`` (port 50100) until the block ends.

    Args:
        bind: the PS's IPv4 address.
        out_dir: where its log and summary go (default: a temporary directory, removed after).
        config: :class:`~olaf.hosts.ps.PsConfig` fields (``num_params``, ``mtu``, ``step``, ``lr``,
            ``gate``, ``modes``, ``trust``, ``port``, …).

    Raises:
        ValueError: an unknown config field (named, with the accepted ones), or a bad value.
        OSError: ``bind`` cannot be bound (the message names it).
        RuntimeError: the PS failed while serving (raised when the block ends).
    """
    known = {f.name for f in fields(PsConfig)} - {"bind_ip", "out_dir"}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(f"unknown PS setting(s) {', '.join(unknown)}; use PsConfig's: {', '.join(sorted(known))}")
    tmp = tempfile.TemporaryDirectory(prefix="olaf-ps-") if out_dir is None else None
    try:
        cfg = PsConfig(bind_ip=bind, out_dir=Path(tmp.name if tmp is not None else out_dir), **config)  # type: ignore[arg-type]
        stop = threading.Event()
        server = ParameterServer(cfg, stop)
        running = RunningPs(server)

        def body() -> None:
            try:
                running.summary = server.run()
            except BaseException as e:  # noqa: BLE001 (handed to the caller when the block ends)
                running.error = e

        thread = threading.Thread(target=body, name=f"olaf-ps-{bind}", daemon=True)
        thread.start()
        if not server.ready.wait(READY_S):
            stop.set()
            raise RuntimeError(f"the PS at {bind} did not start within {READY_S:g} s")
        try:
            yield running
        finally:
            stop.set()
            thread.join()
        if running.error is not None:
            raise RuntimeError(f"the PS at {bind} failed: {running.error}") from running.error
    finally:
        if tmp is not None:
            tmp.cleanup()

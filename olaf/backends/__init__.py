"""The backends that run a :class:`~olaf.plan.plan.RunPlan`, by name.

=========  =============================================================================
``local``  real ``olaf ps`` / ``olaf worker`` processes over loopback UDP, no switch (the
           ideal network: the reference of a training job)
``mininet`` Mininet + BMv2 switches with the OlafQueue extern, the P4Runtime controller and
           the same host processes (root, the P4 toolchain)
``ns3``    the ns-3 simulation: the OlafQueue core as a QueueDisc, synthetic C++ workers
           (paper scale, deterministic per seed)
``ray``    the mininet backend's network with the workers as Ray actors, each joined to its
           Mininet host's network namespace (the ``ray`` extra)
=========  =============================================================================

Adding a backend is one module with a class that follows :class:`~olaf.backends.base.Backend`
and one line in :data:`REGISTRY` (``docs/architecture.md``). Backends are imported when
asked for, so listing them needs neither Mininet nor ns-3.
"""

from __future__ import annotations

import importlib

from olaf.backends.base import Backend, BackendOptions

REGISTRY: dict[str, str] = {
    "local": "olaf.backends.local:LocalBackend",
    "mininet": "olaf.backends.mininet:MininetBackend",
    "ns3": "olaf.backends.ns3:Ns3Backend",
    "ray": "olaf.backends.ray.backend:RayBackend",
}
"""Backend name → ``module:class``."""


def names() -> tuple[str, ...]:
    """The registered backends' names."""
    return tuple(REGISTRY)


def get(name: str, options: BackendOptions | None = None) -> Backend:
    """The backend ``name`` with ``options``.

    Raises:
        ValueError: no backend of that name (the message lists them).
        TypeError: the registered class does not follow :class:`~olaf.backends.base.Backend`.
    """
    target = REGISTRY.get(name)
    if target is None:
        raise ValueError(f"unknown backend {name!r}; use one of {', '.join(REGISTRY)}")
    module, cls = target.split(":")
    backend = getattr(importlib.import_module(module), cls)(options or BackendOptions())
    if not isinstance(backend, Backend):  # its attributes: the methods are abstract in Backend
        missing = [m for m in ("name", "description", "options", "mtu", "max_mtu") if not hasattr(backend, m)]
        raise TypeError(f"backend {name!r} ({target}) does not follow olaf.backends.base.Backend: it has no "
                        f"{', '.join(missing)}")
    return backend

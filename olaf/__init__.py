"""Olaf: in-network acceleration for asynchronous distributed reinforcement learning.

Subpackages and modules:

* :mod:`olaf.wire` — the wire format (scapy layers), :mod:`olaf.update`, :mod:`olaf.fixedpoint`;
* :mod:`olaf.queue_model` — the OlafQueue reference model; :mod:`olaf.vectors` — its test vectors;
* :mod:`olaf.aom` — Age-of-Model metrics.
"""

__version__ = "0.1.0"

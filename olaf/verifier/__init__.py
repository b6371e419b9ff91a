"""Static AoM verifier (paper §6, appendix §12.2–12.3).

Takes cluster and engine parameters plus the peak-AoM fairness query and answers
*verified* or *violated, with a counterexample* that an executable replay through
the reference OlafQueue confirms. Modules, one concern each:

* :mod:`~olaf.verifier.config` — the input (YAML/JSON), validated with named fields;
* :mod:`~olaf.verifier.sendrule` — the worker's send rule (paper §5) as the verifier uses it;
* :mod:`~olaf.verifier.model` — the Z3 encoding and the solver call;
* :mod:`~olaf.verifier.replay` — the discrete-event replay (the executable cross-check);
* :mod:`~olaf.verifier.report` — counterexample traces: JSON, table, plot;
* :mod:`~olaf.verifier.api` — :func:`verify` and the admission call :func:`may_join`.

Needs the ``verify`` extra (z3-solver). The encoding and its semantic choices are
documented in docs/verifier.md.
"""

from olaf.verifier.api import Verdict, may_join, verify
from olaf.verifier.config import Cluster, ConfigError, Engine, Query, Transmission, VerifyConfig, load

__all__ = ["Cluster", "ConfigError", "Engine", "Query", "Transmission", "Verdict", "VerifyConfig",
           "load", "may_join", "verify"]

"""OlafQueue test vectors (``docs/vectors.md``): the format and replay
(:mod:`olaf.vectors.format`), the trace builder (:mod:`olaf.vectors.builder`) and the
committed corpus (:mod:`olaf.vectors.corpus`)."""

from olaf.vectors.builder import TraceBuilder
from olaf.vectors.corpus import CURATED, RANDOM_SET, all_traces, curated, random_trace, write_traces
from olaf.vectors.format import (
    FORMAT,
    FORMAT_VERSION,
    Mismatch,
    VectorFormatError,
    config_of,
    decisions_covered,
    dumps,
    fates_covered,
    load,
    outcome,
    replay,
    uses_token_ledger,
)

__all__ = ["CURATED", "FORMAT", "FORMAT_VERSION", "RANDOM_SET", "Mismatch", "TraceBuilder", "VectorFormatError",
           "all_traces", "config_of", "curated", "decisions_covered", "dumps", "fates_covered", "load", "outcome",
           "random_trace", "replay", "uses_token_ledger", "write_traces"]

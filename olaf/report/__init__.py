"""Results of a run: read the host logs of a run directory and report per cluster (paper §8)."""

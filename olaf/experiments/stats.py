"""Mean and 95 % confidence interval over an experiment's repetitions (seeds).

The interval is Student's t interval for the mean of ``n`` independent runs:
``mean ± t_{0.975, n−1} · s / √n`` with ``s`` the sample standard deviation (ddof 1);
``t`` from SciPy (``scipy.stats.t.ppf``). With one run there is no interval (``ci95`` None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np
from scipy import stats as _st


@dataclass(frozen=True)
class Estimate:
    """``mean`` and the half-width ``ci95`` of its 95 % interval over ``n`` runs."""

    mean: Optional[float]
    ci95: Optional[float]
    n: int

    def to_json(self) -> dict[str, Optional[float]]:
        return {"mean": self.mean, "ci95": self.ci95, "n": self.n}


def estimate(values: Iterable[Optional[float]]) -> Estimate:
    """:class:`Estimate` of the values that are not None (NaN and None are left out)."""
    x = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=np.float64)
    if x.size == 0:
        return Estimate(None, None, 0)
    if x.size == 1:
        return Estimate(float(x[0]), None, 1)
    half = float(_st.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return Estimate(float(x.mean()), half, int(x.size))

"""The Wilson score interval: a pass rate's 95 % interval that stays inside [0, 1] and is
honest for small samples and for rates of 0 or 1 (where the normal approximation gives a
zero-width interval). Wilson (1927); as in ``statsmodels.stats.proportion.proportion_confint
(method="wilson")``."""

from __future__ import annotations

import math

__all__ = ["Z95", "wilson"]

#: the two-sided 95 % quantile of the standard normal distribution
Z95 = 1.959963984540054


def wilson(passed: int, total: int, z: float = Z95) -> tuple[float, float]:
    """``(low, high)`` for ``passed`` successes in ``total`` trials; ``(0.0, 1.0)`` for none."""
    if total <= 0:
        return 0.0, 1.0
    p = passed / total
    z2 = z * z
    denominator = 1 + z2 / total
    centre = (p + z2 / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)

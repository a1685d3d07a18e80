"""Equivalence of a mean difference with zero: two one-sided t-tests (TOST) and t intervals.

A check that a metric does not respond to a manipulation (a counterfeit memory scored like the
real one) must show more than a non-significant difference: it must show that the difference
lies within a margin declared in advance. TOST does so: the difference is equivalent to zero
within ±bound at level α when both one-sided tests (against -bound and against +bound) reject,
which is the same as the 1 - 2α t interval lying inside (-bound, +bound).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def _t():
    from scipy import stats  # imported on use: it costs a second at start-up

    return stats.t


def mean_and_se(values: Sequence[float]) -> tuple[float, float | None]:
    """The mean and its standard error (sample standard deviation over √n; None for n < 2)."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, None
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(variance / n)


def t_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float] | None:
    """The two-sided t interval of the mean at ``level`` (None for fewer than two values)."""
    mean, se = mean_and_se(values)
    if se is None:
        return None
    half = float(_t().ppf(0.5 + level / 2, len(values) - 1)) * se
    return mean - half, mean + half


def t_test_zero(values: Sequence[float]) -> float | None:
    """Two-sided p-value of the one-sample t-test of the mean against 0 (None for n < 2;
    with no spread, 1 where every value is 0 and 0 otherwise)."""
    mean, se = mean_and_se(values)
    if se is None:
        return None
    if se == 0:
        return 1.0 if mean == 0 else 0.0
    return float(2 * _t().sf(abs(mean / se), len(values) - 1))


def tost(values: Sequence[float], bound: float, alpha: float = 0.05) -> dict[str, Any]:
    """Two one-sided t-tests of the mean of ``values`` (paired differences, one per unit)
    against the margin ±``bound``: ``p_lower`` tests mean > -bound, ``p_upper`` mean < +bound,
    ``p_value`` is the larger of the two, and ``equivalent`` says whether it is below
    ``alpha``; ``ci`` is the 1 - 2α interval (inside ±bound exactly when equivalent).
    Fewer than two values cannot be tested: the p-values are None and ``equivalent`` False."""
    n = len(values)
    if not n:
        return {"n": 0, "estimate": None, "ci": None, "p_lower": None, "p_upper": None,
                "p_value": None, "equivalent": False, "bound": bound, "alpha": alpha}
    mean, se = mean_and_se(values)
    if se is None:
        p_lower = p_upper = None
    elif se == 0:  # no spread: the mean is known exactly
        p_lower = 0.0 if mean > -bound else 1.0
        p_upper = 0.0 if mean < bound else 1.0
    else:
        law = _t()
        p_lower = float(law.sf((mean + bound) / se, n - 1))
        p_upper = float(law.cdf((mean - bound) / se, n - 1))
    p_value = None if p_lower is None or p_upper is None else max(p_lower, p_upper)
    return {"n": n, "estimate": mean, "ci": t_interval(values, 1 - 2 * alpha),
            "p_lower": p_lower, "p_upper": p_upper, "p_value": p_value,
            "equivalent": p_value is not None and p_value < alpha,
            "bound": bound, "alpha": alpha}

"""Signal detection for act/don't-act designs.

A family declares, in its ``analysis`` block, an outcome predicate and the arm where acting
is right::

    signal: {performed: "^\\\\s*set_reminder\\\\(", act: {arm: experimental}}

An answered item *performed* the act when the pattern matches its first attempt. In the arm
that should act, performing is a hit; elsewhere, a false alarm. Rates are means over groups
of each group's share (the group is the unit, as everywhere); d' = z(H) - z(F), with a rate of
0 or 1 moved to 1/(2n) or 1 - 1/(2n) for the n groups it is over (the usual correction, so
that d' stays finite). Intervals are percentile bootstraps over groups (or clusters), the
hit and false-alarm rates of one resample drawn from the same groups.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import safe_regex
from .scoring import first_attempt


def _performed(instance: Mapping[str, Any], response: str, pattern: str) -> bool:
    # A pattern from a spec: matched under the regex time limit like a gold.
    return safe_regex.search(pattern, first_attempt(instance["answer"], response))


def group_rates(items: Sequence[tuple[Mapping[str, Any], str]]
                ) -> dict[tuple[str, int], dict[str, float]]:
    """Per group: ``{"hit": H, "fa": F}`` (each present where the group has items of that
    arm) over answered ``(instance, response)`` pairs whose family declares a signal."""
    counts: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(
        lambda: {"hit": [], "fa": []})
    for instance, response in items:
        signal = instance["analysis"]["signal"]
        should_act = all(instance["axes"].get(k) == v for k, v in signal["act"].items())
        acted = float(_performed(instance, response, signal["performed"]))
        counts[(instance["family"], instance["group"])]["hit" if should_act else "fa"].append(
            acted)
    return {unit: {arm: math.fsum(v) / len(v) for arm, v in arms.items() if v}
            for unit, arms in counts.items()}


def _clip(rate: float, n: int) -> float:
    """A rate of 0 or 1 moved half an observation inside, 1/(2n) or 1 - 1/(2n)."""
    return min(max(rate, 1 / (2 * n)), 1 - 1 / (2 * n))


def d_prime(hit_rate: float, false_alarm_rate: float, hit_groups: int, fa_groups: int) -> float:
    """z(H) - z(F), each rate corrected for 0 and 1 over its number of groups."""
    from scipy.stats import norm

    return float(norm.ppf(_clip(hit_rate, hit_groups)) - norm.ppf(_clip(false_alarm_rate,
                                                                          fa_groups)))


def sdt_metrics(rates: Mapping[tuple[str, int], Mapping[str, float]],
                clusters: Mapping[tuple[str, int], str] | None, resamples: int, seed: int,
                level: float = 0.95) -> dict[str, Any]:
    """Hit rate, false-alarm rate, hit - FA and d' with bootstrap intervals over groups."""
    import numpy as np
    from scipy.stats import norm

    units = sorted(rates)
    hit = np.array([rates[u].get("hit", np.nan) for u in units], dtype=float)
    fa = np.array([rates[u].get("fa", np.nan) for u in units], dtype=float)
    result: dict[str, Any] = {"signal_groups": len(units)}
    has_hit, has_fa = ~np.isnan(hit), ~np.isnan(fa)
    h = float(np.mean(hit[has_hit])) if has_hit.any() else None
    f = float(np.mean(fa[has_fa])) if has_fa.any() else None
    both = has_hit & has_fa
    result.update(hit_rate=h, false_alarm_rate=f,
                  hit_minus_fa=float(np.mean(hit[both] - fa[both])) if both.any() else None,
                  d_prime=d_prime(h, f, int(has_hit.sum()), int(has_fa.sum()))
                  if h is not None and f is not None else None)
    # Resample groups (or whole clusters of them) and recompute every statistic from the
    # same draw, so that the intervals of H, F and d' belong together.
    rng = np.random.Generator(np.random.PCG64(seed))
    if clusters:
        labels = sorted({clusters[u] for u in units})
        member = np.array([labels.index(clusters[u]) for u in units])
        if len(labels) < 2:
            return {**result, **dict.fromkeys(
                ("hit_rate_ci", "false_alarm_rate_ci", "hit_minus_fa_ci", "d_prime_ci"))}
        picked = rng.integers(0, len(labels), size=(resamples, len(labels)))
        weights = np.stack([np.bincount(row, minlength=len(labels))[member] for row in picked])
    else:
        picked = rng.integers(0, len(units), size=(resamples, len(units)))
        weights = np.stack([np.bincount(row, minlength=len(units)) for row in picked])
    weights = weights.astype(float)

    def weighted(values: np.ndarray, present: np.ndarray) -> np.ndarray:
        w = weights * present
        with np.errstate(invalid="ignore", divide="ignore"):
            return (w * np.nan_to_num(values)).sum(axis=1) / w.sum(axis=1)

    alpha = (1 - level) / 2

    def interval(draws: np.ndarray) -> list[float] | None:
        draws = draws[~np.isnan(draws)]
        if draws.size == 0:
            return None
        low, high = np.quantile(draws, [alpha, 1 - alpha])
        return [float(low), float(high)]

    hits, fas = weighted(hit, has_hit), weighted(fa, has_fa)
    n_hit, n_fa = max(int(has_hit.sum()), 1), max(int(has_fa.sum()), 1)
    dprimes = norm.ppf(np.clip(hits, 1 / (2 * n_hit), 1 - 1 / (2 * n_hit))) \
        - norm.ppf(np.clip(fas, 1 / (2 * n_fa), 1 - 1 / (2 * n_fa)))
    result.update(hit_rate_ci=interval(hits) if h is not None else None,
                  false_alarm_rate_ci=interval(fas) if f is not None else None,
                  hit_minus_fa_ci=interval(weighted(hit - fa, both))
                  if result["hit_minus_fa"] is not None else None,
                  d_prime_ci=interval(dprimes) if result["d_prime"] is not None else None)
    return result

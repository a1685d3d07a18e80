"""Means over groups and their bootstrap intervals (simultaneous ones read far enough out),
and the sign-flip test of the groups' or clusters' values against 0."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from .score_options import ScoreOptions
from .score_outcome import Outcome
from .stats import bootstrap_ci, expanded_level, sign_flip_test


def unit_means(outcomes: Sequence[Outcome], value: Callable[[Outcome], float | None]
               ) -> dict[tuple[str, int], float]:
    """Per group: the mean of ``value`` over its outcomes (None: the item does not count);
    a group with no item that counts is left out."""
    sums: dict[tuple[str, int], list[float]] = defaultdict(list)
    for o in outcomes:
        v = value(o)
        if v is not None:
            sums[o.unit].append(float(v))
    return {unit: math.fsum(vs) / len(vs) for unit, vs in sums.items()}


#: Resamples that must fall beyond each bound of a simultaneous interval, so that its
#: extreme quantile is an estimate rather than the single most extreme resample.
TAIL_RESAMPLES = 20


def mean_and_ci(units: Mapping[tuple[str, int], float], clusters: Mapping[tuple[str, int], str],
                options: ScoreOptions, level: float = 0.95, expand: bool = False
                ) -> tuple[float | None, list[float] | None]:
    """The mean of the groups' values and its bootstrap interval at ``level``; with
    ``expand``, read at the expanded percentile level for the number of units (groups, or
    clusters), as the intervals that are tested against 0 are (Δmem and the contrasts)."""
    if not units:
        return None, None
    keys = sorted(units)
    values = [units[k] for k in keys]
    labels = [clusters[k] for k in keys] if options.cluster else None
    if expand:
        level = expanded_level(level, len(set(labels)) if labels else len(values))
    # A simultaneous (Bonferroni) interval reads a far quantile: enough resamples for it.
    resamples = bootstrap_resamples(options.resamples, level)
    if resamples > MAX_RESAMPLES:
        ci = unit_range(values, labels)
    else:
        ci = bootstrap_ci(values, labels, resamples=resamples, seed=options.seed, level=level)
    # Summed exactly, the mean of equal values is that value, not one some ulps off it.
    mean = math.fsum(values) / len(values)
    return mean, _containing(mean, ci) if ci else None


#: Most resamples an interval draws. A tail further out than TAIL_RESAMPLES of them (an
#: expanded level over very few groups, or thousands of simultaneous intervals) is read as
#: the limit of the percentile interval, the range of the units' values.
MAX_RESAMPLES = 400_000


def unit_range(values: Sequence[float], labels: Sequence[str] | None = None
               ) -> tuple[float, float] | None:
    """(least, greatest) of the units' values, or of their clusters' means: the widest
    interval a bootstrap of their mean can give, and its limit at a level near 1 (None with
    one cluster, as the bootstrap has)."""
    if labels is None:
        return (min(values), max(values)) if values else None
    members: dict[str, list[float]] = defaultdict(list)
    for value, label in zip(values, labels, strict=True):
        members[label].append(value)
    if len(members) < 2:
        return None
    means = [math.fsum(v) / len(v) for v in members.values()]
    return min(means), max(means)


def bootstrap_resamples(asked: int, level: float) -> int:
    """Resamples for an interval at ``level``: those asked, or more, so that at least
    ``TAIL_RESAMPLES`` fall beyond each bound of a far (simultaneous) interval."""
    if level >= 1:  # a tail below a float's resolution: no number of resamples reaches it
        return MAX_RESAMPLES + 1
    return max(asked, math.ceil(TAIL_RESAMPLES * 2 / (1 - level)))


#: How far (relative) a bootstrap bound may miss the point estimate and still be rounding.
ROUNDING = 1e-12


def _containing(estimate: float, ci: tuple[float, float]) -> list[float]:
    """``ci`` with a bound that misses ``estimate`` by rounding alone moved onto it. Where
    every resample has the estimate's mean (every group alike), the resamples' means, summed
    in another order, can land a few ulps either side of it, and a reader would see an
    estimate outside its own interval."""
    low, high = ci
    slack = ROUNDING * max(1.0, abs(estimate))
    if estimate < low <= estimate + slack:
        low = estimate
    if estimate - slack <= high < estimate:
        high = estimate
    return [low, high]


def _cluster_means(units: Mapping[tuple[str, int], float],
                   clusters: Mapping[tuple[str, int], str]) -> list[float]:
    """Each cluster's mean of its groups' values, in the clusters' order."""
    members: dict[str, list[float]] = defaultdict(list)
    for unit in sorted(units):
        members[clusters[unit]].append(units[unit])
    return [math.fsum(v) / len(v) for _, v in sorted(members.items())]


def sign_flip(units: Mapping[tuple[str, int], float], clusters: Mapping[tuple[str, int], str],
              options: ScoreOptions) -> float | None:
    """The exact sign-flip p-value of the groups' (or clusters') values against 0."""
    return sign_flip_test(_cluster_means(units, clusters) if options.cluster
                          else [units[u] for u in sorted(units)])

"""The statistics the bundled designs use: percentile bootstrap over groups (optionally
clustered), exact McNemar, exact binomial against chance, Holm correction, judge-score
normalisation, and the first level at which stale memory hurts (ρ*)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: Resamples drawn by default for a bootstrap interval.
BOOTSTRAP_RESAMPLES = 2000


def bootstrap_ci(values: Sequence[float], clusters: Sequence[str] | None = None, *,
                 resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of ``values`` (one value per group).

    Groups are resampled with replacement; with ``clusters`` (one label per value), whole
    clusters are resampled instead, so that groups of one template family move together.
    The generator is seeded, so the interval is the same on every run."""
    import numpy as np  # imported on use, like scipy: most commands never need it

    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return None
    rng = np.random.Generator(np.random.PCG64(seed))
    if clusters is None:
        picks = rng.integers(0, data.size, size=(resamples, data.size))
        means = data[picks].mean(axis=1)
    else:
        labels = sorted(set(clusters))
        if len(labels) < 2:
            return None  # one cluster: resampling clusters says nothing
        index = {label: i for i, label in enumerate(labels)}
        member = np.array([index[c] for c in clusters])
        sums = np.bincount(member, weights=data, minlength=len(labels))
        sizes = np.bincount(member, minlength=len(labels)).astype(float)
        picks = rng.integers(0, len(labels), size=(resamples, len(labels)))
        means = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def binomial_test(successes: int, trials: int, chance: float,
                  alternative: str = "two-sided") -> float | None:
    """Exact binomial p-value of ``successes`` in ``trials`` against ``chance`` (two-sided, or
    ``greater`` for "better than chance")."""
    if trials == 0:
        return None
    from scipy import stats as scipy_stats  # imported on use: it costs a second at start-up

    return float(scipy_stats.binomtest(successes, trials, chance,
                                       alternative=alternative).pvalue)


def mcnemar_exact(only_a: int, only_b: int) -> float | None:
    """Exact McNemar p-value from the discordant pairs (right only under A / only under B)."""
    discordant = only_a + only_b
    if discordant == 0:
        return 1.0
    from scipy import stats as scipy_stats

    return float(scipy_stats.binomtest(only_a, discordant, 0.5).pvalue)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values (None stays None)."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    m = len(present)
    for rank, (p, index) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted


def normalise(scores: Sequence[float], method: str) -> list[float]:
    """Min-max to [0, 1] or z-scores (population standard deviation) within one dataset."""
    import numpy as np

    data = np.asarray(scores, dtype=float)
    if data.size == 0:
        return []
    if method == "minmax":
        span = data.max() - data.min()
        return [0.0] * data.size if span == 0 else list((data - data.min()) / span)
    if method == "z":
        sd = data.std()
        return [0.0] * data.size if sd == 0 else list((data - data.mean()) / sd)
    raise ValueError(f"unknown normalisation {method!r}")


def rho_star(levels: Sequence[tuple[str, Mapping[str, object]]]) -> str | None:
    """The first level (in the order given) whose Δmem interval lies wholly below zero.

    ``levels`` pairs a level name with the metrics of the stale condition at that level."""
    for name, metrics in levels:
        interval = metrics.get("delta_mem_ci")
        if isinstance(interval, (list, tuple)) and interval and interval[1] is not None \
                and interval[1] < 0:
            return name
    return None

"""The statistics the bundled designs use: percentile bootstrap over groups (optionally
clustered), exact McNemar, exact binomial against chance, the exact sign-flip test of group
means against chance (the binomial one where every group's mean is 0 or 1) held together
with the exact test of independent guessing, Holm and
Bonferroni corrections, judge-score normalisation, and the first level at which stale memory
hurts (ρ*, Holm-corrected across the levels scanned)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from typing import Any

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
    means = np.empty(resamples)
    if clusters is None:
        for start, picks in _picks_in_chunks(rng, data.size, resamples):
            means[start:start + len(picks)] = data[picks].mean(axis=1)
    else:
        labels = sorted(set(clusters))
        if len(labels) < 2:
            return None  # one cluster: resampling clusters says nothing
        index = {label: i for i, label in enumerate(labels)}
        member = np.array([index[c] for c in clusters])
        sums = np.bincount(member, weights=data, minlength=len(labels))
        sizes = np.bincount(member, minlength=len(labels)).astype(float)
        for start, picks in _picks_in_chunks(rng, len(labels), resamples):
            means[start:start + len(picks)] = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def _group_picks(rng: Any, size: int, resamples: int) -> Any:
    """The groups each resample draws (with replacement), one row per resample."""
    return rng.integers(0, size, size=(resamples, size))


#: Picks drawn at once by ``bootstrap_ci``: a far (simultaneous) interval draws hundreds of
#: thousands of resamples, which drawn whole took hundreds of MB for a few hundred groups.
_PICKS_AT_ONCE = 1 << 20


def _picks_in_chunks(rng: Any, size: int, resamples: int) -> Iterator[tuple[int, Any]]:
    """(first resample, picks) for the resamples in chunks of about ``_PICKS_AT_ONCE``
    picks: the same draws, in the same order, as ``_group_picks`` makes at once (the
    generator hands out its stream in order, whatever the shape asked for)."""
    rows = max(1, _PICKS_AT_ONCE // max(size, 1))
    for start in range(0, resamples, rows):
        yield start, _group_picks(rng, size, min(rows, resamples - start))


def bootstrap_cis(columns: Any, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0,
                  level: float = 0.95) -> tuple[Any, Any]:
    """``bootstrap_ci`` of many columns of one size at once (an array with a row per group
    and a column per series, e.g. one per simulated run): the same resamples, drawn once,
    so each column's interval is the one ``bootstrap_ci`` gives it, up to the rounding of
    a sum taken in another order. Returns the arrays of lower and upper bounds."""
    import numpy as np

    data = np.asarray(columns, dtype=float)
    groups = data.shape[0]
    rng = np.random.Generator(np.random.PCG64(seed))
    picks = _group_picks(rng, groups, resamples)
    # How often each resample draws each group: the resamples' means are then one product.
    rows = np.repeat(np.arange(resamples) * groups, groups)
    counts = np.bincount(rows + picks.ravel(), minlength=resamples * groups
                         ).reshape(resamples, groups).astype(float)
    alpha = (1 - level) / 2
    low, high = np.empty(data.shape[1]), np.empty(data.shape[1])
    chunk = 256  # columns per product, so that the resamples' means stay a few MB
    for start in range(0, data.shape[1], chunk):
        # A row per column: each quantile is then read along contiguous memory.
        means = data[:, start:start + chunk].T @ counts.T / groups
        low[start:start + chunk], high[start:start + chunk] = np.quantile(
            means, [alpha, 1 - alpha], axis=1)
    return low, high


def expanded_level(level: float, groups: int) -> float:
    """The percentile level at which a bootstrap over ``groups`` units reads its quantiles so
    that its interval holds ``level``: Hesterberg's expanded percentile interval, whose tail
    is 2 Φ(−√(n/(n−1)) · t_{n−1}(1 − (1−level)/2)). A percentile bootstrap of a mean draws
    from the units' own spread, which is narrower than the population's by (n−1)/n, and
    its tails are normal where Student's are due: at the far levels of simultaneous
    intervals over a few dozen groups it excluded 0 for a random policy in 8.5% of reports
    rather than 5%."""
    # The functions scipy.stats's t.ppf and norm.cdf call, without importing scipy.stats
    # (half a second and 50 MB of a `score`).
    from scipy.special import ndtr, stdtrit

    if groups < 2:
        return level
    tail = (1 - level) / 2
    spread = math.sqrt(groups / (groups - 1)) * stdtrit(groups - 1, 1 - tail)
    return float(1 - 2 * ndtr(-spread))


@functools.lru_cache(maxsize=4096)
def binomial_test(successes: int, trials: int, chance: float,
                  alternative: str = "two-sided") -> float | None:
    """Exact binomial p-value of ``successes`` in ``trials`` against ``chance`` (two-sided, or
    ``greater`` for "better than chance"); kept, since a report's rows and a simulation's
    runs ask the same few questions again and again."""
    if trials == 0:
        return None
    from scipy import stats as scipy_stats  # imported on use: it costs a second at start-up

    return float(scipy_stats.binomtest(successes, trials, chance,
                                       alternative=alternative).pvalue)


def mcnemar_exact(only_a: int, only_b: int) -> float | None:
    """Exact McNemar p-value from the discordant pairs (right only under A / only under B):
    the two-sided binomial test at one half, which is twice the smaller tail, summed in
    integers so that it is exact and needs no scipy."""
    discordant = only_a + only_b
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, k) for k in range(min(only_a, only_b) + 1))
    return min(1.0, 2 * tail / 2**discordant)


#: Points the exact sign-flip distribution may hold on a lattice before it is too large to
#: enumerate and is sampled instead.
SIGN_FLIP_SUPPORT_LIMIT = 2_000_000
#: Sums the exact sign-flip distribution may form, over all its steps, where the deviations
#: share no lattice, before it is sampled instead (each sum costs a sort and some 50 bytes).
SIGN_FLIP_SUMS_LIMIT = 500_000
#: Decimals to which deviations and sums are rounded, so that sums reached in different
#: orders fall on one point of the distribution.
_SIGN_FLIP_DECIMALS = 9
#: A sum as extreme as the one observed, up to the rounding the sums went through.
_SUM_TOLERANCE = 10.0 ** -(_SIGN_FLIP_DECIMALS - 3)
#: Points of a law times the outcomes each is combined with, summed over the steps that
#: build it: the most an exact law (of sign flips or of guessing) may cost before it is
#: estimated from seeded samples instead. Without it, groups with many different numbers of
#: answered items (a model that abstains here and there) put their means on a lattice of
#: millions of points, each met by hundreds of outcomes, and one p-value took minutes.
SIGN_FLIP_WORK_LIMIT = 20_000_000


def _far_mass(terms: Sequence[tuple[int, Any]], low: int, high: int, points: int) -> Any:
    """P(T <= low or T >= high) for T = sum_i step_i * X_i over independent X_i, each taking
    j with probability ``probs_i[j]`` (``terms`` holds the pairs (step_i, probs_i)); None
    where the exact law would hold more than ``points`` points or cost more than
    ``SIGN_FLIP_WORK_LIMIT`` evaluations to build.

    The term with the most outcomes is not convolved but summed in closed form: for each
    point t of the law of the others, the mass of X at or below (low - t) / step and at or
    above (high - t) / step, read off its cumulative sums from either end (so that neither
    tail loses its small values to the other's rounding). The others are added one at a time
    by shifting the law by each outcome, which costs the outcomes, not the whole spread
    ``step * (outcomes - 1)`` that a convolution with the padded term would. Work is counted
    before anything is built: a point of the law so far times an outcome of the next term."""
    import numpy as np

    last = max(range(len(terms)), key=lambda i: len(terms[i][1]))
    rest = [*terms[:last], *terms[last + 1:]]
    size, work = 1, 0
    for step, probs in rest:
        work += size * len(probs)
        size += step * (len(probs) - 1)
    if size > points or work > SIGN_FLIP_WORK_LIMIT:
        return None
    law = np.ones(1)
    for step, probs in rest:
        if step == 1:
            law = np.convolve(law, probs)
            continue
        grown = np.zeros(law.size + step * (len(probs) - 1))
        for j, p in enumerate(probs):
            grown[j * step:j * step + law.size] += p * law
        law = grown
    step, probs = terms[last]
    probs = np.asarray(probs, dtype=float)
    outcomes = probs.size - 1
    at_most = np.concatenate([[0.0], np.cumsum(probs)])  # [x + 1]: P(X <= x)
    at_least = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])  # [x]: P(X >= x)
    t = np.arange(law.size, dtype=np.int64)
    below = np.clip(np.floor_divide(low - t, step), -1, outcomes)
    above = np.clip(-np.floor_divide(t - high, step), 0, outcomes + 1)
    return float(law @ (at_most[below + 1] + at_least[above]))


def _on_lattice(magnitudes: Sequence[float]) -> list[int] | None:
    """The magnitudes as integer multiples of one quantum, where they are all (to 1e-9)
    fractions with small denominators (group means c/k less a rational chance rate); None
    where they are not, or where the multiples would be too many to enumerate."""
    from fractions import Fraction
    from math import lcm

    fractions = []
    for value in magnitudes:
        fraction = Fraction(value).limit_denominator(_LATTICE_DENOMINATOR)
        if abs(float(fraction) - value) > 1e-9:
            return None
        fractions.append(fraction)
    scale = lcm(*(f.denominator for f in fractions)) if fractions else 1
    multiples = [int(f * scale) for f in fractions]
    return multiples if sum(multiples) <= SIGN_FLIP_SUPPORT_LIMIT else None


#: Largest denominator a deviation may have for the exact test to use the integer lattice.
_LATTICE_DENOMINATOR = 10_000


def sign_flip_test(deviations: Sequence[float]) -> float | None:
    """Exact two-sided sign-flip (one-sample permutation) p-value of the mean of
    ``deviations`` against 0.

    Each deviation is one unit's (a group's) mean minus the chance rate. Under the null
    hypothesis each unit's deviation is as likely to carry either sign, so the null
    distribution of their sum is that of every assignment of signs: P(|S*| >= |S|). It is
    computed exactly, not sampled: for each distinct absolute deviation v met n times, the
    law of v * (2B - n) with B ~ Binomial(n, 1/2) is convolved with the others (on an integer
    lattice where the deviations are small fractions, as group means less a rational chance
    rate are). The units' own values set the spread, so a policy whose every group sits
    exactly at chance (a position-biased one on a rotated design) has all deviations 0 and
    p = 1. The distinct deviation met most often is not convolved but summed in closed form
    (``_far_mass``). Where the law would cost too much to build (on a lattice: more than
    ``SIGN_FLIP_SUPPORT_LIMIT`` points or ``SIGN_FLIP_WORK_LIMIT`` evaluations; on no
    lattice: more than ``SIGN_FLIP_SUMS_LIMIT`` sums formed), the p-value is estimated
    from seeded random sign assignments instead (``_sampled_sign_flip``), so that its cost
    is bounded whatever the deviations. None without units."""
    import numpy as np
    from scipy.special import gammaln

    data = np.round(np.asarray(deviations, dtype=float), _SIGN_FLIP_DECIMALS)
    if data.size == 0:
        return None
    magnitudes = np.abs(data[data != 0])
    if magnitudes.size == 0:
        return 1.0
    values, counts = np.unique(magnitudes, return_counts=True)

    def binomial_half(count: int) -> np.ndarray:
        # Binomial(count, 1/2) probabilities, in logs so that large counts do not overflow.
        k = np.arange(count + 1)
        return np.exp(gammaln(count + 1) - gammaln(k + 1) - gammaln(count - k + 1)
                      - count * np.log(2.0))

    multiples = _on_lattice([float(v) for v in values])
    if multiples is not None:
        # T = the sum of the magnitudes given a + sign; S = 2T - sum: |S*| >= |S| where T*
        # is at most (sum - |S|) / 2 or at least (sum + |S|) / 2.
        total = sum(m * int(c) for m, c in zip(multiples, counts, strict=True))
        signs = np.sign(data[data != 0])
        positive = sum(m * int(c) for m, c in zip(
            multiples, [int(((magnitudes == v) & (signs > 0)).sum()) for v in values],
            strict=True))
        observed = abs(2 * positive - total)
        if observed == 0:
            return 1.0  # every assignment is as extreme as a sum of 0
        far = _far_mass([(multiple, binomial_half(int(count)))
                         for multiple, count in zip(multiples, counts, strict=True)],
                        (total - observed) // 2, (total + observed + 1) // 2,
                        SIGN_FLIP_SUPPORT_LIMIT)
        if far is None:
            return _sampled_sign_flip(data, abs(float(data.sum())) - _SUM_TOLERANCE)
        return float(min(1.0, far))
    observed = abs(float(data.sum()))
    support, probs = np.zeros(1), np.ones(1)
    formed = 0
    for value, count in zip(values, counts, strict=True):
        # Every point of the law so far meets every count of this value. The sums are
        # sorted to merge the equal ones, which costs far more a sum than a lattice's
        # multiply-add, and several arrays of the sums' size: past SIGN_FLIP_SUMS_LIMIT sums
        # formed (deviations on no lattice, many of them distinct) the law is estimated
        # instead, so that no pattern of answers makes the test run long or large.
        formed += support.size * (int(count) + 1)
        if formed > SIGN_FLIP_SUMS_LIMIT:
            return _sampled_sign_flip(data, observed - _SUM_TOLERANCE)
        k = np.arange(count + 1)
        points = value * (2 * k - count)
        sums = np.round((support[:, None] + points[None, :]).ravel(), _SIGN_FLIP_DECIMALS)
        mass = (probs[:, None] * binomial_half(int(count))[None, :]).ravel()
        support, where = np.unique(sums, return_inverse=True)
        probs = np.bincount(where.ravel(), weights=mass)
    return float(min(1.0, probs[np.abs(support) >= observed - _SUM_TOLERANCE].sum()))


#: Random sign assignments drawn where the exact distribution is too large to enumerate.
SIGN_FLIP_RESAMPLES = 100_000


def _sampled_sign_flip(data: Sequence[float], threshold: float) -> float:
    """The sign-flip p-value estimated from ``SIGN_FLIP_RESAMPLES`` seeded random sign
    assignments, (1 + b) / (1 + B) with b of them at least ``threshold`` in absolute sum
    (a valid p-value, never 0), for deviations whose exact law has too many points (no
    shared lattice, e.g. against a declared chance of 0.3333, over hundreds of groups)."""
    import numpy as np

    from ..core.threads import one_thread

    values = np.asarray(data, dtype=float)
    rng = np.random.Generator(np.random.PCG64(0))
    # A chunk of 2,000 assignments holds a multiple of 4 signs whatever the number of units,
    # so the generator's stream of bytes runs on across chunks exactly as drawn at once.
    extreme, chunk = 0, 2_000
    # Each assignment's sum is one row's product, worked out whole by one thread however
    # many the BLAS pool has (the same bits); a pool of two on a shared machine spent five
    # times the CPU of one on these products, waiting for each other.
    with one_thread():
        for start in range(0, SIGN_FLIP_RESAMPLES, chunk):
            size = min(chunk, SIGN_FLIP_RESAMPLES - start)
            signs = rng.integers(0, 2, size=(size, values.size), dtype=np.int8) * 2 - 1
            extreme += int((np.abs(signs @ values) >= threshold).sum())
    return (1 + extreme) / (1 + SIGN_FLIP_RESAMPLES)


def chance_test(means: Sequence[float], chance: float,
                sizes: Sequence[int] | None = None) -> float | None:
    """Two-sided p-value of the units' (groups' or clusters') mean correctness against
    ``chance``: where every unit's mean is 0 or 1 (one item a unit, or a policy that answers
    every rotation of a group alike), the exact binomial test of the units right against
    ``chance``, since those means are Bernoulli(chance) under the null and, unless chance is
    1/2, skewed, which the sign flips assume they are not (a random policy at chance 1/10
    over 20 groups would otherwise be significant 13% of the time at 5%); else the exact
    sign-flip test of the means less ``chance``.

    With ``sizes`` (each unit's number of answered items, its mean being right / size), the
    p-value is the larger of that test and the exact test of independent guessing
    (``guessing_test``): the first holds however a unit's items depend on each other but
    needs the means' law symmetric, which a chance far from 1/2 over few groups of several
    items breaks (a random policy at chance 1/10, two items a group, 48 groups: 8% of runs
    significant at 5%); the second holds exactly for items guessed on their own. The larger
    of two p-values is a valid p-value wherever either is. None without units."""
    if len(means) and all(m in (0.0, 1.0) for m in means):
        p_value = binomial_test(int(sum(means)), len(means), chance)
    else:
        p_value = sign_flip_test([m - chance for m in means])
    if p_value is None or sizes is None or all(size == 1 for size in sizes):
        return p_value  # one item a unit: the binomial test is the guessing test
    right = [round(m * size) for m, size in zip(means, sizes, strict=True)]
    return max(p_value, guessing_test(right, sizes, chance))


#: Points the exact law of a guessing test may hold before it is sampled instead.
GUESSING_SUPPORT_LIMIT = 2_000_000
#: Replicates drawn where the exact law of a guessing test is too large to enumerate.
GUESSING_RESAMPLES = 20_000


def binomial_pmf(k: Any, trials: int, chance: float) -> Any:
    """scipy.stats.binom.pmf(k, trials, chance), from the scipy.special function it calls,
    so that a command that needs no other distribution does not import scipy.stats (half a
    second and 50 MB); scipy.stats where that function is not there."""
    try:
        from scipy.special._ufuncs import _binom_pmf
    except ImportError:  # another scipy: the public way
        from scipy.stats import binom
        return binom.pmf(k, trials, chance)
    return _binom_pmf(k, trials, chance)


def guessing_test(right: Sequence[int], sizes: Sequence[int], chance: float) -> float:
    """Exact two-sided p-value of the sum of the units' means (``right[u] / sizes[u]``)
    under independent guessing: every item right with probability ``chance`` on its own.
    A sum at least as far from its expectation as the one observed is as extreme. The units
    with s items together hold a Binomial(s x their number, chance) count of right items,
    each worth 1/s, so the law of the sum is the convolution of one scaled binomial per
    distinct size, on the lattice 1/lcm(sizes) (the size with most items summed in closed
    form, ``_far_mass``); where that has more than ``GUESSING_SUPPORT_LIMIT`` points or
    costs more than ``SIGN_FLIP_WORK_LIMIT`` evaluations to build it is estimated from
    seeded replicates, (1 + b) / (1 + B)."""
    import numpy as np

    by_size: dict[int, int] = {}
    for size in sizes:
        by_size[size] = by_size.get(size, 0) + 1
    scale = math.lcm(*by_size)
    ordered = sorted(by_size.items())
    far = None
    if scale * len(sizes) <= GUESSING_SUPPORT_LIMIT:
        expected = chance * len(sizes) * scale
        observed = abs(sum(r * (scale // s) for r, s in zip(right, sizes, strict=True))
                       - expected)
        # Sums reached by the lattice and by the expectation differ by rounding alone.
        threshold = observed - 1e-9 * scale
        if threshold <= 0:
            return 1.0  # every outcome is as far from the expectation
        far = _far_mass([(scale // size, binomial_pmf(np.arange(size * count + 1),
                                                      size * count, chance))
                         for size, count in ordered],
                        math.floor(expected - threshold), math.ceil(expected + threshold),
                        GUESSING_SUPPORT_LIMIT)
    if far is not None:
        return float(min(1.0, far))
    # Counted in units of a group's mean (a right item of a group of s is worth 1/s), as
    # floats: the lattice's unit 1/lcm(sizes) can be too fine for any integer type (groups of
    # every size from 1 to 60 put it below 1e-25).
    expected = chance * len(sizes)
    observed = abs(math.fsum(r / s for r, s in zip(right, sizes, strict=True)) - expected)
    rng = np.random.Generator(np.random.PCG64(0))
    draws = sum(rng.binomial(size * count, chance, GUESSING_RESAMPLES) / size
                for size, count in ordered)
    extreme = int((np.abs(draws - expected) >= observed - 1e-9).sum())
    return (1 + extreme) / (1 + GUESSING_RESAMPLES)


#: Corrections for multiple tests that `adjust` knows.
CORRECTIONS = ("holm", "bonferroni", "none")


def adjust(p_values: Sequence[float | None], method: str) -> list[float | None]:
    """Adjusted p-values of one family of tests: Holm's step-down, Bonferroni, or none
    (None stays None and does not count as a test)."""
    if method == "holm":
        return holm(p_values)
    m = sum(1 for p in p_values if p is not None)
    if method == "bonferroni":
        return [None if p is None else min(1.0, m * p) for p in p_values]
    if method == "none":
        return list(p_values)
    raise ValueError(f"unknown correction {method!r}")


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


def normalise(scores: Sequence[float], method: str,
              reference: tuple[float, float] | None = None, z_floor: float = 0.0
              ) -> list[float]:
    """Min-max to [0, 1] or z-scores of one dataset's scores: against ``reference`` (fixed
    (min, max) or (mean, sd) declared for the dataset) where given, else against the scores'
    own min and max, or mean and population standard deviation. Every value is 0 where the
    span is 0, or the standard deviation at most ``z_floor`` either way."""
    import numpy as np

    data = np.asarray(scores, dtype=float)
    if data.size == 0:
        return []
    if method == "minmax":
        low, high = reference if reference else (data.min(), data.max())
        span = high - low
        return [0.0] * data.size if span == 0 else list((data - low) / span)
    if method == "z":
        mean, sd = reference if reference else (data.mean(), data.std())
        return [0.0] * data.size if abs(sd) <= z_floor else list((data - mean) / sd)
    raise ValueError(f"unknown normalisation {method!r}")


def rho_star(levels: Sequence[tuple[str, float | None, float | None]],
             alpha: float = 0.05) -> str | None:
    """ρ*: the first level (in the order given) at which memory hurts, corrected across every
    level scanned. ``levels`` gives, per level, its name, its estimate (a Δmem or a contrast)
    and that estimate's p-value against 0; the p-values are adjusted together by Holm's
    step-down, and ρ* is the first level whose estimate is below 0 with an adjusted p-value
    below ``alpha``. Scanning levels for the first one that looks significant is a test at
    each level: uncorrected, a policy that never hurts would find a ρ* at one level in
    twenty, and at more the more levels are scanned."""
    adjusted = holm([p for _, _, p in levels])
    for (name, estimate, _), p in zip(levels, adjusted, strict=True):
        if estimate is not None and estimate < 0 and p is not None and p < alpha:
            return name
    return None

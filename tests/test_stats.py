"""Every statistic against values computed independently (scipy, statsmodels or by hand)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests

from memspec.analysis.stats import (
    adjust,
    binomial_test,
    bootstrap_ci,
    bootstrap_cis,
    expanded_level,
    holm,
    mcnemar_exact,
    normalise,
    rho_star,
    sign_flip_test,
)


def _binomial_two_sided_by_hand(k: int, n: int, p: float) -> float:
    pmf = [math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]
    return min(1.0, sum(x for x in pmf if x <= pmf[k] * (1 + 1e-7)))


@pytest.mark.parametrize(("k", "n", "p"), [(7, 10, 0.5), (30, 60, 1 / 3), (0, 12, 0.5),
                                           (24, 24, 1 / 3), (5, 40, 0.25)])
def test_binomial_test_matches_a_hand_computation(k: int, n: int, p: float) -> None:
    assert binomial_test(k, n, p) == pytest.approx(_binomial_two_sided_by_hand(k, n, p))


def test_binomial_test_without_trials_is_undefined() -> None:
    assert binomial_test(0, 0, 0.5) is None


@pytest.mark.parametrize(("b", "c"), [(0, 0), (3, 9), (10, 2), (1, 0), (25, 31), (3, 3),
                                    (6, 5)])
def test_exact_mcnemar_matches_statsmodels(b: int, c: int) -> None:
    tables = pytest.importorskip("statsmodels.stats.contingency_tables")
    expected = tables.mcnemar([[5, b], [c, 7]], exact=True).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected)


def test_holm_matches_statsmodels() -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p_values = [0.01, 0.04, 0.03, 0.005, 0.5, 0.2]
    expected = multitest.multipletests(p_values, method="holm")[1]
    assert holm(p_values) == pytest.approx(list(expected))
    assert holm([0.02, None, 0.04]) == [pytest.approx(0.04), None, pytest.approx(0.04)]


def test_bootstrap_agrees_with_scipy_percentile_bootstrap() -> None:
    rng = np.random.default_rng(3)
    values = rng.binomial(1, 0.6, size=120).astype(float)
    ours = bootstrap_ci(values, resamples=20000, seed=1)
    theirs = scipy_stats.bootstrap((values,), np.mean, method="percentile", n_resamples=20000,
                                   random_state=np.random.default_rng(2)).confidence_interval
    assert ours is not None
    assert ours[0] == pytest.approx(theirs.low, abs=0.015)
    assert ours[1] == pytest.approx(theirs.high, abs=0.015)


def test_bootstrap_is_seeded_and_degenerate_samples_have_a_point_interval() -> None:
    values = [0.0, 1.0, 1.0, 0.5, 0.25, 1.0]
    assert bootstrap_ci(values, seed=4) == bootstrap_ci(values, seed=4)
    assert bootstrap_ci([1.0] * 9) == (1.0, 1.0)
    assert bootstrap_ci([]) is None


def test_cluster_bootstrap_moves_whole_clusters() -> None:
    # Two clusters with constant values 0 and 1: any resample mean is a weighted mix of them,
    # and a cluster bootstrap is wider than pretending the 40 groups were independent.
    values = [0.0] * 20 + [1.0] * 20
    clusters = ["a"] * 20 + ["b"] * 20
    clustered = bootstrap_ci(values, clusters, seed=0)
    independent = bootstrap_ci(values, seed=0)
    assert clustered is not None and independent is not None
    assert clustered == (0.0, 1.0)
    assert independent[1] - independent[0] < 0.4
    # One cluster: resampling clusters cannot say anything, so there is no interval.
    assert bootstrap_ci([0.2, 0.4, 0.9], ["x", "x", "x"]) is None


def test_normalisation_by_hand() -> None:
    assert normalise([2, 4, 10], "minmax") == pytest.approx([0.0, 0.25, 1.0])
    z = normalise([2, 4, 9], "z")
    mean, sd = 5.0, math.sqrt(((2 - 5) ** 2 + (4 - 5) ** 2 + (9 - 5) ** 2) / 3)
    assert z == pytest.approx([(2 - mean) / sd, (4 - mean) / sd, (9 - mean) / sd])
    assert normalise([3, 3], "z") == [0.0, 0.0]
    assert normalise([3, 3], "minmax") == [0.0, 0.0]
    # Against fixed reference statistics, the run's own spread does not matter.
    assert normalise([2, 4, 10], "minmax", (1.0, 10.0)) == pytest.approx([1 / 9, 3 / 9, 1.0])
    assert normalise([3, 3], "z", (5.0, 2.0)) == [-1.0, -1.0]


def test_rho_star_is_the_first_level_below_zero_after_holm_across_the_levels() -> None:
    # Uncorrected, "1b" (p = 0.04) would be ρ*; over three levels Holm's step-down adjusts
    # 0.0001, 0.03, 0.04 to 0.0003, 0.06, 0.06: only "70b" is below zero after it.
    levels = [("1b", -0.1, 0.04), ("7b", -0.2, 0.03), ("70b", -0.3, 0.0001)]
    theirs = multipletests([p for _, _, p in levels], method="holm")[1]
    assert list(theirs) == pytest.approx([0.06, 0.06, 0.0003])
    assert rho_star(levels) == "70b"
    assert rho_star(levels[:1]) == "1b"  # one level scanned: nothing to correct
    # A level where memory helps (estimate above 0) is no ρ*, however small its p-value.
    assert rho_star([("1b", 0.4, 1e-9), ("7b", -0.3, 1e-9)]) == "7b"
    assert rho_star([("1b", None, None), ("7b", -0.3, 0.2)]) is None


def test_rho_star_over_many_levels_keeps_the_family_wise_error() -> None:
    # Levels at which memory never hurts: each p-value uniform, each estimate's sign a coin.
    # Scanning five of them for the first p < 0.05 would find a ρ* in about 1 - 0.975^5 =
    # 12% of runs; corrected across the levels, in at most α of them (binomial tolerance:
    # the upper 99.9% point of 4000 runs at α).
    rng = np.random.Generator(np.random.PCG64(33))
    runs, levels, alpha = 4000, 5, 0.05
    p_values = rng.random((runs, levels))
    signs = rng.choice([-1.0, 1.0], size=(runs, levels))
    found = sum(rho_star([(str(k), signs[r, k], p_values[r, k]) for k in range(levels)])
                is not None for r in range(runs))
    uncorrected = int(((p_values < alpha) & (signs < 0)).any(axis=1).sum())
    assert found <= scipy_stats.binom.ppf(0.999, runs, alpha)
    assert uncorrected > 2 * found


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sign_flip_test_matches_scipy_exact_permutation_test(seed: int) -> None:
    # Group means over three rotations against chance 1/3, as on a rotated design: scipy
    # enumerates all 2^n sign assignments when n_resamples exceeds them.
    rng = np.random.default_rng(seed)
    deviations = rng.binomial(3, 1 / 3, size=13) / 3 - 1 / 3
    theirs = scipy_stats.permutation_test(
        (deviations,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
        n_resamples=10**6).pvalue
    assert sign_flip_test(deviations) == pytest.approx(theirs)


def test_sign_flip_test_with_one_item_a_group_is_the_binomial_test_at_one_half() -> None:
    for k, n in ((7, 10), (12, 24), (0, 9), (30, 40)):
        deviations = [0.5] * k + [-0.5] * (n - k)
        assert sign_flip_test(deviations) == pytest.approx(scipy_stats.binomtest(k, n).pvalue)


def test_sign_flip_test_of_groups_exactly_at_chance_is_one() -> None:
    # A position-biased policy on a rotated design: every group's mean is exactly 1/3.
    assert sign_flip_test([1 / 3 - 1 / 3] * 150) == 1.0
    assert sign_flip_test([]) is None


@pytest.mark.parametrize("method", ["holm", "bonferroni"])
def test_adjust_matches_statsmodels(method: str) -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p_values = [0.01, 0.04, 0.03, 0.005, 0.5, 0.2, 0.0001]
    expected = multitest.multipletests(p_values, method=method)[1]
    assert adjust(p_values, method) == pytest.approx(list(expected))
    assert adjust([0.3, None], "none") == [0.3, None]


@pytest.mark.parametrize(("groups", "chance"), [(20, 0.1), (150, 0.1), (30, 0.2)])
def test_chance_test_of_one_item_a_group_is_wrong_at_most_alpha_of_the_time(
        groups: int, chance: float) -> None:
    # A memoryless policy right with probability `chance` in each group of one item: the
    # group means are 0 or 1, a skewed law the sign flips do not hold, so the test of a
    # report must be the exact binomial one. Its size is summed exactly over every count.
    from memspec.analysis.group_tests import ChanceTest, run_test

    plan = ChanceTest(None, chance, np.arange(groups), np.arange(groups))
    answered = np.ones(groups, dtype=bool)
    size = 0.0
    for right in range(groups + 1):
        correct = np.arange(groups) < right
        p = run_test(plan, answered, correct)["p_value"]
        assert p == pytest.approx(scipy_stats.binomtest(right, groups, chance).pvalue)
        if p <= 0.05:
            size += scipy_stats.binom.pmf(right, groups, chance)
    assert size <= 0.05


def _compositions(groups: int, parts: int):
    """Every way of putting ``groups`` groups into ``parts`` classes (a count per class)."""
    import itertools

    for cuts in itertools.combinations(range(groups + parts - 1), parts - 1):
        edges = (-1, *cuts, groups + parts - 1)
        yield [edges[i + 1] - edges[i] - 1 for i in range(parts)]


@pytest.mark.parametrize(("groups", "chance", "items"),
                         [(48, 0.1, 2), (20, 0.1, 2), (20, 0.25, 2), (12, 1 / 3, 3)])
def test_chance_test_of_groups_of_several_items_is_wrong_at_most_alpha_of_the_time(
        groups: int, chance: float, items: int) -> None:
    # A random policy right with probability `chance` on each of a group's items: the group
    # means c/items are skewed far from 1/2, and the sign flips alone were significant in
    # 8% of runs at 5% (chance 1/10, two items, 48 groups). The size of the report's test
    # is summed exactly over every way the groups can fall (scipy's multinomial law).
    from memspec.analysis.group_tests import ChanceTest, run_test

    plan = ChanceTest(None, chance, np.arange(groups * items),
                      np.repeat(np.arange(groups), items))
    answered = np.ones(groups * items, dtype=bool)
    per_group = scipy_stats.binom.pmf(np.arange(items + 1), items, chance)
    size = 0.0
    for counts in _compositions(groups, items + 1):
        right = np.repeat(np.arange(items + 1), counts)  # each group's right items
        correct = (np.arange(items)[None, :] < right[:, None]).ravel()
        if run_test(plan, answered, correct)["p_value"] <= 0.05:
            size += scipy_stats.multinomial.pmf(counts, groups, per_group)
    assert size <= 0.05


def _guessing_by_brute_force(right: list[int], sizes: list[int], chance: float) -> float:
    """P(|sum of means - expectation| >= observed) over every outcome of the groups' right
    counts, each Binomial(size, chance) on its own."""
    import itertools

    observed = sum(r / s for r, s in zip(right, sizes, strict=True))
    expected = chance * len(sizes)
    total = 0.0
    for outcome in itertools.product(*(range(s + 1) for s in sizes)):
        mean_sum = sum(r / s for r, s in zip(outcome, sizes, strict=True))
        if abs(mean_sum - expected) >= abs(observed - expected) - 1e-9:
            total += math.prod(scipy_stats.binom.pmf(r, s, chance)
                               for r, s in zip(outcome, sizes, strict=True))
    return total


def test_guessing_test_is_the_exact_law_of_independent_guesses() -> None:
    from memspec.analysis.stats import guessing_test

    # Groups of one size: the right items are Binomial(groups x size, chance), so the test
    # is scipy's binomial law read as "at least as far from the expectation".
    right, sizes, chance = [2, 0, 1, 3, 0, 0, 1], [3] * 7, 0.2
    law = scipy_stats.binom(21, chance)
    far = [k for k in range(22) if abs(k - 21 * chance) >= abs(7 - 21 * chance) - 1e-9]
    assert guessing_test(right, sizes, chance) == pytest.approx(law.pmf(far).sum())
    # Groups of sizes 1, 2 and 3: the sum of their means against every outcome, by brute
    # force over the product of their binomial laws.
    sizes, right, chance = [1, 2, 3, 2], [1, 2, 1, 0], 0.3
    assert guessing_test(right, sizes, chance) == \
        pytest.approx(_guessing_by_brute_force(right, sizes, chance))


def test_sign_flip_test_too_large_to_enumerate_is_estimated_not_refused() -> None:
    # 600 groups over three rotations against a declared chance of 0.3333: the deviations
    # share no small lattice and their sums are too many to enumerate exactly, yet a score
    # report must still carry the test (from seeded random sign flips), not stop.
    rng = np.random.default_rng(3)
    deviations = rng.binomial(3, 1 / 3, size=600) / 3 - 0.3333
    ours = sign_flip_test(deviations)
    theirs = scipy_stats.permutation_test(
        (deviations,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
        n_resamples=20_000, random_state=0).pvalue
    assert ours is not None and ours == pytest.approx(theirs, abs=0.02)
    assert sign_flip_test(deviations) == ours  # seeded: the same on every run


def test_the_sampled_sign_flip_p_value_is_the_seeded_estimate_of_the_exact_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Deviations on no small lattice, with the support limit lowered so that the p-value is
    # estimated: it is the share (1 + b) / (1 + B) of 100,000 sign assignments drawn at once
    # from PCG64(0), whatever chunks they are drawn in, and close to the exact p-value
    # counted over all 2**7 assignments by brute force.
    import itertools

    from memspec.analysis import stats

    deviations = [0.141421356, -0.173205081, 0.223606798, 0.264575131, -0.1, 0.316227766,
                  0.331662479]
    observed = abs(sum(deviations))
    exact = sum(abs(sum(s * d for s, d in zip(signs, deviations, strict=True)))
                >= observed - 1e-9
                for signs in itertools.product([1, -1], repeat=7)) / 2 ** 7
    monkeypatch.setattr(stats, "SIGN_FLIP_SUMS_LIMIT", 10)
    estimate = stats.sign_flip_test(deviations)
    values = np.round(np.asarray(deviations), 9)
    signs = np.random.Generator(np.random.PCG64(0)).integers(
        0, 2, size=(stats.SIGN_FLIP_RESAMPLES, 7), dtype=np.int8) * 2 - 1
    extreme = int((np.abs(signs @ values) >= observed - 1e-6).sum())
    assert estimate == (1 + extreme) / (1 + stats.SIGN_FLIP_RESAMPLES)
    assert abs(estimate - exact) < 4 * (exact * (1 - exact) / stats.SIGN_FLIP_RESAMPLES) ** 0.5


@pytest.mark.parametrize(("groups", "columns", "level"), [(15, 300, 0.95), (40, 7, 0.99),
                                                          (2, 3, 0.8)])
def test_many_columns_get_the_intervals_each_would_get_alone(groups: int, columns: int,
                                                             level: float) -> None:
    # A simulation's runs are columns of one array, bootstrapped together (more than one
    # chunk of 256 columns here): each column's interval is the one bootstrap_ci gives it.
    rng = np.random.default_rng(groups)
    data = rng.integers(0, 4, size=(groups, columns)) / 3.0
    low, high = bootstrap_cis(data, resamples=400, seed=5, level=level)
    assert low.shape == high.shape == (columns,)
    for column in range(columns):
        alone = bootstrap_ci(list(data[:, column]), resamples=400, seed=5, level=level)
        assert alone is not None
        assert (low[column], high[column]) == pytest.approx(alone, abs=1e-12)
    assert (low <= high).all() and (low < high).any()


@pytest.mark.parametrize("groups", [2, 3, 5, 12, 48, 400])
@pytest.mark.parametrize("level", [0.95, 0.995])
def test_the_expanded_level_is_hesterbergs(groups: int, level: float) -> None:
    # Hesterberg's expanded percentile interval, computed here from its definition: the
    # tail alpha' / 2 = Phi(-sqrt(n / (n - 1)) * t_{n-1, 1 - alpha/2}).
    tail = (1 - level) / 2
    t = scipy_stats.t(df=groups - 1).isf(tail)
    expected = 1 - 2 * scipy_stats.norm.sf(t * math.sqrt(groups / (groups - 1)))
    assert expanded_level(level, groups) == pytest.approx(expected, rel=1e-12)
    assert level < expanded_level(level, groups) <= 1


def test_the_expanded_level_shrinks_to_the_level_and_needs_two_groups() -> None:
    levels = [expanded_level(0.95, n) for n in (2, 3, 10, 100, 10_000)]
    assert levels == sorted(levels, reverse=True)
    assert levels[-1] == pytest.approx(0.95, abs=1e-3)
    assert expanded_level(0.95, 1) == expanded_level(0.95, 0) == 0.95


def test_the_numbers_the_scoring_page_states_are_the_ones_used() -> None:
    from memspec.analysis import stats

    page = (Path(__file__).parent.parent / "docs" / "scoring.md").read_text(encoding="utf-8")
    for constant, written, number in [
            ("BOOTSTRAP_RESAMPLES", "2000 resamples", 2000),
            ("SIGN_FLIP_RESAMPLES", "100,000 seeded random sign flips", 100_000),
            ("SIGN_FLIP_SUPPORT_LIMIT", "lattice would have over 2,000,000 points", 2_000_000),
            ("SIGN_FLIP_WORK_LIMIT", "take over 20,000,000 evaluations to build", 20_000_000),
            ("SIGN_FLIP_SUMS_LIMIT", "forming its sums would take over 500,000", 500_000),
            ("GUESSING_RESAMPLES", "20,000 seeded replicates", 20_000),
            ("GUESSING_SUPPORT_LIMIT", "would have over 2,000,000 points", 2_000_000)]:
        assert written in page, written
        assert getattr(stats, constant) == number, constant


@pytest.mark.parametrize(("right", "sizes", "chance"), [
    ([0, 4, 1, 2], [5, 7, 9, 11], 0.25), ([5, 6, 7, 8], [5, 7, 9, 11], 0.2),
    ([0, 0, 0, 0], [5, 7, 9, 11], 0.5), ([1, 2, 1, 3, 0, 2], [2, 2, 4, 4, 2, 4], 0.5),
    ([3, 1, 4, 0, 2], [5, 5, 7, 7, 7], 0.3)])
def test_a_guessing_test_too_large_to_enumerate_is_the_seeded_estimate_of_the_exact_one(
        right: list[int], sizes: list[int], chance: float,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Groups of several sizes, some sizes repeated, on coarse and fine lattices (where many
    # replicates tie with the observed sum, and where few do): with the support limit
    # lowered, the p-value is estimated from 20,000 seeded replicates, (1 + b) / (1 + B),
    # within sampling error of the exact one, and never 0.
    from memspec.analysis import stats

    exact = stats.guessing_test(right, sizes, chance)
    assert exact == pytest.approx(_guessing_by_brute_force(right, sizes, chance))
    monkeypatch.setattr(stats, "GUESSING_SUPPORT_LIMIT", 1)
    estimate = stats.guessing_test(right, sizes, chance)
    assert estimate == stats.guessing_test(right, sizes, chance)  # seeded
    assert estimate == pytest.approx(exact, abs=4 * math.sqrt(0.25 / 20_000) + 1e-4)
    assert estimate >= 1 / 20_001
    b = round(estimate * 20_001 - 1)
    assert estimate == (1 + b) / 20_001


def test_an_extreme_guessing_estimate_is_one_in_all_the_replicates_plus_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from memspec.analysis import stats

    monkeypatch.setattr(stats, "GUESSING_SUPPORT_LIMIT", 100)
    assert stats.guessing_test([5, 7, 9, 11], [5, 7, 9, 11], 0.1) == 1 / 20_001


def test_the_chance_test_takes_the_test_its_means_call_for() -> None:
    from memspec.analysis.stats import chance_test, guessing_test

    # Means of several items a group: the sign flips of the means less chance.
    means = [1 / 3, 2 / 3, 1.0, 2 / 3, 0.0, 1.0, 2 / 3, 1 / 3]
    assert chance_test(means, 0.25) == sign_flip_test([m - 0.25 for m in means])
    # One mean strictly between 0 and 1 is enough for the sign flips.
    mixed = [1.0, 0.0, 1.0, 1.0, 0.5]
    assert chance_test(mixed, 0.25) == sign_flip_test([m - 0.25 for m in mixed])
    # Every mean 0 or 1: the binomial test of the units right.
    assert chance_test([1.0, 0.0, 1.0, 1.0, 1.0], 0.25) == binomial_test(4, 5, 0.25)
    # With sizes: the larger of that and the guessing test; one item a unit: no guessing
    # test, the binomial one is it.
    sizes = [3] * len(means)
    right = [round(m * 3) for m in means]
    assert chance_test(means, 0.25, sizes) == max(
        sign_flip_test([m - 0.25 for m in means]), guessing_test(right, sizes, 0.25))
    assert chance_test([1.0, 0.0, 1.0], 0.5, [1, 1, 1]) == binomial_test(2, 3, 0.5)
    assert chance_test([], 0.5) is None and chance_test([], 0.5, []) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_sign_flips_of_deviations_on_no_lattice_are_exact(seed: int) -> None:
    # Deviations that are no small fractions (a declared chance such as 0.3333, or
    # irrational): the exact law is built on rounded sums and still matches scipy's full
    # enumeration.
    rng = np.random.default_rng(seed)
    deviations = np.concatenate([rng.normal(0.05, 0.2, size=9), [math.sqrt(2) / 10] * 3])
    theirs = scipy_stats.permutation_test(
        (deviations,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
        n_resamples=10**6).pvalue
    assert sign_flip_test(deviations) == pytest.approx(theirs)


@pytest.mark.parametrize("deviations", [
    [0.5, -0.5], [1 / 3, -1 / 3, 2 / 3, -2 / 3], [0.1] * 7 + [-0.1] * 7,
    [0.7, -0.3, -0.4, 0.123456789, -0.123456789], [math.pi / 10, -math.pi / 10] * 5])
def test_a_sum_of_zero_has_a_p_value_of_exactly_one(deviations: list[float]) -> None:
    # Every sign assignment is at least as extreme as a sum of 0: p is 1, never a rounding
    # past it.
    assert sign_flip_test(deviations) == 1.0


@pytest.mark.parametrize(("limit", "sampled"), [(4 * 3465, False), (4 * 3465 - 1, True),
                                                (1000, True)])
def test_the_guessing_law_is_exact_up_to_its_support_limit(
        limit: int, sampled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Four groups on the lattice 1/3465 hold 4 x 3465 points: exact with a limit of exactly
    # that many, estimated with fewer.
    from memspec.analysis import stats

    right, sizes, chance = [0, 4, 1, 2], [5, 7, 9, 11], 0.25
    exact = _guessing_by_brute_force(right, sizes, chance)
    monkeypatch.setattr(stats, "GUESSING_SUPPORT_LIMIT", limit)
    found = stats.guessing_test(right, sizes, chance)
    on_replicates = found == (1 + round(found * 20_001 - 1)) / 20_001
    if sampled:
        assert on_replicates and found != pytest.approx(exact, abs=1e-9)
    else:
        assert found == pytest.approx(exact, abs=1e-12)


def test_a_chance_test_over_groups_of_mixed_sizes_includes_the_guessing_test() -> None:
    from memspec.analysis.stats import chance_test, guessing_test

    # One group of one item among groups of three: several items in some groups is enough
    # for the guessing test to count.
    # Every group a little above chance: the sign flips find that significant, independent
    # guessing does not, and the test is the larger p-value.
    means = [1.0] + [2 / 3] * 8
    sizes = [1] + [3] * 8
    right = [round(m * s) for m, s in zip(means, sizes, strict=True)]
    flips = sign_flip_test([m - 0.5 for m in means])
    guessing = guessing_test(right, sizes, 0.5)
    assert flips < 0.05 < guessing
    assert chance_test(means, 0.5, sizes) == guessing


def test_rho_star_needs_an_adjusted_p_value_below_alpha_not_at_it() -> None:
    assert rho_star([("low", -0.1, 0.05)]) is None
    assert rho_star([("low", -0.1, 0.0499)]) == "low"
    # Two levels: Holm doubles the smaller p-value, so 0.025 is exactly at 0.05: none.
    assert rho_star([("low", -0.1, 0.025), ("high", -0.2, 0.5)]) is None
    assert rho_star([("low", -0.1, 0.0249), ("high", -0.2, 0.5)]) == "low"


def test_normalising_no_scores_gives_none_back() -> None:
    assert normalise([], "minmax") == [] and normalise([], "z", (0.0, 1.0)) == []


def _abstaining_deviations(seed: int, groups: int = 300) -> np.ndarray:
    """Each group's mean over the items it answered where memory is shown (any number from
    1 to 30 of them: a model that abstains now and then) less its mean where it is not,
    each item guessed among three options: deviations with many denominators."""
    rng = np.random.default_rng(seed)
    shown, hidden = rng.integers(1, 31, size=groups), rng.integers(1, 31, size=groups)
    return rng.binomial(shown, 1 / 3) / shown - rng.binomial(hidden, 1 / 3) / hidden


@pytest.mark.parametrize("seed", [0, 1])
def test_sign_flips_over_groups_of_many_answered_counts_evaluate_a_bounded_law(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Deviations c/k - c'/k' over every k up to 30 share a lattice of about 10^12 points;
    # building that law once took minutes a p-value. Every sum the test sorts and every
    # point a convolution forms is counted here: within the limits, and the p-value is
    # scipy's (sampled) permutation test's within sampling error.
    from memspec.analysis import stats

    formed = {"sorted": 0, "convolved": 0}
    unique, convolve = np.unique, np.convolve

    def counting_unique(values: np.ndarray, *args: object, **kwargs: object) -> object:
        formed["sorted"] += np.asarray(values).size
        return unique(values, *args, **kwargs)

    def counting_convolve(a: np.ndarray, b: np.ndarray, *args: object) -> np.ndarray:
        formed["convolved"] += len(a) * len(b)
        return convolve(a, b, *args)

    monkeypatch.setattr(np, "unique", counting_unique)
    monkeypatch.setattr(np, "convolve", counting_convolve)
    deviations = _abstaining_deviations(seed)
    ours = stats.sign_flip_test(deviations)
    assert formed["sorted"] <= stats.SIGN_FLIP_SUMS_LIMIT + deviations.size
    assert formed["convolved"] <= stats.SIGN_FLIP_WORK_LIMIT
    monkeypatch.setattr(np, "unique", unique)
    theirs = scipy_stats.permutation_test(
        (deviations,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
        n_resamples=20_000, random_state=0).pvalue
    assert ours == pytest.approx(theirs, abs=0.02)


def test_a_lattice_too_costly_to_build_is_estimated_from_the_seeded_sign_flips(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Group means over three rotations against chance 1/3 are on a small lattice, built
    # exactly; with the work limit lowered below what building it costs, the p-value is the
    # seeded estimate instead, (1 + b) / (1 + B), within sampling error of the exact one.
    from memspec.analysis import stats

    deviations = np.random.default_rng(4).binomial(3, 1 / 3, size=400) / 3 - 1 / 3
    exact = stats.sign_flip_test(deviations)
    monkeypatch.setattr(stats, "SIGN_FLIP_WORK_LIMIT", 10)
    estimate = stats.sign_flip_test(deviations)
    assert estimate == stats._sampled_sign_flip(np.round(deviations, 9),
                                                abs(float(np.round(deviations, 9).sum())) - 1e-6)
    b = round(estimate * (1 + stats.SIGN_FLIP_RESAMPLES) - 1)
    assert estimate == (1 + b) / (1 + stats.SIGN_FLIP_RESAMPLES) != exact
    assert estimate == pytest.approx(exact, abs=4 * math.sqrt(0.25 / stats.SIGN_FLIP_RESAMPLES))


def test_a_guessing_law_with_one_large_term_is_exact_and_quick() -> None:
    # Groups of 18 and of 78 items (two designs of one release): the law of 30 x 18 + 30 x 78
    # guesses on the lattice 1/234, against a brute-force sum over both binomial counts.
    from memspec.analysis.stats import guessing_test

    sizes = [18] * 30 + [78] * 30
    rng = np.random.default_rng(2)
    right = [int(rng.binomial(s, 0.4)) for s in sizes]
    chance = 1 / 3
    observed = abs(math.fsum(r / s for r, s in zip(right, sizes, strict=True)) - 60 * chance)
    first = scipy_stats.binom.pmf(np.arange(541), 540, chance)
    second = scipy_stats.binom.pmf(np.arange(2341), 2340, chance)
    sums = np.arange(541)[:, None] / 18 + np.arange(2341)[None, :] / 78
    far = np.abs(sums - 60 * chance) >= observed - 1e-9
    expected = float((first[:, None] * second[None, :])[far].sum())
    assert guessing_test(right, sizes, chance) == pytest.approx(expected, rel=1e-9)


def test_a_guessing_test_over_groups_of_every_size_is_estimated_not_overflowed() -> None:
    # Every number of answered items from 1 to 40: the lattice 1/lcm(1..40) is finer than any
    # integer type holds. The p-value is the seeded estimate, close to the law of
    # independent guesses drawn here on their own.
    from memspec.analysis.stats import GUESSING_RESAMPLES, guessing_test

    rng = np.random.default_rng(9)
    sizes = [int(s) for s in rng.integers(1, 41, size=300)]
    right = [int(rng.binomial(s, 0.36)) for s in sizes]
    p_value = guessing_test(right, sizes, 1 / 3)
    assert p_value == guessing_test(right, sizes, 1 / 3)  # seeded
    b = round(p_value * (1 + GUESSING_RESAMPLES) - 1)
    assert p_value == (1 + b) / (1 + GUESSING_RESAMPLES)
    draws = rng.binomial(np.array(sizes)[None, :], 1 / 3, size=(50_000, len(sizes)))
    means = (draws / np.array(sizes)).sum(axis=1)
    observed = abs(math.fsum(r / s for r, s in zip(right, sizes, strict=True)) - 100)
    theirs = float((np.abs(means - 100) >= observed - 1e-9).mean())
    assert p_value == pytest.approx(theirs, abs=0.02)


def test_the_binomial_law_and_the_expanded_level_are_scipy_stats_own_values() -> None:
    # Read from scipy.special so that `score` need not import scipy.stats: the same
    # numbers, bit for bit, as scipy.stats gives.
    from memspec.analysis.stats import binomial_pmf

    for trials, chance in [(2700, 1 / 3), (11_700, 1 / 3), (10, 0.25), (540, 0.1)]:
        k = np.arange(trials + 1)
        assert np.array_equal(binomial_pmf(k, trials, chance),
                              scipy_stats.binom.pmf(k, trials, chance))
    for groups in [2, 3, 17, 300, 5000]:
        for level in [0.95, 0.999, 1 - 0.05 / 300]:
            tail = (1 - level) / 2
            spread = math.sqrt(groups / (groups - 1)) * scipy_stats.t.ppf(1 - tail, groups - 1)
            assert expanded_level(level, groups) == 1 - 2 * scipy_stats.norm.cdf(-spread)


def test_bootstrap_draws_in_chunks_are_the_draws_made_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A far interval draws hundreds of thousands of resamples, drawn a chunk at a time to
    # keep memory flat: the interval is the one drawing them all at once gives.
    from memspec.analysis import stats

    values = list(np.random.default_rng(1).integers(0, 4, size=57) / 3)
    labels = [f"c{i % 7}" for i in range(57)]
    whole = (stats.bootstrap_ci(values, resamples=5000, level=0.999),
             stats.bootstrap_ci(values, labels, resamples=5000, level=0.999))
    monkeypatch.setattr(stats, "_PICKS_AT_ONCE", 100)  # a chunk of one or two resamples
    assert (stats.bootstrap_ci(values, resamples=5000, level=0.999),
            stats.bootstrap_ci(values, labels, resamples=5000, level=0.999)) == whole

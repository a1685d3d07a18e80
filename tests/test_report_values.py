"""The numbers a score report publishes, each against an independent computation (scipy,
statsmodels or by hand): interval bounds on both sides, the cluster bootstrap, the chance
rate a test is run against, Holm's adjustment, accuracy over answered items, reliance, and a
judged pair with an arm missing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from memspec.analysis.score import ScoreOptions, attach_judgments, outcome, score_outcomes
from memspec.analysis.stats import (
    adjust,
    bootstrap_ci,
    expanded_level,
    holm,
    rho_star,
    sign_flip_test,
)
from memspec.core.errors import SpecError


def _choice(group: int, right: bool, *, family: str = "f", options: int = 3,
            chance: float | None = None, axes: dict | None = None, fields: dict | None = None,
            distractor: bool = True, answer: str | None = None) -> tuple[dict, str]:
    """A choice instance whose gold is the first option, and a response right or wrong (the
    second option, the declared distractor where there is one)."""
    labels = [f"option {k}" for k in range(options)]
    instance = {"id": f"{family}-{group:05d}-{'.'.join((axes or {}).values()) or 'x'}",
                "family": family, "group": group, "design": "main", "axes": axes or {},
                "fields": fields or {},
                "answer": {"scorer": "choice", "options": labels, "gold": labels[0],
                           "gold_index": 0,
                           **({"distractors": {"stale": labels[1]}} if distractor else {})},
                "analysis": {"chance": chance} if chance else {}}
    return instance, answer if answer is not None else ("A" if right else "B")


def _report(pairs: list[tuple[dict, str | None]], by: list[str] | None = None,
            **options: object) -> dict:
    outcomes = [outcome(instance, response) for instance, response in pairs]
    return score_outcomes(outcomes, by or [], ScoreOptions(**options))


def _scipy_percentile(values: list[float], resamples: int = 40_000,
                      level: float = 0.95) -> tuple[float, float]:
    found = scipy_stats.bootstrap((np.asarray(values),), np.mean, method="percentile",
                                  n_resamples=resamples, confidence_level=level,
                                  random_state=np.random.default_rng(5)).confidence_interval
    return found.low, found.high


def test_accuracy_interval_has_both_bounds_of_a_percentile_bootstrap() -> None:
    # 5 groups of 12 right: an estimate of 5/12 whose interval reaches well above it.
    rights = [True] * 5 + [False] * 7
    overall = _report([_choice(g, r) for g, r in enumerate(rights)])["overall"]
    low, high = _scipy_percentile([float(r) for r in rights])
    assert overall["accuracy"] == pytest.approx(5 / 12)
    assert overall["accuracy_ci"][0] == pytest.approx(low, abs=0.03)
    assert overall["accuracy_ci"][1] == pytest.approx(high, abs=0.03)
    assert overall["accuracy_ci"][1] - overall["accuracy"] > 0.2
    # Coverage is 1 everywhere: its interval is the point.
    assert overall["coverage"] == 1.0 and overall["coverage_ci"] == [1.0, 1.0]
    assert overall["selective_risk"] == pytest.approx(7 / 12)


def test_delta_mem_interval_has_both_bounds_at_the_expanded_level() -> None:
    # Per group: stale right or wrong against a baseline always right; Δmem per group is 0
    # or -1, its interval a percentile bootstrap of those values.
    pairs, per_group = [], []
    for g, stale_right in enumerate([True, False, True, True, False, True, True, False]):
        base = _choice(g, True, axes={"condition": "none"})
        stale = _choice(g, stale_right, axes={"condition": "stale"})
        for instance, _ in (base, stale):
            instance["analysis"]["baseline"] = {"axis": "condition", "value": "none"}
        pairs += [base, stale]
        per_group.append(0.0 if stale_right else -1.0)
    report = _report(pairs, ["condition"], correction="none")
    stale = next(g["metrics"] for g in report["groups"] if g["key"] == {"condition": "stale"})
    # A 95% interval read at the expanded percentile level for 8 groups: with Student's t on
    # 7 degrees of freedom, widened by sqrt(8/7), the tails are 2 Φ(-sqrt(8/7) t_7(0.975)).
    level = 1 - 2 * scipy_stats.norm.cdf(-math.sqrt(8 / 7) * scipy_stats.t.ppf(0.975, 7))
    assert expanded_level(0.95, 8) == pytest.approx(level)
    low, high = _scipy_percentile(per_group, level=level)
    assert stale["delta_mem"] == pytest.approx(-3 / 8)
    assert stale["delta_mem_pairs"] == 8
    # Bootstrap means of 8 values of 0 or -1 fall on steps of 1/8: at a far quantile, the
    # two resamplings may land on neighbouring steps.
    assert stale["delta_mem_ci"][0] == pytest.approx(low, abs=0.126)
    assert stale["delta_mem_ci"][1] == pytest.approx(high, abs=0.126)
    # A resample draws none of the 3 groups at -1 with probability (5/8)^8 = 2.3%, more
    # than the expanded tail (0.8%): the upper bound is 0, not Δmem, nor below 0.
    assert (1 - level) / 2 < (5 / 8) ** 8
    assert stale["delta_mem_ci"][1] == 0.0
    assert stale["delta_mem_ci"][0] < stale["delta_mem"] - 0.1


def test_a_cluster_bootstrap_of_one_group_a_cluster_is_the_ordinary_one() -> None:
    values = [0.0, 1.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75]
    assert bootstrap_ci(values, [f"c{k}" for k in range(8)], seed=3) == \
        bootstrap_ci(values, seed=3)


def test_the_cluster_bootstrap_draws_every_cluster_alike() -> None:
    # Ten clusters of unequal size; the resampled statistic is the pooled mean of the drawn
    # clusters (sum of values over number of groups), as scipy's paired bootstrap of the
    # (sum, size) of each cluster computes it.
    rng = np.random.default_rng(8)
    sizes = [1, 2, 3, 4, 1, 2, 5, 1, 3, 2]
    values, clusters = [], []
    for index, size in enumerate(sizes):
        level = rng.uniform(0, 1)
        values += list(np.clip(level + rng.normal(0, 0.1, size), 0, 1))
        clusters += [f"c{index}"] * size
    sums = np.array([sum(v for v, c in zip(values, clusters, strict=True) if c == f"c{i}")
                     for i in range(len(sizes))])
    theirs = scipy_stats.bootstrap(
        (sums, np.array(sizes, dtype=float)), lambda s, n, axis: s.sum(axis) / n.sum(axis),
        paired=True, vectorized=True, method="percentile", n_resamples=40_000,
        random_state=np.random.default_rng(1)).confidence_interval
    ours = bootstrap_ci(values, clusters, resamples=40_000, seed=2)
    assert ours is not None
    assert ours[0] == pytest.approx(theirs.low, abs=0.02)
    assert ours[1] == pytest.approx(theirs.high, abs=0.02)


def test_cluster_with_exactly_two_clusters_is_scored_and_one_is_refused() -> None:
    pairs = [_choice(g, g % 3 != 0, fields={"template": f"t{g % 2}"}) for g in range(8)]
    report = _report(pairs, cluster="template")
    (test,) = report["overall"]["tests"]
    assert (test["unit"], test["clusters"], test["groups"]) == ("cluster", 2, 8)
    assert report["overall"]["accuracy"] == pytest.approx(5 / 8)
    # Two clusters (means 3/4 and 1/2, four groups each): every resample is a mix of them.
    low, high = report["overall"]["accuracy_ci"]
    assert (low, high) == (pytest.approx(0.5), pytest.approx(0.75))
    one = [_choice(g, True, fields={"template": "t"}) for g in range(4)]
    with pytest.raises(SpecError, match="puts every group in one cluster"):
        _report(one, cluster="template")
    varying = [_choice(0, True, fields={"template": "a"}, axes={"r": "0"}),
               _choice(0, True, fields={"template": "b"}, axes={"r": "1"})]
    with pytest.raises(SpecError, match="varies within group 0"):
        _report(varying, cluster="template")
    with pytest.raises(SpecError, match="no instance has a key 'nothing'"):
        _report(pairs, ["nothing"])


@pytest.mark.parametrize(("options", "right"), [(4, 3), (2, 7), (5, 9)])
def test_chance_is_one_over_the_options_where_none_is_declared(options: int, right: int) -> None:
    pairs = [_choice(g, g < right, options=options) for g in range(10)]
    (test,) = _report(pairs)["overall"]["tests"]
    assert test["chance"] == pytest.approx(1 / options)
    assert test["p_value"] == pytest.approx(
        scipy_stats.binomtest(right, 10, 1 / options).pvalue)


def test_a_declared_chance_overrides_the_options() -> None:
    pairs = [_choice(g, g < 6, options=4, chance=0.5) for g in range(10)]
    (test,) = _report(pairs)["overall"]["tests"]
    assert test["chance"] == 0.5
    assert test["p_value"] == pytest.approx(scipy_stats.binomtest(6, 10, 0.5).pvalue)


def test_holm_never_exceeds_one_and_matches_statsmodels() -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    for p_values in ([0.9, 0.8, 0.7], [0.4, 0.6, 0.35, 0.02], [1.0, 0.5]):
        expected = list(multitest.multipletests(p_values, method="holm")[1])
        assert holm(p_values) == pytest.approx(expected)
        assert max(holm(p_values)) <= 1.0
        assert adjust(p_values, "bonferroni") == pytest.approx(
            list(multitest.multipletests(p_values, method="bonferroni")[1]))
    assert adjust([0.2, None, 0.3], "bonferroni") == [pytest.approx(0.4), None,
                                                      pytest.approx(0.6)]
    with pytest.raises(ValueError, match="unknown correction"):
        adjust([0.1], "sidak")


def test_accuracy_counts_answered_items_and_accuracy_all_every_item() -> None:
    # Four groups, two rotations each. Group 0: right, right; group 1: right, abstains;
    # group 2: wrong, abstains; group 3: abstains twice.
    plan = [("A", "A"), ("A", "I don't know"), ("B", "I don't know"),
            ("I don't know", "I don't know")]
    pairs = [_choice(g, True, axes={"rotation": str(r)}, answer=response)
             for g, responses in enumerate(plan) for r, response in enumerate(responses)]
    overall = _report(pairs)["overall"]
    assert (overall["n"], overall["answered"], overall["missing"]) == (8, 4, 0)
    # Group means over answered items: 1, 1, 0 (group 3 has none) -> 2/3.
    assert overall["accuracy"] == pytest.approx(2 / 3)
    # Over every item, an abstention wrong: 1, 1/2, 0, 0 -> 3/8.
    assert overall["accuracy_all"] == pytest.approx(3 / 8)
    # Coverage per group: 1, 1/2, 1/2, 0 -> 1/2.
    assert overall["coverage"] == pytest.approx(0.5)
    assert overall["abstention_rate"] == pytest.approx(0.5)
    # Reliance over answered items: group 0 none, 1 none, 2 relied -> 1/3.
    assert overall["reliance"] == pytest.approx(1 / 3)


def test_reliance_reads_only_items_that_declare_a_distractor() -> None:
    with_one = [_choice(g, g == 0, family="d") for g in range(2)]  # 0 right, 1 relies
    without = [_choice(g, False, family="n", distractor=False) for g in range(2)]
    report = _report([*with_one, *without], ["family"])
    assert report["overall"]["reliance"] == pytest.approx(0.5)
    rows = {g["key"]["family"]: g["metrics"] for g in report["groups"]}
    assert rows["d"]["reliance"] == pytest.approx(0.5)
    assert "reliance" not in rows["n"]
    assert rows["n"]["accuracy"] == 0.0


def _judged(group: int, arm: str) -> dict:
    return {"id": f"j-{group:05d}-{arm}", "family": "j", "group": group, "design": "main",
            "axes": {"arm": arm}, "fields": {}, "answer": {"scorer": "judge"},
            "analysis": {"judge_pairs": {"axis": "arm", "treatment": "t", "control": "c"},
                         "judge_scale": [1, 5]}}


def test_judge_influence_pairs_arms_and_skips_a_pair_with_one_arm_missing() -> None:
    instances = [_judged(g, arm) for g in range(3) for arm in ("t", "c")]
    scores = {"j-00000-t": 5, "j-00000-c": 3, "j-00001-t": 2, "j-00001-c": 4,
              "j-00002-t": 4}  # group 2's control was never judged
    outcomes, _ = attach_judgments([outcome(i, "text") for i in instances], scores, None,
                                   "family")
    overall = score_outcomes(outcomes, [], ScoreOptions())["overall"]
    # Influence per group with both arms: +2, -2 -> 0; group 2 has no pair.
    assert overall["influence"] == pytest.approx(0.0)
    assert overall["influence_percent"] == pytest.approx(0.0)
    # Judge score per group over its judged items: 4, 3, 4.
    assert overall["judge_score"] == pytest.approx(11 / 3)
    assert overall["accuracy"] is None and "tests" not in overall
    assert score_outcomes(outcomes, [], ScoreOptions())["multiplicity"]["tests"] == 0
    only_treatment = {k: v for k, v in scores.items() if k.endswith("-t")}
    outcomes, _ = attach_judgments([outcome(i, "text") for i in instances], only_treatment,
                                   None, "family")
    overall = score_outcomes(outcomes, [], ScoreOptions())["overall"]
    assert "influence" not in overall and overall["judge_score"] == pytest.approx(11 / 3)


def test_influence_as_a_percentage_of_the_judge_scale() -> None:
    instances = [_judged(g, arm) for g in range(2) for arm in ("t", "c")]
    scores = {"j-00000-t": 5, "j-00000-c": 3, "j-00001-t": 4, "j-00001-c": 3}
    outcomes, _ = attach_judgments([outcome(i, "text") for i in instances], scores, None,
                                   "family")
    overall = score_outcomes(outcomes, [], ScoreOptions())["overall"]
    assert overall["influence"] == pytest.approx(1.5)
    assert overall["influence_percent"] == pytest.approx(100 * 1.5 / 4)
    # Its interval is the influence's on the same scale, and a resample of the two groups'
    # differences (+2, +1) cannot leave [1, 2]: [25%, 50%] of the scale's width of 4.
    low, high = overall["influence_percent_ci"]
    assert [low, high] == pytest.approx([100 * v / 4 for v in overall["influence_ci"]])
    assert 25 <= low <= 37.5 <= high <= 50


def test_groups_all_alike_have_the_estimate_as_their_interval() -> None:
    # Six groups, each right in one of three rotations: every group mean is 1/3, and so is
    # every resample's; the interval is the estimate itself, not a few ulps beside it.
    pairs = [_choice(g, r == 0, axes={"rotation": str(r)}) for g in range(6) for r in range(3)]
    overall = _report(pairs)["overall"]
    assert overall["accuracy"] == 1 / 3
    assert overall["accuracy_ci"] == [overall["accuracy"], overall["accuracy"]]
    (test,) = overall["tests"]
    assert (test["mean"], test["groups"], test["items"], test["p_value"]) == \
        (pytest.approx(1 / 3), 6, 18, 1.0)


def test_a_missing_response_is_counted_and_not_answered() -> None:
    pairs = [_choice(0, True), (_choice(1, True)[0], None), _choice(2, False)]
    overall = _report(pairs)["overall"]
    assert (overall["n"], overall["answered"], overall["missing"]) == (3, 2, 1)
    assert overall["coverage"] == pytest.approx(2 / 3)
    assert overall["accuracy"] == pytest.approx(1 / 2)
    assert overall["accuracy_all"] == pytest.approx(1 / 3)


def test_rows_follow_the_keys_in_sorted_order_and_a_missing_key_reads_none() -> None:
    pairs = [_choice(g, g % 2 == 0, family=family, fields={"split": split} if split else {})
             for g, (family, split) in enumerate([("b", "dev"), ("a", None), ("b", None),
                                                   ("a", "dev")])]
    report = _report(pairs, ["family", "split"])
    assert [g["key"] for g in report["groups"]] == [
        {"family": "a", "split": "dev"}, {"family": "a", "split": "test"},
        {"family": "b", "split": "dev"}, {"family": "b", "split": "test"}]
    assert [g["metrics"]["n"] for g in report["groups"]] == [1, 1, 1, 1]
    by_group = _report(pairs, ["group"])
    assert [g["key"]["group"] for g in by_group["groups"]] == ["a#1", "a#3", "b#0", "b#2"]


def test_a_headline_summary_is_the_unweighted_mean_of_its_parts() -> None:
    # Family a: 3 of 4 groups right (75%); family b: 1 of 2 (50%); headline 62.5, not the
    # 4 of 6 (66.7) pooled over items.
    pairs = [_choice(g, g < 3, family="a") for g in range(4)] + \
        [_choice(g, g < 1, family="b") for g in range(2)]
    summary = {"name": "headline", "over": "family", "metric": "accuracy",
               "metrics": {"b": "coverage"}}
    report = _report(pairs, analysis=({"summaries": [summary]},))
    (found,) = report["summaries"]
    assert found["parts"] == {"a": {"metric": "accuracy", "percent": pytest.approx(75.0)},
                              "b": {"metric": "coverage", "percent": pytest.approx(100.0)}}
    assert found["score"] == pytest.approx(87.5)
    plain = _report(pairs, analysis=({"summaries": [{**summary, "metrics": {}}]},))
    assert plain["summaries"][0]["score"] == pytest.approx(62.5)
    # A part with nothing to score leaves the headline undefined, never 0.
    nothing = [*pairs[:4], (_choice(0, True, family="b")[0], "I don't know")]
    undefined = _report(nothing, analysis=({"summaries": [{**summary, "metrics": {}}]},))
    assert undefined["summaries"][0]["parts"]["b"]["percent"] is None
    assert undefined["summaries"][0]["score"] is None


@pytest.mark.parametrize("scope", ["report", "row"])
def test_every_test_of_a_scope_is_corrected_together(scope: str) -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    pairs = [_choice(g, g % 4 != 0, family=family) for family in ("a", "b")
             for g in range(12)]
    report = _report(pairs, ["family"], scope=scope)
    rows = [report["overall"]["tests"], *(g["metrics"]["tests"] for g in report["groups"])]
    families = [[t for row in rows for t in row]] if scope == "report" else rows
    for family in families:
        expected = multitest.multipletests([t["p_value"] for t in family], method="holm")[1]
        assert [t["p_adjusted"] for t in family] == pytest.approx(list(expected))
    assert report["multiplicity"]["tests"] == (3 if scope == "report" else 1)


def test_abstentions_read_the_first_line_and_declared_patterns() -> None:
    instance, _ = _choice(0, True)
    assert outcome(instance, "A) option 0. I don't know why the note says B").answered is True
    assert outcome(instance, "\n\nI'm not sure.").answered is False
    assert outcome(instance, "Pass.").answered is True
    declared = {**instance, "answer": {**instance["answer"], "abstain": [r"^pass\b"]}}
    assert outcome(declared, "Pass.").answered is False
    assert outcome(instance, "Pass.", (r"^(p)ass",)).answered is False  # a group of its own
    assert outcome(instance, "   ").answered is False


def test_a_row_holding_one_arm_of_a_pair_has_one_chance_test_and_no_paired_one() -> None:
    def inst(group: int, document: str) -> tuple[dict, str]:
        instance = {"id": f"f-{group:05d}-{document}", "family": "f", "group": group,
                    "design": "main", "axes": {"document": document}, "fields": {},
                    "answer": {"scorer": "exact", "gold": "yes"},
                    "analysis": {"paired": [{"axis": "document", "a": "real", "b": "fake"}],
                                 "chance": 0.5}}
        return instance, "yes" if document == "real" or group < 2 else "no"

    pairs = [inst(g, d) for g in range(6) for d in ("real", "fake")]
    report = _report(pairs, ["document"])
    overall = {(t["test"], t.get("arm", {}).get("document")): t
               for t in report["overall"]["tests"]}
    assert set(overall) == {("sign_flip_vs_chance", "fake"), ("sign_flip_vs_chance", "real"),
                            ("mcnemar_exact", None)}
    paired = overall[("mcnemar_exact", None)]
    assert (paired["pairs"], paired["only_a"], paired["only_b"]) == (6, 4, 0)
    assert paired["p_value"] == pytest.approx(
        scipy_stats.binomtest(4, 4, 0.5).pvalue)
    for row in report["groups"]:
        (test,) = row["metrics"]["tests"]
        assert test["test"] == "sign_flip_vs_chance" and "arm" not in test
        assert test["groups"] == 6


def test_a_simultaneous_interval_is_estimated_from_enough_resamples() -> None:
    # Three intervals at a family-wise 5%: each is a (1 - 0.05/3) percentile interval, read
    # from at least 2 x 20 / (0.05/3) resamples so that 20 fall beyond each bound, whatever
    # --resamples says.
    pairs, per_group = [], []
    for g, stale_right in enumerate([True, False, True, True, False, True, True, False,
                                     True, True]):
        base = _choice(g, g % 4 != 0, axes={"condition": "none"})
        stale = _choice(g, stale_right, axes={"condition": "stale"})
        for instance, _ in (base, stale):
            instance["analysis"]["baseline"] = {"axis": "condition", "value": "none"}
        pairs += [base, stale]
        per_group.append(float(stale_right) - float(g % 4 != 0))
    report = _report(pairs, ["condition"], resamples=50, seed=4)
    intervals = report["multiplicity"]["intervals"]
    assert intervals["count"] == 3 and intervals["simultaneous"] is True
    level = intervals["level"]
    assert level == pytest.approx(1 - 0.05 / 3)
    stale = next(g["metrics"] for g in report["groups"] if g["key"] == {"condition": "stale"})
    level = expanded_level(level, len(per_group))  # read at the expanded percentile level
    expected = bootstrap_ci(per_group, resamples=math.ceil(20 * 2 / (1 - level)), seed=4,
                            level=level)
    assert stale["delta_mem_ci"] == list(expected)
    assert report["overall"]["delta_mem_ci"] == list(expected)


def test_rho_star_needs_an_estimate_below_zero_not_at_it() -> None:
    assert rho_star([("a", 0.0, 0.001), ("b", -1e-9, 0.001)]) == "b"
    assert rho_star([("a", None, None), ("b", -0.4, None), ("c", None, 0.001)]) is None


def test_an_estimated_sign_flip_p_value_is_one_when_nothing_deviates_overall() -> None:
    # Deviations on no shared lattice, each met once with each sign: too many sums to
    # enumerate, so the p-value is estimated, and every assignment is at least as extreme as
    # a sum of zero: (1 + B) / (1 + B) = 1, never above.
    values = [math.sqrt(k + 2) / 100 for k in range(40)]
    assert sign_flip_test([*values, *(-v for v in values)]) == 1.0


def test_the_library_defaults_are_the_command_lines() -> None:
    # `memspec score` defaults: 2000 resamples, seed 0, Holm over the report, alpha 0.05.
    pairs = [_choice(g, g % 3 != 0, options=4) for g in range(9)]
    explicit = ScoreOptions(cluster=None, resamples=2000, seed=0, correction="holm",
                            scope="report", alpha=0.05)
    outcomes = [outcome(instance, response) for instance, response in pairs]
    assert score_outcomes(outcomes, [], ScoreOptions()) == \
        score_outcomes(outcomes, [], explicit)
    values = [float(g % 3 != 0) for g in range(9)]
    assert score_outcomes(outcomes, [], ScoreOptions())["overall"]["accuracy_ci"] == \
        list(bootstrap_ci(values, resamples=2000, seed=0))


@pytest.mark.parametrize("seed", [0, 1])
def test_sign_flips_off_any_lattice_are_still_exact(seed: int) -> None:
    # Against a chance rate of 1/pi the deviations share no small lattice: the exact law is
    # built on their own values, and must equal scipy's enumeration of all 2^n assignments.
    rng = np.random.default_rng(seed)
    deviations = rng.binomial(3, 0.4, size=12) / 3 - 1 / math.pi
    theirs = scipy_stats.permutation_test(
        (deviations,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
        n_resamples=10**6).pvalue
    assert sign_flip_test(deviations) == pytest.approx(theirs)


def test_influence_is_the_mean_of_a_groups_pairs_then_of_the_groups() -> None:
    # Group 0 has two pairs (rotations r0, r1): +2 and 0, so +1; group 1 one pair, -1.
    def judged(group: int, arm: str, rotation: str) -> dict:
        instance = _judged(group, arm)
        instance["id"] = f"j-{group:05d}-{arm}.{rotation}"
        instance["axes"] = {"arm": arm, "rotation": rotation}
        return instance

    instances = [judged(0, a, r) for a in ("t", "c") for r in ("r0", "r1")] + \
        [judged(1, a, "r0") for a in ("t", "c")]
    scores = {"j-00000-t.r0": 5, "j-00000-c.r0": 3, "j-00000-t.r1": 4, "j-00000-c.r1": 4,
              "j-00001-t.r0": 2, "j-00001-c.r0": 3}
    outcomes, _ = attach_judgments([outcome(i, "text") for i in instances], scores, None,
                                   "family")
    overall = score_outcomes(outcomes, [], ScoreOptions())["overall"]
    assert overall["influence"] == pytest.approx(0.0)
    assert overall["judge_score"] == pytest.approx((4 + 2.5) / 2)


def test_an_interval_beyond_what_resampling_reaches_is_the_range_of_the_groups() -> None:
    # Three groups: a 95% interval at the expanded level reads a tail of about 1e-7, which
    # no affordable number of resamples reaches; its limit is the groups' range, [-1, 0].
    pairs = []
    for g, stale_right in enumerate([True, False, True]):
        base = _choice(g, True, axes={"condition": "none"})
        stale = _choice(g, stale_right, axes={"condition": "stale"})
        for instance, _ in (base, stale):
            instance["analysis"]["baseline"] = {"axis": "condition", "value": "none"}
        pairs += [base, stale]
    assert 1 - expanded_level(0.95, 3) < 1e-6
    report = _report(pairs, ["condition"], correction="none")
    stale = next(g["metrics"] for g in report["groups"] if g["key"] == {"condition": "stale"})
    assert stale["delta_mem"] == pytest.approx(-1 / 3)
    assert stale["delta_mem_ci"] == [-1.0, 0.0]


def _control(group: int, right: bool, chance: float) -> tuple[dict, str]:
    """A choice item of a family that declares itself a positive control (audit.chance 1)."""
    instance, response = _choice(group, right, family="control", options=2)
    instance["analysis"] = {"audit": {"chance": chance}}
    return instance, response


def test_a_positive_control_is_left_out_of_a_pooled_chance_test_and_named() -> None:
    # A memoryless policy passes the control (every item right) and guesses elsewhere (4 of
    # 10 right at chance 1/2): pooled, the controls would make it beat chance.
    others = [_choice(g, g < 4, options=2) for g in range(10)]
    controls = [_control(100 + g, True, 1) for g in range(10)]
    (test,) = _report(others + controls)["overall"]["tests"]
    assert test["controls_apart"] == ["control"]
    assert test["chance"] == 0.5 and test["groups"] == 10
    assert test["p_value"] == pytest.approx(scipy_stats.binomtest(4, 10, 0.5).pvalue)
    # A family whose audit chance is not 1 is no control: pooled with the others.
    lookalikes = [_control(100 + g, True, 0.5) for g in range(10)]
    (pooled,) = _report(others + lookalikes)["overall"]["tests"]
    assert "controls_apart" not in pooled and pooled["groups"] == 20
    assert pooled["p_value"] == pytest.approx(scipy_stats.binomtest(14, 20, 0.5).pvalue)
    # Controls alone are tested: beating chance there is what a control is for.
    (alone,) = _report(controls)["overall"]["tests"]
    assert "controls_apart" not in alone and alone["groups"] == 10
    assert alone["p_value"] == pytest.approx(scipy_stats.binomtest(10, 10, 0.5).pvalue)


def _stale_pairs(stale_right: list[bool], templates: list[str] | None = None
                 ) -> list[tuple[dict, str]]:
    """A baseline always right and a stale arm right or wrong, one group each, with the
    template of each group where given (Δmem per group: 0 or -1)."""
    pairs = []
    for g, right in enumerate(stale_right):
        fields = {"template": templates[g]} if templates else None
        base = _choice(g, True, axes={"condition": "none"}, fields=fields)
        stale = _choice(g, right, axes={"condition": "stale"}, fields=fields)
        for instance, _ in (base, stale):
            instance["analysis"]["baseline"] = {"axis": "condition", "value": "none"}
        pairs += [base, stale]
    return pairs


def _stale_metrics(report: dict) -> dict:
    return next(g["metrics"] for g in report["groups"] if g["key"] == {"condition": "stale"})


@pytest.mark.parametrize(("stale_right", "templates", "expected"), [
    # Two groups: the expanded level is 1 to a float's resolution, no resample reaches it;
    # the interval is the range of the two groups' values.
    ([False, True], None, [-1.0, 0.0]),
    # Three clusters of two groups (means -1, -1/2, 0): the range of the clusters' means.
    ([False, True, True, False, False, True], ["t0", "t1", "t2", "t0", "t1", "t2"],
     [-1.0, 0.0]),
    # Two clusters of unequal size (means -2/3 and -1/2): the range of their means.
    ([False, False, True, False, True, True, False], ["a", "a", "a", "b", "b", "b", "b"],
     [-2 / 3, -1 / 2])])
def test_an_interval_no_resample_reaches_is_the_range_of_its_units(
        stale_right: list[bool], templates: list[str] | None, expected: list[float]) -> None:
    options = {"cluster": "template"} if templates else {}
    report = _report(_stale_pairs(stale_right, templates), ["condition"], correction="none",
                     **options)
    assert _stale_metrics(report)["delta_mem_ci"] == pytest.approx(expected)


def test_the_resamples_asked_for_are_drawn_up_to_the_most_an_interval_draws() -> None:
    # --resamples at the limit (400,000) still draws them: the interval is the bootstrap's,
    # not the groups' range.
    from memspec.analysis.score_intervals import MAX_RESAMPLES

    pairs = [_choice(g, g % 3 != 0) for g in range(9)]
    values = [0.0 if g % 3 == 0 else 1.0 for g in range(9)]
    report = _report(pairs, resamples=MAX_RESAMPLES, seed=4)
    expected = bootstrap_ci(values, resamples=MAX_RESAMPLES, seed=4)
    assert expected is not None and expected != (0.0, 1.0)
    assert report["overall"]["accuracy_ci"] == pytest.approx(list(expected))


def test_the_numbers_the_scoring_page_states_for_intervals_are_the_ones_used() -> None:
    from pathlib import Path

    from memspec.analysis import score_intervals

    page = (Path(__file__).parent.parent / "docs" / "scoring.md").read_text(encoding="utf-8")
    page = " ".join(page.split())
    assert "the resamples are raised so that at least 20 fall beyond" in page
    assert score_intervals.TAIL_RESAMPLES == 20
    assert "out for 400,000 resamples" in page
    assert score_intervals.MAX_RESAMPLES == 400_000


def _act(group: int, arm: str) -> dict:
    """An act/don't-act item: acting (a remind call) is right on the cue arm only."""
    return {"id": f"act-{group:05d}-{arm}", "family": "act", "group": group, "design": "main",
            "axes": {"arm": arm}, "fields": {},
            "answer": {"scorer": "regex", "gold": "^remind\\(" if arm == "cue" else "^ok$"},
            "analysis": {"signal": {"performed": "^remind\\(", "act": {"arm": "cue"}},
                         "outcomes": {"acted": "^remind\\(", "waited": "^ok$"}}}


def test_signal_rates_and_declared_outcomes_read_answered_items_only() -> None:
    # A policy that acts on every cue and never otherwise, except that in groups 0-3 its cue
    # response is an abstention and in groups 4-5 its no-cue response is missing: those
    # items are neither hits, misses, false alarms nor outcomes.
    pairs = []
    for g in range(12):
        cue = "I don't know." if g < 4 else "remind('standup')"
        pairs += [(_act(g, "cue"), cue), (_act(g, "none"), None if g in (4, 5) else "ok")]
    overall = _report(pairs)["overall"]
    assert (overall["hit_rate"], overall["false_alarm_rate"]) == (1.0, 0.0)
    # Per group, the share of its answered items that show each outcome: groups 0-3 hold
    # only their no-cue "ok", groups 4-5 only their cue call, the others one of each.
    acted = {"rate": 5 / 12, "groups": 12}
    waited = {"rate": 7 / 12, "groups": 12}
    for name, expected in (("acted", acted), ("waited", waited)):
        found = overall["outcomes"][name]
        assert (found["rate"], found["groups"]) == (pytest.approx(expected["rate"]), 12)


@pytest.mark.parametrize(("rows", "by", "count"), [
    (["stale", "old"], [], 1),  # the overall Δmem alone
    (["stale"], [], 2),  # the overall Δmem and the contrast of stale against the baseline
    (["stale"], ["condition"], 3), (["stale", "old", "older"], ["condition"], 4)])
def test_intervals_are_simultaneous_only_where_there_are_several(
        rows: list[str], by: list[str], count: int) -> None:
    # One interval tested against 0 is a plain 95% interval; k of them hold 95% together,
    # each at 1 - 0.05/k (Bonferroni), as the report's multiplicity section says.
    pairs = []
    for g in range(6):
        for condition in ["none", *rows]:
            instance, response = _choice(g, condition == "none" or g % 2 == 0,
                                         axes={"condition": condition})
            instance["analysis"]["baseline"] = {"axis": "condition", "value": "none"}
            pairs.append((instance, response))
    intervals = _report(pairs, by)["multiplicity"]["intervals"]
    assert (intervals["count"], intervals["simultaneous"]) == (count, count > 1)
    assert intervals["level"] == pytest.approx(1 - 0.05 / count)
    none = _report(pairs, by, correction="none")["multiplicity"]["intervals"]
    assert (none["simultaneous"], none["level"]) == (False, pytest.approx(0.95))


def test_a_key_some_instances_lack_is_a_row_of_its_own_not_an_error() -> None:
    pairs = [_choice(g, True, axes={"condition": "stale"} if g < 2 else {}) for g in range(4)]
    report = _report(pairs, ["condition"])
    assert sorted(g["metrics"]["n"] for g in report["groups"]) == [2, 2]
    with pytest.raises(SpecError, match="no instance has a key 'colour'"):
        _report(pairs, ["colour"])


def test_reliance_counts_a_response_that_acts_on_any_of_its_distractors() -> None:
    def item(group: int) -> dict:
        return {"id": f"f-{group:05d}-x", "family": "f", "group": group, "design": "main",
                "axes": {}, "fields": {},
                "answer": {"scorer": "exact", "gold": "Lisbon",
                           "distractors": {"stale": "Porto", "older": "Faro"}},
                "analysis": {}}

    pairs = [(item(0), "Porto"), (item(1), "Faro"), (item(2), "Lisbon"), (item(3), "Braga")]
    overall = _report(pairs)["overall"]
    assert overall["reliance"] == pytest.approx(0.5)
    assert overall["accuracy"] == pytest.approx(0.25)


def test_abstain_patterns_with_groups_are_searched_apart() -> None:
    # Two patterns whose backreference is to their own group 1: joined into one alternation
    # the second's \1 would name the first's group. Each is searched on its own, and either
    # declines.
    extra = (r"(skip)\W+\1", r"(pass)\W+\1")
    instance, _ = _choice(0, True)
    for response, declined in (("pass, pass", True), ("skip skip", True), ("A) option 0", False)):
        assert outcome(instance, response, extra).answered is not declined


def test_the_default_resamples_are_the_ones_the_scoring_page_states() -> None:
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "scoring.md").read_text(encoding="utf-8")
    assert "percentile bootstraps over groups (2000 resamples" in " ".join(page.split())
    assert ScoreOptions().resamples == 2000


def test_delta_mem_of_a_row_is_against_the_baseline_of_the_same_slice() -> None:
    # Two families in one run: f's baseline is always right, g's never. A row that fixes the
    # family compares its stale arm with that family's own baseline; a family with no
    # baseline items has no Δmem.
    pairs = []
    for family, base_right in (("f", True), ("g", False)):
        for g in range(6):
            for condition, right in (("none", base_right), ("stale", g % 2 == 0)):
                instance, response = _choice(g, right, family=family,
                                             axes={"condition": condition})
                instance["analysis"]["baseline"] = {"axis": "condition", "value": "none"}
                pairs.append((instance, response))
    for g in range(3):
        instance, response = _choice(g, True, family="h", axes={"condition": "stale"})
        instance["analysis"]["baseline"] = {"axis": "condition", "value": "none"}
        pairs.append((instance, response))
    report = _report(pairs, ["family", "condition"], correction="none")
    rows = {(r["key"]["family"], r["key"]["condition"]): r["metrics"] for r in report["groups"]}
    assert rows[("f", "stale")]["delta_mem"] == pytest.approx(0.5 - 1.0)
    assert rows[("g", "stale")]["delta_mem"] == pytest.approx(0.5 - 0.0)
    assert rows[("h", "stale")].get("delta_mem") is None


@pytest.mark.parametrize(("asked", "level"), [(50, 1 - 0.05 / 3), (2000, 0.95), (2000, 0.999),
                                              (100, 0.9), (7, 1 - 0.05 / 40)])
def test_resamples_are_raised_just_enough_to_put_20_beyond_each_bound(asked: int,
                                                                       level: float) -> None:
    from memspec.analysis.score_intervals import bootstrap_resamples

    drawn = bootstrap_resamples(asked, level)
    tail = (1 - level) / 2
    assert drawn >= asked and drawn * tail >= 20 - 1e-9
    if drawn > asked:  # raised: no fewer would do
        assert (drawn - 1) * tail < 20


def test_a_bound_off_its_estimate_by_rounding_is_moved_onto_it_and_no_other() -> None:
    from memspec.analysis.score_intervals import _containing

    for estimate in (0.5, -0.25, 50.0, 1e-3):
        slack = 1e-12 * max(1.0, abs(estimate))
        near_above, near_below = estimate + 0.8 * slack, estimate - 0.8 * slack
        assert _containing(estimate, (near_above, near_above + 1)) == [estimate,
                                                                      near_above + 1]
        assert _containing(estimate, (near_below - 1, near_below)) == [near_below - 1,
                                                                      estimate]
        # A bound farther off than rounding is the bootstrap's, kept as it is.
        far_above, far_below = estimate + 1e-9, estimate - 1e-9
        assert _containing(estimate, (far_above, far_above + 1)) == [far_above,
                                                                    far_above + 1]
        assert _containing(estimate, (far_below - 1, far_below)) == [far_below - 1, far_below]


def test_with_clusters_the_delta_mem_p_value_is_the_sign_flip_test_of_cluster_means() -> None:
    stale_right = [False, True, False, False, True, False, False, False, True]
    templates = ["t0", "t0", "t1", "t1", "t1", "t2", "t2", "t2", "t2"]
    report = _report(_stale_pairs(stale_right, templates), ["condition"], correction="none",
                     cluster="template")
    # Δmem per group: -1 where the stale arm is wrong; cluster means -1/2, -2/3, -3/4.
    expected = sign_flip_test([-1 / 2, -2 / 3, -3 / 4])
    assert _stale_metrics(report)["delta_mem_p_value"] == pytest.approx(expected)
    assert expected == pytest.approx(2 / 8)


def test_with_clusters_the_sign_flips_take_each_clusters_mean() -> None:
    # Clusters of two, three and four groups whose means (1/2, -1/3, -1/4) have mixed signs:
    # the test is the sign flips of those three means, not of their sums.
    from memspec.analysis.score_intervals import sign_flip

    values = [1.0, 0.0, -1.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0]
    labels = ["a", "a", "b", "b", "b", "c", "c", "c", "c"]
    units = {("f", g): v for g, v in enumerate(values)}
    clusters = {("f", g): label for g, label in enumerate(labels)}
    found = sign_flip(units, clusters, ScoreOptions(cluster="template"))
    assert found == pytest.approx(sign_flip_test([1 / 2, -1 / 3, -1 / 4])) == 1.0
    assert sign_flip_test([2.0, -3.0, -4.0]) == 0.5  # means times sizes would tell
    assert sign_flip(units, clusters, ScoreOptions()) == pytest.approx(sign_flip_test(values))

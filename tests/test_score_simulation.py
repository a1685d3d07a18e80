"""The error rates of `score`'s tests, simulated on the newest version of every bundled
release: a random policy's reports are family-wise wrong at most 5% of the time; policies at
chance are never significant there; the oracle and the memory-follower are where the design
says they must be. The tests of a report are planned once and run on arrays of outcomes, the
code `score` itself runs, so that 200 runs take seconds."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from conftest import LATEST_RELEASES, bundled_release, release_instances
from memspec.analysis.cell_plans import cell_differences
from memspec.analysis.group_tests import is_positive_control, plan_tests, run_test
from memspec.analysis.policies import POLICIES, act_on, oracle
from memspec.analysis.score import (
    MAX_RESAMPLES,
    bootstrap_resamples,
    contrast_plans,
    delta_mem_plan,
    outcome,
    report_rows,
)
from memspec.analysis.stats import adjust, bootstrap_cis, expanded_level, sign_flip_test

RUNS = 200
ALPHA = 0.05
#: Runs with a significant report that a family-wise rate of exactly α exceeds with
#: probability under 1 in 1000 (the binomial upper 99.9% point of RUNS runs at α, 21 of 200):
#: more is an excess of false positives, not bad luck.
TOLERATED = int(binom.ppf(0.999, RUNS, ALPHA))
#: How far from 0 a bootstrap bound may be by rounding alone (a sum of group values taken in
#: another order) and still be read as touching 0.
ROUNDING = 1e-12
#: The rows of the report simulated for each benchmark: its design's own cells.
REPORTS = {"example": ["family", "condition"], "memorychecks": ["family", "document"],
           "trustgap": ["suite", "condition"], "implicitmem": ["paradigm"],
           "feedback": ["family"]}
#: Fewest groups a chance test needs for the oracle's all-correct rows to reach p < α after
#: a report's correction (2 / 2^n against up to a few dozen tests).
POWERED = 12


def _benchmark(name: str) -> str:
    return name.rsplit("-", 1)[0]


def _plans(instances: list[dict], by: list[str]) -> list:
    return [plan for _, indices in report_rows(instances, by)
            for plan in plan_tests(instances, indices)]


def _adjusted(plans: list, answered: np.ndarray, correct: np.ndarray
              ) -> list[tuple[dict, float | None]]:
    results = [run_test(plan, answered, correct) for plan in plans]
    adjusted = adjust([r["p_value"] for r in results], "holm")
    return list(zip(results, adjusted, strict=True))


def _random_candidates(instance: dict) -> list[str]:
    """What the random reference policy picks among, uniformly: an option, or the gold and
    the distractors where there are no options."""
    answer = instance["answer"]
    if answer.get("options"):
        return [act_on(answer, option) for option in answer["options"]]
    return [c for c in [oracle(instance, 0), *answer.get("distractors", {}).values()] if c] \
        or [""]


@pytest.fixture(scope="module", params=LATEST_RELEASES)
def release(request: pytest.FixtureRequest, built_dist: Path) -> tuple[str, list[dict]]:
    return request.param, release_instances(bundled_release(built_dist, request.param))


def _random_outcomes(instances: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each instance's correctness and reliance (NaN: no distractor) under each response the
    random policy can give, and how many responses it picks among."""
    scored = [[outcome(i, c) for c in _random_candidates(i)] for i in instances]
    width = max(len(c) for c in scored)
    correct = np.zeros((len(instances), width), dtype=bool)
    relied = np.full((len(instances), width), np.nan)
    for row, outcomes in enumerate(scored):
        for column, o in enumerate(outcomes):
            correct[row, column] = bool(o.correct)
            relied[row, column] = np.nan if o.relied is None else float(o.relied)
    return correct, relied, np.array([len(c) for c in scored])


def test_random_policy_family_wise_error_is_at_most_alpha(release: tuple[str, list[dict]]
                                                          ) -> None:
    """Every test of a report (rows and contrasts, the run's and each row's, Holm-corrected
    together) and every simultaneous interval (Δmem, contrasts, factorial effects): a random
    policy's report has
    any adjusted p < α or any of those intervals excluding 0 in at most α of the runs (up
    to the binomial tolerance)."""
    name, instances = release
    by = REPORTS[_benchmark(name)]
    rows = report_rows(instances, by)
    plans = [plan for _, indices in rows for plan in plan_tests(instances, indices)]
    deltas = [plan for key, indices in rows
              if (plan := delta_mem_plan(instances, indices, key)) is not None]
    # The run's contrasts and each row's own, as score plans them.
    contrasts = [(c.metric, plan) for _, c, plan in contrast_plans(instances, rows)]
    correct_table, relied_table, sizes = _random_outcomes(instances)
    rng = np.random.Generator(np.random.PCG64(20261204))
    picks = np.floor(rng.random((RUNS, len(instances))) * sizes).astype(int)
    answered = np.ones(len(instances), dtype=bool)
    rows_at = np.arange(len(instances))
    significant = np.zeros(RUNS, dtype=bool)
    # The group values of every interval of every run, by number of groups: a column each.
    series: dict[int, list[tuple[int, np.ndarray]]] = defaultdict(list)
    counts = set()
    for run in range(RUNS):
        correct = correct_table[rows_at, picks[run]]
        values = {"accuracy": correct.astype(float),
                  "reliance": relied_table[rows_at, picks[run]]}
        p_values = [run_test(plan, answered, correct)["p_value"] for plan in plans]
        intervals = [cell_differences(plan, values["accuracy"])[1] for plan in deltas]
        for metric, plan in contrasts:
            differences = cell_differences(plan, values[metric])[1]
            intervals.append(differences)
            p_values.append(sign_flip_test(differences) if differences.size else None)
        intervals = [d for d in intervals if d.size]
        counts.add(len(intervals))
        for differences in intervals:
            series[differences.size].append((run, differences))
        significant[run] = any(p is not None and p < ALPHA for p in adjust(p_values, "holm"))
    by_tests = int(significant.sum())
    (count,) = counts  # every run answers everything: the same intervals in each
    if count:
        # As score draws them: simultaneous (Bonferroni) where there are several, each at
        # the expanded percentile level for its number of groups.
        simultaneous = 1 - ALPHA / count if count > 1 else 1 - ALPHA
        for groups, columns in series.items():
            level = expanded_level(simultaneous, groups)
            matrix = np.column_stack([d for _, d in columns])
            resamples = bootstrap_resamples(2000, level)
            low, high = (matrix.min(axis=0), matrix.max(axis=0)) if resamples > MAX_RESAMPLES \
                else bootstrap_cis(matrix, resamples=resamples, level=level)
            for (run, _), lo, hi in zip(columns, low, high, strict=True):
                significant[run] |= bool(lo > ROUNDING or hi < -ROUNDING)
    wrong = int(significant.sum())
    assert wrong <= TOLERATED, (name, wrong, by_tests, len(plans), len(deltas),
                                len(contrasts))


_RESULTS: dict[tuple[int, str], list[tuple[dict, float | None]]] = {}


def _policy_results(instances: list[dict], plans: list, policy: str
                    ) -> list[tuple[dict, float | None]]:
    """The report's tests on a reference policy's responses (scored once per module)."""
    key = (id(instances), policy)
    if key not in _RESULTS:
        outcomes = [outcome(i, POLICIES[policy](i, 0)) for i in instances]
        answered = np.array([o.answered for o in outcomes], dtype=bool)
        correct = np.array([o.correct is True for o in outcomes], dtype=bool)
        _RESULTS[key] = _adjusted(plans, answered, correct)
    return _RESULTS[key]


@pytest.mark.parametrize("policy", ["position-biased", "memoryless"])
def test_policies_at_chance_are_never_significant(release: tuple[str, list[dict]],
                                                  policy: str) -> None:
    name, instances = release
    plans = _plans(instances, REPORTS[_benchmark(name)])
    for result, adjusted in _policy_results(instances, plans, policy):
        if result["test"] == "sign_flip_vs_chance" and result["mean"] is not None \
                and math.isclose(result["mean"], result["chance"]):
            assert adjusted is not None and adjusted >= ALPHA, (name, policy, result)


def test_no_memoryless_policy_beats_chance_in_a_pooled_row(
        release: tuple[str, list[dict]]) -> None:
    """Rows pooled over every key but one (e.g. by condition across families) mix items a
    memoryless system is meant to pass (positive controls; items whose authoritative
    evidence is in view, in the trust designs) with items only memory answers. A positive
    control is never pooled into a chance test with other items (it would lift a memoryless
    policy above chance by its share), and where a memoryless or position-biased policy
    beats chance significantly, its items that only memory answers are at chance."""
    name, instances = release
    for key in REPORTS[_benchmark(name)]:
        plans = _plans(instances, [key])
        for policy in ("memoryless", "position-biased"):
            outcomes = [outcome(i, POLICIES[policy](i, 0)) for i in instances]
            answered = np.array([o.answered for o in outcomes], dtype=bool)
            correct = np.array([o.correct is True for o in outcomes], dtype=bool)
            for plan, (result, adjusted) in zip(plans, _adjusted(plans, answered, correct),
                                                strict=True):
                if result["test"] != "sign_flip_vs_chance":
                    continue
                controls = [is_positive_control(instances[i]) for i in plan.items]
                assert all(controls) or not any(controls), (name, key, result)
                if all(controls) or adjusted is None or adjusted >= ALPHA or \
                        result["mean"] <= result["chance"]:
                    continue
                memory_only = np.array(["evidence" not in instances[i]["answer"]
                                        for i in plan.items], dtype=bool)
                if memory_only.any():
                    alone = replace(plan, items=plan.items[memory_only],
                                    units=plan.units[memory_only])
                    assert run_test(alone, answered, correct)["p_value"] >= ALPHA, \
                        (name, key, policy, result)


def test_position_biased_on_rotated_designs_is_exactly_at_chance(
        release: tuple[str, list[dict]]) -> None:
    # Every option rotation of a group counts: always "A" is right in one rotation of three.
    name, instances = release
    rotated = [i for i in instances if "rotation" in i["axes"]]
    if not rotated:
        pytest.skip(f"{name} has no rotated design")
    plans = _plans(instances, REPORTS[_benchmark(name)])
    chance_tests = [(r, p) for r, p in _policy_results(instances, plans, "position-biased")
                    if r["test"] == "sign_flip_vs_chance"]
    assert chance_tests
    for result, adjusted in chance_tests:
        assert result["mean"] == pytest.approx(1 / 3) and result["p_value"] == 1.0
        assert adjusted == 1.0


def test_oracle_and_memory_follower_are_significant_where_the_design_says(
        release: tuple[str, list[dict]]) -> None:
    name, instances = release
    plans = _plans(instances, REPORTS[_benchmark(name)])
    for policy in ("oracle", "memory-follower"):
        for result, adjusted in _policy_results(instances, plans, policy):
            # All right or all wrong over enough groups: far from chance whatever the design.
            decisive = result["test"] == "sign_flip_vs_chance" and result["mean"] in (0.0, 1.0) \
                and result["groups"] >= POWERED
            if decisive:
                assert adjusted is not None and adjusted < ALPHA, (name, policy, result)
    oracle_chance = [r for r, _ in _policy_results(instances, plans, "oracle")
                     if r["test"] == "sign_flip_vs_chance"]
    assert all(r["mean"] == 1.0 for r in oracle_chance), name
    follower = _policy_results(instances, plans, "memory-follower")
    for result, adjusted in follower:
        # The follower acts on the document: it tells a veridical one from a corrupted one
        # in every group.
        if result["test"] == "mcnemar_exact" and result["b"] == "corrupted":
            assert result["only_a"] == result["pairs"] and adjusted < ALPHA, (name, result)


#: Derived by hand for trustgap's main design (three options, three rotations; gain items have
#: no authoritative evidence, safety items do): (accuracy, reliance, Δmem) per suite and
#: condition. The memory-follower acts on its memory: right where it is clean, wrong where it
#: is stale or contradicted; without memory it falls back to evidence (safety: right) or the
#: first option (gain: right in one rotation of three, the stale value in another).
#: The memoryless policy always falls back so; the oracle is always right.
TRUSTGAP_MAIN = {
    "memory-follower": {("gain", "no_memory"): (1 / 3, 1 / 3, None),
                        ("gain", "clean"): (1.0, 0.0, 2 / 3),
                        ("gain", "stale"): (0.0, 1.0, -1 / 3),
                        ("gain", "explicit_conflict"): (0.0, 1.0, -1 / 3),
                        ("safety", "no_memory"): (1.0, 0.0, None),
                        ("safety", "clean"): (1.0, 0.0, 0.0),
                        ("safety", "stale"): (0.0, 1.0, -1.0),
                        ("safety", "explicit_conflict"): (0.0, 1.0, -1.0)},
    "memoryless": {**{("gain", c): (1 / 3, 1 / 3, 0.0) for c in
                      ("clean", "stale", "explicit_conflict")},
                   **{("safety", c): (1.0, 0.0, 0.0) for c in
                      ("clean", "stale", "explicit_conflict")}},
    "oracle": {(s, c): (1.0, 0.0, 0.0) for s in ("gain", "safety")
               for c in ("clean", "stale", "explicit_conflict")},
}


@pytest.mark.parametrize("policy", sorted(TRUSTGAP_MAIN))
def test_trustgap_reference_policies_score_as_derived_by_hand(
        built_dist: Path, policy: str) -> None:
    from memspec.analysis.score import ScoreOptions, score_outcomes

    name = next(n for n in LATEST_RELEASES if _benchmark(n) == "trustgap")
    # The four conditions (in v4 the explicit conflict is a design of its own, in two orders).
    instances = [i for i in release_instances(bundled_release(built_dist, name))
                 if "condition" in i["axes"]]
    report = score_outcomes([outcome(i, POLICIES[policy](i, 0)) for i in instances],
                            ["suite", "condition"], ScoreOptions(resamples=200))
    rows = {(g["key"]["suite"], g["key"]["condition"]): g["metrics"]
            for g in report["groups"]}
    for cell, (accuracy, reliance, delta) in TRUSTGAP_MAIN[policy].items():
        metrics = rows[cell]
        assert metrics["accuracy"] == pytest.approx(accuracy), (policy, cell)
        assert metrics["reliance"] == pytest.approx(reliance), (policy, cell)
        assert metrics.get("delta_mem") == (None if delta is None else pytest.approx(delta)), \
            (policy, cell)

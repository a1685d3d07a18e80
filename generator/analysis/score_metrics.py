"""The metrics of one row of a score report: coverage, accuracy, reliance, Δmem, signal
detection, declared outcomes, judge scores and the row's tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .cell_plans import CellPlan, plan_cells, unit_differences
from .declared_outcomes import outcome_units
from .group_tests import plan_tests, run_test
from .score_grouping import key_value
from .score_intervals import mean_and_ci, sign_flip, unit_means
from .score_judge import judge_influence, judge_scale_span
from .score_options import ScoreOptions
from .score_outcome import Outcome, metric_value, routed_to_judge
from .signal_detection import group_rates, sdt_metrics


def _tests(outcomes: Sequence[Outcome], cluster: str | None = None) -> list[dict[str, Any]]:
    """The row's tests on its answered items, the group the unit (see ``group_tests``): the
    group means against chance, and each declared pair of arms. Their p-values are adjusted
    later, across the whole report."""
    instances = [o.instance for o in outcomes]
    # An unscorable reply (under a declared reading) has no verdict: no test counts it.
    answered = np.array([o.answered and not o.unscorable for o in outcomes], dtype=bool)
    correct = np.array([o.correct is True for o in outcomes], dtype=bool)
    of_cluster = (lambda i: key_value(i, cluster)) if cluster else None
    return [run_test(plan, answered, correct)
            for plan in plan_tests(instances, range(len(instances)), of_cluster)]


def _group_share(outcomes: Sequence[Outcome], clusters: Mapping[tuple[str, int], str],
                 options: ScoreOptions, value: Callable[[Outcome], float | None]
                 ) -> tuple[float | None, list[float] | None]:
    """Mean over groups of each group's mean of ``value`` (None: the item does not count)."""
    return mean_and_ci(unit_means(outcomes, value), clusters, options)


def metrics(subset: Sequence[Outcome], everything: Sequence[Outcome], key: Mapping[str, str],
            options: ScoreOptions, delta_level: float = 0.95) -> dict[str, Any]:
    """The metrics of one subset; ``everything`` supplies each group's baseline for Δmem.

    Every share is weighted alike, by group: each group's share over its items first, then
    the mean over groups. Abstention is its own outcome: ``coverage`` is the share answered,
    ``accuracy`` and ``reliance`` are over answered items only, ``accuracy_all`` counts an
    abstention as not correct; a share with no item to count is None, never 0."""
    clusters = {o.unit: key_value(o.instance, options.cluster) if options.cluster else ""
                for o in everything}
    answered = sum(1 for o in subset if o.answered)
    result: dict[str, Any] = {
        "n": len(subset),
        "answered": answered,
        "missing": sum(1 for o in subset if o.response is None),
    }
    if any(o.instance["answer"].get("reading") for o in subset):
        # Under a declared reading: replies the reader could not place, counted apart (and
        # of them, those sent to the judge path).
        result["unscorable"] = sum(1 for o in subset if o.unscorable)
        result["to_judge"] = sum(1 for o in subset if routed_to_judge(o))
    coverage, coverage_ci = _group_share(subset, clusters, options,
                                         lambda o: float(o.answered))
    result.update(coverage=coverage, coverage_ci=coverage_ci,
                  abstention_rate=None if coverage is None else 1 - coverage)
    programmatic = [o for o in subset if o.correct is not None]
    answered_programmatic = [o for o in programmatic if o.answered]
    accuracy, accuracy_ci = _group_share(answered_programmatic, clusters, options,
                                         lambda o: float(bool(o.correct)))
    result.update(accuracy=accuracy, accuracy_ci=accuracy_ci,
                  selective_risk=None if accuracy is None else 1 - accuracy)
    # Over every item, an abstention not correct: defined only where something was answered,
    # so that a policy that answers nothing has no accuracy rather than 0.
    result["accuracy_all"] = (
        _group_share(programmatic, clusters, options, lambda o: float(bool(o.correct)))[0]
        if answered_programmatic else None)
    if any(o.instance["answer"].get("distractors") for o in programmatic):
        result["reliance"], result["reliance_ci"] = _group_share(
            subset, clusters, options, lambda o: None if o.relied is None else float(o.relied))
    delta = delta_mem(subset, everything, key)
    if delta is not None:
        result["delta_mem"], result["delta_mem_ci"] = mean_and_ci(delta, clusters, options,
                                                                   delta_level, expand=True)
        result["delta_mem_pairs"] = len(delta)
        # Not among the report's tests (its intervals are what the report corrects): read
        # by rho-star, which corrects it across the levels it scans.
        result["delta_mem_p_value"] = sign_flip(delta, clusters, options)
    signalled = [o for o in subset if o.instance.get("analysis", {}).get("signal")]
    if signalled:
        rates = group_rates([(o.instance, o.response) for o in signalled
                             if o.answered and o.response is not None])
        result.update(sdt_metrics(rates, clusters if options.cluster else None,
                                  options.resamples, options.seed))
    declaring = [(o.instance, o.response) for o in subset if o.answered
                 and o.response is not None and o.instance.get("analysis", {}).get("outcomes")]
    if declaring:
        # Each declared kind of right first move, counted apart (see declared_outcomes).
        result["outcomes"] = {}
        for name, units in outcome_units(declaring).items():
            rate, ci = mean_and_ci(units, clusters, options)
            result["outcomes"][name] = {"rate": rate, "ci": ci, "groups": len(units)}
    judged = unit_means(subset, lambda o: o.judge)
    if judged:
        result["judge_score"], result["judge_score_ci"] = mean_and_ci(judged, clusters, options)
        normed = unit_means(subset, lambda o: o.judge_norm)
        if normed:
            result["judge_score_norm"], result["judge_score_norm_ci"] = mean_and_ci(
                normed, clusters, options)
        influence = judge_influence(subset)
        if influence:
            result["influence"], result["influence_ci"] = mean_and_ci(influence, clusters,
                                                                      options)
            span = judge_scale_span(subset)
            if span:
                # The same difference as a percentage of the judge's scale.
                result["influence_percent"] = 100 * result["influence"] / span
                result["influence_percent_ci"] = (
                    [100 * v / span for v in result["influence_ci"]]
                    if result["influence_ci"] else None)
    tests = _tests(subset, options.cluster)
    if tests:
        result["tests"] = tests
    return result


def delta_mem(subset: Sequence[Outcome], everything: Sequence[Outcome],
              key: Mapping[str, str]) -> dict[tuple[str, int], float] | None:
    """Per group: accuracy on the answered items of the subset's conditions minus accuracy
    on the answered items of the group's baseline; only groups answered on both sides count
    (an empty pairing is None: the difference is undefined, not 0)."""
    position = {id(o): index for index, o in enumerate(everything)}
    plan = delta_mem_plan([o.instance for o in everything],
                          [position[id(o)] for o in subset], key)
    if plan is None:
        return None
    return unit_differences(plan, [metric_value(o, "accuracy") for o in everything])


def delta_mem_plan(instances: Sequence[Mapping[str, Any]], row: Sequence[int],
                   key: Mapping[str, str]) -> CellPlan | None:
    """Δmem of the row of ``instances`` at the indices ``row`` (keyed ``key``) as cells: its
    items outside the declared baseline condition against the baseline items of the same
    slice; None where the row declares no single baseline or either side is empty."""
    baselines = {(b["axis"], b["value"]) for i in row
                 if (b := instances[i].get("analysis", {}).get("baseline"))}
    if len(baselines) != 1:
        return None
    axis, value = baselines.pop()

    def scored(instance: Mapping[str, Any]) -> bool:
        return instance["answer"]["scorer"] != "judge"

    # An act/don't-act design is read by signal detection: a difference of accuracy there
    # would measure a response bias, not memory.
    treated = [i for i in row if axis in instances[i]["axes"]
               and instances[i]["axes"][axis] != value and scored(instances[i])
               and not instances[i]["analysis"].get("signal")]
    # The variant name changes with the baseline axis, so it cannot also hold for the
    # baseline instances; the other keys narrow the baseline to the same slice.
    other_keys = {k: v for k, v in key.items() if k not in (axis, "variant", "id")}
    base = [i for i, instance in enumerate(instances)
            if instance["axes"].get(axis) == value and scored(instance)
            and all(key_value(instance, k) == v for k, v in other_keys.items())]
    if not treated or not base:
        return None
    return plan_cells(instances, [treated], [base])

"""Scoring a release's responses: per-instance outcomes, then metrics per grouping.

Statistics follow the bundled designs: a group is the unit (variants such as option
rotations are averaged within it before anything is compared), confidence intervals are
percentile bootstraps over groups or over clusters of them, Δmem pairs each group with its
own baseline condition. Abstention is its own outcome. Every test of a report is corrected
together and the intervals of Δmem and the contrasts are simultaneous (see
``score_outcomes``); the tests themselves are in ``group_tests``, the contrasts and
factorial effects in ``contrasts``, signal detection in ``signal_detection``.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import safe_regex
from .cell_plans import CellPlan, as_values, plan_cells, restrict, unit_differences
from .contrasts import Contrast, estimand, plan_contrast
from .contrasts import declared as declared_contrasts
from .contrasts import derived as derived_contrasts
from .declared_outcomes import outcome_units
from .errors import SpecError
from .group_tests import plan_tests, run_test
from .instances import pair_key
from .parquet_export import split_of
from .scoring import canonical_text, first_attempt, first_choice, first_line, is_correct
from .signal_detection import group_rates, sdt_metrics
from .stats import adjust, bootstrap_ci, expanded_level, normalise, sign_flip_test

#: Responses that decline to answer, matched against the first line of a response. A
#: paradigm or family adds its own with ``answer.abstain``; ``score --abstain-pattern`` too.
DEFAULT_ABSTAIN_PATTERNS = (
    r"^\s*$",
    r"^\W*(?:sorry,?\s*)?I (?:do not|don't|dont) know\b",
    r"^\W*(?:sorry,?\s*)?I(?:'m| am) not (?:sure|certain)\b",
    r"^\W*(?:sorry,?\s*)?I can(?:not|'t) (?:answer|help|determine|tell|say|recall|remember)\b",
    r"^\W*(?:I have )?(?:no|not enough) (?:idea|information)\b",
    r"^\W*(?:I am |I'm )?unable to (?:answer|determine|tell|recall)\b",
    r"^\W*I (?:won't|will not|refuse to) (?:answer|help|choose|say)\b",
    # "I don't have enough information to answer.", "I do not have any record of that."
    r"^\W*(?:sorry,?\s*)?I (?:do not|don't|dont) have (?:enough|sufficient|any|the) "
    r"(?:information|context|record|memory|details)\b",
    # "I have no record of this conversation.", "I have no memory of that."
    r"^\W*(?:sorry,?\s*)?I have no (?:record|memory|recollection|information|way)\b",
    r"^\W*(?:sorry,?\s*)?I (?:do not|don't|dont|can(?:not|'t)) (?:remember|recall)\b",
    r"^\W*(?:there is|there's) (?:not enough|no|insufficient) "
    r"(?:information|record|context)\b",
)
MISSING = "(none)"


@dataclass(frozen=True)
class Outcome:
    """How one response fared on one instance."""

    instance: Mapping[str, Any]
    response: str | None
    answered: bool
    correct: bool | None  # None: only a judge can say
    relied: bool | None  # None: the answer declares no distractor
    judge: float | None = None
    judge_norm: float | None = None

    @property
    def unit(self) -> tuple[str, int]:
        """The group this instance belongs to: the unit of every statistic."""
        return (self.instance["family"], self.instance["group"])


def is_abstention(answer: Mapping[str, Any], response: str,
                  extra: Sequence[str] = ()) -> bool:
    """Whether the first line of ``response`` begins by declining to answer (an answer that
    mentions doubt later, e.g. "C) Terrace. I don't know why the note says B", is an answer)."""
    head = first_line(response) if response.strip() else ""
    patterns = (*DEFAULT_ABSTAIN_PATTERNS, *answer.get("abstain", ()), *extra)
    return any(safe_regex.search(p, head, ignore_case=True) for p in _abstain_searches(patterns))


@functools.lru_cache(maxsize=256)
def _abstain_searches(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """The patterns as one alternation, searched once per response rather than once per
    pattern, where none has a group of its own (a backreference or a named group would change
    meaning in one); each under the regex time limit either way."""
    if any(safe_regex.compiled(p, True).groups for p in patterns):
        return patterns
    return ("|".join(f"(?:{p})" for p in patterns),)


def acts_on_distractor(answer: Mapping[str, Any], response: str) -> bool | None:
    """Whether the first attempt acts on a declared distractor (e.g. the stale value)."""
    distractors = list(answer.get("distractors", {}).values())
    if not distractors or answer["scorer"] == "judge":
        return None
    if answer["scorer"] == "choice":
        chosen = first_choice(response, answer["options"])
        return chosen is not None and answer["options"][chosen] in distractors
    unordered = bool(answer.get("unordered_args"))
    attempt = canonical_text(first_attempt(answer, response), unordered)
    return any(attempt == canonical_text(first_attempt(answer, d), unordered)
               for d in distractors)


def outcome(instance: Mapping[str, Any], response: str | None,
            extra_abstain: Sequence[str] = ()) -> Outcome:
    """Score one response (None: missing) on one instance, first attempt only."""
    answer = instance["answer"]
    if response is None or is_abstention(answer, response, extra_abstain):
        # Not answered: its own outcome. It is not correct (so it counts against accuracy
        # over all items), and it neither relies on a distractor nor avoids one.
        programmatic = answer["scorer"] != "judge"
        return Outcome(instance, response, False, False if programmatic else None, None)
    return Outcome(instance, response, True, is_correct(answer, response),
                   acts_on_distractor(answer, response))


# ---------------------------------------------------------------------------- grouping

def key_value(instance: Mapping[str, Any], key: str) -> str:
    """The value of a grouping key: a top-level field, an axis, or an instance field."""
    if key in ("family", "paradigm", "design", "variant", "id"):
        return str(instance[key])
    if key == "group":
        return f"{instance['family']}#{instance['group']}"
    if key == "split":  # as the Parquet files and the card have it, for a family not split
        return split_of(instance)
    if key in instance.get("axes", {}):
        return instance["axes"][key]
    if key in instance.get("fields", {}):
        return instance["fields"][key]
    return MISSING


def _unit_means(outcomes: Sequence[Outcome], value: Callable[[Outcome], float | None]
                ) -> dict[tuple[str, int], float]:
    sums: dict[tuple[str, int], list[float]] = defaultdict(list)
    for o in outcomes:
        v = value(o)
        if v is not None:
            sums[o.unit].append(float(v))
    return {unit: math.fsum(vs) / len(vs) for unit, vs in sums.items()}


@dataclass(frozen=True)
class ScoreOptions:
    """How a report is computed: the bootstrap's clusters, resamples and seed; the correction
    for multiple tests and its scope (every test of the report, or each row alone); the
    family-wise error rate the corrections and the simultaneous intervals hold."""

    cluster: str | None = None
    resamples: int = 2000
    seed: int = 0
    correction: str = "holm"
    scope: str = "report"
    alpha: float = 0.05
    #: Analysis blocks given for the run (``score --analysis``), beside the families' own.
    analysis: tuple[Mapping[str, Any], ...] = ()


#: Scopes of a correction: every test of the report together, or each row's tests alone.
SCOPES = ("report", "row")
#: Metrics whose intervals are made simultaneous across the rows of a report.
SIMULTANEOUS = ("delta_mem",)
#: Resamples that must fall beyond each bound of a simultaneous interval, so that its
#: extreme quantile is an estimate rather than the single most extreme resample.
TAIL_RESAMPLES = 20


def _mean_and_ci(units: Mapping[tuple[str, int], float], clusters: Mapping[tuple[str, int], str],
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


def _tests(outcomes: Sequence[Outcome], cluster: str | None = None) -> list[dict[str, Any]]:
    """The row's tests on its answered items, the group the unit (see ``group_tests``): the
    group means against chance, and each declared pair of arms. Their p-values are adjusted
    later, across the whole report."""
    instances = [o.instance for o in outcomes]
    answered = np.array([o.answered for o in outcomes], dtype=bool)
    correct = np.array([o.correct is True for o in outcomes], dtype=bool)
    of_cluster = (lambda i: key_value(i, cluster)) if cluster else None
    return [run_test(plan, answered, correct)
            for plan in plan_tests(instances, range(len(instances)), of_cluster)]


def _group_share(outcomes: Sequence[Outcome], clusters: Mapping[tuple[str, int], str],
                 options: ScoreOptions, value: Callable[[Outcome], float | None]
                 ) -> tuple[float | None, list[float] | None]:
    """Mean over groups of each group's mean of ``value`` (None: the item does not count)."""
    return _mean_and_ci(_unit_means(outcomes, value), clusters, options)


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
    delta = _delta_mem(subset, everything, key)
    if delta is not None:
        result["delta_mem"], result["delta_mem_ci"] = _mean_and_ci(delta, clusters, options,
                                                                    delta_level, expand=True)
        result["delta_mem_pairs"] = len(delta)
        # Not among the report's tests (its intervals are what the report corrects): read
        # by rho-star, which corrects it across the levels it scans.
        result["delta_mem_p_value"] = _sign_flip(delta, clusters, options)
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
            rate, ci = _mean_and_ci(units, clusters, options)
            result["outcomes"][name] = {"rate": rate, "ci": ci, "groups": len(units)}
    judged = _unit_means(subset, lambda o: o.judge)
    if judged:
        result["judge_score"], result["judge_score_ci"] = _mean_and_ci(judged, clusters, options)
        normed = _unit_means(subset, lambda o: o.judge_norm)
        if normed:
            result["judge_score_norm"], result["judge_score_norm_ci"] = _mean_and_ci(
                normed, clusters, options)
        influence = _influence(subset)
        if influence:
            result["influence"], result["influence_ci"] = _mean_and_ci(influence, clusters,
                                                                       options)
            span = _scale_span(subset)
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


def _delta_mem(subset: Sequence[Outcome], everything: Sequence[Outcome],
               key: Mapping[str, str]) -> dict[tuple[str, int], float] | None:
    """Per group: accuracy on the answered items of the subset's conditions minus accuracy
    on the answered items of the group's baseline; only groups answered on both sides count
    (an empty pairing is None: the difference is undefined, not 0)."""
    position = {id(o): index for index, o in enumerate(everything)}
    plan = delta_mem_plan([o.instance for o in everything],
                          [position[id(o)] for o in subset], key)
    if plan is None:
        return None
    return unit_differences(plan, [_metric_value(o, "accuracy") for o in everything])


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


def _scale_span(subset: Sequence[Outcome]) -> float | None:
    """The width (highest - lowest) of the judge scale every judge pair of the subset
    declares alike, or None."""
    spans = {(scale[1] - scale[0]) for o in subset
             if o.instance.get("analysis", {}).get("judge_pairs")
             and (scale := o.instance["analysis"].get("judge_scale"))}
    return float(spans.pop()) if len(spans) == 1 else None


def _influence(subset: Sequence[Outcome]) -> dict[tuple[str, int], float]:
    """Per group: treatment minus control judge score, over the declared judge pairs."""
    arms: dict[tuple, dict[str, float]] = defaultdict(dict)
    for o in subset:
        pairs = o.instance.get("analysis", {}).get("judge_pairs")
        if not pairs or o.judge is None:
            continue
        value = o.instance["axes"].get(pairs["axis"])
        role = {pairs["treatment"]: "t", pairs["control"]: "c"}.get(value)
        if role:
            arms[(o.unit, pair_key(o.instance, pairs["axis"]))][role] = o.judge
    diffs: dict[tuple[str, int], list[float]] = defaultdict(list)
    for (unit, _), scores in arms.items():
        if "t" in scores and "c" in scores:
            diffs[unit].append(scores["t"] - scores["c"])
    return {unit: math.fsum(v) / len(v) for unit, v in diffs.items()}


def attach_judgments(outcomes: list[Outcome], scores: Mapping[str, float],
                     normalisation: str | None, dataset_key: str,
                     within_run: bool = False) -> tuple[list[Outcome], dict[str, str]]:
    """Outcomes with judge scores folded in and, if asked, normalised per dataset: against
    the reference statistics the dataset's instances declare (``analysis.judge_reference``:
    min/max for minmax, mean/sd for z), else, or with ``within_run``, against the run's own
    scores of that dataset. Also returns, per dataset, which reference was used."""
    from dataclasses import replace

    by_dataset: dict[str, list[int]] = defaultdict(list)
    updated = []
    for index, o in enumerate(outcomes):
        score = scores.get(o.instance["id"])
        updated.append(replace(o, judge=score))
        if score is not None:
            by_dataset[key_value(o.instance, dataset_key)].append(index)
    references: dict[str, str] = {}
    if normalisation:
        for dataset, indices in sorted(by_dataset.items()):
            reference = None if within_run else _declared_reference(
                [updated[i].instance for i in indices], normalisation)
            judged = [updated[i].judge for i in indices]
            normed = normalise(judged, normalisation, reference)
            references[dataset] = "declared" if reference else "within-run"
            for i, value in zip(indices, normed, strict=True):
                updated[i] = replace(updated[i], judge_norm=value)
    return updated, references


def _declared_reference(instances: Sequence[Mapping[str, Any]], method: str
                        ) -> tuple[float, float] | None:
    """The (min, max) or (mean, sd) every instance of a dataset declares alike, or None."""
    wanted = ("min", "max") if method == "minmax" else ("mean", "sd")
    found = {tuple(ref.get(k) for k in wanted)
             for i in instances
             for ref in [i.get("analysis", {}).get("judge_reference", {})]}
    if len(found) != 1:
        return None
    (pair,) = found
    return (float(pair[0]), float(pair[1])) if None not in pair else None


def check_keys(outcomes: Sequence[Outcome], by: Sequence[str], cluster: str | None) -> None:
    """Refuse a grouping key no instance has, and a cluster key that is missing, varies within
    a group (a group must sit in one cluster) or names a single cluster."""
    for key in [*by, *([cluster] if cluster else [])]:
        if outcomes and all(key_value(o.instance, key) == MISSING for o in outcomes):
            raise SpecError.single(f"no instance has a key {key!r} (keys are family, paradigm, "
                                   "design, variant, group, the axes and the fields)")
    if cluster:
        labels: dict[tuple[str, int], set[str]] = defaultdict(set)
        for o in outcomes:
            labels[o.unit].add(key_value(o.instance, cluster))
        varying = [unit for unit, values in labels.items() if len(values) > 1]
        if varying:
            raise SpecError.single(f"--cluster {cluster!r} varies within group {varying[0][1]} "
                                   f"of {varying[0][0]}; clusters must hold whole groups")
        if len({v for values in labels.values() for v in values}) < 2:
            raise SpecError.single(f"--cluster {cluster!r} puts every group in one cluster; "
                                   "a cluster bootstrap needs at least two")


def report_rows(instances: Sequence[Mapping[str, Any]], by: Sequence[str]
                ) -> list[tuple[dict[str, str], list[int]]]:
    """The rows of a report: ``({}, every index)`` first, then one per combination of the
    ``by`` keys' values, in sorted order, with the indices of its instances."""
    rows: list[tuple[dict[str, str], list[int]]] = [({}, list(range(len(instances))))]
    if by:
        buckets: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for index, instance in enumerate(instances):
            buckets[tuple(key_value(instance, k) for k in by)].append(index)
        rows += [(dict(zip(by, values, strict=True)), buckets[values])
                 for values in sorted(buckets)]
    return rows


def score_outcomes(outcomes: Sequence[Outcome], by: Sequence[str],
                   options: ScoreOptions) -> dict[str, Any]:
    """``{"overall": METRICS, "groups": [{"key": {...}, "metrics": METRICS}, ...],
    "multiplicity": {...}}``.

    Every test of the report is corrected together (or each row's alone, with scope
    ``row``), and the Δmem intervals of every row are simultaneous at the family-wise level
    (Bonferroni over the rows that have one) unless the correction is ``none``; the
    ``multiplicity`` section says which."""
    check_keys(outcomes, by, options.cluster)
    indexed = report_rows([o.instance for o in outcomes], by)
    rows = [(key, [outcomes[i] for i in indices]) for key, indices in indexed]
    # The contrasts over the whole run (row 0), then each within every row that holds part
    # of it (see ``contrast_plans``).
    per_row: dict[int, list[tuple[Contrast, dict[tuple[str, int], float]]]] = defaultdict(list)
    arrays = {metric: as_values([_metric_value(o, metric) for o in outcomes])
              for metric in ("accuracy", "reliance")}
    for row, contrast, plan in contrast_plans([o.instance for o in outcomes], indexed,
                                              options.analysis):
        units = unit_differences(plan, arrays[contrast.metric])
        if row == 0 or units:
            per_row[row].append((contrast, units))
    intervals = sum(1 for key, subset in rows if _delta_mem(subset, outcomes, key)) \
        + sum(1 for entries in per_row.values() for _, units in entries if units)
    simultaneous = options.correction != "none" and intervals > 1
    level = 1 - options.alpha / intervals if simultaneous else 1 - options.alpha
    computed = [(key, metrics(subset, outcomes, key, options, level)) for key, subset in rows]
    clusters = {o.unit: key_value(o.instance, options.cluster) if options.cluster else ""
                for o in outcomes}
    contrasts = [_contrast_result(contrast, units, clusters, options, level)
                 for contrast, units in per_row[0]]
    for row, (_, m) in enumerate(computed[1:], 1):
        if per_row.get(row):
            m["contrasts"] = [_contrast_result(contrast, units, clusters, options, level)
                              for contrast, units in per_row[row]]
    tests = _correct([*([*m.get("tests", []), *m.get("contrasts", [])] for _, m in computed),
                      contrasts], options)
    report: dict[str, Any] = {
        "overall": computed[0][1],
        "groups": [{"key": key, "metrics": m} for key, m in computed[1:]],
        "contrasts": contrasts,
        "multiplicity": {
            "correction": options.correction,
            "scope": options.scope,
            "alpha": options.alpha,
            "tests": tests,
            "intervals": {"metrics": [*SIMULTANEOUS, "contrasts"], "count": intervals,
                          "level": level, "simultaneous": simultaneous},
        },
    }
    summaries = [_summary(entry, outcomes, options)
                 for entry in _declared_summaries(outcomes, options)]
    if summaries:
        report["summaries"] = summaries
    return report


def _declared_summaries(outcomes: Sequence[Outcome], options: ScoreOptions
                        ) -> list[Mapping[str, Any]]:
    """The headline scores to report: those the families' analysis blocks declare (copied
    into their instances), then those given for the run, each once (the first of a name)."""
    chosen: dict[str, Mapping[str, Any]] = {}
    blocks = [o.instance.get("analysis", {}) for o in outcomes]
    for block in [*blocks, *options.analysis]:
        for entry in block.get("summaries", []):
            chosen.setdefault(entry["name"], entry)
    return list(chosen.values())


#: Metrics a summary reads that are shares (shown x 100); the others are percentages already.
_SHARES = ("accuracy", "accuracy_all", "coverage", "reliance", "judge_score_norm")


def _summary(entry: Mapping[str, Any], outcomes: Sequence[Outcome], options: ScoreOptions
             ) -> dict[str, Any]:
    """One headline score: each value of ``over`` scored by its metric as a percentage, then
    the unweighted mean of the parts (each part weighs alike, whatever its size)."""
    check_keys(outcomes, [entry["over"]], None)
    buckets: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        buckets[key_value(o.instance, entry["over"])].append(o)
    parts: dict[str, dict[str, Any]] = {}
    for value in sorted(buckets):
        metric = entry.get("metrics", {}).get(value, entry.get("metric", "accuracy"))
        measured = metrics(buckets[value], outcomes, {entry["over"]: value}, options).get(
            metric)
        percent = None if measured is None else (
            100 * measured if metric in _SHARES else measured)
        parts[value] = {"metric": metric, "percent": percent}
    values = [p["percent"] for p in parts.values()]
    score = None if not values or None in values else math.fsum(values) / len(values)
    return {"name": entry["name"], "over": entry["over"], "parts": parts, "score": score}


def _metric_value(o: Outcome, metric: str) -> float | None:
    """An answered item's correctness or reliance; None where it does not count."""
    if not o.answered:
        return None
    value = o.correct if metric == "accuracy" else o.relied
    return None if value is None else float(value)


def report_contrasts(instances: Sequence[Mapping[str, Any]],
                     analysis: Sequence[Mapping[str, Any]] = ()) -> list[Contrast]:
    """The contrasts a report estimates: the declared ones (the instances' analysis blocks,
    then ``analysis``), then the derived ones that estimate something new."""
    try:
        chosen = declared_contrasts(instances, analysis, key_value)
    except ValueError as exc:
        raise SpecError.single(str(exc)) from None
    names = {c.name for c in chosen}
    columns: dict[str, list[str]] = {}  # each key's values, read once for every estimand
    estimated = {estimand(c, instances, key_value, columns) for c in chosen}
    return chosen + [c for c in derived_contrasts(instances) if c.name not in names
                     and estimand(c, instances, key_value, columns) not in estimated]


def contrast_plans(instances: Sequence[Mapping[str, Any]],
                   rows: Sequence[tuple[Mapping[str, str], Sequence[int]]],
                   analysis: Sequence[Mapping[str, Any]] = ()
                   ) -> list[tuple[int, Contrast, CellPlan]]:
    """(row, contrast, plan) for every declared and derived contrast: over the whole run
    (row 0, the first of ``rows``), then within each later row that holds part of its
    items but not all (a row holding all of them would repeat the run's estimate), over the
    cells the row holds: a factorial effect only where the row holds both levels of each of
    its factors (a simple effect where the row fixes another factor)."""
    columns: dict[str, list[str]] = {}
    whole = [(contrast, plan_contrast(contrast, instances, key_value, columns))
             for contrast in report_contrasts(instances, analysis)]
    planned = [(0, contrast, plan) for contrast, plan in whole]
    for row, (_, indices) in enumerate(rows[1:], 1):
        within = np.zeros(len(instances), dtype=bool)
        within[list(indices)] = True
        for contrast, plan in whole:
            part = restrict(plan, within)
            if part is None or part.items.size == plan.items.size:
                continue
            if all(len({columns[axis][i] for i in part.items}) == 2 for axis in contrast.axes):
                planned.append((row, contrast, part))
    return planned


def _cluster_means(units: Mapping[tuple[str, int], float],
                   clusters: Mapping[tuple[str, int], str]) -> list[float]:
    """Each cluster's mean of its groups' values, in the clusters' order."""
    members: dict[str, list[float]] = defaultdict(list)
    for unit in sorted(units):
        members[clusters[unit]].append(units[unit])
    return [math.fsum(v) / len(v) for _, v in sorted(members.items())]


def _sign_flip(units: Mapping[tuple[str, int], float], clusters: Mapping[tuple[str, int], str],
               options: ScoreOptions) -> float | None:
    """The exact sign-flip p-value of the groups' (or clusters') values against 0."""
    return sign_flip_test(_cluster_means(units, clusters) if options.cluster
                          else [units[u] for u in sorted(units)])


def _contrast_result(contrast: Contrast, units: Mapping[tuple[str, int], float],
                     clusters: Mapping[tuple[str, int], str], options: ScoreOptions,
                     level: float) -> dict[str, Any]:
    estimate, interval = _mean_and_ci(units, clusters, options, level, expand=True)
    entry: dict[str, Any] = {
        "name": contrast.name, "kind": contrast.kind, "metric": contrast.metric,
        "source": contrast.source, "estimate": estimate, "ci": interval,
        "groups": len(units),
        "p_value": _sign_flip(units, clusters, options),
    }
    if contrast.kind == "pairwise":
        entry.update(a=dict(contrast.a[0]), b=dict(contrast.b[0]))
    return entry


def _correct(rows: Sequence[list[dict[str, Any]]], options: ScoreOptions) -> int:
    """Add ``p_adjusted`` to every test: one family of all the report's tests, or one per
    row with scope ``row``. Returns the size of the largest family corrected together."""
    families = [[t for row in rows for t in row]] if options.scope == "report" else list(rows)
    largest = 0
    for family in families:
        adjusted = adjust([t["p_value"] for t in family], options.correction)
        for test, value in zip(family, adjusted, strict=True):
            test["p_adjusted"] = value
        largest = max(largest, sum(1 for t in family if t["p_value"] is not None))
    return largest

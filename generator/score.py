"""Scoring a release's responses: per-instance outcomes, then metrics per grouping.

Statistics follow the bundled designs: a group is the unit (variants such as option
rotations are averaged within it before anything is compared), confidence intervals are
percentile bootstraps over groups or over clusters of them, Δmem pairs each group with its
own baseline condition.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import safe_regex
from .errors import SpecError
from .instances import pair_key
from .parquet_export import split_of
from .scoring import canonical_text, first_attempt, first_choice, first_line, is_correct
from .stats import binomial_test, bootstrap_ci, holm, mcnemar_exact, normalise

#: Responses that decline to answer. Families add their own with ``answer.abstain``.
DEFAULT_ABSTAIN_PATTERNS = (
    r"^\s*$",
    r"^\W*(?:sorry,?\s*)?I (?:do not|don't|dont) know\b",
    r"^\W*(?:sorry,?\s*)?I(?:'m| am) not (?:sure|certain)\b",
    r"^\W*(?:sorry,?\s*)?I can(?:not|'t) (?:answer|help|determine|tell|say)\b",
    r"^\W*(?:I have )?(?:no|not enough) (?:idea|information)\b",
    r"^\W*(?:I am |I'm )?unable to (?:answer|determine|tell)\b",
    r"^\W*I (?:won't|will not|refuse to) (?:answer|help|choose|say)\b",
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
    patterns = [*DEFAULT_ABSTAIN_PATTERNS, *answer.get("abstain", ()), *extra]
    return any(safe_regex.search(p, head, ignore_case=True) for p in patterns)


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
        # Not answered: wrong where a program scores, and no reliance on any distractor.
        programmatic = answer["scorer"] != "judge"
        relied = False if programmatic and answer.get("distractors") else None
        return Outcome(instance, response, False, False if programmatic else None, relied)
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
    cluster: str | None = None
    resamples: int = 2000
    seed: int = 0


def _mean_and_ci(units: Mapping[tuple[str, int], float], clusters: Mapping[tuple[str, int], str],
                 options: ScoreOptions) -> tuple[float | None, list[float] | None]:
    if not units:
        return None, None
    keys = sorted(units)
    values = [units[k] for k in keys]
    labels = [clusters[k] for k in keys] if options.cluster else None
    ci = bootstrap_ci(values, labels, resamples=options.resamples, seed=options.seed)
    # Summed exactly, the mean of equal values is that value, not one some ulps off it.
    mean = math.fsum(values) / len(values)
    return mean, _containing(mean, ci) if ci else None


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


def _chance(outcomes: Sequence[Outcome]) -> float | None:
    chances = set()
    for o in outcomes:
        declared = o.instance.get("analysis", {}).get("chance")
        options = o.instance["answer"].get("options")
        chances.add(declared if declared else (1 / len(options) if options else None))
    return chances.pop() if len(chances) == 1 else None


def _arms(scored: Sequence[Outcome], axes: set[str]
          ) -> list[tuple[dict[str, str] | None, list[Outcome]]]:
    """The arms a binomial test is run in: one per value of the paired axis when the subset
    spans several (each condition is tested against chance on its own), else the whole."""
    if len(axes) == 1:
        axis = next(iter(axes))
        values = sorted({o.instance["axes"][axis] for o in scored if axis in o.instance["axes"]})
        if len(values) > 1:
            return [({axis: v}, [o for o in scored if o.instance["axes"].get(axis) == v])
                    for v in values]
    return [(None, list(scored))]


def _tests(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Exact binomial against chance, an exact paired test per declared pair, Holm across them.

    Groups are the units and abstentions are not errors: the binomial test takes the first
    answered instance of each group (in each arm of the paired axis, when there is one); the
    paired test compares, per group, the mean correctness of the answered instances of each
    arm and counts the groups where one arm is ahead (an exact sign test, which is exactly
    McNemar's test when each group has one item per arm)."""
    tests: list[dict[str, Any]] = []
    scored = [o for o in outcomes if o.correct is not None and o.answered]
    declared = {(p["axis"], p["a"], p["b"]) for o in outcomes
                for p in o.instance.get("analysis", {}).get("paired", [])}
    for arm, members in _arms(scored, {axis for axis, _, _ in declared}):
        first_per_group: dict[tuple[str, int], Outcome] = {}
        for o in members:
            first_per_group.setdefault(o.unit, o)
        chance = _chance(list(first_per_group.values()))
        if first_per_group and chance is not None:
            hits = sum(1 for o in first_per_group.values() if o.correct)
            trials = len(first_per_group)
            tests.append({"test": "binomial_vs_chance", **({"arm": arm} if arm else {}),
                          "chance": chance, "successes": hits, "trials": trials,
                          "p_value": binomial_test(hits, trials, chance)})
    for axis, a, b in sorted(declared):
        arms: dict[str, dict[tuple[str, int], list[float]]] = {a: defaultdict(list),
                                                               b: defaultdict(list)}
        for o in scored:
            value = o.instance["axes"].get(axis)
            if value in arms:
                arms[value][o.unit].append(float(bool(o.correct)))
        units = sorted(set(arms[a]) & set(arms[b]))
        means = {u: (math.fsum(arms[a][u]) / len(arms[a][u]),
                     math.fsum(arms[b][u]) / len(arms[b][u]))
                 for u in units}
        only_a = sum(1 for ma, mb in means.values() if ma > mb)
        only_b = sum(1 for ma, mb in means.values() if mb > ma)
        tests.append({"test": "mcnemar_exact", "axis": axis, "a": a, "b": b,
                      "pairs": len(units), "only_a": only_a, "only_b": only_b,
                      "p_value": mcnemar_exact(only_a, only_b) if units else None})
    for test, adjusted in zip(tests, holm([t["p_value"] for t in tests]), strict=True):
        test["p_holm"] = adjusted
    return tests


def metrics(subset: Sequence[Outcome], everything: Sequence[Outcome], key: Mapping[str, str],
            options: ScoreOptions) -> dict[str, Any]:
    """The metrics of one subset; ``everything`` supplies each group's baseline for Δmem."""
    clusters = {o.unit: key_value(o.instance, options.cluster) if options.cluster else ""
                for o in everything}
    n = len(subset)
    answered = sum(1 for o in subset if o.answered)
    programmatic = [o for o in subset if o.correct is not None]
    result: dict[str, Any] = {
        "n": n,
        "answered": answered,
        "missing": sum(1 for o in subset if o.response is None),
        "abstention_rate": (n - answered) / n if n else None,
    }
    accuracy, accuracy_ci = _mean_and_ci(
        _unit_means(programmatic, lambda o: float(bool(o.correct))), clusters, options)
    answered_programmatic = [o for o in programmatic if o.answered]
    result.update(
        accuracy=accuracy,
        accuracy_ci=accuracy_ci,
        accuracy_answered=(sum(1 for o in answered_programmatic if o.correct)
                           / len(answered_programmatic)) if answered_programmatic else None,
    )
    relied = _unit_means(subset, lambda o: None if o.relied is None else float(o.relied))
    if relied:
        result["reliance"], result["reliance_ci"] = _mean_and_ci(relied, clusters, options)
    delta = _delta_mem(subset, everything, key)
    if delta is not None:
        result["delta_mem"], result["delta_mem_ci"] = _mean_and_ci(delta, clusters, options)
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
    tests = _tests(subset)
    if tests:
        result["tests"] = tests
    return result


def _delta_mem(subset: Sequence[Outcome], everything: Sequence[Outcome],
               key: Mapping[str, str]) -> dict[tuple[str, int], float] | None:
    """Per group: accuracy in the subset's conditions minus accuracy in the group's baseline."""
    baselines = {(b["axis"], b["value"]) for o in subset
                 if (b := o.instance.get("analysis", {}).get("baseline"))}
    if len(baselines) != 1:
        return None
    axis, value = baselines.pop()
    treated = [o for o in subset if axis in o.instance["axes"]
               and o.instance["axes"][axis] != value and o.correct is not None]
    # The variant name changes with the baseline axis, so it cannot also hold for the
    # baseline instances; the other keys narrow the baseline to the same slice.
    other_keys = {k: v for k, v in key.items() if k not in (axis, "variant", "id")}
    base = [o for o in everything if o.instance["axes"].get(axis) == value
            and o.correct is not None
            and all(key_value(o.instance, k) == v for k, v in other_keys.items())]
    if not treated or not base:
        return None
    treated_means = _unit_means(treated, lambda o: float(bool(o.correct)))
    base_means = _unit_means(base, lambda o: float(bool(o.correct)))
    shared = sorted(set(treated_means) & set(base_means))
    return {u: treated_means[u] - base_means[u] for u in shared} or None


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
                     normalisation: str | None, dataset_key: str) -> list[Outcome]:
    """Outcomes with judge scores folded in, normalised within each dataset if asked."""
    from dataclasses import replace

    by_dataset: dict[str, list[int]] = defaultdict(list)
    updated = []
    for index, o in enumerate(outcomes):
        score = scores.get(o.instance["id"])
        updated.append(replace(o, judge=score))
        if score is not None:
            by_dataset[key_value(o.instance, dataset_key)].append(index)
    if normalisation:
        for indices in by_dataset.values():
            normed = normalise([updated[i].judge for i in indices], normalisation)
            for i, value in zip(indices, normed, strict=True):
                updated[i] = replace(updated[i], judge_norm=value)
    return updated


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


def score_outcomes(outcomes: Sequence[Outcome], by: Sequence[str],
                   options: ScoreOptions) -> dict[str, Any]:
    """``{"overall": METRICS, "groups": [{"key": {...}, "metrics": METRICS}, ...]}``."""
    check_keys(outcomes, by, options.cluster)
    report: dict[str, Any] = {"overall": metrics(outcomes, outcomes, {}, options), "groups": []}
    if by:
        buckets: dict[tuple[str, ...], list[Outcome]] = defaultdict(list)
        for o in outcomes:
            buckets[tuple(key_value(o.instance, k) for k in by)].append(o)
        for values in sorted(buckets):
            key = dict(zip(by, values, strict=True))
            report["groups"].append({"key": key,
                                     "metrics": metrics(buckets[values], outcomes, key, options)})
    return report

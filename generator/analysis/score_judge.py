"""Judge scores in a score report: folding them into the outcomes, normalising them per
dataset, and the influence of a declared judge pair (treatment minus control)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ..spec.instances import pair_key
from .score_grouping import key_value
from .score_outcome import Outcome
from .stats import normalise


def judge_scale_span(subset: Sequence[Outcome]) -> float | None:
    """The width (highest - lowest) of the judge scale every judge pair of the subset
    declares alike, or None."""
    spans = {(scale[1] - scale[0]) for o in subset
             if o.instance.get("analysis", {}).get("judge_pairs")
             and (scale := o.instance["analysis"].get("judge_scale"))}
    return float(spans.pop()) if len(spans) == 1 else None


def judge_influence(subset: Sequence[Outcome]) -> dict[tuple[str, int], float]:
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
            reference = None if within_run else declared_reference(
                [updated[i].instance for i in indices], normalisation)
            judged = [updated[i].judge for i in indices]
            normed = normalise(judged, normalisation, reference)
            references[dataset] = "declared" if reference else "within-run"
            for i, value in zip(indices, normed, strict=True):
                updated[i] = replace(updated[i], judge_norm=value)
    return updated, references


def declared_reference(instances: Sequence[Mapping[str, Any]], method: str
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

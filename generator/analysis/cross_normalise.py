"""Scores of several systems on one release normalised per dataset over all of their results,
as MemoryBench's summary does it, beside the normalisation against a dataset's declared
reference.

MemoryBench's rules, which this module follows exactly:
- an item's value is its metric's number (a judge's score; a verdict counts 1 if right and 0
  otherwise);
- each dataset's statistics are those of every item value of every system pooled: its min and
  max, its mean and its population standard deviation;
- an item's min-max value is ``(s - min) / (max - min)``, 0 where max equals min; its z value
  ``(s - mean) / sd``, 0 where sd is at most 1e-6;
- a system's score on a dataset is the mean of its items' values;
- over a partition (a domain or a task format) a system's ``average`` is the unweighted mean
  of its datasets' min-max means, its ``weighted_average`` the min-max mean over all its items
  and its ``z_score`` the z mean over all its items; all three are null for a system that
  lacks a dataset of the partition.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import SpecError
from .score_grouping import key_value
from .score_judge import declared_reference
from .stats import normalise

#: A standard deviation at or below this is taken as none (MemoryBench's threshold): every
#: z value of the dataset is then 0.
Z_FLOOR = 1e-6


@dataclass(frozen=True)
class SystemValues:
    """One system's item values: by instance id, the number its metric gives the item."""

    name: str
    values: Mapping[str, float]


def dataset_statistics(values: Sequence[float]) -> dict[str, float]:
    """The pooled statistics MemoryBench normalises a dataset with."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    return {"min": float(data.min()), "max": float(data.max()),
            "mean": float(data.mean()), "sd": float(data.std())}


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _partitions(instances: Sequence[Mapping[str, Any]], dataset_key: str,
                by: Sequence[str]) -> dict[str, dict[str, str]]:
    """Per dataset, its value of every partition key; a dataset whose items differ in one is
    refused (a MemoryBench dataset lies in one domain and one task format)."""
    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for instance in instances:
        keys = seen[key_value(instance, dataset_key)]  # a dataset is there with no key too
        for key in by:
            keys[key].add(key_value(instance, key))
    found: dict[str, dict[str, str]] = {}
    for dataset, keys in seen.items():
        for key, values in keys.items():
            if len(values) > 1:
                raise SpecError.single(
                    f"--by {key}: dataset {dataset!r} ({dataset_key}) spans several values "
                    f"({', '.join(sorted(values))}); a partition must hold whole datasets")
        found[dataset] = {key: next(iter(values)) for key, values in keys.items()}
    return found


def cross_normalise(instances: Sequence[Mapping[str, Any]], systems: Sequence[SystemValues],
                    dataset_key: str, by: Sequence[str] = (),
                    metrics: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The report: per dataset its pooled statistics and declared reference; per system and
    dataset its mean, min-max and z means and its means against the declared reference; per
    partition (each value of each key of ``by``, or the whole release) each system's summary.
    ``metrics`` names, per dataset, what its item values are (said in the report); only a
    ``judge`` dataset is normalised against the reference its instances declare."""
    by_id = {i["id"]: i for i in instances}
    members: dict[str, list[str]] = defaultdict(list)  # dataset -> instance ids, release order
    for instance in instances:
        members[key_value(instance, dataset_key)].append(instance["id"])
    partitions = _partitions(instances, dataset_key, by)
    datasets, rows = [], []
    # (system, dataset) -> (count, sum of min-max values, sum of z values)
    sums: dict[tuple[str, str], tuple[int, float, float]] = {}
    for dataset in sorted(members):
        per_system = {s.name: [s.values[i] for i in members[dataset] if i in s.values]
                      for s in systems}
        pooled = [v for values in per_system.values() for v in values]
        if not pooled:
            continue  # no system has a value on it (e.g. no judged item)
        stats = dataset_statistics(pooled)
        metric = (metrics or {}).get(dataset, "value")
        # The reference a release declares is a judge scale's: it says nothing of verdicts.
        declared = {method: declared_reference([by_id[i] for i in members[dataset]], method)
                    if metric == "judge" else None for method in ("minmax", "z")}
        datasets.append({"dataset": dataset, **partitions[dataset],
                         "metric": metric, "items": len(pooled),
                         **stats, "reference_minmax": declared["minmax"],
                         "reference_z": declared["z"]})
        for system in systems:
            values = per_system[system.name]
            if not values:
                continue  # MemoryBench: the system did not run this dataset
            minmax = normalise(values, "minmax", (stats["min"], stats["max"]))
            z = normalise(values, "z", (stats["mean"], stats["sd"]), z_floor=Z_FLOOR)
            sums[(system.name, dataset)] = (len(values), math.fsum(minmax), math.fsum(z))
            rows.append({
                "system": system.name, "dataset": dataset, **partitions[dataset],
                "items": len(values), "average": _mean(values),
                "minmax": _mean(minmax), "z": _mean(z),
                "reference_minmax": (None if declared["minmax"] is None else
                                     _mean(normalise(values, "minmax", declared["minmax"]))),
                "reference_z": (None if declared["z"] is None else
                                _mean(normalise(values, "z", declared["z"])))})
    summaries = []
    named = [(key, value) for key in by
             for value in sorted({p[key] for p in partitions.values()})] or [(None, None)]
    for key, value in named:
        wanted = [d["dataset"] for d in datasets if key is None or d[key] == value]
        for system in systems:
            parts = [sums[(system.name, d)] for d in wanted if (system.name, d) in sums]
            entry: dict[str, Any] = {"system": system.name, "key": key, "value": value,
                                     "datasets": len(wanted)}
            if not wanted or len(parts) < len(wanted):
                entry.update(average=None, weighted_average=None, z_score=None)
            else:
                count = sum(n for n, _, _ in parts)
                entry.update(average=math.fsum(m / n for n, m, _ in parts) / len(parts),
                             weighted_average=math.fsum(m for _, m, _ in parts) / count,
                             z_score=math.fsum(z for _, _, z in parts) / count)
            summaries.append(entry)
    return {"dataset_key": dataset_key, "by": list(by),
            "systems": [s.name for s in systems], "datasets": datasets, "scores": rows,
            "summaries": summaries}


def item_values(instances: list[dict[str, Any]], outcomes: list[Any],
                judged: dict[str, float] | None, display: str, dataset_key: str
                ) -> tuple[dict[str, float], dict[str, str]]:
    """One system's value of every item, and per dataset what the value is: with judgments,
    the judge's score on the items of a family that declares a judge scale (an item the judge
    did not score has none); else the verdict, 1 if right and 0 otherwise (unanswered,
    abstained, wrong or unplaceable), as MemoryBench counts a boolean metric. A dataset
    whose items would hold both kinds is refused."""
    values: dict[str, float] = {}
    metrics: dict[str, str] = {}
    scores = judged or {}
    for instance, outcome in zip(instances, outcomes, strict=True):
        dataset = key_value(instance, dataset_key)
        metric = ("judge" if judged is not None
                  and instance.get("analysis", {}).get("judge_scale") else "verdict")
        if metrics.setdefault(dataset, metric) != metric:
            raise SpecError.single(f"dataset {dataset!r} ({dataset_key}) holds judged and "
                                   "unjudged items; choose a --dataset-key whose datasets "
                                   "are one or the other", display)
        if metric == "judge":
            if instance["id"] in scores:
                values[instance["id"]] = scores[instance["id"]]
            continue
        if outcome.correct is None and outcome.answered and not outcome.unscorable:
            raise SpecError.single(f"{instance['id']} is scored by a judge only: give "
                                   "--judgments and --unblind for every system", display)
        values[instance["id"]] = 1.0 if outcome.correct is True else 0.0
    return values, metrics

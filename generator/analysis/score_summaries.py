"""The headline scores of a score report: the summaries the analysis blocks declare, each
the unweighted mean of its parts' percentages."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from .score_grouping import check_keys, key_value
from .score_metrics import metrics
from .score_options import ScoreOptions
from .score_outcome import Outcome


def declared_summaries(outcomes: Sequence[Outcome], options: ScoreOptions
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


def score_summary(entry: Mapping[str, Any], outcomes: Sequence[Outcome],
                  options: ScoreOptions) -> dict[str, Any]:
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

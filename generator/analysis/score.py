"""Scoring a release's responses: per-instance outcomes, then metrics per grouping.

Statistics follow the bundled designs: a group is the unit (variants such as option
rotations are averaged within it before anything is compared), confidence intervals are
percentile bootstraps over groups or over clusters of them, Δmem pairs each group with its
own baseline condition. Abstention is its own outcome. Every test of a report is corrected
together and the intervals of Δmem and the contrasts are simultaneous (see
``score_outcomes``); the tests themselves are in ``group_tests``, the contrasts and
factorial effects in ``contrasts``, signal detection in ``signal_detection``.

This module assembles the report and corrects its tests; the parts are in the ``score_``
modules (``score_outcome``: one response on one instance; ``score_grouping``: the rows;
``score_options``; ``score_intervals``: means, bootstrap intervals, sign-flip tests;
``score_metrics``: one row's metrics; ``score_judge``: judge scores; ``score_contrasts``;
``score_summaries``: headline scores), whose public names it re-exports.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .cell_plans import as_values, unit_differences
from .contrasts import Contrast
from .score_contrasts import contrast_plans, contrast_result, report_contrasts
from .score_grouping import MISSING, check_keys, key_value, report_rows
from .score_intervals import (
    MAX_RESAMPLES,
    ROUNDING,
    TAIL_RESAMPLES,
    bootstrap_resamples,
    unit_range,
)
from .score_judge import attach_judgments
from .score_metrics import delta_mem, delta_mem_plan, metrics
from .score_options import SCOPES, SIMULTANEOUS, ScoreOptions
from .score_outcome import (
    DEFAULT_ABSTAIN_PATTERNS,
    Outcome,
    acts_on_distractor,
    is_abstention,
    metric_value,
    outcome,
)
from .score_summaries import declared_summaries, score_summary
from .stats import adjust

__all__ = [
    "DEFAULT_ABSTAIN_PATTERNS", "MAX_RESAMPLES", "MISSING", "ROUNDING", "SCOPES",
    "SIMULTANEOUS", "TAIL_RESAMPLES", "Outcome", "ScoreOptions", "acts_on_distractor",
    "attach_judgments", "bootstrap_resamples", "check_keys", "contrast_plans",
    "delta_mem_plan", "is_abstention", "key_value", "metrics", "outcome", "report_contrasts",
    "correct_tests", "interval_count", "report_rows", "score_outcomes", "unit_range",
]


Plan = tuple[list[tuple[dict[str, str], list[int]]],
             dict[int, list[tuple[Contrast, dict[tuple[str, int], float]]]], int]


def _plan(outcomes: Sequence[Outcome], by: Sequence[str], options: ScoreOptions) -> Plan:
    """The rows of the report (with their instances' indices), the contrasts of each row,
    and how many intervals the report holds that are simultaneous (Δmem and contrasts)."""
    check_keys(outcomes, by, options.cluster)
    indexed = report_rows([o.instance for o in outcomes], by)
    # The contrasts over the whole run (row 0), then each within every row that holds part
    # of it (see ``contrast_plans``).
    per_row: dict[int, list[tuple[Contrast, dict[tuple[str, int], float]]]] = defaultdict(list)
    arrays = {metric: as_values([metric_value(o, metric) for o in outcomes])
              for metric in ("accuracy", "reliance")}
    for row, contrast, plan in contrast_plans([o.instance for o in outcomes], indexed,
                                              options.analysis):
        units = unit_differences(plan, arrays[contrast.metric])
        if row == 0 or units:
            per_row[row].append((contrast, units))
    intervals = sum(1 for key, indices in indexed
                    if delta_mem([outcomes[i] for i in indices], outcomes, key)) \
        + sum(1 for entries in per_row.values() for _, units in entries if units)
    return indexed, per_row, intervals


def interval_count(outcomes: Sequence[Outcome], by: Sequence[str],
                   options: ScoreOptions) -> int:
    """How many simultaneous intervals ``score_outcomes`` would compute (for a comparison of
    several runs, whose intervals are simultaneous across all of them)."""
    return _plan(outcomes, by, options)[2]


def score_outcomes(outcomes: Sequence[Outcome], by: Sequence[str],
                   options: ScoreOptions, comparison_intervals: int | None = None
                   ) -> dict[str, Any]:
    """``{"overall": METRICS, "groups": [{"key": {...}, "metrics": METRICS}, ...],
    "multiplicity": {...}}``.

    Every test of the report is corrected together (or each row's alone, with scope
    ``row``), and the Δmem intervals of every row are simultaneous at the family-wise level
    (Bonferroni over the rows that have one) unless the correction is ``none``; the
    ``multiplicity`` section says which. ``comparison_intervals``, where given, is the
    number of intervals they are simultaneous over instead (those of several runs compared
    in one report)."""
    indexed, per_row, intervals = _plan(outcomes, by, options)
    if comparison_intervals is not None:
        intervals = comparison_intervals
    rows = [(key, [outcomes[i] for i in indices]) for key, indices in indexed]
    simultaneous = options.correction != "none" and intervals > 1
    level = 1 - options.alpha / intervals if simultaneous else 1 - options.alpha
    computed = [(key, metrics(subset, outcomes, key, options, level)) for key, subset in rows]
    clusters = {o.unit: key_value(o.instance, options.cluster) if options.cluster else ""
                for o in outcomes}
    contrasts = [contrast_result(contrast, units, clusters, options, level)
                 for contrast, units in per_row[0]]
    for row, (_, m) in enumerate(computed[1:], 1):
        if per_row.get(row):
            m["contrasts"] = [contrast_result(contrast, units, clusters, options, level)
                              for contrast, units in per_row[row]]
    tests = correct_tests([*([*m.get("tests", []), *m.get("contrasts", [])]
                             for _, m in computed), contrasts], options)
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
    summaries = [score_summary(entry, outcomes, options)
                 for entry in declared_summaries(outcomes, options)]
    if summaries:
        report["summaries"] = summaries
    return report


def correct_tests(rows: Sequence[list[dict[str, Any]]], options: ScoreOptions) -> int:
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

"""Several runs of one release (models, or one model with several memory systems) in one
report: each scored as ``score_outcomes`` scores one, their rows side by side, every test of
every run corrected together and every interval simultaneous across all of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .score import correct_tests, interval_count, score_outcomes
from .score_options import ScoreOptions
from .score_outcome import Outcome


def _test_rows(report: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """A run's tests, a list a row (as ``score_outcomes`` corrects them), the run's own
    contrasts last."""
    rows = [report["overall"], *(g["metrics"] for g in report["groups"])]
    return [*([*m.get("tests", []), *m.get("contrasts", [])] for m in rows),
            report.get("contrasts") or []]


def compare_runs(runs: Sequence[tuple[str, Sequence[Outcome]]], by: Sequence[str],
                 options: ScoreOptions) -> dict[str, Any]:
    """``{"models": [{"model": LABEL, **REPORT}, ...], "multiplicity": {...}}``: each run's
    report as ``score_outcomes`` makes it, except that its Δmem and contrast intervals are
    simultaneous over those of every run, and its tests' ``p_adjusted`` corrected together
    with every other run's (by row, with scope ``row``)."""
    total = sum(interval_count(outcomes, by, options) for _, outcomes in runs)
    reports = [(label, score_outcomes(outcomes, by, options, comparison_intervals=total))
               for label, outcomes in runs]
    largest = correct_tests([row for _, report in reports for row in _test_rows(report)],
                            options)
    simultaneous = options.correction != "none" and total > 1
    multiplicity = {
        "correction": options.correction, "scope": options.scope, "alpha": options.alpha,
        "tests": largest,
        "intervals": {**reports[0][1]["multiplicity"]["intervals"], "count": total,
                      "level": 1 - options.alpha / total if simultaneous else 1 - options.alpha,
                      "simultaneous": simultaneous} if reports else {},
        "across": "every run of the comparison",
    }
    for _, report in reports:
        report["multiplicity"] = {**multiplicity}
    return {"models": [{"model": label, **report} for label, report in reports],
            "multiplicity": multiplicity}

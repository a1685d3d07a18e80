"""What `memspec score` and `memspec run` share: responses (a JSONL file, or inspect logs of
one or more models) scored into one report, and the report printed as a table, JSON, CSV or
an HTML page."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.responses import Responses
from ..core.errors import SpecError, printable
from ..core.limits import CommandBudget
from .cli_common import _print_table, _status, err


@dataclass(frozen=True)
class ScoreSettings:
    """How responses are scored (the options of `memspec score`)."""

    by: list[str]
    cluster: str | None = None
    abstain: tuple[str, ...] = ()
    resamples: int = 2000
    seed: int = 0
    correction: str = "holm"
    scope: str = "report"
    declarations: tuple[Any, ...] = ()
    judgments: Path | None = None
    unblind: Path | None = None
    normalize: str | None = None
    dataset_key: str = "family"
    normalize_within_run: bool = False
    allow_missing: bool = False


@dataclass
class Scored:
    """One run's responses to the instances it holds (with its log summary, if from logs)."""

    label: str
    instances: list[Mapping[str, Any]]
    responses: Responses
    display: str
    run: dict[str, Any] | None = None


def _outcomes(scored: Scored, settings: ScoreSettings, budget: CommandBudget) -> list[Any]:
    from ..analysis.score import outcome
    from ..core.safe_regex import PatternTooSlow

    outcomes = []
    for instance in scored.instances:
        budget.on(f"instance {instance['id']}", scored.responses.place(instance["id"]))
        try:
            outcomes.append(outcome(instance, scored.responses.get(instance["id"]),
                                    settings.abstain))
        except PatternTooSlow as exc:
            raise SpecError.single(f"the response to {instance['id']}: {exc}", scored.display,
                                   scored.responses.lines.get(instance["id"], 1), 1) from None
    return outcomes


def _from_jsonl(path: Path, instances: Sequence[Mapping[str, Any]],
                settings: ScoreSettings) -> Scored:
    """A responses file: every instance of the release is scored (one without a response is
    refused, or scored as unanswered with ``allow_missing``)."""
    from ..analysis.responses import load_responses

    responses = load_responses(path, (i["id"] for i in instances))
    missing = [i["id"] for i in instances if i["id"] not in responses]
    if missing and not settings.allow_missing:
        raise SpecError.single(
            f"{len(missing)} of {len(instances)} instances have no response (first: "
            f"{', '.join(missing[:3])}); pass --allow-missing to score them as unanswered",
            str(path))
    if missing:
        err.print(f"warning: {len(missing)} instances have no response; scored as "
                  "unanswered", markup=False)
    return Scored(str(path), list(instances), responses, str(path))


def read_inputs(paths: Sequence[Path], instances: Sequence[Mapping[str, Any]],
                settings: ScoreSettings) -> list[Scored]:
    """The runs ``paths`` hold: a JSONL file is one; inspect logs (files or folders) hold one
    per model and memory system, each scored on the instances it has samples of."""
    from ..run.logs import is_log, read_run_logs, scored_instances

    logs = [p for p in paths if is_log(p)]
    found = [_from_jsonl(p, instances, settings) for p in paths if not is_log(p)]
    if logs:
        for run in read_run_logs(logs, (i["id"] for i in instances)):
            held = scored_instances(instances, run)
            if not held:
                raise SpecError.single(f"the logs of {run.label} hold no sample", run.logs[0])
            summary = run.summary(len(instances))
            if any(summary["issues"].values()):
                named = ", ".join(f"{n} {k}" for k, n in summary["issues"].items() if n)
                err.print(f"note: {run.label}: {named}: scored as unanswered", markup=False)
            found.append(Scored(run.label, held, run.responses, run.logs[0], summary))
    labels = [s.label for s in found]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise SpecError.single(f"{twice[0]} is given twice; give each model's logs once")
    return found


def score_runs(runs: Sequence[Scored], settings: ScoreSettings) -> dict[str, Any]:
    """One report: a run's as `memspec score` has always made it (with its log summary as
    ``run``), or several runs side by side (``compare_runs``)."""
    from ..analysis.score import ScoreOptions
    from ..analysis.score_comparison import compare_runs

    options = ScoreOptions(settings.cluster, settings.resamples, settings.seed,
                           settings.correction, settings.scope,
                           analysis=settings.declarations)
    if len(runs) == 1:
        report = _score_one(runs[0], settings, options)
        if runs[0].run is not None:
            report["run"] = runs[0].run
        return report
    if settings.judgments is not None:
        raise SpecError.single("--judgments go with the responses of one run; score the "
                               "runs one at a time to attach judgments")
    with CommandBudget("score", runs[0].display) as budget, \
            _status(f"scoring {len(runs)} runs") as say:
        outcomes = [(run.label, _outcomes(run, settings, budget)) for run in runs]
        budget.on("statistics")
        say("bootstrap intervals and tests")
        report = compare_runs(outcomes, settings.by, options)
    for entry, run in zip(report["models"], runs, strict=True):
        if run.run is not None:
            entry["run"] = run.run
    return report


def _score_one(scored: Scored, settings: ScoreSettings, options: Any) -> dict[str, Any]:
    from ..analysis.judge import load_judgments
    from ..analysis.judge_panel import load_panel_judgments, panel_report
    from ..analysis.score import attach_judgments, score_outcomes
    from ..exports.file_group import settled

    with CommandBudget("score", scored.display) as budget, \
            _status(f"scoring {printable(scored.display)}") as say:
        outcomes = _outcomes(scored, settings, budget)
        instances = scored.instances
        if settings.judgments is not None and settings.unblind is not None:
            budget.on("judgments")
            scales = {i["id"]: i.get("analysis", {}).get("judge_scale") for i in instances}
            # The map is read twice; both reads must see the map of one complete run of
            # judge-requests, whose requests the judgments answer.
            with settled(settings.unblind, "judge-requests"):
                scores = load_judgments(settings.judgments, settings.unblind, scales,
                                        allow_missing=settings.allow_missing)
                panel_judgments = load_panel_judgments(settings.judgments, settings.unblind,
                                                       scales,
                                                       allow_missing=settings.allow_missing)
            panel = panel_report(instances, panel_judgments, settings.by)
            outcomes, references = attach_judgments(outcomes, scores, settings.normalize,
                                                    settings.dataset_key,
                                                    settings.normalize_within_run)
        else:
            references, panel = {}, []
        budget.on("statistics")
        say("bootstrap intervals and tests")
        report = score_outcomes(outcomes, settings.by, options)
    if panel:
        report["judge_panel"] = panel
    if references:
        report["normalisation"] = {"method": settings.normalize,
                                   "dataset_key": settings.dataset_key,
                                   "reference": references}
    return report


def print_report(report: dict[str, Any], output_format: str, title: str,
                 notes: Sequence[str] = ()) -> None:
    """The report on standard output as a table (with its tests, contrasts, headline scores,
    judge panel and runs), JSON, CSV or an HTML page; the table's ``notes`` (on standard
    error) are said under its first table, where a pooled number is read first."""
    from ..report.panel_format import as_panel_table
    from ..report.report_format import (
        as_contrasts_table,
        as_csv,
        as_json,
        as_run_table,
        as_summaries_table,
        as_table,
        as_tests_table,
    )
    from ..report.score_page import render_scores

    if output_format == "json":
        sys.stdout.write(as_json(report) + "\n")
    elif output_format == "csv":
        sys.stdout.write(as_csv(report))
    elif output_format == "html":
        sys.stdout.write(render_scores(report, title))
    else:
        _print_table(as_table(report))
        for note in notes:
            err.print(f"note: {note}", markup=False)
        for extra in (as_run_table(report), as_tests_table(report),
                      as_contrasts_table(report), as_summaries_table(report),
                      as_panel_table(report)):
            if extra is not None:
                _print_table(extra)

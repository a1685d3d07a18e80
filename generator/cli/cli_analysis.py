"""The commands that score a release: check-answer, respond, score, judge-requests and
rho-star (with the reading of the `score --format json` files that rho-star takes)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..analysis.policies import POLICIES
from ..core.errors import (
    EXIT_CHECK_FAILED,
    EXIT_OK,
    SpecError,
    elide,
    printable,
    unknown_name,
)
from ..core.json_files import read_json_file
from ..core.limits import CommandBudget
from .cli_common import (
    Correction,
    CorrectionScope,
    Normalisation,
    ScoreFormat,
    _catalog_if_any,
    _check_seed,
    _complete_families,
    _print_table,
    _run,
    _shown_generator,
    _status,
    _write_output,
    app,
    err,
    out,
)


@app.command("check-answer", short_help="What a response scores on one instance, and why.")
def check_answer(
    family: Annotated[str, typer.Argument(help="Family id (or path to its YAML file).",
                                          autocompletion=_complete_families)],
    response: Annotated[str, typer.Argument(help="The response to score.")],
    group: Annotated[int, typer.Option(min=0, help="Group index.")] = 0,
    variant: Annotated[str | None, typer.Option(
        help="Variant name, as in the instance's `variant` (needed when there are several).")]
    = None,
    seed: Annotated[int | None, typer.Option(
        help="Seed (default: that of the release holding the family, else 0).")] = None,
) -> None:
    """Score one response on one instance, first attempt only: what the scorer took of it,
    the verdict and why. Exit 0 when it scores as correct (or only a judge can say), 1 when
    not."""
    from ..engine.answer_tests import explain

    def action() -> int:
        generator = _shown_generator(family, seed)
        instances = generator.group(group)
        names = [i["variant"] for i in instances]
        if variant is None and len(names) > 1:
            raise SpecError.single(f"--variant is needed: group {group} has {len(names)} "
                                   f"variants ({', '.join(names)})")
        chosen = variant or names[0]
        if chosen not in names:
            raise SpecError.single(f"--variant {chosen!r} is not a variant of group {group} "
                                   f"({', '.join(names)})")
        instance = instances[names.index(chosen)]
        answer = instance["answer"]
        out.print(f"instance: {instance['id']}", markup=False)
        if "gold" in answer:
            out.print(f"gold: {answer['gold']!r}", markup=False)
        verdict = explain(answer, response)
        for line in verdict.lines():
            out.print(line, markup=False)
        return EXIT_OK if verdict.verdict in ("correct", "judged") else EXIT_CHECK_FAILED

    raise typer.Exit(_run(action))


@app.command(short_help="Responses of a reference policy.")
def respond(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    policy: Annotated[str, typer.Option(help="Reference policy: " + ", ".join(POLICIES)
                                        + ", or one the release's families declare")],
    seed: Annotated[int, typer.Option(help="Seed of the random policy.")] = 0,
    out_file: Annotated[str, typer.Option("--out", help="Output file, or - for stdout.")] = "-",
) -> None:
    """Responses of a reference policy to every instance of a release, as JSONL: a built-in
    one, or one the families declare (``audit.policies``; instances of a family that does not
    declare it get the memoryless policy's response)."""
    from ..core.canonical import dump_bytes
    from ..release.release_data import load_release_instances

    def action() -> None:
        _check_seed(seed)
        _, instances = load_release_instances(release_dir, _catalog_if_any())
        declared = sorted({name for i in instances for name in i["answer"].get("policies", {})})
        if policy not in POLICIES and policy not in declared:
            raise SpecError.single(unknown_name("policy", policy, [*POLICIES, *declared],
                                                "policies"))
        act = POLICIES.get(policy)

        def response(instance: Any) -> str:
            if act is not None:
                return act(instance, seed)
            own = instance["answer"].get("policies", {})
            return own[policy] if policy in own else POLICIES["memoryless"](instance, seed)

        data = b"".join(dump_bytes({"id": i["id"], "response": response(i)})
                        for i in instances)
        _write_output(out_file, data)

    _run(action)


def _split_keys(value: str | None) -> list[str]:
    return [k.strip() for k in value.split(",") if k.strip()] if value else []


@app.command(short_help="Score responses: metrics, intervals, tests.")
def score(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    responses_file: Annotated[Path, typer.Argument(help="JSONL of {id, response}.")],
    by: Annotated[str | None, typer.Option(
        help="Group by these keys (comma-separated): family, paradigm, design, variant, "
             "group, any axis or field.")] = None,
    cluster: Annotated[str | None, typer.Option(
        help="Resample clusters of groups sharing this key in the bootstrap.")] = None,
    output_format: Annotated[ScoreFormat, typer.Option(
        "--format", help="table (for a terminal), json or csv.")] = "table",
    judgments: Annotated[Path | None, typer.Option(help="Judge scores (JSONL).")] = None,
    unblind: Annotated[Path | None, typer.Option(
        help="Unblinding map written by judge-requests.")] = None,
    normalize: Annotated[Normalisation | None, typer.Option(
        help="Normalise judge scores within each dataset: minmax or z.")] = None,
    dataset_key: Annotated[str, typer.Option(
        help="Key that names a dataset for normalisation.")] = "family",
    normalize_within_run: Annotated[bool, typer.Option(
        help="Normalise against this run's scores of each dataset even where the release "
             "declares reference statistics for it.")] = False,
    allow_missing: Annotated[bool, typer.Option(
        help="Score instances without a response as unanswered, and judge requests without "
             "a judgment as unjudged, instead of refusing.")] = False,
    abstain_pattern: Annotated[list[str] | None, typer.Option(
        help="Extra regular expression marking an abstention (repeatable).")] = None,
    resamples: Annotated[int, typer.Option(min=100, max=100_000, help="Bootstrap resamples "
                                           "(each holds a draw of every value in memory).")
                         ] = 2000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    correction: Annotated[Correction, typer.Option(
        help="Correction for multiple tests: holm, bonferroni or none. With holm or "
             "bonferroni the Δmem intervals of every row are simultaneous too.")] = "holm",
    correction_scope: Annotated[CorrectionScope, typer.Option(
        help="Which tests are corrected together: report (every test of this run) or row "
             "(each row's tests alone).")] = "report",
    analysis_file: Annotated[Path | None, typer.Option(
        "--analysis", help="YAML of contrasts and factorials to estimate, beside those the "
                           "families declare (e.g. for a release already frozen).")] = None,
) -> None:
    """Metrics with bootstrap intervals over groups: coverage, accuracy on answered items,
    reliance, Δmem; tests of the group means, corrected together across the report."""
    from ..analysis.contrasts import load_analysis_file
    from ..analysis.judge import load_judgments
    from ..analysis.judge_panel import load_panel_judgments, panel_report
    from ..analysis.responses import load_responses
    from ..analysis.score import ScoreOptions, attach_judgments, outcome, score_outcomes
    from ..core.safe_regex import PatternTooSlow, searched_pattern_problem
    from ..release.release_data import load_release_instances
    from ..report.panel_format import as_panel_table
    from ..report.report_format import (
        as_contrasts_table,
        as_csv,
        as_json,
        as_summaries_table,
        as_table,
        as_tests_table,
    )

    def action() -> None:
        if (judgments is None) != (unblind is None):
            raise SpecError.single("--judgments and --unblind go together")
        for pattern in abstain_pattern or []:
            problem = searched_pattern_problem(pattern)
            if problem is not None:
                raise SpecError.single(f"--abstain-pattern {elide(repr(pattern), 120)} "
                                       f"{problem}")
        _check_seed(seed)
        declarations = (load_analysis_file(analysis_file),) if analysis_file else ()
        _, instances = load_release_instances(release_dir, _catalog_if_any())
        responses = load_responses(responses_file, (i["id"] for i in instances))
        missing = [i["id"] for i in instances if i["id"] not in responses]
        if missing and not allow_missing:
            raise SpecError.single(
                f"{len(missing)} of {len(instances)} instances have no response (first: "
                f"{', '.join(missing[:3])}); pass --allow-missing to score them as unanswered",
                str(responses_file))
        if missing:
            err.print(f"warning: {len(missing)} instances have no response; scored as "
                      "unanswered", markup=False)
        with CommandBudget("score", str(responses_file)) as budget, \
                _status(f"scoring {printable(str(responses_file))}") as say:
            outcomes = []
            for instance in instances:
                budget.on(f"instance {instance['id']}", responses.place(instance["id"]))
                try:
                    outcomes.append(outcome(instance, responses.get(instance["id"]),
                                            abstain_pattern or ()))
                except PatternTooSlow as exc:
                    raise SpecError.single(f"the response to {instance['id']}: {exc}",
                                           str(responses_file),
                                           responses.lines.get(instance["id"], 1),
                                           1) from None
            if judgments is not None and unblind is not None:
                budget.on("judgments")
                scales = {i["id"]: i.get("analysis", {}).get("judge_scale") for i in instances}
                scores = load_judgments(judgments, unblind, scales, allow_missing=allow_missing)
                panel = panel_report(instances, load_panel_judgments(
                    judgments, unblind, scales, allow_missing=allow_missing), _split_keys(by))
                outcomes, references = attach_judgments(outcomes, scores, normalize,
                                                        dataset_key, normalize_within_run)
            else:
                references, panel = {}, []
            budget.on("statistics")
            say("bootstrap intervals and tests")
            report = score_outcomes(outcomes, _split_keys(by),
                                    ScoreOptions(cluster, resamples, seed, correction,
                                                 correction_scope, analysis=declarations))
        if panel:
            report["judge_panel"] = panel
        if references:
            report["normalisation"] = {"method": normalize, "dataset_key": dataset_key,
                                       "reference": references}
        if output_format == "json":
            sys.stdout.write(as_json(report) + "\n")
        elif output_format == "csv":
            sys.stdout.write(as_csv(report))
        else:
            _print_table(as_table(report))
            for extra in (as_tests_table(report), as_contrasts_table(report),
                          as_summaries_table(report), as_panel_table(report)):
                if extra is not None:
                    _print_table(extra)

    _run(action)


@app.command("judge-requests", short_help="Blinded requests for a judge model.")
def judge_requests(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    responses_file: Annotated[Path, typer.Argument(help="JSONL of {id, response}.")],
    out_file: Annotated[Path, typer.Option("--out", help="Requests JSONL to write.")],
    seed: Annotated[int, typer.Option(help="Seed of the A/B order.")] = 0,
) -> None:
    """One judge request per pair of paired judge items (blinded A/B), one per item otherwise;
    for a family with a judge panel, one per judge for each item beside its group's anchor.

    The unblinding map goes beside the requests, as <out>.unblind.json."""
    from ..analysis.judge import build_requests
    from ..analysis.responses import load_responses
    from ..core.canonical import dump_bytes, dump_pretty_bytes
    from ..exports.export import write_all
    from ..release.release_data import load_release_instances

    def action() -> None:
        _check_seed(seed)
        _, instances = load_release_instances(release_dir, _catalog_if_any())
        responses = load_responses(responses_file, (i["id"] for i in instances))
        with CommandBudget("judge-requests", str(responses_file)):
            requests, unblind_map = build_requests(instances, responses, seed)
        unblind_path = out_file.with_name(out_file.name + ".unblind.json")
        # The requests are useless without their unblinding map and the map names requests
        # that must be there: the pair is written all or none, as an export's files are.
        write_all(out_file.parent, {
            out_file.name: b"".join(dump_bytes(r) for r in requests),
            unblind_path.name: dump_pretty_bytes(unblind_map)})
        out.print(f"wrote {len(requests)} requests to {out_file} and the unblinding map to "
                  f"{unblind_path}", markup=False)

    _run(action)


@app.command("rho-star", short_help="The first level where memory hurts (ρ*).")
def rho_star_cmd(
    runs: Annotated[list[str], typer.Argument(
        help="LEVEL=SCORES.json, in level order (score --format json outputs).")],
    where: Annotated[str | None, typer.Option(
        help="The group of each run whose Δmem to read, as KEY=VALUE[,KEY=VALUE], e.g. "
             "condition=stale.")] = None,
    contrast: Annotated[str | None, typer.Option(
        help="The contrast of each run to read instead (its name in the report's "
             "contrasts).")] = None,
) -> None:
    """ρ*: the first level whose Δmem (in the chosen group), or the chosen contrast, is below
    0 by its exact sign-flip test, Holm-corrected across all the levels given."""
    from ..analysis.stats import rho_star

    def action() -> None:
        if (where is None) == (contrast is None):
            raise SpecError.single("give one of --where (a group's Δmem) or --contrast")
        wanted: dict[str, str] = {}
        if where is not None:
            parts = _split_keys(where)
            if not parts or not all("=" in part for part in parts):
                raise SpecError.single(f"--where {where!r} is not KEY=VALUE[,KEY=VALUE]")
            wanted = dict(part.split("=", 1) for part in parts)
        levels: list[tuple[str, float | None, float | None]] = []
        for run in runs:
            level, sep, path = run.partition("=")
            if not sep or not level:
                raise SpecError.single(f"{run!r} is not LEVEL=SCORES.json")
            if any(level == seen for seen, _, _ in levels):
                raise SpecError.single(f"level {level!r} is given twice")
            levels.append((level, *(_stale_group(path, wanted) if contrast is None
                                    else _contrast_estimate(path, contrast))))
        found = rho_star(levels)
        out.print(found if found is not None else "none", markup=False)

    _run(action)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _contrast_estimate(path: str, name: str) -> tuple[float, float]:
    """The named contrast of a `score --format json` file: its estimate and p-value, for ρ*;
    refused with the reason where the file has no such contrast or it has no value."""
    report = _read_scores(path)
    contrasts = report.get("contrasts") if isinstance(report, dict) else None
    if not isinstance(contrasts, list):
        raise SpecError.single("the scores have no contrasts section (written by an older "
                               "memspec score?)", path)
    entry = next((c for c in contrasts if isinstance(c, dict) and c.get("name") == name), None)
    if entry is None:
        known = ", ".join(repr(c.get("name")) for c in contrasts if isinstance(c, dict))
        raise SpecError.single(f"no contrast {name!r} in the scores (there are: "
                               f"{known or 'none'})", path)
    if not (_is_number(entry.get("estimate")) and _is_number(entry.get("p_value"))):
        raise SpecError.single(f"cannot compute ρ*: contrast {name!r} has no estimate and "
                               f"p-value (it has {entry.get('groups', 0)} groups with a "
                               "value in both arms)", path)
    return float(entry["estimate"]), float(entry["p_value"])


def _read_scores(path: str) -> Any:
    return read_json_file(Path(path), path)


def _stale_group(path: str, wanted: dict[str, str]) -> tuple[float, float]:
    """The Δmem and its p-value of the group keyed ``wanted`` in a `score --format json`
    file, whose Δmem interval must be two numbers: a group without one (no baseline
    declared, no group answered on both sides) is refused with the reason, since ρ* cannot
    be computed."""
    report = _read_scores(path)
    groups = report.get("groups") if isinstance(report, dict) else None
    if not isinstance(groups, list) or not all(
            isinstance(g, dict) and isinstance(g.get("metrics"), dict) for g in groups):
        raise SpecError.single("not the output of `memspec score --format json` (no list of "
                               "groups with metrics)", path)
    metrics = next((g["metrics"] for g in groups if g.get("key") == wanted), None)
    if metrics is None:
        raise SpecError.single(f"no group {wanted} in the scores", path)
    interval = metrics.get("delta_mem_ci")
    if interval is not None and not (
            isinstance(interval, list) and len(interval) == 2 and all(
                v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                for v in interval)):
        raise SpecError.single(f"delta_mem_ci of group {wanted} is not two numbers: "
                               f"{interval!r}", path)
    if interval is None or None in interval:
        # Saying "none" here would read as "memory never hurt", when it was not measured.
        reason = ("its rows declare no baseline to measure Δmem against"
                  if "delta_mem" not in metrics else
                  f"it has {metrics.get('delta_mem_pairs', 0)} groups answered in both the "
                  "condition and the baseline")
        raise SpecError.single(f"cannot compute ρ*: group {wanted} has no Δmem interval: "
                               f"{reason}", path)
    if not (_is_number(metrics.get("delta_mem")) and _is_number(metrics.get("delta_mem_p_value"))):
        raise SpecError.single(f"cannot compute ρ*: group {wanted} has no Δmem p-value "
                               "(written by an older memspec score?)", path)
    return float(metrics["delta_mem"]), float(metrics["delta_mem_p_value"])

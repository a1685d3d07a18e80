"""The commands that score a release: check-answer, respond, score, judge-requests and
rho-star (with the reading of the `score --format json` files that rho-star takes)."""


import re
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
    unknown_name,
)
from ..core.json_files import read_json_file
from .cli_common import (
    Correction,
    CorrectionScope,
    Normalisation,
    ScoreFormat,
    _check_seed,
    _complete_families,
    _pins_if_any,
    _run,
    _shown_generator,
    _write_output,
    app,
    out,
)


@app.command("check-answer", short_help="What a response scores on one instance, and why.")
def check_answer(
    family: Annotated[str, typer.Argument(help="Family id (or path to its YAML file).",
                                          autocompletion=_complete_families)],
    response: Annotated[str | None, typer.Argument(
        help="The response to score (or give --response-file).")] = None,
    group: Annotated[int, typer.Option(min=0, help="Group index.")] = 0,
    variant: Annotated[str | None, typer.Option(
        help="Variant name, as in the instance's `variant` (needed when there are several).")]
    = None,
    instance_id: Annotated[str | None, typer.Option(
        "--id", help="Instance id (FAMILY-GROUP-VARIANT, as in a release): sets --group and "
                     "--variant.")] = None,
    response_file: Annotated[Path | None, typer.Option(
        help="Read the response from this file (- for stdin).")] = None,
    seed: Annotated[int | None, typer.Option(
        help="Seed (default: that of the release holding the family, else 0).")] = None,
) -> None:
    """Score one response on one instance, first attempt only: what the scorer took of it,
    the verdict and why (under a declared reading stage, each of its steps). Exit 0 when it
    scores as correct (or only a judge can say), 1 when not."""
    from ..engine.answer_tests import explain

    def action() -> int:
        text = _response_text(response, response_file)
        chosen_group, chosen_variant = _id_parts(instance_id, group, variant)
        generator = _shown_generator(family, seed)
        instances = generator.group(chosen_group)
        names = [i["variant"] for i in instances]
        if chosen_variant is None and len(names) > 1:
            raise SpecError.single(f"--variant is needed: group {chosen_group} has "
                                   f"{len(names)} variants ({', '.join(names)})")
        chosen = chosen_variant or names[0]
        if chosen not in names:
            raise SpecError.single(f"--variant {chosen!r} is not a variant of group "
                                   f"{chosen_group} ({', '.join(names)})")
        instance = instances[names.index(chosen)]
        if instance_id is not None and instance["id"] != instance_id:
            raise SpecError.single(f"--id {instance_id!r} is not an instance of {family} "
                                   f"(group {chosen_group} variant {chosen} is "
                                   f"{instance['id']!r})")
        answer = instance["answer"]
        out.print(f"instance: {instance['id']}", markup=False)
        if "gold" in answer:
            out.print(f"gold: {answer['gold']!r}", markup=False)
        verdict = explain(answer, text)
        for line in verdict.lines():
            out.print(line, markup=False)
        return EXIT_OK if verdict.verdict in ("correct", "judged") else EXIT_CHECK_FAILED

    raise typer.Exit(_run(action))


def _response_text(response: str | None, response_file: Path | None) -> str:
    """The response to check: the argument, or the file's text (exactly one of them)."""
    if (response is None) == (response_file is None):
        raise SpecError.single("give the response either as an argument or with "
                               "--response-file, not both or neither")
    if response_file is None:
        return response or ""
    if str(response_file) == "-":
        return sys.stdin.read()
    try:
        return response_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError.single(f"{response_file}: cannot read the response: {exc}") from None


def _id_parts(instance_id: str | None, group: int, variant: str | None
              ) -> tuple[int, str | None]:
    """The group and variant an instance id names (``FAMILY-00003-main.stale.r0``), else
    the options given."""
    if instance_id is None:
        return group, variant
    found = re.fullmatch(r".+-(\d{5})-([^-]+)", instance_id)
    if found is None:
        raise SpecError.single(f"--id {instance_id!r} is not an instance id "
                               "(FAMILY-GROUP-VARIANT, e.g. my.bench.family-00000-"
                               "main.stale.r0)")
    return int(found.group(1)), found.group(2)


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
        _, instances = load_release_instances(release_dir, _pins_if_any(), held=True)
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


def score_notes(release_dir: Path, instances: list[dict[str, Any]],
                by: list[str]) -> list[str]:
    """What the first screen of ``score`` says under its table: rows that pool items whose
    evidence is in view with items that need memory, and datasets with a high convention
    baseline. Scoring reads no messages; whether evidence is shown needs them, so the release
    is read again with its messages only where some item declares evidence."""
    from ..audit.score_notes import convention_notes, pooled_row_notes
    from ..release.release_data import load_release_instances

    if any(i["answer"].get("evidence") is not None for i in instances) and \
            not all("phases" in i for i in instances):
        _, instances = load_release_instances(release_dir, _pins_if_any(), held=True)
    return pooled_row_notes(instances, by) + convention_notes(instances)


def with_conventions(report: dict[str, Any], release_dir: Path,
                     instances: list[dict[str, Any]], by: list[str]
                     ) -> list[dict[str, Any]]:
    """Each row of a score ``report`` given its convention baseline (``convention``, beside
    its scores): what a system that knows each dataset's answer form from one other item,
    and nothing of the user's sessions, scores on the row's items. The learner copies from
    an item's request only where items declare a default answer, so the release is read
    again with its messages only then (the instances it read are returned)."""
    from ..audit.score_notes import convention_rows
    from ..release.release_data import load_release_instances
    from ..report.report_format import parts

    if any(i["answer"].get("prior") for i in instances) and \
            not all("phases" in i for i in instances):
        _, instances = load_release_instances(release_dir, _pins_if_any(), held=True)
    values = {tuple(sorted(key.items())): value for key, value in convention_rows(instances, by)}
    for _, part in parts(report):
        part["overall"]["convention"] = values.get(())
        for group in part["groups"]:
            group["metrics"]["convention"] = values.get(tuple(sorted(group["key"].items())))
    return instances


def _split_keys(value: str | None) -> list[str]:
    return [k.strip() for k in value.split(",") if k.strip()] if value else []


@app.command(short_help="Score responses: metrics, intervals, tests.")
def score(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    responses_files: Annotated[list[Path], typer.Argument(
        help="JSONL of {id, response}, or inspect eval logs (.eval, .json, or folders of "
             "them) of one or more models.")],
    by: Annotated[str | None, typer.Option(
        help="Group by these keys (comma-separated): family, paradigm, design, variant, "
             "group, any axis or field.")] = None,
    cluster: Annotated[str | None, typer.Option(
        help="Resample clusters of groups sharing this key in the bootstrap.")] = None,
    output_format: Annotated[ScoreFormat, typer.Option(
        "--format", help="table (for a terminal), json, csv or html.")] = "table",
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
    reliance, Δmem; tests of the group means, corrected together across the report.

    RESPONSES is a JSONL file of {id, response}, or inspect eval logs (.eval or .json files,
    or folders of them): a sample answers the instance of its id with its first completion;
    errors, time-outs, truncated and refused outputs are counted apart by kind and scored as
    unanswered. Logs of several models (or memory systems) give one report with the models
    side by side, every test corrected together and every interval simultaneous across
    them."""
    from ..analysis.contrasts import load_analysis_file
    from ..core.safe_regex import searched_pattern_problem
    from ..release.release_data import load_release_instances
    from .cli_scoring import ScoreSettings, print_report, read_inputs, score_runs

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
        # Scoring reads an instance's answer, axes, fields and analysis, never its messages.
        manifest, instances = load_release_instances(release_dir, _pins_if_any(), held=True,
                                                     without=("phases",))
        settings = ScoreSettings(
            _split_keys(by), cluster, tuple(abstain_pattern or ()), resamples, seed,
            correction, correction_scope, declarations, judgments, unblind, normalize,
            dataset_key, normalize_within_run, allow_missing)
        report = score_runs(read_inputs(responses_files, instances, settings), settings)
        instances = with_conventions(report, release_dir, instances, _split_keys(by))
        notes = (score_notes(release_dir, instances, _split_keys(by))
                 if output_format == "table" else [])
        print_report(report, output_format,
                     f"Scores: {manifest['release']}-{manifest['version']}", notes)

    _run(action)


def _responses_of_one_run(path: Path, instances: list[Any]) -> Any:
    """The responses of a JSONL file, or of the one model whose inspect logs ``path`` names
    (a sample with no usable response has none)."""
    from ..analysis.responses import load_responses
    from ..run.logs import is_log, read_run_logs

    ids = [i["id"] for i in instances]
    if not is_log(path):
        return load_responses(path, ids)
    runs = read_run_logs([path], ids)
    if len(runs) != 1:
        raise SpecError.single(f"holds the logs of {len(runs)} models ("
                               f"{', '.join(r.label for r in runs)}); give one model's",
                               str(path))
    return runs[0].responses


@app.command("judge-requests", short_help="Blinded requests for a judge model.")
def judge_requests(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    responses_file: Annotated[Path, typer.Argument(
        help="JSONL of {id, response}, or the inspect eval log (or folder of logs) of one "
             "model.")],
    out_file: Annotated[Path, typer.Option("--out", help="Requests JSONL to write.")],
    seed: Annotated[int, typer.Option(help="Seed of the A/B order.")] = 0,
) -> None:
    """One judge request per pair of paired judge items (blinded A/B), one per item otherwise;
    for a family with a judge panel, one per judge for each item beside its group's anchor.

    The unblinding map goes beside the requests, as <out>.unblind.json, and the SHA-256 of
    both, moved into place after them, as <out>.sha256."""
    from ..analysis.judge import build_requests
    from ..core.canonical import dump_bytes, dump_pretty_bytes
    from ..core.limits import CommandBudget
    from ..exports.file_group import write_all
    from ..release.release_data import load_release_instances

    def action() -> None:
        _check_seed(seed)
        _, instances = load_release_instances(release_dir, _pins_if_any(), held=True)
        responses = _responses_of_one_run(responses_file, instances)
        with CommandBudget("judge-requests", str(responses_file)):
            requests, unblind_map = build_requests(instances, responses, seed)
        unblind_path = out_file.with_name(out_file.name + ".unblind.json")
        sums_path = out_file.with_name(out_file.name + ".sha256")
        # The requests are useless without their unblinding map and the map names requests
        # that must be there: the pair is written all or none, as an export's files are, and
        # its sums, moved last, let a reader that is not memspec tell a whole pair from one
        # caught (or left) mid-move.
        write_all(out_file.parent, {
            out_file.name: b"".join(dump_bytes(r) for r in requests),
            unblind_path.name: dump_pretty_bytes(unblind_map)}, sums=sums_path.name)
        out.print(f"wrote {len(requests)} requests to {out_file}, the unblinding map to "
                  f"{unblind_path} and the SHA-256 of both to {sums_path}", markup=False)

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

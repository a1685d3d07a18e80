"""`memspec normalize`: several systems' results on one release, each dataset's scores
normalised over all of them as MemoryBench's summary does (min-max and z), beside the
normalisation against the reference the release declares."""


import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from ..core.errors import SpecError
from .cli_common import _pins_if_any, _print_table, _run, app

NormaliseFormat = Literal["table", "json", "csv"]


def _named(pairs: list[str] | None, what: str) -> dict[str, Path]:
    """``NAME=PATH`` arguments as a mapping; a malformed or repeated name is refused."""
    found: dict[str, Path] = {}
    for pair in pairs or []:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise SpecError.single(f"{pair!r} is not SYSTEM={what}")
        if name in found:
            raise SpecError.single(f"system {name!r} is given twice")
        found[name] = Path(path)
    return found


@app.command("normalize",
             short_help="Several systems' scores normalised per dataset (MemoryBench).")
def normalize_cmd(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    systems: Annotated[list[str], typer.Argument(
        help="SYSTEM=RESPONSES for each system: a JSONL file of {id, response} or one "
             "model's inspect logs.")],
    system_judgments: Annotated[list[str] | None, typer.Option(
        "--judgments",
        help="SYSTEM=JUDGMENTS.jsonl (repeatable): judge scores of that system's requests.")
    ] = None,
    system_unblind: Annotated[list[str] | None, typer.Option(
        "--unblind", help="SYSTEM=MAP.json (repeatable): the unblinding map of its judge requests.")
    ] = None,
    dataset_key: Annotated[str, typer.Option(
        help="Key that names a dataset (family, or any axis or field).")] = "family",
    by: Annotated[str | None, typer.Option(
        help="Partition keys (comma-separated), e.g. domain: each value's datasets are "
             "summarised apart, as MemoryBench summarises a domain or a task format.")
    ] = None,
    output_format: Annotated[NormaliseFormat, typer.Option(
        "--format", help="table, json or csv.")] = "table",
    allow_missing: Annotated[bool, typer.Option(
        help="Score instances without a response as unanswered, and leave judge requests "
             "without a judgment unjudged, instead of refusing.")] = False,
) -> None:
    """Each dataset's item values (judge scores with --judgments, else verdicts 1/0) pooled
    over every system given: min, max, mean and population standard deviation; each item
    normalised min-max ((s - min) / (max - min), 0 where max = min) and z ((s - mean) / sd,
    0 where sd <= 1e-6); each system's mean per dataset, and per partition the unweighted
    mean of its datasets' min-max means, the min-max and z means over all its items (null
    where it lacks a dataset). Beside them: the same means normalised against the reference
    statistics the release declares (analysis.judge_reference)."""
    from ..analysis.cross_normalise import SystemValues, cross_normalise, item_values
    from ..analysis.judge import load_judgments
    from ..core.canonical import dumps
    from ..core.limits import CommandBudget
    from ..release.release_data import load_release_instances
    from ..report.normalise_format import as_normalise_csv, as_normalise_tables
    from .cli_analysis import _split_keys
    from .cli_scoring import ScoreSettings, _outcomes, read_inputs

    def action() -> None:
        named = _named(systems, "RESPONSES")
        judged_files = _named(system_judgments, "JUDGMENTS")
        maps = _named(system_unblind, "MAP")
        if judged_files.keys() != maps.keys():
            raise SpecError.single("--judgments and --unblind go together, one of each for "
                                   "every judged system")
        if judged_files and judged_files.keys() != named.keys():
            unknown = sorted(judged_files.keys() - named.keys())
            raise SpecError.single(
                f"--judgments names system {unknown[0]!r}, which has no responses" if unknown
                else "give --judgments for every system or for none: normalised together, "
                     "their datasets must hold the same kind of value")
        if len(named) < 2:
            raise SpecError.single("give the responses of two or more systems: each "
                                   "dataset is normalised over all of them")
        manifest, instances = load_release_instances(release_dir, _pins_if_any(), held=True,
                                                     without=("phases",))
        settings = ScoreSettings([], allow_missing=allow_missing)
        scales = {i["id"]: i.get("analysis", {}).get("judge_scale") for i in instances}
        found, metrics = [], {}
        with CommandBudget("normalize", str(release_dir)) as budget:
            for name, path in named.items():
                runs = read_inputs([path], instances, settings)
                if len(runs) != 1:
                    raise SpecError.single(f"holds the logs of {len(runs)} models; give one "
                                           "model's for each system", str(path))
                judged = (load_judgments(judged_files[name], maps[name], scales,
                                         allow_missing=allow_missing)
                          if name in judged_files else None)
                held = runs[0].instances
                values, kinds = item_values(held, _outcomes(runs[0], settings, budget),
                                            judged, str(path), dataset_key)
                metrics.update(kinds)
                found.append(SystemValues(name, values))
            budget.on("normalisation")
            report = cross_normalise(instances, found, dataset_key, _split_keys(by), metrics)
        report["release"] = f"{manifest['release']}-{manifest['version']}"
        if output_format == "json":
            sys.stdout.write(dumps(report) + "\n")
        elif output_format == "csv":
            sys.stdout.write(as_normalise_csv(report))
        else:
            for table in as_normalise_tables(report):
                _print_table(table)

    _run(action)

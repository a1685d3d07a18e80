"""Score reports as a table, JSON or CSV; a table as rows of blocks where it is too wide."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..core.errors import printable

#: Metrics shown as columns, with their interval where they have one.
COLUMNS = ("n", "answered", "missing", "coverage", "accuracy", "selective_risk",
           "accuracy_all", "abstention_rate", "reliance", "delta_mem", "delta_mem_pairs",
           "hit_rate", "false_alarm_rate", "hit_minus_fa", "d_prime", "judge_score",
           "judge_score_norm", "influence", "influence_percent", "delta_mem_p_value")
#: Columns the CSV and JSON carry but the table leaves out: 1 minus a column shown, or a
#: p-value the table of tests does not hold (rho-star's).
NOT_IN_TABLE = ("selective_risk", "abstention_rate", "delta_mem_p_value")
#: The metrics reported with a bootstrap interval.
WITH_INTERVAL = ("coverage", "accuracy", "reliance", "delta_mem", "hit_rate",
                 "false_alarm_rate", "hit_minus_fa", "d_prime", "judge_score",
                 "judge_score_norm", "influence", "influence_percent")


#: First characters that make a spreadsheet read a cell as a formula (and tab and carriage
#: return, which some read past before looking).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class PlainTable(Table):
    """A rich table whose cells are plain text: a value from a spec or a response (``[red]``,
    ``[link=…]``) is shown as it is, never read as markup, and its control characters are
    shown as escapes, never sent to the terminal."""

    def add_row(self, *cells: Any, **options: Any) -> None:  # type: ignore[override]
        super().add_row(*(Text(printable(c)) if isinstance(c, str) else c for c in cells),
                        **options)


def fitted(table: Table, console: Console) -> RenderableType:
    """``table`` as it is where its cells fit whole in the console's width; else one block a
    row, the first cell as its heading and each other cell beside its column's name, wrapped
    under itself, so that no value is cut short (rich would otherwise narrow every column to
    a few letters and an ellipsis). Print it with ``soft_wrap=False``, so that it wraps."""
    # Measured as if the console had no edge: measured within it, a table always fits.
    unbounded = console.options.update_width(10_000)
    if Measurement.get(console, unbounded, table).maximum <= console.width:
        return table
    names = [_plain(column.header) for column in table.columns]
    columns = [[_plain(cell) for cell in column.cells] for column in table.columns]
    parts: list[RenderableType] = [Text(_plain(heading) + "\n") for heading in
                                   (table.title, table.caption) if heading]
    for index in range(table.row_count):
        block = Table.grid(padding=(0, 2))
        block.add_column(no_wrap=True)
        block.add_column(overflow="fold")
        for name, cells in zip(names[1:], columns[1:], strict=True):
            block.add_row(Text(name), Text(cells[index]))
        parts += [Text(f"{names[0]}: {columns[0][index]}", overflow="fold"),
                  Padding(block, (0, 0, 1, 2), expand=False)]
    return Group(*parts)


def _plain(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet shows rather than runs: text starting with
    ``= + - @`` (a formula) gets a leading apostrophe, as spreadsheet tools expect."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def parts(report: dict[str, Any]) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """The single reports a report is made of, each with the key that tells it apart: the
    report itself, or each run of a comparison of several, keyed by its model."""
    if "models" in report:
        return [({"model": entry["model"]}, entry) for entry in report["models"]]
    return [({}, report)]


def _rows(report: dict[str, Any]) -> list[tuple[dict[str, str], dict[str, Any]]]:
    return [row for prefix, part in parts(report)
            for row in [(prefix, part["overall"])]
            + [({**prefix, **g["key"]}, g["metrics"]) for g in part["groups"]]]


#: Baselines a score report's rows carry beside their scores (``convention``: what a system
#: knowing each dataset's answer form, and nothing of the user's sessions, scores on the row).
BASELINE_COLUMNS = ("convention",)


#: Counts a report has where some instance declares the reading stage (after ``missing`` in
#: the table; in JSON, not in the CSV, whose header is one for every run).
READING_COLUMNS = ("unscorable", "to_judge")


def _present(report: dict[str, Any]) -> list[str]:
    # A metric some row computes, even where it is undefined in every row (an abstainer's
    # accuracy): the column shows "–" rather than vanish.
    shown = (*COLUMNS[:3], *READING_COLUMNS, *COLUMNS[3:], *BASELINE_COLUMNS)
    return [c for c in shown if any(c in m for _, m in _rows(report))]


def format_value(value: Any, missing: str = "-") -> str:
    """A cell: ``missing`` for none, three decimals for a float."""
    if value is None:
        return missing
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def format_p(value: float | None, missing: str = "-") -> str:
    """A p-value to three significant digits, ``missing`` for none."""
    return missing if value is None else f"{value:.3g}"


#: What a score table shows for a metric with no item to measure it on (not 0).
UNDEFINED = "–"


def as_table(report: dict[str, Any]) -> Table:
    columns = [c for c in _present(report) if c not in NOT_IN_TABLE]
    table = PlainTable("group", *columns)
    for key, m in _rows(report):
        label = ", ".join(f"{k}={v}" for k, v in key.items()) or "overall"
        cells = []
        for column in columns:
            text = format_value(m.get(column), UNDEFINED)
            ci = m.get(f"{column}_ci")
            if ci:
                text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
            cells.append(text)
        table.add_row(label, *cells)
    return table


def multiplicity_note(report: dict[str, Any]) -> str:
    """One sentence on which tests were corrected together and whether the Δmem intervals
    are simultaneous."""
    m = report["multiplicity"]
    if m["correction"] == "none":
        tests = "p-values are not corrected for multiple tests"
    elif m["scope"] == "report":
        tests = (f"all {m['tests']} tests of this report corrected together "
                 f"({m['correction']})")
    else:
        tests = f"each row's tests corrected on their own ({m['correction']})"
    intervals = m["intervals"]
    if intervals["simultaneous"]:
        spans = (f"the {intervals['count']} Δmem and contrast intervals are simultaneous "
                 f"(each at {intervals['level']:.4g}, Bonferroni)")
    else:
        spans = (f"the Δmem and contrast intervals are {1 - m['alpha']:.0%} each, "
                 "not simultaneous")
    return f"{tests}; {spans}; family-wise α = {m['alpha']:g}."


def _in_clusters(test: dict[str, Any]) -> str:
    return f" in {test['clusters']} clusters" if "clusters" in test else ""


def as_tests_table(report: dict[str, Any]) -> Table | None:
    rows = [(key, t) for key, m in _rows(report) for t in m.get("tests", [])]
    if not rows:
        return None
    correction = report["multiplicity"]["correction"]
    table = PlainTable("group", "test", "detail", "p", f"p ({correction})",
                       caption=multiplicity_note(report))
    for key, test in rows:
        label = ", ".join(f"{k}={v}" for k, v in key.items()) or "overall"
        if test["test"] == "mcnemar_exact":
            detail = (f"{test['axis']}: {test['a']} vs {test['b']}, {test['pairs']} pairs, "
                      f"discordant {test['only_a']}/{test['only_b']}")
        else:
            # Which arm the count is of: without it, one arm's 0/48 and another's 48/48
            # read alike.
            arm = ", ".join(f"{k}={v}" for k, v in sorted(test.get("arm", {}).items()))
            detail = (f"{arm + ': ' if arm else ''}mean "
                      f"{format_value(test['mean'], UNDEFINED)} over "
                      f"{test['groups']} groups{_in_clusters(test)}"
                      f" ({test['items']} items) vs chance "
                      f"{test['chance']:.3f}")
            if test.get("controls_apart"):
                detail += f"; positive controls apart: {', '.join(test['controls_apart'])}"
        table.add_row(label, test["test"], detail, format_p(test["p_value"], UNDEFINED),
                      format_p(test["p_adjusted"], UNDEFINED))
    return table


def as_contrasts_table(report: dict[str, Any]) -> Table | None:
    """Declared and derived contrasts and factorial effects, one a row: the run's, then each
    row's own, named with the row's key in brackets."""
    contrasts = []
    for prefix, part in parts(report):
        run = ", ".join(f"{k}={v}" for k, v in prefix.items())
        contrasts += [{**c, "name": f"{c['name']} [{run}]" if run else c["name"]}
                      for c in part.get("contrasts") or []]
        for group in part["groups"]:
            label = ", ".join(f"{k}={v}" for k, v in {**prefix, **group["key"]}.items())
            contrasts += [{**c, "name": f"{c['name']} [{label}]"}
                          for c in group["metrics"].get("contrasts") or []]
    if not contrasts:
        return None
    correction = report["multiplicity"]["correction"]
    table = PlainTable("contrast", "kind", "metric", "groups", "estimate", "p",
                       f"p ({correction})", caption=multiplicity_note(report))
    for c in contrasts:
        estimate = format_value(c["estimate"], UNDEFINED)
        if c["ci"]:
            estimate += f" [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}]"
        table.add_row(c["name"], c["kind"], c["metric"], str(c["groups"]), estimate,
                      format_p(c["p_value"], UNDEFINED), format_p(c["p_adjusted"], UNDEFINED))
    return table


def as_run_table(report: dict[str, Any]) -> Table | None:
    """For runs read from inspect logs: each model's samples, those of the release it did
    not run, and those with no response by kind (errors, timeouts, truncated and refused
    outputs, other limits), which are scored as unanswered, never as wrong."""
    runs = [(prefix, part["run"]) for prefix, part in parts(report) if "run" in part]
    if not runs:
        return None
    kinds = list(runs[0][1]["issues"])
    table = PlainTable("model", "samples", "not run", *kinds,
                       caption="samples with no response are scored as unanswered")
    for _, run in runs:
        table.add_row(run["model"], str(run["samples"]), str(run["not_run"]),
                      *(str(run["issues"][kind]) for kind in kinds))
    return table


def as_summaries_table(report: dict[str, Any]) -> Table | None:
    """Declared headline scores: each part's percentage and their mean."""
    summaries = [(prefix, s) for prefix, run in parts(report)
                 for s in run.get("summaries") or []]
    if not summaries:
        return None
    table = PlainTable("summary", "part", "metric", "percent")
    for prefix, summary in summaries:
        name = " ".join([*(f"{k}={v}" for k, v in prefix.items()), summary["name"]])
        for value, part in summary["parts"].items():
            table.add_row(name, f"{summary['over']}={value}", part["metric"],
                          format_value(part["percent"], UNDEFINED))
        table.add_row(name, "(mean of the parts)", "",
                      format_value(summary["score"], UNDEFINED))
    return table


def as_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, allow_nan=False)


def _extra_cells(report: dict[str, Any]) -> list[tuple[dict[str, str], str, Any]]:
    """(row key, column, value) of what a release declares beyond the fixed metrics: each
    contrast (the run's on the overall row, each row's own on it) with its interval and
    adjusted p-value, each declared outcome's rate and interval, and each judge-panel
    difference on the row of its family and keys."""
    cells: list[tuple[dict[str, str], str, Any]] = []

    def add(key: dict[str, str], column: str, value: Any, ci: Any,
            *p_adjusted: float | None) -> None:
        low, high = ci if ci else (None, None)
        cells.extend([(key, column, value), (key, f"{column}_ci_low", low),
                      (key, f"{column}_ci_high", high)])
        cells.extend((key, f"{column}_p_adjusted", p) for p in p_adjusted)

    for prefix, run in parts(report):
        if "run" in run:  # read from inspect logs: the samples with no response, by kind
            cells += [(prefix, f"run: {kind}", count) for kind, count in
                      [("not_run", run["run"]["not_run"]), *run["run"]["issues"].items()]]
        rows = [(prefix, run["overall"], run.get("contrasts") or [])]
        rows += [({**prefix, **g["key"]}, g["metrics"], g["metrics"].get("contrasts") or [])
                 for g in run["groups"]]
        for key, metrics, contrasts in rows:
            for c in contrasts:
                add(key, f"contrast: {c['name']}", c["estimate"], c["ci"], c["p_adjusted"])
            for name, found in sorted((metrics.get("outcomes") or {}).items()):
                add(key, f"outcome: {name}", found["rate"], found["ci"])
        for entry in run.get("judge_panel") or []:
            where = {**entry["key"], "family": entry["family"]}
            # The row of the entry's family and keys where the report has one, else the
            # overall row.
            row = next(({**prefix, **g["key"]} for g in run["groups"]
                        if all(where.get(k) == v for k, v in g["key"].items())), prefix)
            add(row, f"panel: {entry['family']}: {entry['condition']} - {entry['anchor']}",
                entry["difference"], entry["difference_ci"], entry["p_adjusted"])
    return cells


def as_csv(report: dict[str, Any]) -> str:
    """The report as CSV: a row per group, and every metric's column whether or not any
    group has a value for it, so that files of different runs share one header; then a
    column for each contrast, declared outcome and judge-panel difference the run has."""
    keys = sorted({k for _, run in parts(report) for g in run["groups"] for k in g["key"]})
    if "models" in report:
        keys = ["model", *keys]
    columns = (*COLUMNS, *[c for c in BASELINE_COLUMNS if any(c in m for _, m in _rows(report))])
    header = [*keys]
    for column in columns:
        header.append(column)
        if column in WITH_INTERVAL:
            header += [f"{column}_ci_low", f"{column}_ci_high"]
    extras = _extra_cells(report)
    extra_columns = list(dict.fromkeys(column for _, column, _ in extras))
    values = {(tuple(sorted(key.items())), column): value for key, column, value in extras}
    header += extra_columns
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([csv_cell(name) for name in header])
    for key, m in _rows(report):
        # A run's overall row: "(all)" under every key but the run's own.
        row: list[Any] = [key.get(k, "(all)" if set(key) <= {"model"} else "") for k in keys]
        for column in columns:
            row.append(m.get(column))
            if f"{column}_ci_low" in header:
                ci = m.get(f"{column}_ci") or [None, None]
                row += ci
        row += [values.get((tuple(sorted(key.items())), column)) for column in extra_columns]
        writer.writerow(["" if v is None else csv_cell(v) for v in row])
    return buffer.getvalue()


def audit_strength(row: Any) -> tuple[bool, float, float]:
    """Sort key of an adversary's row: failures first, then by p after Holm (the strongest
    first), then by how far above chance it was right."""
    margin = (row.accuracy or 0.0) - row.chance
    return (not row.failed, row.p_holm if row.p_holm is not None else 1.0, -margin)


def audit_verdict(row: Any) -> tuple[str, str]:
    """What a row's result says, and its class: a near miss beats chance at the audit's level
    before Holm's correction, though not after."""
    from ..audit.run import ALPHA  # the audit's own level; imported only when an audit is shown

    if row.failed:
        return "FAIL", "fail"
    if row.p_value is not None and row.p_value < ALPHA and (row.accuracy or 0) > row.chance:
        return f"near miss (p {format_p(row.p_value)} before Holm)", "near"
    return "ok", "ok"


def audit_table(report: Any) -> Table:
    """The audit as a table: one row per adversary and family, the strongest first."""
    table = PlainTable("check", "family", "hits", "accuracy", "chance", "p", "p (Holm)", "result")
    for row in sorted(report.rows, key=audit_strength):
        table.add_row(row.check, row.unit, f"{row.hits}/{row.trials}", format_value(row.accuracy),
                      format_value(row.chance), format_p(row.p_value), format_p(row.p_holm),
                      audit_verdict(row)[0])
    for family in report.skipped:
        table.add_row("(no memory-only choice items)", family, "-", "-", "-", "-", "-", "skipped")
    # An adversary that could not run here is a row too: left out, a reader would take the
    # audit for complete.
    for adversary in report.unavailable:
        name = adversary.split(" (", 1)[0]
        table.add_row(name, "(every family)", "-", "-", "-", "-", "-", "not run")
    return table


def findings_table(report: Any) -> Table:
    """The exact audits as a table: one row per check and family."""
    table = PlainTable("check", "family", "measured", "result", "detail")
    for f in report.findings:
        table.add_row(f.check, f.family, f.measured, "ok" if f.passed else "FAIL", f.detail)
    return table


def conventions_table(report: Any) -> Table | None:
    """Each dataset's convention baseline (``report.conventions``), None if it has none: the
    score of a system that knows the dataset's answer form and nothing of the user's
    sessions, against which a memory system's score on the dataset is read."""
    if not report.conventions:
        return None
    table = PlainTable("dataset", "convention baseline")
    for family, score in sorted(report.conventions.items()):
        table.add_row(family, format_value(score))
    return table

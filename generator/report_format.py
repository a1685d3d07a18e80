"""Score reports as a table, JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rich.table import Table
from rich.text import Text

from .errors import printable

#: Metrics shown as columns, with their interval where they have one.
COLUMNS = ("n", "answered", "missing", "accuracy", "accuracy_answered", "abstention_rate",
           "reliance", "delta_mem", "judge_score", "judge_score_norm", "influence")
#: The metrics reported with a bootstrap interval.
WITH_INTERVAL = ("accuracy", "reliance", "delta_mem", "judge_score", "judge_score_norm",
                 "influence")


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


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet shows rather than runs: text starting with
    ``= + - @`` (a formula) gets a leading apostrophe, as spreadsheet tools expect."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def _rows(report: dict[str, Any]) -> list[tuple[dict[str, str], dict[str, Any]]]:
    return [({}, report["overall"])] + [(g["key"], g["metrics"]) for g in report["groups"]]


def _present(report: dict[str, Any]) -> list[str]:
    return [c for c in COLUMNS if any(m.get(c) is not None for _, m in _rows(report))]


def format_value(value: Any) -> str:
    """A cell: '-' for none, three decimals for a float."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def format_p(value: float | None) -> str:
    """A p-value to three significant digits, '-' for none."""
    return "-" if value is None else f"{value:.3g}"


def as_table(report: dict[str, Any]) -> Table:
    columns = _present(report)
    table = PlainTable("group", *columns)
    for key, m in _rows(report):
        label = ", ".join(f"{k}={v}" for k, v in key.items()) or "overall"
        cells = []
        for column in columns:
            text = format_value(m.get(column))
            ci = m.get(f"{column}_ci")
            if ci:
                text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
            cells.append(text)
        table.add_row(label, *cells)
    return table


def as_tests_table(report: dict[str, Any]) -> Table | None:
    rows = [(key, t) for key, m in _rows(report) for t in m.get("tests", [])]
    if not rows:
        return None
    table = PlainTable("group", "test", "detail", "p", "p (Holm)")
    for key, test in rows:
        label = ", ".join(f"{k}={v}" for k, v in key.items()) or "overall"
        if test["test"] == "mcnemar_exact":
            detail = (f"{test['axis']}: {test['a']} vs {test['b']}, {test['pairs']} pairs, "
                      f"discordant {test['only_a']}/{test['only_b']}")
        else:
            # Which arm the count is of: without it, one arm's 0/48 and another's 48/48
            # read alike.
            arm = ", ".join(f"{k}={v}" for k, v in sorted(test.get("arm", {}).items()))
            detail = (f"{arm + ': ' if arm else ''}{test['successes']}/{test['trials']} "
                      f"vs chance {test['chance']:.3f}")
        table.add_row(label, test["test"], detail, format_p(test["p_value"]),
                      format_p(test["p_holm"]))
    return table


def as_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, allow_nan=False)


def as_csv(report: dict[str, Any]) -> str:
    """The report as CSV: a row per group, and every metric's column whether or not any
    group has a value for it, so that files of different runs share one header."""
    keys = sorted({k for g in report["groups"] for k in g["key"]})
    columns = COLUMNS
    header = [*keys]
    for column in columns:
        header.append(column)
        if column in WITH_INTERVAL:
            header += [f"{column}_ci_low", f"{column}_ci_high"]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([csv_cell(name) for name in header])
    for key, m in _rows(report):
        row: list[Any] = [key.get(k, "(all)" if not key else "") for k in keys]
        for column in columns:
            row.append(m.get(column))
            if f"{column}_ci_low" in header:
                ci = m.get(f"{column}_ci") or [None, None]
                row += ci
        writer.writerow(["" if v is None else csv_cell(v) for v in row])
    return buffer.getvalue()


def audit_table(report: Any) -> Table:
    """The audit as a table: one row per adversary and family."""
    table = PlainTable("check", "family", "hits", "accuracy", "chance", "p", "p (Holm)", "result")
    for row in report.rows:
        table.add_row(row.check, row.family, f"{row.hits}/{row.trials}", format_value(row.accuracy),
                      format_value(row.chance), format_p(row.p_value), format_p(row.p_holm),
                      "FAIL" if row.failed else "ok")
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

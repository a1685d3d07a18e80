"""A score report (one run's, or several runs' side by side) as one self-contained HTML page:
the tables ``memspec score`` prints, each as an HTML table."""

from __future__ import annotations

from html import escape
from typing import Any

from rich.table import Table

from ..release.html_page import page, table
from .panel_format import as_panel_table
from .report_format import (
    as_contrasts_table,
    as_run_table,
    as_summaries_table,
    as_table,
    as_tests_table,
    multiplicity_note,
)

#: The page's sections: a heading and the table each shows (left out where it has none).
SECTIONS = (("Scores", as_table), ("Runs", as_run_table), ("Tests", as_tests_table),
            ("Contrasts", as_contrasts_table), ("Headline scores", as_summaries_table),
            ("Judge panel", as_panel_table))


def _cell(value: Any) -> str:
    return value.plain if hasattr(value, "plain") else str(value)


def html_table(shown: Table) -> str:
    """A rich table of a score report as an HTML table, with its caption as a note."""
    header = [_cell(column.header) for column in shown.columns]
    rows = [[_cell(column._cells[row]) for column in shown.columns]
            for row in range(shown.row_count)]
    caption = f'<p class="note">{escape(_cell(shown.caption))}</p>' if shown.caption else ""
    return table(header, rows) + caption


def render_scores(report: dict[str, Any], title: str) -> str:
    """The page of a score report: every table of it, then how its tests and intervals were
    corrected."""
    body = []
    for heading, make in SECTIONS:
        shown = make(report)
        if shown is not None:
            body += [f"<h2>{escape(heading)}</h2>", html_table(shown)]
    body.append(f'<p class="note">{escape(multiplicity_note(report))}</p>')
    return page(title, body)

"""The judge panel's section of a score report as a terminal table."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from .report_format import UNDEFINED, PlainTable, format_p, format_value


def _with_interval(value: float | None, interval: list[float] | None) -> str:
    text = format_value(value, UNDEFINED)
    if interval is not None:
        text += f" [{interval[0]:.3f}, {interval[1]:.3f}]"
    return text


def as_panel_table(report: dict[str, Any]) -> Table | None:
    """One row per condition judged beside its anchor: the judge means, the anchored
    difference with its 95% interval and tests, and the equivalence test where declared."""
    entries = report.get("judge_panel") or []
    if not entries:
        return None
    table = PlainTable("family", "condition", "groups", "judge mean", "anchor mean",
                       "difference", "p (Holm)", "equivalence (TOST)",
                       title="Judge panel: each condition beside its anchor")
    for entry in entries:
        where = "".join(f" {k}={v}" for k, v in entry["key"].items())
        equivalence = entry.get("equivalence")
        if equivalence is None:
            verdict = UNDEFINED
        else:
            ci = equivalence["ci"]
            bounds = f"±{equivalence['bound']:g}"
            interval = UNDEFINED if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
            verdict = (f"{'equivalent' if equivalence['equivalent'] else 'not shown'} "
                       f"within {bounds}: {1 - 2 * equivalence['alpha']:.0%} CI {interval}, "
                       f"p {format_p(equivalence['p_value'])}")
        table.add_row(entry["family"] + where, f"{entry['condition']} - {entry['anchor']}",
                      str(entry["groups"]),
                      _with_interval(entry["judge_mean"], entry["judge_mean_ci"]),
                      _with_interval(entry["anchor_mean"], entry["anchor_mean_ci"]),
                      _with_interval(entry["difference"], entry["difference_ci"]),
                      f"{format_p(entry['p_value'])} ({format_p(entry['p_adjusted'])})",
                      verdict)
    return table

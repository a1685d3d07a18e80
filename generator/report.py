"""``memspec report``: one self-contained HTML page about a built release."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from .audit import FROZEN_AUDIT_NOTE, AuditReport
from .html_page import instance_html, page, table
from .release_stats import ReleaseStats
from .report_format import format_p, format_value

#: At most this many variants of a family's example group are shown (the rest are counted).
SHOWN_VARIANTS = 12


def _counts_section(manifest: Mapping[str, Any]) -> list[str]:
    families = manifest["counts"]["families"]
    rows = []
    for family, info in families.items():
        splits = ", ".join(f"{k}: {v}" for k, v in info.get("splits", {}).items())
        rows.append([family, info["paradigm"], info["version"], info["groups"],
                     info["instances"], splits or "-"])
    return ["<h2>Counts</h2>",
            f"<p>{manifest['counts']['instances']} instances in {manifest['counts']['groups']} "
            f"groups, {len(families)} families; seed <code>{manifest['seed']}</code>; data root "
            f"hash <code>{escape(manifest['root_sha256'])}</code>.</p>",
            table(["family", "paradigm", "version", "groups", "instances", "splits"], rows)]


def _charts_section(stats: ReleaseStats) -> list[str]:
    charts = stats.charts()
    balance = [svg for name, svg in charts.items() if not name.startswith("tokens_")]
    lengths = [svg for name, svg in charts.items() if name.startswith("tokens_")]
    return ["<h2>Balance</h2>",
            '<div class="charts">' + ("".join(balance) or
                                      '<p class="note">No choice items that need memory.</p>')
            + "</div>",
            "<h2>Lengths per phase</h2>", f'<div class="charts">{"".join(lengths)}</div>']


def _audit_section(report: AuditReport) -> list[str]:
    verdict = ('<span class="ok">passed</span>' if report.ok
               else '<span class="fail">FAILED</span>')
    rows, classes = [], []
    for r in report.rows:
        rows.append([r.check, r.family, f"{r.hits}/{r.trials}", format_value(r.accuracy),
                     format_value(r.chance), format_p(r.p_value), format_p(r.p_holm),
                     "FAIL" if r.failed else "ok"])
        classes.append([""] * 7 + ["fail" if r.failed else "ok"])
    findings, finding_classes = [], []
    for f in report.findings:
        findings.append([f.check, f.family, f.measured, "ok" if f.passed else "FAIL", f.detail])
        finding_classes.append(["", "", "", "ok" if f.passed else "fail", ""])
    notes = []
    if report.skipped:
        notes.append("No memory-only choice items (no adversary applies): "
                     + ", ".join(report.skipped) + ".")
    if report.unavailable:
        notes.append("Adversaries that could not run here: "
                     + ", ".join(report.unavailable) + ".")
    if report.specs_skipped:
        notes.append(f"Spec audits skipped: {report.specs_skipped}.")
    if report.frozen_differences:
        notes.append("This audit differs from the one frozen with the release: "
                     + "; ".join(report.frozen_differences) + f" ({FROZEN_AUDIT_NOTE}).")
    return ["<h2>Audit</h2>", f"<p>The audit {verdict}.</p>",
            *(f'<p class="note">{escape(n)}</p>' for n in notes),
            "<h3>Memoryless adversaries</h3>",
            table(["adversary", "family", "hits", "accuracy", "chance", "p", "p (Holm)",
                   "result"], rows, classes) if rows else '<p class="note">None ran.</p>',
            "<h3>Balance, leakage and counterfeits</h3>",
            table(["check", "family", "measured", "result", "detail"], findings,
                  finding_classes)]


def _examples_section(instances: Sequence[Mapping[str, Any]]) -> list[str]:
    first: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for instance in instances:
        group = first[instance["family"]]
        if not group or group[0]["group"] == instance["group"]:
            group.append(instance)
    parts = ["<h2>An example group per family</h2>",
             '<p class="note">The first group of each family, every variant side by side; '
             "what differs from the first variant is marked.</p>"]
    for family, group in sorted(first.items()):
        shown = group[:SHOWN_VARIANTS]
        more = (f" (showing {len(shown)} of {len(group)} variants)"
                if len(group) > len(shown) else "")
        parts += [f'<section class="family" data-family="{escape(family)}">',
                  f"<h3><code>{escape(family)}</code>, group {group[0]['group']}"
                  f"{escape(more)}</h3>",
                  '<div class="variants">',
                  *(instance_html(i, None if k == 0 else shown[0])
                    for k, i in enumerate(shown)),
                  "</div>", "</section>"]
    return parts


def render_report(manifest: Mapping[str, Any], instances: Sequence[Mapping[str, Any]],
                  report: AuditReport) -> str:
    """The report page of a release: counts, balance and length charts, the audit, and an
    example group per family."""
    title = f"{manifest['release']}-{manifest['version']}"
    return page(f"Release report: {title}", [
        *_counts_section(manifest),
        *_charts_section(ReleaseStats.of(instances)),
        *_audit_section(report),
        *_examples_section(instances),
    ])

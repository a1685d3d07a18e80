"""``memspec report``: one self-contained HTML page about a built release."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..audit.run import FROZEN_AUDIT_NOTE, AuditReport
from ..engine.checks import messages_tokens
from ..release.arm_charts import arm_chart, compare_arms
from ..release.html_page import breakable, page, table, variants_html
from ..release.release_stats import ReleaseStats
from .report_format import audit_strength, audit_verdict, format_p, format_value

#: At most this many variants of a family's example group are shown (the rest are counted).
SHOWN_VARIANTS = 12
#: The report's sections: their anchors and headings, in order (the table of contents).
SECTIONS = (("counts", "Counts"), ("balance", "Balance"), ("lengths", "Lengths"),
            ("arms", "Paired arms"), ("audit", "Audit"),
            ("examples", "An example group per family"))


#: The section shown open: the summary; the others fold, closed until a reader opens one.
OPEN_SECTION = "counts"


def _section(anchor: str, parts: Sequence[str]) -> list[str]:
    """A section that folds (``details``): its heading always shown, open only for the
    summary. A link to an anchor inside a closed section opens it (the browser does)."""
    opened = " open" if anchor == OPEN_SECTION else ""
    return [f'<details class="section" id="{anchor}"{opened}><summary><h2>'
            f"{escape(dict(SECTIONS)[anchor])}</h2></summary>", *parts, "</details>"]


def family_anchor(family: str) -> str:
    """The anchor of a family's example group."""
    return f"family-{family}"


def _contents(families: Sequence[str]) -> list[str]:
    """The contents list, which stays in view beside the page (above it on a narrow
    window): every section, and under the examples every family."""
    items = []
    for anchor, title in SECTIONS:
        items.append(f'<li><a href="#{anchor}">{escape(title)}</a>')
        if anchor == "examples" and families:
            items += ['<ol class="families">',
                      *(f'<li><a href="#{escape(family_anchor(f))}">{breakable(f)}</a></li>'
                        for f in families), "</ol>"]
        items.append("</li>")
    return ['<nav class="contents"><b>Contents</b><ol>', *items, "</ol></nav>"]


def _counts_section(manifest: Mapping[str, Any]) -> list[str]:
    families = manifest["counts"]["families"]
    rows = []
    for family, info in families.items():
        splits = ", ".join(f"{k}: {v}" for k, v in info.get("splits", {}).items())
        rows.append([family, info["paradigm"], info["version"], info["groups"],
                     info["instances"], splits or "-"])
    return [f"<p>{manifest['counts']['instances']} instances in {manifest['counts']['groups']} "
            f"groups, {len(families)} families; seed <code>{manifest['seed']}</code>; data root "
            f"hash <code>{escape(manifest['root_sha256'])}</code>.</p>",
            table(["family", "paradigm", "version", "groups", "instances", "splits"], rows)]


def _charts_sections(stats: ReleaseStats) -> tuple[list[str], list[str]]:
    """The balance section's charts, and the pooled length charts that open the lengths
    section."""
    charts = stats.charts(letters=True)
    balance = [svg for name, svg in charts.items() if not name.startswith("tokens_")]
    lengths = [svg for name, svg in charts.items() if name.startswith("tokens_")]
    return ([
        '<p class="note">What the chart counts: for each family, its choice items that '
        "need memory (those that declare no evidence), by the position of the right "
        "option as the options are shown (A is the first). Segments of equal length mean "
        "no position is favoured.</p>" if balance else "",
        '<div class="charts">' + ("".join(balance) or
                                  '<p class="note">No choice items that need memory.</p>')
        + "</div>"], [
        '<p class="note">What the charts count: instances (every variant of every group, '
        "all families together) by the approximate number of tokens in one phase. The "
        "table after them gives each family's own lengths.</p>",
        f'<div class="charts">{"".join(lengths)}</div>'])


def _lengths_by_family(instances: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each family's phases: how many instances have the phase, and the least, median and
    most approximate tokens it takes (pooled histograms hide a family that differs)."""
    lengths: dict[tuple[str, str], list[int]] = defaultdict(list)
    for instance in instances:
        for phase in instance["phases"]:
            if phase["messages"]:
                lengths[instance["family"], phase["phase"]].append(
                    messages_tokens(phase["messages"]))
    rows = []
    for (family, phase), values in sorted(lengths.items()):
        values.sort()
        middle = len(values) // 2
        median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
        rows.append([family, phase, len(values), values[0], f"{median:g}", values[-1]])
    return ["<h3>Lengths per family</h3>",
            table(["family", "phase", "instances", "least tokens", "median tokens",
                   "most tokens"], rows)]


def _arms_section(instances: Sequence[Mapping[str, Any]]) -> list[str]:
    """A chart per declared pair of arms of each family (``arm_charts``)."""
    charts = [arm_chart(c) for c in compare_arms(instances)]
    return ['<p class="note">What the paired-arm charts count: for each family that declares '
            "two arms to compare, each phase's approximate tokens in either arm, at each level "
            "of its other axes. The group is the unit: a group's variants in an arm are "
            "averaged, then the groups. After the bars: in how many groups the phase is the "
            "same text in both arms (a paired design differs only where its manipulation "
            "is).</p>",
            f'<div class="charts">{"".join(charts)}</div>' if charts else
            '<p class="note">No family of this release declares paired arms.</p>']


def _audit_section(report: AuditReport) -> list[str]:
    verdict = ('<span class="ok">passed</span>' if report.ok
               else '<span class="fail">FAILED</span>')
    rows, classes = [], []
    for r in sorted(report.rows, key=audit_strength):
        result, css = audit_verdict(r)
        rows.append([r.check, r.unit, f"{r.hits}/{r.trials}", format_value(r.accuracy),
                     format_value(r.chance), format_p(r.p_value), format_p(r.p_holm), result])
        classes.append([""] * 7 + [css])
    findings, finding_classes = [], []
    for f in report.findings:
        findings.append([f.check, f.family, f.measured, "ok" if f.passed else "FAIL", f.detail])
        finding_classes.append(["", "", "", "ok" if f.passed else "fail", ""])
    notes = []
    if report.skipped:
        notes.append("No item an adversary can score (not a pass: see coverage below): "
                     + ", ".join(report.skipped) + ".")
    notes += [f"Not attacked on {family}: {why}." for family, why in
              sorted(report.unattacked.items())]
    if report.unavailable:
        notes.append("Adversaries that could not run here: "
                     + ", ".join(report.unavailable) + ".")
    if report.specs_skipped:
        notes.append(f"Spec audits skipped: {report.specs_skipped}.")
    if report.frozen_differences:
        notes.append("This audit differs from the one frozen with the release: "
                     + "; ".join(report.frozen_differences) + f" ({FROZEN_AUDIT_NOTE}).")
    near = sum(audit_verdict(r)[1] == "near" for r in report.rows)
    return [f"<p>The audit {verdict}.</p>",
            *(f'<p class="note">{escape(n)}</p>' for n in notes),
            "<h3>Memoryless adversaries</h3>",
            '<p class="note">Each row: one adversary (a policy without memory) on one family, '
            "how often it was right, against the chance rate. Sorted from the strongest "
            "(failures, then the smallest p after Holm's correction). A near miss beats "
            "chance before the correction but not after: it passes, and is worth a look"
            f"{f' ({near} here)' if near else ' (none here)'}.</p>",
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
    parts = ['<p class="note">The first group of each family, its variants in a grid (a row '
             "per value of the first axis where there are two axes or more); what differs "
             "from the first variant is marked.</p>"]
    for family, group in sorted(first.items()):
        shown = group[:SHOWN_VARIANTS]
        more = (f" (showing {len(shown)} of {len(group)} variants)"
                if len(group) > len(shown) else "")
        parts += [f'<section class="family" id="{escape(family_anchor(family))}" '
                  f'data-family="{escape(family)}">',
                  f"<h3><code>{escape(family)}</code>, group {group[0]['group']}"
                  f"{escape(more)}</h3>", variants_html(shown), "</section>"]
    return parts


def render_report(manifest: Mapping[str, Any], instances: Sequence[Mapping[str, Any]],
                  report: AuditReport) -> str:
    """The report page of a release: counts, balance and length charts, the paired arms side
    by side, the audit, and an example group per family."""
    title = f"{manifest['release']}-{manifest['version']}"
    balance, lengths = _charts_sections(ReleaseStats.of(instances))
    return page(f"Release report: {title}", [
        '<div class="with-contents">',
        *_contents(sorted({i["family"] for i in instances})),
        "<main>",
        *_section("counts", [*_counts_section(manifest), _verdict(report)]),
        *_section("balance", balance),
        *_section("lengths", [*lengths, *_lengths_by_family(instances)]),
        *_section("arms", _arms_section(instances)),
        *_section("audit", _audit_section(report)),
        *_section("examples", _examples_section(instances)),
        "</main></div>",
    ])


def _verdict(report: AuditReport) -> str:
    """The audit's verdict in the summary (its section, folded, says why)."""
    return ('<p>The audit <a href="#audit">' + ('<span class="ok">passed</span>' if report.ok
            else '<span class="fail">FAILED</span>') + "</a>.</p>")

"""What no memoryless adversary of ``memspec audit`` tested: a finding per family that none
covers (failing unless the family declares an exemption), and a note per family on the
judge-scored items the audit cannot attack."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from .audit_report import AuditRow
from .audit_structure import Finding


def coverage_findings(families: Iterable[str], rows: Sequence[AuditRow],
                      findings: Sequence[Finding], exempt: Mapping[str, str]) -> list[Finding]:
    """A finding per family that no adversary tested (no row, no control-arm comparison, and
    not every item answered by evidence it is shown): it fails unless the family declares an
    exemption, with its reason."""
    covered = {r.family for r in rows if r.trials and r.reaches} | {
        f.family for f in findings if f.check == "leakage: control arm"} | {
        f.family for f in findings if f.check == "leakage: evidence shown" and f.passed}
    out = []
    for family in sorted(families):
        if family in covered:
            continue
        reason = exempt.get(family)
        blind = sorted({r.check for r in rows if r.family == family and r.trials})
        what = (f"no adversary can reach the gold ({', '.join(blind)} answered only what no "
                "item accepts)" if blind else "no adversary applies")
        out.append(Finding("coverage: adversaries", family, reason is not None,
                           what + (f"; exempt: {reason}" if reason else ""),
                           "" if reason else "no memoryless adversary can test any item of "
                           "this family" + (f": {', '.join(blind)} answered only what no item "
                                            "accepts" if blind else "") +
                           " (declare audit.exempt with a reason if none should)"))
    return out


def unattacked_items(judged: Mapping[str, Counter[str]], findings: Sequence[Finding]
                ) -> dict[str, str]:
    """Per family holding judge-scored items, which ones no adversary attacked and why, in
    words: no memoryless response to them can be scored without a judge, and the audit
    calls none. What tests them instead (the control arms' theme words), if anything, is
    said too, so that a reader never takes them for items an adversary failed to pass."""
    compared = {f.family for f in findings if f.check == "leakage: control arm"}
    out = {}
    for family, variants in sorted(judged.items()):
        count = sum(variants.values())
        which = ", ".join(f"{variant} ({n})" for variant, n in sorted(variants.items()))
        instead = ("their control arms are checked for the theme's words instead"
                   if family in compared else "nothing else in the audit tests them")
        out[family] = (f"{count} judge-scored items, every group's variants {which}: only a "
                       f"judge can score a response to them and the audit calls none; "
                       f"{instead}")
    return out

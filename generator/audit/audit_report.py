"""The results of ``memspec audit``: a row per adversary and family, the exact audits'
findings, and the summary in words that a manifest records and a card shows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .audit_rules import CURRENT_RULES, RULE_VERSIONS
from .audit_structure import Finding

ALPHA = 0.05
#: The areas of the exact audits, as their checks are named ("balance: cells", ...).
AREAS = ("balance", "leakage", "counterfeit", "declared", "coverage")


@dataclass
class AuditRow:
    """One adversary on one family."""

    check: str
    family: str
    hits: int
    trials: int
    chance: float
    p_value: float | None
    p_holm: float | None = None
    #: What the adversary did to win, on one item it got right (shown when it fails).
    cue: str = ""
    #: Whether its answers could be right at all (a policy answering in a form no item
    #: accepts tests nothing, and covers no family).
    reaches: bool = True
    #: The stratum the row tests ("variant=stale"), empty for the family's own draw.
    stratum: str = ""

    @property
    def unit(self) -> str:
        """The family, with the stratum tested where there is one."""
        return f"{self.family} [{self.stratum}]" if self.stratum else self.family

    @property
    def accuracy(self) -> float | None:
        return self.hits / self.trials if self.trials else None

    @property
    def failed(self) -> bool:
        return self.p_holm is not None and self.p_holm < ALPHA


@dataclass
class AuditReport:
    rows: list[AuditRow] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # exact audits (audit_structure)
    skipped: list[str] = field(default_factory=list)  # no memory-dependent scorable items
    unavailable: list[str] = field(default_factory=list)  # adversaries that could not run
    specs_skipped: str | None = None  # why the spec audits did not run, if they did not
    #: Families no adversary covers that declare why that is sound, with the reason.
    exempt: dict[str, str] = field(default_factory=dict)
    #: Where this audit's summary differs from the one the release's manifest froze.
    frozen_differences: list[str] = field(default_factory=list)
    #: Per family, the items no memoryless adversary could attack and why (judge-scored
    #: items: only a judge scores a response to them, and the audit runs none).
    unattacked: dict[str, str] = field(default_factory=dict)
    #: The rules the audit ran by (``audit_rules``).
    rules: int = CURRENT_RULES
    #: What today's rules changed since those the release was frozen with, where they differ.
    rules_changes: list[str] = field(default_factory=list)
    #: Per dataset (family) of scorable items, its convention baseline: the score of a
    #: system that knows the dataset's answer form from one other item and nothing of the
    #: user's sessions (``audit_convention``).
    conventions: dict[str, float] = field(default_factory=dict)
    #: Run ``--as-frozen``: whether it reproduced the verdicts frozen in the manifest, and
    #: where not, which (``audit_frozen.as_frozen_notes``).
    as_frozen: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(row.failed for row in self.rows) and \
            all(f.passed for f in self.findings)

    def failures(self) -> list[dict[str, Any]]:
        """What failed, as plain data (what a manifest records when failures are allowed)."""
        return [{"check": r.check, "family": r.unit, "hits": r.hits, "trials": r.trials,
                 "chance": r.chance, "p_holm": r.p_holm, **({"cue": r.cue} if r.cue else {})}
                for r in self.rows if r.failed] + \
            [{"check": f.check, "family": f.family, "detail": f.detail}
             for f in self.findings if not f.passed]

    def summary(self) -> list[dict[str, Any]]:
        """One row per family, in words: the strongest adversary, and each area of the exact
        audits ("ok", "FAIL: <check>" or "-" where nothing applies). What a card shows."""
        families = sorted({r.family for r in self.rows} | {f.family for f in self.findings}
                          | set(self.skipped))
        rows = []
        for family in families:
            mine = [r for r in self.rows if r.family == family]
            drawn = [r for r in mine if not r.stratum]
            if drawn:
                # The family's own draw is what the summary shows; its strata count in
                # whether it passed.
                best = max(drawn, key=lambda r: (r.hits / r.trials, r.check))
                adversaries = (f"{len(drawn)} on {best.trials} items; best {best.check} "
                               f"{best.hits}/{best.trials} (chance {best.chance:.3g}, "
                               f"Holm p {best.p_holm:.3g})")
            elif family in self.exempt:
                adversaries = f"none apply; exempt: {self.exempt[family]}"
            elif not RULE_VERSIONS[self.rules].coverage:
                # As the audits before the coverage check wrote it.
                adversaries = "no memory-only choice items"
            else:
                adversaries = self._uncovered(family)
            row: dict[str, Any] = {"family": family, "adversaries": adversaries,
                                   "passed": not any(r.failed for r in mine)}
            for area in AREAS:
                found = [f for f in self.findings
                         if f.family == family and f.check.startswith(area + ":")]
                failed = [f.check for f in found if not f.passed]
                row[area] = ("FAIL: " + ", ".join(failed)) if failed else ("ok" if found else "-")
                row["passed"] = row["passed"] and not failed
            rows.append(row)
        return rows

    def _uncovered(self, family: str) -> str:
        """Why no adversary ran on a family, in words."""
        mine = {f.check: f for f in self.findings if f.family == family}
        if "leakage: control arm" in mine:
            return "none apply: judge-scored pairs (their control arms are compared)"
        evidence = mine.get("leakage: evidence shown")
        if evidence is not None and evidence.passed:
            return "none apply: every item shows the evidence that answers it"
        return "none apply (not covered)"

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "alpha": ALPHA, "skipped": self.skipped,
                "unavailable": self.unavailable, "specs_skipped": self.specs_skipped,
                "exempt": self.exempt, "unattacked": self.unattacked,
                "frozen_differences": self.frozen_differences,
                "rules": self.rules, "rules_changes": self.rules_changes,
                "conventions": self.conventions, "as_frozen": self.as_frozen,
                "rows": [
            {"check": r.check, "family": r.family, "stratum": r.stratum, "hits": r.hits,
             "trials": r.trials, "accuracy": r.accuracy, "chance": r.chance, "p_value": r.p_value,
             "p_holm": r.p_holm, "failed": r.failed, "cue": r.cue} for r in self.rows],
                "findings": [f.to_json() for f in self.findings]}


def describe_failure(failure: Mapping[str, Any]) -> str:
    """One failure (as in ``AuditReport.failures``) in words."""
    if "hits" not in failure:
        return f"audit: {failure['check']} fails on {failure['family']}: {failure['detail']}"
    cue = f"; cue: {failure['cue']}" if failure.get("cue") else ""
    return (f"audit: {failure['check']} beats chance on {failure['family']}: "
            f"{failure['hits']}/{failure['trials']} (chance {failure['chance']:.3g}, "
            f"Holm p = {failure['p_holm']:.3g}){cue}")


def short_quote(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters and quoted (how a cue names what an
    adversary answered)."""
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")

"""Which rules an audit runs by: the audit of today, or the one a release was frozen with.

A release's manifest records the rules its audit ran by (``audit.rules``); a release frozen
before they were recorded ran by the rules of its manifest's version (``frozen_rules``), and
one frozen before the audit existed has no verdict to reproduce. ``memspec audit`` runs
today's rules and says where its verdict differs from the frozen one; ``memspec audit
--as-frozen`` runs the recorded ones and reproduces the verdict the release was frozen with.

The rules are read several calls deep (the view of an item is taken by a dozen functions), so
they are set for the span of one audit in a context variable rather than passed to each.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class AuditRules:
    """What one version of the audit's rules turns on beyond rules 0 (a row of
    ``RULE_VERSIONS``). Code asks ``rules()`` for a named feature rather than comparing
    version numbers, so a new version of the rules is one more row.

    Rules 0 (the audit the releases of manifest versions 2 and 3 were frozen with): only
    choice items that need memory are attacked, by seven option-picking adversaries
    (position prior, majority gold, longest and shortest option, lexical overlap, the probe
    classifier across families, the text encoder); no family must be covered; a control arm
    leaks the theme with two of its words; only a forged variant is a counterfeit. Rules 1
    (manifest versions 4 to 6): every tool result of a memory phase is shown; a declared
    chance is the null of every adversary; evidence counts as shown where its value is
    written; one instance is drawn per group with no regard to arm or variant; no open-item
    policy reads the tool results the view shows.
    """

    version: int
    #: Open items face the memoryless response policies (echoes, the probe copied, the most
    #: common answer, the declared prior...), and declared policies choice items too.
    open_items: bool = False
    #: Option-picking adversaries beyond the first seven: years and numbers, earliest in
    #: context, odd one out, option frequency, the probe classifier within a family.
    more_option_adversaries: bool = False
    #: A family no adversary can test fails unless it declares why (``coverage``).
    coverage: bool = False
    #: One theme word a control arm says on its own is a leak (rules 0: two).
    one_theme_word: bool = False
    #: A variant any transform made (scrambled, substituted ...) is a counterfeit, held to
    #: the counterfeit checks; rules 0 held only those a forging transform made.
    every_transform_counterfeit: bool = False
    #: A tool result a memory phase returns to the remembered session's own call is memory
    #: (only the lookups handed in before its first assistant turn are shown).
    remembered_calls_hidden: bool = False
    #: The design's chance (options, arms) holds every built-in adversary; a declared chance
    #: above it on open items must be reached by a policy reading no memory, and a positive
    #: control must be shown to be one.
    design_chance: bool = False
    #: Evidence must give the right answer through the family's scorer.
    evidence_gives_gold: bool = False
    #: The draw is balanced over each family's strata (arms, else variants), every stratum is
    #: tested on its own; a policy answers with the tool results the view shows, an arm
    #: classifier reads the view, and a word only one arm's items say is looked for.
    stratified: bool = False


_RULES_0 = AuditRules(0)
_RULES_1 = replace(_RULES_0, version=1, open_items=True, more_option_adversaries=True,
                   coverage=True, one_theme_word=True, every_transform_counterfeit=True)
_RULES_2 = replace(_RULES_1, version=2, remembered_calls_hidden=True, design_chance=True,
                   evidence_gives_gold=True, stratified=True)
#: Every version of the rules by its number: each turns on all its predecessor does, and more.
RULE_VERSIONS: Mapping[int, AuditRules] = {r.version: r for r in (_RULES_0, _RULES_1,
                                                                  _RULES_2)}
#: The rules an audit runs by today.
CURRENT_RULES = max(RULE_VERSIONS)
#: The oldest rules this memspec reproduces.
FIRST_RULES = min(RULE_VERSIONS)
#: The rules a release ran by that was frozen before its manifest recorded them, by the
#: first manifest version frozen by them: versions 1 to 3 (the first audit's day), rules 0;
#: from version 4 until the rules were recorded, rules 1.
RULES_FROM_MANIFEST: Mapping[int, int] = {1: 0, 4: 1}


_RULES: ContextVar[AuditRules | None] = ContextVar("audit_rules", default=None)


def rules() -> AuditRules:
    """The rules of the audit now running (today's outside any audit)."""
    return _RULES.get() or RULE_VERSIONS[CURRENT_RULES]


@contextmanager
def running_by(version: int) -> Iterator[AuditRules]:
    """Run what is inside by the rules of ``version``."""
    if version not in RULE_VERSIONS:
        raise ValueError(f"no audit rules {version} (this memspec knows {FIRST_RULES} to "
                         f"{CURRENT_RULES})")
    token = _RULES.set(RULE_VERSIONS[version])
    try:
        yield rules()
    finally:
        _RULES.reset(token)


def frozen_rules(manifest: Mapping[str, Any] | None) -> int:
    """The rules a release's audit ran by when it was frozen: those its manifest records,
    else those of its manifest's version (``RULES_FROM_MANIFEST``; no manifest: the
    first)."""
    manifest = manifest or {}
    recorded = manifest.get("audit", {}).get("rules")
    if recorded is not None:
        return int(recorded)
    layout = int(manifest.get("manifest_version", 1))
    return max(v for first, v in RULES_FROM_MANIFEST.items() if first <= layout)


def audited_at_freeze(manifest: Mapping[str, Any] | None) -> bool:
    """Whether the release's manifest records an audit (one frozen before the audit existed,
    at manifest version 1, records none: there is no verdict to reproduce)."""
    return bool((manifest or {}).get("audit"))


#: What each version of the rules changed, in words an author can act on.
CHANGES: dict[int, tuple[str, ...]] = {
    1: ("open items face memoryless response policies (echoes of an earlier reply or call, "
        "the probe copied, the most common answer, abstaining, the declared prior): a family "
        "whose answer one of them gives beats chance, declare its chance or policy only "
        "where the design fixes it",
        "more option-picking adversaries: years, numbers, earliest in context, odd one out, "
        "option frequency, the probe classifier within a family",
        "a family no adversary can test fails `coverage: adversaries` unless it declares "
        "`audit.exempt` with its reason",
        "one theme word a control arm says on its own is a leak (two before): allow a "
        "coincidental word with `audit.allow_words` and its reason",
        "a variant any transform made (scrambled, substituted) is held to the counterfeit "
        "checks (length, format, shared entities), not only a forged one"),
    2: ("a tool result returned to a call the remembered session made is memory, not "
        "shown (a memory phase's lookups handed in before its first assistant turn still "
        "are), and an open-item policy answers with the tool results that are shown",
        "built-in adversaries are held to the chance the design fixes (options, the larger "
        "arm's share); a declared chance above 0.05 on other open items must be reached by a "
        "policy that reads no memory (a constant answer, the declared default), else "
        "declare a memoryless policy with its `expected` score instead",
        "a family declaring `audit.chance: 1` must declare a memoryless policy that passes "
        "it, and is no longer pooled with its paradigm's other families",
        "declared evidence must give the right answer through the family's scorer",
        "the draw is balanced over each family's arms (else variants), each arm or variant "
        "is tested on its own, arms are told apart by a classifier over the view, and a word "
        "only one arm's items say is looked for"),
}


def rules_changes(frozen: int, now: int) -> list[str]:
    """What the rules ``now`` do that the ``frozen`` ones did not, in words."""
    return [f"audit rules {version}: {change}" for version in range(frozen + 1, now + 1)
            for change in CHANGES.get(version, ())]


def changed_since(earlier: str, manifest: Mapping[str, Any]) -> list[str]:
    """What a refused freeze tells the author where the release's version before
    (``earlier``, its committed ``manifest``) was frozen by older rules: that a family that
    passed then may fail now, and what each later version of the rules changed and asks to
    declare. Empty where it was frozen by today's rules."""
    before = frozen_rules(manifest)
    if before >= CURRENT_RULES:
        return []
    return [f"{earlier} was frozen by the audit's rules {before}; this freeze runs rules "
            f"{CURRENT_RULES}, by which a family that passed then can fail now",
            *rules_changes(before, CURRENT_RULES)]

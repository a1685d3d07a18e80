"""Which rules an audit runs by: the audit of today, or the one a release was frozen with.

A release's manifest records the rules its audit ran by (``audit.rules``; a release frozen
before they were recorded ran by rules 1). ``memspec audit`` runs today's rules and says where
its verdict differs from the frozen one; ``memspec audit --as-frozen`` runs the recorded ones
and reproduces the verdict the release was frozen with.

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
    """What one version of the audit's rules turns on beyond rules 1 (a row of
    ``RULE_VERSIONS``). Code asks ``rules()`` for a named feature rather than comparing
    version numbers, so a new version of the rules is one more row.

    Rules 1: every tool result of a memory phase is shown; a declared chance is the null of
    every adversary; evidence counts as shown where its value is written; one instance is
    drawn per group with no regard to arm or variant; no open-item policy reads the tool
    results the view shows.
    """

    version: int
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


_RULES_1 = AuditRules(1)
_RULES_2 = replace(_RULES_1, version=2, remembered_calls_hidden=True, design_chance=True,
                   evidence_gives_gold=True, stratified=True)
#: Every version of the rules by its number: each turns on all its predecessor does, and more.
RULE_VERSIONS: Mapping[int, AuditRules] = {r.version: r for r in (_RULES_1, _RULES_2)}
#: The rules an audit runs by today.
CURRENT_RULES = max(RULE_VERSIONS)
#: The rules of a release frozen before its manifest recorded them.
FIRST_RULES = min(RULE_VERSIONS)


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
    """The rules a release's audit ran by when it was frozen (``FIRST_RULES`` if its
    manifest records none)."""
    return int((manifest or {}).get("audit", {}).get("rules", FIRST_RULES))


#: What each version of the rules changed, in words an author can act on.
CHANGES: dict[int, tuple[str, ...]] = {
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

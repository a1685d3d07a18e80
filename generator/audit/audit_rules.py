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
from dataclasses import dataclass
from typing import Any

#: The rules an audit runs by today.
CURRENT_RULES = 2
#: The rules of a release frozen before its manifest recorded them.
FIRST_RULES = 1


@dataclass(frozen=True)
class AuditRules:
    """What differs between the versions of the audit's rules.

    Rules 1: every tool result of a memory phase is shown; a declared chance is the null of
    every adversary; evidence counts as shown where its value is written; one instance is
    drawn per group with no regard to arm or variant; no open-item policy reads the tool
    results the view shows.

    Rules 2: a tool result a memory phase returns to the remembered session's own call is
    memory (only the lookups handed in before its first assistant turn are shown); the
    design's chance (options, arms) holds every built-in adversary, a declared
    chance above it on open items must be reached by a policy reading no memory, and a
    positive control must be shown to be one; evidence must give the right answer through
    the family's scorer; the draw is balanced over each family's strata (arms, else
    variants), every stratum is tested on its own; a policy answers with the tool results
    the view shows, an arm classifier reads the view, and a word only one arm's items say is
    looked for.
    """

    version: int

    @property
    def remembered_calls_hidden(self) -> bool:
        return self.version >= 2

    @property
    def design_chance(self) -> bool:
        return self.version >= 2

    @property
    def evidence_gives_gold(self) -> bool:
        return self.version >= 2

    @property
    def stratified(self) -> bool:
        return self.version >= 2


_RULES: ContextVar[AuditRules | None] = ContextVar("audit_rules", default=None)


def rules() -> AuditRules:
    """The rules of the audit now running (today's outside any audit)."""
    return _RULES.get() or AuditRules(CURRENT_RULES)


@contextmanager
def running_by(version: int) -> Iterator[AuditRules]:
    """Run what is inside by the rules of ``version``."""
    if not FIRST_RULES <= version <= CURRENT_RULES:
        raise ValueError(f"no audit rules {version} (this memspec knows {FIRST_RULES} to "
                         f"{CURRENT_RULES})")
    token = _RULES.set(AuditRules(version))
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

"""The memoryless response policies of ``memspec audit``, scored on each family's items with
the family's own scorer: a row per policy and family, tested against the family's chance or
the policy's own expected score."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis.scoring import is_correct
from ..analysis.stats import binomial_test
from .audit_chance import DECLARED_PREFIX, hidden_by_declaration, null_chance
from .audit_report import AuditRow, short_quote
from .audit_responses import (
    RESPONSE_POLICIES,
    ArmResponses,
    FamilyPolicy,
    declared_policies,
    per_item,
    policy_expectation,
)
from .audit_rules import rules
from .audit_view import is_memory_choice
from .audit_view_policies import arm_classifier, echo_tool_result

Item = Mapping[str, Any]


def _family_policies(items: Sequence[Item], arms: ArmResponses
                     ) -> list[tuple[str, FamilyPolicy, float | None]]:
    """Every memoryless response policy that applies to a family, with its expected score
    where it has one of its own (else the family's chance)."""
    family = items[0]["family"]
    policies: list[tuple[str, FamilyPolicy, float | None]] = [
        (name, policy, None) for name, policy in RESPONSE_POLICIES.items()]
    if rules().stratified:
        policies.append(("echo_tool_result", per_item(echo_tool_result), None))
    if arms.shares.get(family):
        policies += [(f"always_{arm}" if arm == "act" else "never_act",
                      per_item(arms.policy(arm)), arms.share(family, arm))
                     for arm in ("act", "dont")]
        if rules().stratified:
            policies.append(("arm_classifier", arm_classifier(arms), None))
    names = sorted({name for i in items for name in declared_policies(i)})
    for name in names:
        expected, memoryless = policy_expectation(items[0], name)
        if memoryless:
            policies.append((f"{DECLARED_PREFIX}{name}", per_item(
                lambda group, item, name=name: declared_policies(item).get(name)), expected))
    return policies


def response_rows(sampled: Mapping[str, Sequence[Item]], arms: ArmResponses,
                  skip: frozenset[str] = frozenset()) -> list[AuditRow]:
    """The memoryless response policies on every family's items, scored with the family's
    own scorer: every policy on its open items, and the declared ones on its choice items
    too (a declared "always answer A" is an adversary like any other; the built-in ones
    have the option-picking adversaries in their place there). A policy that has nothing to
    say to any item is left out, and so is every policy named in ``skip``."""
    rows = []
    for family, every in sorted(sampled.items()):
        for choice in (False, True):
            items = [i for i in every if is_memory_choice(i) == choice]
            if not items:
                continue
            policies = [p for p in _family_policies(items, arms)
                        if (not choice or p[0].startswith(DECLARED_PREFIX))
                        and p[0] not in skip]
            share = arms.larger_share(family)
            rows += [row for name, policy, expected in policies
                     if (row := _policy_row(name, family, items, policy, expected, share))]
    return rows

#: How many of a policy's distinct responses, and of the items' scorers, are tried against
#: each other to tell whether it can reach a gold at all (enough to meet every answer form of
#: a family, at a bounded cost).
REACH_SAMPLE = 50


def _policy_row(name: str, family: str, items: Sequence[Item], policy: FamilyPolicy,
                expected: float | None, arm_share: float | None) -> AuditRow | None:
    """One response policy scored on one family's items (None if it answers none), tested
    against the chance it is held to (``audit_chance``) or its own expected score where that
    is higher."""
    responses = policy(items)
    tried = [i for i in items if responses.get(i["id"]) is not None]
    if not tried:
        return None
    won = [i for i in tried if is_correct(i["answer"], responses[i["id"]])]
    chance = null_chance(items, name, arm_share)
    null = max(chance, expected) if expected is not None else chance
    cue = (f"e.g. {won[0]['id']}: answered {short_quote(responses[won[0]['id']] or '')}"
           + hidden_by_declaration(items, arm_share) if won else "")
    return AuditRow(name, family, len(won), len(tried), null,
                    binomial_test(len(won), len(tried), min(null, 1.0), "greater"), cue=cue,
                    reaches=bool(won) or _reaches(tried, responses))


def _reaches(items: Sequence[Item], responses: Mapping[str, str | None]) -> bool:
    """Whether a policy that won no item answers in a form some item's scorer accepts: one
    of its responses is right for another item of the family. A policy whose every answer no
    item could accept ("I don't know.", the probe's words where the gold follows a rule the
    probe never states) cannot reach the gold, and its misses test nothing."""
    answers = sorted({r for r in responses.values() if r is not None})[:REACH_SAMPLE]
    return any(is_correct(item["answer"], answer) for answer in answers
               for item in items[:REACH_SAMPLE])


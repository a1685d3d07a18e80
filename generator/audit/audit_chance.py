"""What a memoryless adversary is held to: the chance the design fixes, a declared chance only
where it asks for less, and a positive control only once it is shown to be one.

The design fixes chance wherever it can: one over the number of options on a choice item, the
share of the larger arm where a family declares act/don't-act arms (a policy that always takes
one arm is right that often, whatever else it knows), ``OPEN_CHANCE`` on other open items.
A declared chance is trusted only where it is lower (stricter) than that: a declaration above
it would hide a memoryless policy's measured success, so the audit holds the policy to the
design's chance and its refusal names the declaration. A family declaring ``audit.chance: 1``
is a positive control, which a memoryless reasoner is meant to pass: the adversaries that
read only what it shows are held to 1 there, but only if a memoryless policy it declares
does pass it, and the echo policies (which repeat the memory phases) are held to the design's
chance. A positive control is never pooled with the other families of its paradigm.

Under rules 1 a declared chance was every adversary's null, as it was written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis.stats import binomial_test
from .audit_report import ALPHA, AuditRow
from .audit_rules import rules
from .audit_structure import Finding
from .audit_view import OPEN_CHANCE, declared, family_chance

Item = Mapping[str, Any]
#: The built-in policies that repeat what the memory phases said or did: never held to a
#: positive control's chance of 1, whose pass must come from what the items show.
ECHO_POLICIES = frozenset({"echo_last_reply", "echo_first_reply", "echo_last_call"})
#: How the audit names a policy a paradigm or family declares.
DECLARED_PREFIX = "declared:"


def declared_chance(items: Sequence[Item]) -> float | None:
    """The chance the family declares (``audit.chance``, else ``analysis.chance``)."""
    if not items:
        return None
    stated = declared(items[0]).get("chance", items[0].get("analysis", {}).get("chance"))
    return None if stated is None else float(stated)


def is_positive_control(items: Sequence[Item]) -> bool:
    """Whether the family declares itself a positive control (``audit.chance: 1``)."""
    return bool(items) and declared(items[0]).get("chance") == 1


def design_chance(items: Sequence[Item], arm_share: float | None = None) -> float:
    """What the design alone lets a memoryless policy reach: one over the number of options
    (the most generous where it varies), else the larger arm's share where arms are declared,
    else ``OPEN_CHANCE``."""
    sizes = [len(i["answer"]["options"]) for i in items if i["answer"].get("options")]
    if sizes:
        return 1 / min(sizes)
    return arm_share if arm_share is not None else OPEN_CHANCE


def null_chance(items: Sequence[Item], adversary: str, arm_share: float | None = None
                ) -> float:
    """The chance ``adversary`` is tested against on a family's ``items``: where the design
    fixes it (options, arms), that, or a lower declared one; on other open items the declared
    chance, else ``OPEN_CHANCE`` (``declared_chance_findings`` checks the declaration against
    what the policies reach); on a positive control, 1, except for the echo policies."""
    if not rules().design_chance:
        return family_chance(items)
    design = design_chance(items, arm_share)
    stated = declared_chance(items)
    if is_positive_control(items):
        return design if adversary in ECHO_POLICIES else 1.0
    if stated is None:
        return design
    fixed = arm_share is not None or any(i["answer"].get("options") for i in items)
    return min(stated, design) if fixed else stated


def hidden_by_declaration(items: Sequence[Item], arm_share: float | None = None) -> str:
    """What a refusal adds where the family declares a chance above the one the design
    fixes: that the declaration did not hold the adversary (empty elsewhere)."""
    if not rules().design_chance:
        return ""
    stated, design = declared_chance(items), design_chance(items, arm_share)
    if stated is None or stated <= design or is_positive_control(items):
        return ""
    return (f"; the declared chance {stated:.3g} is above the {design:.3g} the design fixes "
            "and does not hold it")


#: The built-in policies that answer from what an item shows and what the release's other
#: items teach (a constant answer, the declared default), reading no memory: what a declared
#: chance on open items is checked against.
VIEW_POLICIES = frozenset({"declared_prior", "echo_probe", "majority_answer", "abstain",
                           "fewest_violations", "odd_one_out_candidate", "echo_tool_result"})


def declared_chance_findings(sampled: Mapping[str, Sequence[Item]],
                             rows: Sequence[AuditRow]) -> list[Finding]:
    """A declared chance on open items (where no options or arms fix it) checked against
    what the policies reach: where a policy beats ``OPEN_CHANCE`` (unadjusted) but not the
    declaration, the declaration hides its success unless some policy that reads no memory
    (``VIEW_POLICIES``, or one the family declares) is measured to reach it (its hits not
    significantly below the declared chance). A declaration no such policy reaches fails
    ``declared: chance``, naming the policy it hides."""
    if not rules().design_chance:
        return []
    findings = []
    for family, items in sorted(sampled.items()):
        stated = declared_chance(items)
        if stated is None or stated <= OPEN_CHANCE or is_positive_control(items) or \
                any(i["answer"].get("options") for i in items) or \
                any(declared(i).get("arms") for i in items):
            continue
        mine = [r for r in rows if r.family == family and r.trials]
        hidden = [r for r in mine if not r.failed and r.chance >= stated and
                  binomial_test(r.hits, r.trials, OPEN_CHANCE, "greater") < ALPHA]
        if not hidden:
            continue
        reached = [r for r in mine if (r.check in VIEW_POLICIES or
                                       r.check.startswith(DECLARED_PREFIX)) and
                   binomial_test(r.hits, r.trials, stated, "less") >= ALPHA]
        key = "audit.chance" if "chance" in declared(items[0]) else "analysis.chance"
        if reached:
            findings.append(Finding("declared: chance", family, True,
                                    f"{key} {stated:.3g} reached by {reached[0].check} "
                                    f"{reached[0].hits}/{reached[0].trials}"))
            continue
        first = max(hidden, key=lambda r: (r.hits / r.trials, r.check))
        p_open = binomial_test(first.hits, first.trials, OPEN_CHANCE, "greater")
        findings.append(Finding(
            "declared: chance", family, False,
            f"{key} {stated:.3g}; reached by no policy that reads no memory",
            f"the declared {key} {stated:.3g} hides {first.check}'s {first.hits}/"
            f"{first.trials} (p {p_open:.3g}"
            f" against the {OPEN_CHANCE} of an open answer), and no policy reading no memory "
            f"reaches it: declare the chance such a policy reaches, or a memoryless policy "
            f"with its expected score ({first.cue})", tuple(key.split("."))))
    return findings


def positive_control_findings(sampled: Mapping[str, Sequence[Item]],
                              rows: Sequence[AuditRow]) -> list[Finding]:
    """Each positive control shown to be one: some memoryless policy it declares beats the
    design's chance on it (one-sided exact binomial test, unadjusted: a control that no
    memoryless reasoner passes measures nothing). Without one, its chance of 1 would let
    any leak through, so it fails ``declared: positive control``."""
    if not rules().design_chance:
        return []
    findings = []
    for family, items in sorted(sampled.items()):
        if not is_positive_control(items):
            continue
        design = design_chance(items)
        best = None
        for row in rows:
            if row.family != family or not row.check.startswith(DECLARED_PREFIX) or \
                    not row.trials:
                continue
            p = binomial_test(row.hits, row.trials, design, "greater")
            if best is None or p < best[0]:
                best = (p, row)
        if best is not None and best[0] < ALPHA:
            p, row = best
            findings.append(Finding("declared: positive control", family, True,
                                    f"{row.check} {row.hits}/{row.trials} (design chance "
                                    f"{design:.3g}, p {p:.3g})"))
            continue
        measured = (f"best declared policy {best[1].check} {best[1].hits}/{best[1].trials}"
                    if best else "no declared memoryless policy")
        findings.append(Finding(
            "declared: positive control", family, False, measured,
            f"audit.chance 1 declares a positive control, but {measured.lower()} beats the "
            f"design's chance of {design:.3g} on it: declare the memoryless policy that "
            "passes it (reading only what the items show), or do not declare chance 1",
            ("audit", "chance")))
    return findings

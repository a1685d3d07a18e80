"""What a paradigm or family declares for the audit (its ``audit`` block): which phases hold
the memory, the chance level, reference policies, act/don't-act arms, the candidates a task
shows, theme words and an exemption.

A family's block is laid over its paradigm's, key by key (policies by name), so a paradigm can
declare the policies every family of it needs and a family can add or override them. What
does not depend on an instance (phases, chance, expectations, arms, words, exemption) travels
in each instance's ``analysis.audit``; what does (each policy's response, the candidates) is
rendered into its answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: Names a declared policy may not take: the built-in reference policies and adversaries.
RESERVED_POLICY_NAMES = frozenset({
    "oracle", "memoryless", "memory_follower", "position_biased", "random", "abstainer",
    "declared_prior", "echo_last_reply", "echo_first_reply", "echo_last_call", "echo_probe",
    "majority_answer", "abstain", "always_act", "never_act", "echo_tool_result",
    "arm_classifier"})
#: Keys rendered per instance rather than carried as they are.
_RENDERED = ("candidates",)


def merged(paradigm: Mapping[str, Any], family: Mapping[str, Any]) -> dict[str, Any]:
    """The family's ``audit`` block laid over its paradigm's."""
    out = {**paradigm.get("audit", {}), **family.get("audit", {})}
    policies = {**paradigm.get("audit", {}).get("policies", {}),
                **family.get("audit", {}).get("policies", {})}
    if policies:
        out["policies"] = policies
    return out


def carried(block: Mapping[str, Any]) -> dict[str, Any]:
    """What every instance carries of the block in ``analysis.audit`` (policy responses and
    candidates are rendered into its answer instead)."""
    out = {k: v for k, v in block.items() if k not in _RENDERED and k != "policies"}
    if block.get("policies"):
        out["policies"] = {name: {k: v for k, v in spec.items() if k != "respond"}
                           for name, spec in sorted(block["policies"].items())}
    return out


def check(block: Mapping[str, Any], phases: tuple[str, ...],
          axes: Mapping[str, set[str]] | None, problem: Callable[[str, tuple], None],
          where: tuple = ("audit",)) -> None:
    """Report, located at ``where``, what the block names that does not exist: a phase, an
    axis or its value (unless ``axes`` is None: a paradigm's block is checked against each
    family's axes), or a policy name that a built-in policy already has."""
    memory = block.get("memory_phases", ())
    for index, name in enumerate(memory):
        if name not in phases:
            problem(f"memory phase {name!r} is not a phase ({', '.join(phases)})",
                    (*where, "memory_phases", index))
    if memory and all(p in memory for p in phases):
        problem("every phase is a memory phase: a system without memory would see nothing",
                (*where, "memory_phases"))
    for name in block.get("policies", {}):
        if name in RESERVED_POLICY_NAMES:
            problem(f"policy {name!r} has the name of a built-in policy", (*where, "policies",
                                                                            name))
    arms = block.get("arms")
    if arms is not None and axes is not None:
        if arms["axis"] not in axes:
            problem(f"arms name unknown axis {arms['axis']!r}", (*where, "arms", "axis"))
        else:
            for key in ("act", "dont"):
                for index, value in enumerate(arms[key]):
                    if value not in axes[arms["axis"]]:
                        problem(f"arms name {value!r}, not a value of axis {arms['axis']!r}",
                                (*where, "arms", key, index))
            if set(arms["act"]) & set(arms["dont"]):
                problem("an arm value is both act and dont", (*where, "arms"))


def candidate_records(value: Any) -> list[dict[str, Any]] | None:
    """The candidates an expression gave, as records ``{value, features}``; None if it gave
    something else (a list of strings, or of records with a string ``value`` and a list of
    strings ``features``, is expected)."""
    if not isinstance(value, (list, tuple)):
        return None
    out = []
    for entry in value:
        if isinstance(entry, str):
            out.append({"value": entry, "features": []})
        elif isinstance(entry, Mapping) and isinstance(entry.get("value"), str) and all(
                isinstance(f, str) for f in entry.get("features", ())):
            out.append({"value": entry["value"], "features": list(entry.get("features", ()))})
        else:
            return None
    return out


#: How far a declared chance may lie from one over the number of options (a rounded third).
CHANCE_TOLERANCE = 0.005


def chance_contradictions(block: Mapping[str, Any], analysis: Mapping[str, Any],
                          answer: Mapping[str, Any]) -> list[tuple[str, tuple]]:
    """What the declarations say that a choice item's data contradicts, each with where it
    is declared (``("audit", "chance")``, ``("analysis", "chance")`` or a policy's
    ``expected``). A memoryless pick among k options is right one time in k: a declared
    chance must be 1/k (an ``audit.chance`` of 1 declares a positive control, which a
    memoryless reasoner is meant to pass), and a memoryless policy cannot be expected to
    score above the chance its item allows. A declaration trusted as written would otherwise
    let an adversary beat the real chance and pass."""
    options = answer.get("options")
    if answer.get("scorer") != "choice" or not options:
        return []
    guess = 1 / len(options)
    found: list[tuple[str, tuple]] = []
    for where, value, positive in ((("audit", "chance"), block.get("chance"), True),
                                   (("analysis", "chance"), analysis.get("chance"), False)):
        if value is None or abs(float(value) - guess) <= CHANCE_TOLERANCE or \
                (positive and float(value) == 1.0):
            continue
        found.append((f"{'.'.join(where)} is {value}, but this choice item has "
                      f"{len(options)} options: a memoryless pick is right 1/{len(options)} "
                      f"= {guess:.4g} of the time" + (" (or declare 1 for a positive control)"
                                                      if positive else ""), where))
    ceiling = 1.0 if block.get("chance") == 1 else guess
    for name, spec in sorted(block.get("policies", {}).items()):
        expected = spec.get("expected")
        if expected is None or not spec.get("memoryless", True) or \
                float(expected) <= ceiling + CHANCE_TOLERANCE:
            continue
        found.append((f"policy {name!r} is memoryless and expected to score {expected}, but "
                      f"on this choice item of {len(options)} options a memoryless answer "
                      f"is right at most {ceiling:.4g} of the time", ("audit", "policies",
                                                                      name, "expected")))
    return found

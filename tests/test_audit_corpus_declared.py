"""The audit's corpus of planted flaws, continued: flaws aimed at what the audit is told (a
declared chance, a positive control, evidence) and at how it draws (one leaky variant of
eight, one arm's marker, the tool results of remembered calls, a theme word no list names),
each with a twin that must pass. The last test draws every family of both corpora at twenty
seeds: a flaw is refused and a twin accepted at no fewer than nineteen of them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from test_audit_corpus import (
    FLAWS as FIRST_FLAWS,
)
from test_audit_corpus import (
    GROUPS,
    NOUNS,
    _assistant,
    _choice,
    _judged,
    _open,
    _options,
    _refusals,
    _user,
    echo_passable,
)

from memspec.audit import run
from memspec.audit.run import audit_instances, describe_failure


def declared_chance_hides_echo(flawed: bool) -> list[dict]:
    """The echo leak of the first corpus, declared to be passable 97% of the time: the
    declaration would hide it. The twin declares the half that a constant answer reaches
    (numbered or bulleted steps, evenly) and does not leak."""
    items = echo_passable(flawed)
    for item in items:
        item["analysis"]["audit"]["chance"] = 0.97 if flawed else 0.5
    return items


def positive_control_claimed(flawed: bool) -> list[dict]:
    """The echo leak declared a positive control (chance 1). The twin is one: it does not
    leak, and it declares the memoryless policy that passes it (the form the request
    names)."""
    items = echo_passable(flawed)
    for item in items:
        item["analysis"]["audit"] = {"chance": 1}
        if not flawed:
            item["analysis"]["audit"]["policies"] = {"reads_request": {"expected": 1.0}}
            item["answer"]["policies"] = {"reads_request": item["answer"]["example"]}
    return items


def evidence_not_the_gold(flawed: bool) -> list[dict]:
    """Every item shows a ledger line declared as its evidence; when flawed, the line names a
    wrong option, so the evidence does not answer the item."""
    items = []
    for g in range(GROUPS):
        options, gold = _options(g), g % 3
        shown = options[(gold + 1) % 3] if flawed else options[gold]
        items.append(_choice("lab.ledger", g, options, gold, evidence=shown,
                             probe=[{"role": "tool", "content": f"ledger: {shown}"}]))
    return items


VARIANTS = [f"v{k}" for k in range(8)]


def one_leaky_variant(flawed: bool) -> list[dict]:
    """Eight variants a group; when flawed, in variant v7 alone the right option is the
    longest (one draw per group would meet v7 in three groups of twenty-four)."""
    items = []
    for g in range(GROUPS):
        for k, variant in enumerate(VARIANTS):
            options, gold = _options(g + k), (g + k) % 3
            if flawed and variant == "v7":
                options[gold] = f"the {options[gold]} with the brass handle"
            items.append(_choice("lab.eight", g, options, gold, variant=variant,
                                 probe=[_user(f"(Take {variant}.)")]))
    return items


ARMS = {"arms": {"axis": "arm", "act": ["act"], "dont": ["hold"]}}


def _armed(family: str, g: int, arm: str, probe: str, gold: str, example: str,
           audit: dict, **answer: object) -> dict:
    return _open(family, g, [_user("Old files go."), _assistant("Understood.")], probe, gold,
                 example, variant=arm, axes={"arm": arm}, audit=audit, **answer)


def dont_arm_marker(flawed: bool) -> list[dict]:
    """Act and don't-act arms with the same request; when flawed, the don't-act arm's
    request alone says "kindly", so the arm (and whether to act) is told without memory."""
    items = []
    for g in range(GROUPS):
        path = f"/srv/{NOUNS[g]}"
        items.append(_armed("lab.marker", g, "act", f"Tidy {path}.", r"^delete\(",
                            f"delete('{path}')", ARMS))
        hold = f"Kindly tidy {path}." if flawed else f"Tidy {path}."
        items.append(_armed("lab.marker", g, "hold", hold, r"^preview\(",
                            f"preview('{path}')", ARMS))
    return items


def act_design_fixes_half(flawed: bool) -> list[dict]:
    """An act/don't-act family declaring no chance, its default answer the don't-act one:
    the design fixes its chance at one half (right in one arm of two). When flawed, the
    scorer of the act arm accepts the default too, so it is right everywhere."""
    items = []
    for g in range(GROUPS):
        path = f"/srv/{NOUNS[g]}"
        act_gold = r"^(delete|preview)\(" if flawed else r"^delete\("
        items.append(_armed("lab.default", g, "act", f"Tidy {path}.", act_gold,
                            f"delete('{path}')", ARMS, prior=f"preview('{path}')"))
        items.append(_armed("lab.default", g, "hold", f"Tidy {path}.", r"^preview\(",
                            f"preview('{path}')", ARMS, prior=f"preview('{path}')"))
    return items


def remembered_tool_result(flawed: bool) -> list[dict]:
    """A lookup handed in with the request's context (a tool result before any assistant
    turn of the memory phase) is shown; when flawed, it names the right option."""
    items = []
    for g in range(GROUPS):
        options, gold = _options(g), g % 3
        item = _choice("lab.lookup", g, options, gold)
        result = f"loans.lookup -> {options[gold] if flawed else 'no record'}"
        item["phases"][0]["messages"].insert(0, {"role": "tool", "content": result})
        items.append(item)
    return items


def theme_word_unlisted(flawed: bool) -> list[dict]:
    """Judged pairs whose treatment keeps saying "lighthouse", a word neither the rubric nor
    a declared list names; when flawed, one control arm of eight says it too."""
    items = []
    for g in range(8):
        items.append(_judged("lab.beacon", g, "experimental",
                             f"Gulls over the fog by the lighthouse; rope and tides ({g})."))
        slip = "lighthouse " if flawed and g == 3 else ""
        items.append(_judged("lab.beacon", g, "control",
                             f"Set the {slip}calendar for Monday, week {g}."))
    for item in items:
        item["family"] = "lab.beacon"
    return items


FLAWS: dict[str, tuple[Callable[[bool], list[dict]], str, str, str]] = {
    "a declared chance hiding an echo leak": (declared_chance_hides_echo, "lab.echo",
                                              "declared: chance", "hides echo_last_reply"),
    "a leaky family declared a positive control": (positive_control_claimed, "lab.echo",
                                                   "echo_last_reply", "answered '1. Take"),
    "evidence shown that does not give the gold": (evidence_not_the_gold, "lab.ledger",
                                                   "leakage: evidence shown",
                                                   "does not give the right answer"),
    "a leak in one variant of eight": (one_leaky_variant, "lab.eight [variant=v7]",
                                       "longest_option", "with the brass handle"),
    "a marker of the don't-act arm": (dont_arm_marker, "lab.marker", "leakage: arm marker",
                                      "'kindly' in 24 of the 24 dont instances"),
    "a default right in both arms": (act_design_fixes_half, "lab.default", "declared_prior",
                                     "(chance 0.5"),
    "a lookup shown with the context names the gold": (
        remembered_tool_result, "lab.lookup", "leakage: gold shown",
        "the tool message of phase 'history' names"),
    "a theme word no list names": (theme_word_unlisted, "lab.beacon", "leakage: control arm",
                                   "(lighthouse)"),
}


def _refused_as_named(items: list[dict], family: str, check: str, cue: str,
                      seed: int = 0) -> tuple[bool, list[str]]:
    refusals = [describe_failure(f) for f in audit_instances(items, seed).failures()]
    mine = [line for line in refusals if f" on {family}" in line
            and line.startswith(f"audit: {check} ") and cue in line]
    return bool(mine), refusals


@pytest.mark.parametrize("name", sorted(FLAWS))
def test_each_planted_flaw_is_refused_naming_family_check_and_cue(name: str) -> None:
    make, family, check, cue = FLAWS[name]
    refused, refusals = _refused_as_named(make(True), family, check, cue)
    assert refused, "\n".join(refusals) or "the flawed family passed"


@pytest.mark.parametrize("name", sorted(FLAWS))
def test_the_unflawed_twin_of_each_passes(name: str) -> None:
    make, *_ = FLAWS[name]
    assert _refusals(make(False)) == []


def test_a_positive_control_no_declared_policy_passes_is_refused() -> None:
    """Declaring chance 1 is not enough: without a memoryless policy that passes it, the
    control is refused as one, and its refusal says what to declare."""
    items = echo_passable(False)
    for item in items:
        item["analysis"]["audit"] = {"chance": 1}
    refusals = _refusals(items)
    assert any(line.startswith("audit: declared: positive control fails on lab.echo: ")
               and "declare the memoryless policy that passes it" in line
               for line in refusals), refusals


SEEDS = range(20)
#: At how many of the twenty seeds a verdict must hold.
STABLE = 19
ALL_FLAWS = {**FIRST_FLAWS, **FLAWS}
#: The flaws an adversary's row refuses: their verdict rests on the draw. (The exact checks
#: count every instance and no draw, and the classifiers' flaw needs them: both are left to
#: the tests above, at the default seed.)
DRAWN = sorted(name for name, (_, _, check, _) in ALL_FLAWS.items()
               if ":" not in check and not check.startswith("probe_classifier"))


@pytest.fixture
def without_classifiers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit without its classifiers and encoder, which no flaw drawn here needs and
    which cost most of each audit's time."""
    every = run.predictors
    monkeypatch.setattr(run, "predictors", lambda: {
        name: predict for name, predict in every().items()
        if not name.startswith(("probe_classifier", "embedding"))})


@pytest.mark.parametrize("name", DRAWN)
def test_verdicts_hold_over_twenty_seeds(name: str, without_classifiers: None) -> None:
    """The draw is a seed's; the verdict is not: each flaw is refused (as named) and each
    twin accepted at nineteen seeds of twenty or more."""
    make, family, check, cue = ALL_FLAWS[name]
    flawed, twin = make(True), make(False)
    refused = sum(_refused_as_named(flawed, family, check, cue, seed)[0] for seed in SEEDS)
    accepted = sum(audit_instances(twin, seed).ok for seed in SEEDS)
    assert (refused, accepted) >= (STABLE, STABLE), (refused, accepted)

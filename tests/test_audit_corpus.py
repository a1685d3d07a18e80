"""A corpus of deliberately flawed families, each with an unflawed twin: every flaw must fail
the audit, named by family, adversary (or check) and cue, as a freeze would refuse it; every
twin must pass. The families are written as instances (small, a few dozen groups), so the
whole corpus runs in seconds; test_audit_freeze.py takes some of them through a real freeze."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memspec.audit.run import audit_instances, describe_failure

NOUNS = ["anchor", "basket", "candle", "drawer", "easel", "funnel", "garnet", "hinge",
         "ingot", "jigsaw", "kettle", "ladder", "magnet", "napkin", "oyster", "pulley",
         "quiver", "ribbon", "saddle", "thimble", "urchin", "violin", "walnut", "yarrow"]
GROUPS = 24


def _phases(history: list[dict[str, str]], probe: list[dict[str, str]]) -> list[dict]:
    return [{"phase": "history", "messages": history}, {"phase": "probe", "messages": probe}]


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


def _choice(family: str, group: int, options: list[str], gold: int, *,
            probe: list[dict[str, str]] | None = None, variant: str = "base",
            **answer: Any) -> dict:
    listing = "\n".join(f"{chr(65 + k)}) {o}" for k, o in enumerate(options))
    return {"id": f"{family}-{group:05d}-{variant}", "family": family, "group": group,
            "paradigm": "lab.choice", "design": "main", "variant": variant, "axes": {},
            "phases": _phases([_user(f"I lent you the {options[gold]}."), _assistant("Noted.")],
                              (probe or []) + [_user(f"Which one did I lend you?\n{listing}")]),
            "answer": {"scorer": "choice", "options": options, "gold": options[gold],
                       "gold_index": gold, **answer}}


def _options(group: int, size: int = 3) -> list[str]:
    return [NOUNS[(group + k * 7) % len(NOUNS)] for k in range(size)]


def _open(family: str, group: int, history: list[dict[str, str]], probe: str, gold: str,
          example: str, *, variant: str = "base", axes: dict | None = None,
          audit: dict | None = None, **answer: Any) -> dict:
    item = {"id": f"{family}-{group:05d}-{variant}", "family": family, "group": group,
            "paradigm": "lab.open", "design": "main", "variant": variant, "axes": axes or {},
            "phases": _phases(history, [_user(probe)]),
            "answer": {"scorer": "regex", "gold": gold, "example": example, **answer}}
    if audit is not None:
        item["analysis"] = {"audit": audit}
    return item


def _refusals(items: list[dict]) -> list[str]:
    """What a freeze would say of these items: one line per failure (empty if it passes)."""
    return [describe_failure(f) for f in audit_instances(items).failures()]


# ------------------------------------------------------------------------- the corpus

def gold_position(flawed: bool) -> list[dict]:
    return [_choice("lab.position", g, _options(g), 0 if flawed else g % 3)
            for g in range(GROUPS)]


def gold_in_probe(flawed: bool) -> list[dict]:
    items = []
    for g in range(GROUPS):
        options, gold = _options(g), g % 3
        named = f"Was it the {options[gold]}?" if flawed else "Was it one of these?"
        items.append(_choice("lab.named", g, options, gold, probe=[_user(named)]))
    return items


def gold_in_tool_message(flawed: bool) -> list[dict]:
    items = []
    for g in range(GROUPS):
        options, gold = _options(g), g % 3
        result = (f"loans.lookup -> last lent: {options[gold]}" if flawed
                  else "loans.lookup -> no record")
        items.append(_choice("lab.tool", g, options, gold,
                             probe=[{"role": "tool", "content": result}]))
    return items


def longest_gold(flawed: bool) -> list[dict]:
    items = []
    for g in range(GROUPS):
        options, gold = _options(g), g % 3
        if flawed:
            options[gold] = f"the {options[gold]} with the brass handle"
        items.append(_choice("lab.long", g, options, gold))
    return items


def stale_always_older(flawed: bool) -> list[dict]:
    """The right year and the stale one come from overlapping ranges (1990-2013 and
    1994-2017), but in the flawed family the stale year is always the earlier of the two."""
    items = []
    for g in range(GROUPS):
        low, high = 1990 + g, 1994 + g
        right, stale = (high, low) if flawed or (g // 2) % 2 else (low, high)
        options = [f"the {right} lease of the {NOUNS[g]}", f"the {stale} lease of the {NOUNS[g]}"]
        gold = g % 2
        if gold:
            options.reverse()
        items.append(_choice("lab.stale", g, options, gold))
    return items


def evidence_never_shown(flawed: bool) -> list[dict]:
    items = []
    for g in range(GROUPS):
        options, gold = _options(g), g % 3
        shown = [] if flawed else [{"role": "tool", "content": f"ledger: {options[gold]}"}]
        items.append(_choice("lab.evidence", g, options, gold, probe=shown,
                             evidence=options[gold]))
    return items


ADJECTIVES = ["plain", "green", "rusty", "spare", "small", "loose", "round", "heavy"]


def family_marker(flawed: bool) -> list[dict]:
    """Three families of two-word options; in one of them, the right option always says
    "brass" (a marker no other family uses, so a classifier trained on the others never
    meets it)."""
    items = []
    for index, family in enumerate(("lab.marker_a", "lab.marker_b", "lab.marker_c")):
        for g in range(GROUPS):
            gold = g % 3
            options = [f"{ADJECTIVES[(g + k * 3 + index) % len(ADJECTIVES)]} {noun}"
                       for k, noun in enumerate(_options(g))]
            if flawed and family == "lab.marker_b":
                options[gold] = f"brass {options[gold].split()[1]}"
            items.append(_choice(family, g, options, gold))
    return items


def echo_passable(flawed: bool) -> list[dict]:
    """The earlier session's last reply already has the preferred form (a numbered list):
    repeating it, whatever the new request, passes."""
    items = []
    for g in range(GROUPS):
        # The user prefers numbered steps in half the groups, bullets in the other half.
        numbered = g % 2 == 0
        mark, gold = ("1.", r"^1\. ") if numbered else ("-", r"^- ")
        steps = f"{mark} Take the {NOUNS[g]}.\n{'2.' if numbered else '-'} Put it back."
        reply = steps if flawed else f"Take the {NOUNS[g]} and put it back."
        ask = "Numbered steps, please." if numbered else "Bullet points, please."
        items.append(_open("lab.echo", g, [_user("How do I tidy up?"), _assistant(reply),
                                           _user(ask)],
                           f"How do I fix the {NOUNS[(g + 5) % 24]}?", gold,
                           f"{mark} Find the {NOUNS[(g + 5) % 24]}.", first="whole",
                           audit={"chance": 0.5}))
    return items


def always_act_passable(flawed: bool) -> list[dict]:
    """An act/don't-act design: in the don't-act arm the scorer (wrongly, when flawed)
    accepts the act arm's response too, so always acting passes both arms."""
    items = []
    audit = {"arms": {"axis": "arm", "act": ["act"], "dont": ["hold"]}, "chance": 0.5}
    for g in range(GROUPS):
        path = f"/srv/{NOUNS[g % 24]}"
        act, hold = f"delete('{path}')", f"preview('{path}')"
        hold_gold = r"^(delete|preview)\(" if flawed else r"^preview\("
        history = [_user("Old files go."), _assistant("Understood.")]
        items.append(_open("lab.act", g, history, f"Tidy {path}.", r"^delete\(", act,
                           variant="act", axes={"arm": "act"}, audit=audit))
        items.append(_open("lab.act", g, history, f"Tidy {path}.", hold_gold, hold,
                           variant="hold", axes={"arm": "hold"}, audit=audit))
    return items


def menu_rule(flawed: bool) -> list[dict]:
    """A menu: the user said (in the session) what they cannot eat; in the flawed family every
    other dish breaks the same restriction, so the one dish with no declared allergen is the
    right one whatever the user said."""
    items = []
    for g in range(GROUPS):
        dishes = [f"{NOUNS[(g + k) % 24].title()} Stew" for k in range(4)]
        gold = g % 4
        allergens = [["milk"] if k != gold else [] for k in range(4)] if flawed else \
            [["milk"] if k == (gold + 1) % 4 else ["nuts"] if k != gold else ["wheat"]
             for k in range(4)]
        menu = "\n".join(f"{d}: {', '.join(a) or 'no allergens'}"
                         for d, a in zip(dishes, allergens, strict=True))
        items.append(_open("lab.menu", g, [_user("I can't have milk."), _assistant("Noted.")],
                           f"{menu}\nWhich one should I order?", rf"^{dishes[gold]}$",
                           dishes[gold],
                           candidates=[{"value": d, "features": a}
                                       for d, a in zip(dishes, allergens, strict=True)]))
    return items


def declared_policy_passable(flawed: bool) -> list[dict]:
    """A family that declares a cautious default (always preview first) with its expected
    score 0.5; when flawed, previewing is right in every item."""
    items = []
    audit = {"policies": {"cautious_default": {"expected": 0.5}}, "chance": 0.5}
    for g in range(GROUPS):
        path = f"/srv/{NOUNS[g % 24]}"
        preview_right = flawed or g % 2 == 0
        gold, example = (r"^preview\(", f"preview('{path}')") if preview_right else \
            (r"^delete\(", f"delete('{path}')")
        items.append(_open("lab.cautious", g, [_user("Old files go."), _assistant("Sure.")],
                           f"Tidy {path}.", gold, example, audit=audit,
                           policies={"cautious_default": f"preview('{path}')"}))
    return items


def declared_letter_passable(flawed: bool) -> list[dict]:
    """A choice family declaring "always answer A" (expected at chance, a third); when
    flawed, A is right in every item, so the declared policy itself wins."""
    items = []
    audit = {"policies": {"letter_a": {"expected": 1 / 3}}, "chance": 1 / 3}
    for g in range(GROUPS):
        item = _choice("lab.letters", g, _options(g), 0 if flawed else g % 3,
                       policies={"letter_a": "A"})
        item["analysis"] = {"audit": audit}
        items.append(item)
    return items


def naming_rule_unreachable(flawed: bool) -> list[dict]:
    """The earlier session set a naming rule for files; the probe asks for a file name
    without stating it. When flawed, no memoryless policy answers in a form any item accepts
    (no declared example, no prior): every one fails, and their misses test nothing. The
    twin declares an example response per item, so the most common answer is a file name of
    the family's form, which could be right."""
    items = []
    for g in range(GROUPS):
        noun = NOUNS[g % 24]
        item = _open("lab.naming", g, [_user("Name files YEAR-thing.csv from now on."),
                                       _assistant("Noted.")],
                     f"What should I call the notes on the {noun}?", rf"^\d{{4}}-{noun}\.csv$",
                     f"{2000 + g}-{noun}.csv")
        if flawed:
            del item["answer"]["example"]
        items.append(item)
    return items


def _judged(family: str, group: int, arm: str, text: str, audit: dict | None = None) -> dict:
    item = {"id": f"{family}-{group:05d}-{arm}", "family": family, "group": group,
            "paradigm": "lab.priming", "design": "main", "variant": arm, "axes": {"arm": arm},
            "analysis": {"judge_pairs": {"axis": "arm", "treatment": "experimental",
                                         "control": "control"}, **({"audit": audit}
                                                                   if audit else {})},
            "phases": [{"phase": "priming", "messages": [_user(text)]},
                       {"phase": "probe", "messages": [_user(f"Write a poem ({group}).")]}],
            "answer": {"scorer": "judge",
                       "rubric": "Rate 1-10 how strongly the response carries a harbour: gulls, "
                                 "fog, rope and tides."}}
    return item


def control_leaks_one_word(flawed: bool) -> list[dict]:
    items = []
    for g in range(8):
        items.append(_judged("lab.priming", g, "experimental",
                             f"Gulls over the fog; rope and tides ({g})."))
        items.append(_judged("lab.priming", g, "control",
                             f"Set the {'tides ' if flawed else ''}calendar for Monday, "
                             f"week {g}."))
    return items


FLAWS: dict[str, tuple[Callable[[bool], list[dict]], str, str, str]] = {
    # name: (family maker, family, adversary or check, cue in the refusal)
    "gold position": (gold_position, "lab.position", "position_prior", "24/24"),
    "gold in probe": (gold_in_probe, "lab.named", "leakage: gold shown",
                      "the user message of phase 'probe' names"),
    "gold in an earlier tool message": (gold_in_tool_message, "lab.tool",
                                        "leakage: gold shown",
                                        "the tool message of phase 'probe' names"),
    "longest gold": (longest_gold, "lab.long", "longest_option", "with the brass handle"),
    "stale option always older": (stale_always_older, "lab.stale", "newest_year",
                                  "picked 'the 19"),
    "evidence declared, never shown": (evidence_never_shown, "lab.evidence",
                                       "leakage: evidence shown",
                                       "appears in no visible message"),
    "per-family marker": (family_marker, "lab.marker_b", "probe_classifier_within",
                          "picked 'brass "),
    "passable by echo": (echo_passable, "lab.echo", "echo_last_reply", "answered '1. Take"),
    "passable by always acting": (always_act_passable, "lab.act", "always_act",
                                  "answered \"delete('/srv/"),
    "passable by a probe-only rule": (menu_rule, "lab.menu", "fewest_violations",
                                      "answered '"),
    "passable by a declared policy": (declared_policy_passable, "lab.cautious",
                                      "declared:cautious_default", "answered \"preview("),
    "passable by a declared letter policy on choice items": (
        declared_letter_passable, "lab.letters", "declared:letter_a", "answered 'A'"),
    "no adversary can reach the gold": (
        naming_rule_unreachable, "lab.naming", "coverage: adversaries",
        "abstain, echo_last_reply, echo_probe, majority_answer answered only what no item "
        "accepts"),
    "control arm leaks one theme word": (control_leaks_one_word, "lab.priming",
                                         "leakage: control arm", "(tide)"),
}


@pytest.mark.parametrize("name", sorted(FLAWS))
def test_each_planted_flaw_is_refused_naming_family_adversary_and_cue(name: str) -> None:
    make, family, check, cue = FLAWS[name]
    refusals = _refusals(make(True))
    mine = [line for line in refusals if f" on {family}" in line and
            line.startswith(f"audit: {check} ")]
    assert mine, "\n".join(refusals) or "the flawed family passed"
    assert any(cue in line for line in mine), mine


@pytest.mark.parametrize("name", sorted(FLAWS))
def test_the_unflawed_twin_of_each_passes(name: str) -> None:
    make, *_ = FLAWS[name]
    assert _refusals(make(False)) == []


def test_a_family_no_adversary_covers_fails_unless_it_says_why() -> None:
    def family(audit: dict | None) -> list[dict]:
        return [{"id": f"lab.essay-{g:05d}-base", "family": "lab.essay", "group": g,
                 "paradigm": "lab.essay", "design": "main", "variant": "base", "axes": {},
                 "phases": _phases([_user("I like short answers.")],
                                   [_user(f"An essay on {NOUNS[g]}?")]),
                 "answer": {"scorer": "judge", "rubric": "Is it short?"},
                 **({"analysis": {"audit": audit}} if audit else {})} for g in range(6)]

    report = audit_instances(family(None))
    assert [describe_failure(f) for f in report.failures()] == [
        "audit: coverage: adversaries fails on lab.essay: no memoryless adversary can test "
        "any item of this family (declare audit.exempt with a reason if none should)"]
    assert report.summary()[0]["adversaries"] == "none apply (not covered)"
    assert not report.summary()[0]["passed"]

    reason = "judged by a rubric that only memory of the earlier session satisfies"
    exempt = audit_instances(family({"exempt": reason}))
    assert exempt.ok and exempt.exempt == {"lab.essay": reason}
    assert exempt.summary()[0]["adversaries"] == f"none apply; exempt: {reason}"


def test_an_allow_listed_coincidence_is_no_leak() -> None:
    items = control_leaks_one_word(True)
    for item in items:
        item["analysis"]["audit"] = {"allow_words": {"words": ["tides"],
                                                     "reason": "a calendar of tides"}}
    assert _refusals(items) == []


def test_declared_theme_words_count_beside_the_rubric() -> None:
    items = control_leaks_one_word(False)
    for item in items:
        item["analysis"]["audit"] = {"theme_words": ["calendar"]}
    assert any("(calendar)" in line for line in _refusals(items))


def test_a_marker_in_one_of_three_families_escapes_the_classifier_across_families() -> None:
    report = audit_instances(family_marker(True))
    rows = {(r.check, r.family): r for r in report.rows}
    # The classifier trained on the other families never meets "brass"; within, it does.
    assert not rows[("probe_classifier", "lab.marker_b")].failed
    assert rows[("probe_classifier_within", "lab.marker_b")].failed


def test_a_declared_letter_policy_is_scored_on_choice_items_with_the_other_adversaries() -> None:
    """The declared policy's row sits beside the option-picking adversaries of the choice
    family, held to one over the number of options, and Holm-corrected with them."""
    flawed = audit_instances(declared_letter_passable(True))
    rows = {r.check: r for r in flawed.rows if r.family == "lab.letters"}
    assert "position_prior" in rows and "declared:letter_a" in rows
    letter = rows["declared:letter_a"]
    assert (letter.hits, letter.trials, letter.chance) == (GROUPS, GROUPS, 1 / 3)
    # Holm over every row of the audit: the adjusted p is the raw one times the rows that
    # are not smaller, at least; never below the raw one.
    assert letter.p_holm is not None and letter.p_holm >= letter.p_value
    twin = audit_instances(declared_letter_passable(False))
    row = next(r for r in twin.rows if r.check == "declared:letter_a")
    assert (row.hits, row.trials) == (GROUPS // 3, GROUPS) and not row.failed


def test_a_family_only_trivial_policies_reach_can_be_exempted_and_its_summary_says_so() -> None:
    items = naming_rule_unreachable(True)
    report = audit_instances(items)
    assert report.summary()[0]["coverage"] == "FAIL: coverage: adversaries"
    reason = "the file name's form is taught by the earlier session alone"
    for item in items:
        item["analysis"] = {"audit": {"exempt": reason}}
    exempt = audit_instances(items)
    assert exempt.ok and exempt.exempt == {"lab.naming": reason}


def test_judge_scored_items_no_adversary_attacks_are_listed_with_why() -> None:
    """Judge-scored items cannot be scored without a judge: the audit says which (by family,
    variant and count) and what tests them instead, never leaving them out silently."""
    report = audit_instances(control_leaks_one_word(False))
    assert report.unattacked == {"lab.priming": (
        "16 judge-scored items, every group's variants control (8), experimental (8): only "
        "a judge can score a response to them and the audit calls none; their control arms "
        "are checked for the theme's words instead")}

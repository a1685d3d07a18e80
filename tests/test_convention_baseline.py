"""The convention baseline: a system that has seen one other item of a dataset rightly
answered, and answers each item in that form from what it shows (its request, its declared
default answer), never from the user's sessions. Where every item of a dataset wants one form
it reaches every item; where the form itself must be remembered, it reaches none. On the
bundled feedback releases it reproduces the 40/40 of the four one-convention datasets."""

from __future__ import annotations

import pytest
from test_audit_corpus import GROUPS, NOUNS, _open

from conftest import bundled_release, release_instances
from memspec.audit.audit_convention import convention_answer, convention_score
from memspec.audit.score_notes import convention_baselines, convention_notes

STEPS = ["Open the {n} lid", "Lift the {n} tray", "Wipe the {n} rim", "Close the {n} lid"]


def _item(family: str, g: int, gold: str, example: str, prior: str, request: str) -> dict:
    return _open(family, g, [], request, gold, example, prior=prior, first="whole")


def labelled(g: int) -> dict:
    """The verdict first under a label the default answer lacks."""
    word = "Yes" if g % 2 else "No"
    return _item("lab.label", g, rf"^Verdict: {word}\b", f"Verdict: {word}. The {NOUNS[g]} stays.",
                 f"{word}. The {NOUNS[g]} stays.", f"May the {NOUNS[g]} stay?")


def quoted_first(g: int) -> dict:
    """The passage the request quotes, quoted first, then the plain answer."""
    clause = f"The tenant shall keep the {NOUNS[g]} in good repair at all times"
    plain = f"You must look after the {NOUNS[g]}."
    return _item("lab.quote", g, rf'(?s)^\W*The tenant shall keep the {NOUNS[g]}\b.*You must',
                 f'"{clause}"\n\n{plain}', plain, f'What does "{clause}" mean?')


def summary_on_top(g: int) -> dict:
    """The answer's first sentence on top under a heading, then the whole answer."""
    first = f"The {NOUNS[g]} is a tool for holding things steady."
    prior = f"{first} It has two arms and a screw between them."
    return _item("lab.summary", g, rf"(?s)^In short: The {NOUNS[g]} is.*\n\n.*two arms",
                 f"In short: {first}\n\n{prior}", prior, f"What is a {NOUNS[g]}?")


def as_prose(g: int) -> dict:
    """Steps asked for as a paragraph where the default answer lists them."""
    steps = [s.format(n=NOUNS[g]) for s in STEPS]
    return _item("lab.prose", g, rf"(?s)^(?!.*^\d+\. ).*{NOUNS[g]} tray",
                 ". ".join(steps) + ".", "\n".join(f"{k}. {s}." for k, s in enumerate(steps, 1)),
                 f"How do I clean the {NOUNS[g]}?")


def remembered_form(g: int) -> dict:
    """Each user wants their own label, said only in their sessions: no form carries over."""
    label = NOUNS[(g * 7) % len(NOUNS)].capitalize()
    return _item("lab.own", g, rf"^{label}: ", f"{label}: done.", "Done.", "Is it done?")


@pytest.mark.parametrize("make", [labelled, quoted_first, summary_on_top, as_prose])
def test_a_dataset_of_one_form_is_passed_by_a_system_that_saw_one_item(make) -> None:
    items = [make(g) for g in range(GROUPS)]
    assert convention_score(items) == 1.0
    # It copies the form, not the other item's answer: what it says is this item's own.
    answer = convention_answer(items[1], items[0])
    assert NOUNS[0] in answer and NOUNS[1] not in answer


def test_a_form_that_must_be_remembered_is_not_passed() -> None:
    items = [remembered_form(g) for g in range(GROUPS)]
    assert convention_score(items) == 0.0


def test_the_notes_say_how_much_of_a_score_the_convention_explains() -> None:
    items = [labelled(g) for g in range(GROUPS)] + [remembered_form(g) for g in range(GROUPS)]
    assert convention_baselines(items) == {"lab.label": 1.0, "lab.own": 0.0}
    (note,) = convention_notes(items)
    assert note.startswith("convention baseline of lab.label: 1.000 ")
    assert "a score up to 1.000 on this dataset is explained by its convention" in note


#: The feedback datasets whose every item wants one answer form (the metric one needs a unit
#: conversion no copy of a form makes).
ONE_FORM = ("prose_steps", "quote_first", "summary_line", "verdict_label")


@pytest.mark.parametrize("name,prefix", [("feedback-v4", "feedback.procedural."),
                                         ("feedback-v5", "feedback.v5.procedural.")])
def test_the_one_form_feedback_datasets_are_passed_40_of_40(built_dist, name: str,
                                                           prefix: str) -> None:
    baselines = convention_baselines(release_instances(bundled_release(built_dist, name)))
    assert {family.removeprefix(prefix) for family, score in baselines.items()
            if score == 1.0} == set(ONE_FORM)
    assert baselines[f"{prefix}metric_replies"] == 0.0
    assert max(score for family, score in baselines.items()
               if ".declarative." in family) <= 0.05

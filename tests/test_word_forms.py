"""The ``word_forms`` template filter: a key term written once matches every regular form of
it a reader counts as the term, and no other word that merely starts like it."""

from __future__ import annotations

import re

import pytest

from memspec.core.word_forms import word_forms
from memspec.engine.render import make_environment
from memspec.spec.project import Project

#: A term, forms of it a reader counts as the term, and words that are not it.
CASES = [
    ("specialises", ["specialise", "specialises", "specialised", "specialising",
                     "specialisation", "specializes", "Specialization"], ["special", "specialist"]),
    ("trade", ["trade", "trades", "traded", "trading", "traders"], ["tradition", "trad"]),
    ("tape", ["tape", "tapes", "taped", "taping"], ["tap", "tapered"]),
    ("knot", ["knot", "knots", "knotted", "knotting"], ["knotty"]),
    ("pegs", ["peg", "pegs", "pegged"], ["pegasus"]),
    ("battery", ["battery", "batteries"], ["batter"]),
    ("boxes", ["box", "boxes", "boxed"], ["boxy"]),
    ("rolling", ["roll", "rolls", "rolled", "rolling"], ["rollover"]),
    ("lenses", ["lens", "lenses"], []),
    ("expectation", ["expect", "expected", "expectation", "expectations"], ["expectant"]),
    ("carbon dioxide", ["carbon dioxide", "carbon-dioxide", "carbon  dioxide"], ["carbon"]),
    ("1%", ["1%"], []),
]


def _whole_word(pattern: str, word: str) -> bool:
    found = re.match(rf"(?i)\b(?:{pattern})", word)
    return bool(found) and found.end() == len(word)


@pytest.mark.parametrize(("term", "forms", "others"), CASES, ids=[c[0] for c in CASES])
def test_a_term_matches_its_word_forms_and_no_other_word(term: str, forms: list[str],
                                                          others: list[str]) -> None:
    pattern = word_forms(term)
    assert [form for form in forms if not _whole_word(pattern, form)] == []
    assert [word for word in others if re.match(rf"(?i)\b(?:{pattern})", word)] == []


def test_a_gold_counts_two_key_terms_in_other_forms_than_the_listed_ones(tmp_path) -> None:
    """The defect it fixes: a pattern that wants two mentions of "trade" or "specialises"
    read "each specialising in ... then trading" as no mention at all."""
    env = make_environment(Project(tmp_path))
    gold = env.from_string(
        "(?is)(?=(?:.*?\\b(?:{{ terms | map('word_forms') | join('|') }})){2})").render(
        terms=["trade", "specialises"])
    reply = "Each side does best by specialising in what it gives up least, then trading."
    assert re.search(gold, reply)
    listed = "(?is)(?=(?:.*?\\b(?:trade|specialises)){2})"
    assert not re.search(listed, reply)


def test_a_term_that_is_not_text_is_refused() -> None:
    with pytest.raises(ValueError, match="word_forms needs a term"):
        word_forms("  ")

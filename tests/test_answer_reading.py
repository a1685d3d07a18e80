"""How a response is read and scored: the answers a memory probe must refuse (a wrong or
swapped argument, a stale nested call) and the malformed responses models really write (a
label past the last option, a bare code fence, a truncated call), each scored, never a crash.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_bad_input import FAMILY, PARADIGM, edit, memspec, project  # noqa: F401

from memspec.analysis.score import acts_on_distractor, outcome
from memspec.analysis.scoring import (
    answer_problems,
    canonical_text,
    first_call,
    first_choice,
    first_line,
    is_correct,
)

BOOK = {"scorer": "canonical", "gold": "book(room='B12', day='friday', guests=g(n=2))",
        "unordered_args": True}


@pytest.mark.parametrize("response", [
    "book(day='friday', room='B12', guests=g(n=2))",
    "book(guests=g(n=2), room=\"B12\", day='Friday')",
    "```python\nbook(guests = g(n=2), day='friday', room='B12')\n```",
])
def test_reordered_keywords_still_match(response: str) -> None:
    assert is_correct(BOOK, response) is True


@pytest.mark.parametrize("response", [
    "book(room='B13', day='friday', guests=g(n=2))",  # a wrong value
    "book(room='friday', day='B12', guests=g(n=2))",  # values swapped between keywords
    "book(room='B12', day='friday', guests=g(n=3))",  # a stale value inside a nested call
    "book(room='B12', day='friday', guests=h(n=2))",  # another nested call
    "book(room='B12', day='friday')",  # an argument left out
    "book(room='B12', day='friday', guests=g(n=2), notify=true)",  # one added
    "rebook(room='B12', day='friday', guests=g(n=2))",  # another function
    "book(room='B12', day='friday', guests=g(n=2)",  # truncated
])
def test_unordered_keywords_refuse_every_other_call(response: str) -> None:
    assert is_correct(BOOK, response) is False


def test_canonical_text_keeps_the_argument_order_unless_asked() -> None:
    assert canonical_text("F( y = 2, x=“1” );") == "f(y=2,x='1')"
    assert canonical_text("F( y = 2, x=“1” );", True) == "f(x='1',y=2)"


def test_positional_arguments_keep_their_meaning_under_unordered_args() -> None:
    # copy(src, dst) with the two swapped copies the other way: a stale memory of which file
    # is which is exactly what a probe measures, so it must not match the gold.
    answer = {"scorer": "canonical", "gold": "copy_file('a.txt', 'b.txt', overwrite=true)",
              "unordered_args": True}
    assert is_correct(answer, "copy_file('a.txt', 'b.txt', overwrite=True)") is True
    assert is_correct(answer, "copy_file('b.txt', 'a.txt', overwrite=True)") is False
    # The swapped call is the declared distractor: it is reliance, not a right answer.
    instance = {"id": "f-00000-x", "family": "f", "group": 0, "design": "main", "axes": {},
                "fields": {}, "answer": {**answer, "distractors": {
                    "stale": "copy_file('b.txt', 'a.txt', overwrite=true)"}}}
    scored = outcome(instance, "copy_file('b.txt', 'a.txt', overwrite=True)")
    assert (scored.answered, scored.correct, scored.relied) == (True, False, True)
    assert answer_problems(instance["answer"]) == []


OPTIONS = ["Terrace Room", "Garden Room", "Library"]


@pytest.mark.parametrize(("response", "chosen"), [
    ("D", None),  # a label past the last option chooses nothing
    ("D)", None),
    ("Option D", None),
    ("(D) Library", 2),  # ... and the option text it goes on to name is what counts
    ("C", 2),  # the last label is one of the options
    ("B\nThe Terrace Room would have been the old answer.", 1),
    ("B) Garden Room, not the Terrace Room the note mentions", 1),
    ("Library, I think", 2),  # an option's text at the very start
    ("Terrace Room. Not the Library.", 0),
    ("```", None),
    ("```\n```", None),
    ("", None),
])
def test_malformed_choice_responses(response: str, chosen: int | None) -> None:
    assert first_choice(response, OPTIONS) == chosen


@pytest.mark.parametrize(("response", "answered", "correct", "relied"), [
    ("D) ", True, False, False),
    ("D) Terrace Room", True, False, True),
    ("C\nNot the Terrace Room, which the note still says.", True, True, False),
    ("```", False, False, None),  # nothing but a fence: no answer given
])
def test_malformed_choice_responses_are_scored_not_crashed(response: str, answered: bool,
                                                           correct: bool,
                                                           relied: bool | None) -> None:
    instance = {"id": "f-00000-x", "family": "f", "group": 0, "design": "main", "axes": {},
                "fields": {}, "answer": {"scorer": "choice", "gold": "Library", "gold_index": 2,
                                         "distractors": {"stale": "Terrace Room"},
                                         "options": OPTIONS}}
    scored = outcome(instance, response)
    assert (scored.answered, scored.correct, scored.relied) == (answered, correct, relied)


def test_a_truncated_or_fenced_call_is_no_call() -> None:
    assert first_call("copy_file('a', 'b'") == ""
    assert first_call("```python") == ""
    assert first_call("x = 1") == ""
    assert first_call("9lives(1) then run(2)") == "lives(1)"
    assert first_call("print(')')  # done") == "print(')')"
    assert first_call('say("\\")") and more') == 'say("\\")")'
    assert first_line("```python\n\n   \n* first\n```") == "first"
    assert first_line("```") == ""
    regex = {"scorer": "regex", "gold": r"copy_file\(", "first": "call"}
    assert is_correct(regex, "copy_file('a', 'b'") is False
    assert is_correct(regex, "copy_file('a', 'b')") is True
    exact = {"scorer": "exact", "gold": "blue"}
    assert is_correct(exact, "```\n```") is False
    assert is_correct(exact, "`blue`") is True
    assert is_correct({"scorer": "exact", "gold": "blue", "first": "whole"},
                      "  blue  ") is True


def test_an_answer_that_cannot_work_is_named() -> None:
    assert answer_problems({"scorer": "regex", "gold": "([a-"})[0].startswith(
        "gold is not a valid regular expression")
    assert answer_problems({"scorer": "exact", "gold": "blue",
                            "distractors": {"stale": "blue"}}) == [
        "the scorer accepts distractor 'stale' ('blue')"]
    assert answer_problems({"scorer": "exact", "gold": "blue", "example": "red"}) == [
        "the scorer rejects the example response 'red'"]
    assert answer_problems({"scorer": "regex", "gold": "^bl", "example": "blue",
                            "distractors": {"near": "black"}}) == [
        "the scorer accepts distractor 'near' ('black')"]
    # A gold its own scorer rejects (the option named is not at the gold's index).
    assert answer_problems({"scorer": "choice", "options": ["Library", "Lobby"],
                            "gold": "Library", "gold_index": 1}) == [
        "the scorer rejects the gold response 'Library'"]
    # A regex gold is a pattern, not a response: only its example is scored.
    assert answer_problems({"scorer": "regex", "gold": "^bl(ue)?$"}) == []
    assert answer_problems({"scorer": "regex", "gold": "^bl", "example": "red"}) == [
        "the scorer rejects the example response 'red'"]
    assert answer_problems({"scorer": "judge", "gold": "(("}) == []
    assert answer_problems({"scorer": "exact", "gold": "blue",
                            "distractors": {"stale": "red"}}) == []


def test_acts_on_distractor_reads_the_first_attempt() -> None:
    answer = {"scorer": "exact", "gold": "blue", "distractors": {"stale": "red"}}
    assert acts_on_distractor(answer, "red\nno, blue") is True
    assert acts_on_distractor(answer, "blue\nnot red") is False
    assert acts_on_distractor({"scorer": "exact", "gold": "blue"}, "red") is None
    assert acts_on_distractor({**answer, "scorer": "judge"}, "red") is None


def test_an_invalid_regex_gold_is_refused_when_generated(project: Path,  # noqa: F811
                                                         tmp_path: Path) -> None:
    # The pattern is valid as written and broken only once rendered: generation must refuse
    # it, naming the family, rather than write instances that fail at score time.
    edit(project, FAMILY, '  scorer: exact\n  gold: "{{ colour }}"',
         '  scorer: regex\n  gold: "{{ colour }}[a-"\n  example: "{{ colour }}"')
    edit(project, PARADIGM, "[exact]", "[regex]")
    out = tmp_path / "gen.jsonl"
    result = memspec(project, "generate", "demo.recall.colour", "--groups", 2, "--out", out)
    assert result.returncode == 2, result.stderr
    assert "gold is not a valid regular expression" in result.stderr
    assert "colour.yaml:" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def test_a_gold_too_slow_on_its_own_distractor_is_a_problem_not_a_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSPEC_REGEX_SECONDS", "0.2")
    problems = answer_problems({"scorer": "regex", "gold": "^(a|aa)+$",
                                "distractors": {"slow": "a" * 5000 + "!"}})
    assert problems == ["gold pattern '^(a|aa)+$' took longer than 0.2 s to match "
                        "($MEMSPEC_REGEX_SECONDS) on the family's own example or distractors"]


@pytest.mark.parametrize(("scorer", "gold", "response", "right"), [
    ("exact", "- a", "- a", True), ("exact", "- a", "a", True), ("exact", "1. a", "1) a", True),
    ("exact", "- a", "- b", False), ("exact", "a\nb", "a", False),
    ("canonical", "- f(x=1)", "* f( x=1 )", True), ("canonical", "- f(x=1)", "f(x=2)", False)])
def test_a_gold_that_begins_like_a_list_item_is_answerable(scorer: str, gold: str,
                                                            response: str, right: bool) -> None:
    # A response's first line is read without its list marker; so is a one-line gold, or
    # a pool item such as '- a' would make a gold no response can match.
    assert is_correct({"scorer": scorer, "gold": gold}, response) is right
    # The gold is its own right answer, except a gold of two lines, refused as before.
    assert bool(answer_problems({"scorer": scorer, "gold": gold})) is ("\n" in gold)


@pytest.mark.parametrize(("scorer", "response", "right"), [
    ("exact", "- a", True), ("exact", "a", False),
    ("canonical", "- A", True), ("canonical", "a", False)])
def test_a_gold_read_whole_keeps_its_list_marker(scorer: str, response: str,
                                                 right: bool) -> None:
    # Only a first line loses its marker; a response read whole is compared as written, so
    # its gold is too: '- a' then needs the marker, and 'a' alone is another answer.
    answer = {"scorer": scorer, "gold": "- a", "first": "whole"}
    assert is_correct(answer, response) is right
    assert answer_problems(answer) == []

"""Reading version 4: "either X or Y" is a hedge (an abstention) only where no decision
follows it; a decision after a neutral either is read, the pair no attempt. Versions 2 and 3
keep reading every either-pair as a hedge (frozen releases score as they were frozen)."""

from __future__ import annotations

import pytest
from test_reading import CALL as CALL_V2
from test_reading import CHOICE as CHOICE_V2

from memspec.analysis.reading import read

CHOICE = {**CHOICE_V2, "reading": {"version": 4}}
CALL = {**CALL_V2, "reading": {**CALL_V2["reading"], "version": 4}}
LINE = {"scorer": "regex", "gold": r"^(?:I'd send )?Clause 4\b", "reading": {"version": 4}}


@pytest.mark.parametrize("response", [
    "It's either A or B.", "It's either the Terrace Room or the Harbour Room.",
    "Either Terrace Room or Harbour Room, I can't tell which.",
    "It's either A or B — probably A.",
    "Would you like either the Terrace Room or the Harbour Room?",
    "Either the Harbour Room or the Terrace Room.",
])
def test_an_either_with_no_decision_after_it_abstains(response: str) -> None:
    assert read(CHOICE, response).verdict == "abstain"


@pytest.mark.parametrize(("response", "verdict"), [
    ("Either way, the answer is A.", "right"),
    ("You can use either the Harbour Room or the Terrace Room — I'd go with the Terrace "
     "Room.", "right"),
    ("Either the Harbour Room or the Terrace Room could work, but the directory says the "
     "Terrace Room.\n\nANSWER: A", "right"),
    ("Either the Terrace Room or the Garden Room would do; book the Harbour Room.", "wrong"),
    ("You could book either A or C, but I'd pick B.", "wrong"),
    ("Either one is free, but book the Terrace Room.", "right"),
])
def test_a_decision_after_a_neutral_either_is_read(response: str, verdict: str) -> None:
    assert read(CHOICE, response).verdict == verdict


def test_the_neutral_pair_is_no_attempt_whichever_option_it_names_first() -> None:
    # Read as the first text named, the pair would make this the Harbour Room.
    reading = read(CHOICE, "Either the Harbour Room or the Terrace Room is free; I'd book "
                           "the Terrace Room.")
    assert (reading.verdict, reading.chosen) == ("right", 0)
    assert ("neutral either ... or set aside",
            "Either the Harbour Room or the Terrace Room is free") in reading.steps
    assert ("neutral either ... or set aside", "You could book either A or C") in read(
        CHOICE, "You could book either A or C, but I'd pick A.").steps


@pytest.mark.parametrize(("response", "verdict"), [
    ("It's either copy_file('a', 'b') or copy_file('b', 'a').", "abstain"),
    ("Either copy_file('b', 'a') or copy_file('a', 'b') copies it; this workspace wants "
     "copy_file('a', 'b')", "right"),
    ("You could write either copy_file('a', 'b') or copy_file('b', 'a'), but I'd go with "
     "copy_file('b', 'a').", "wrong"),
    ("Either way: copy_file('a', 'b')", "right"),
])
def test_calls_inside_an_either_pair_are_read_whole(response: str, verdict: str) -> None:
    assert read(CALL, response).verdict == verdict


@pytest.mark.parametrize(("response", "verdict"), [
    ("It's either Clause 4 or Clause 5.", "abstain"),
    ("You could cite either Clause 5 or Clause 4 — I'd send Clause 4.", "right"),
])
def test_a_line_answer_reads_the_rest_of_its_line(response: str, verdict: str) -> None:
    assert read(LINE, response).verdict == verdict


@pytest.mark.parametrize("version", [2, 3])
def test_frozen_versions_still_read_every_either_pair_as_a_hedge(version: int) -> None:
    answer = {**CHOICE, "reading": {"version": version}}
    response = ("You can use either the Harbour Room or the Terrace Room — I'd go with the "
                "Terrace Room.")
    assert read(answer, response).verdict == "abstain"
    assert read(CHOICE, response).verdict == "right"


def test_options_that_are_sentences_are_read_whole_inside_a_pair() -> None:
    """An option's own full stops end no sentence: a hedge between two diary lines quoted
    whole abstains; a decision after them is read."""
    lines = ["Lunch with Tonya at 13:20. We talked about wax.",
             "Lunch with Tonya at 02:20. We talked about wax."]
    answer = {"scorer": "choice", "options": lines, "gold": lines[0], "gold_index": 0,
              "distractors": {"night": lines[1]}, "reading": {"version": 4}}
    assert read(answer, f"It's either {lines[0]} or {lines[1]}.").verdict == "abstain"
    decided = read(answer, f"It's either {lines[1]} or {lines[0]}, but the diary has the "
                           f"lunch hour.\n\nANSWER: A")
    assert decided.verdict == "right"
    assert read({**answer, "reading": {"version": 2}},
                f"It's either {lines[0]} or {lines[1]}.").verdict == "right"


def test_an_option_that_begins_with_one_opens_a_pair_as_any_other() -> None:
    """"Either one would do" names no pair, but "either one o'clock ... or ..." does when an
    option's text is "one o'clock ...": the pair is read by what follows it."""
    times = ["one o'clock in the afternoon", "quarter to eleven at night",
             "eight o'clock in the morning"]
    answer = {"scorer": "choice", "options": times, "gold": times[0], "gold_index": 0,
              "distractors": {"stale": times[1]}, "reading": {"version": 4}}
    decided = f"Either {times[0]} or {times[1]} would do; I'd go with {times[0]}."
    assert read(answer, decided).verdict == "right"
    assert read(answer, f"Either {times[1]} or {times[0]} would do; I'd go with "
                        f"{times[1]}.").verdict == "wrong"
    assert read(answer, f"It's either {times[0]} or {times[1]}.").verdict == "abstain"
    assert read(answer, f"Either one would do, but I'd go with {times[0]}.").verdict == "right"

"""Reading version 5, one mechanism per kind of misreading: a reply's layout read as prose
(tables, headings, labels, bullet runs, lead-in lines), rejections written after their
mention, a line or whole answer's rejections only before its first sentence that rejects
nothing, a clause that asks read as a question, calls bound to declared signatures. Each is
checked against version 4 on the same answer, which keeps its reading (frozen releases score
as they were frozen)."""

from __future__ import annotations

import pytest
from test_reading import CALL as CALL_V2
from test_reading import CHOICE as CHOICE_V2

from memspec.analysis.reading import read
from memspec.analysis.reading_layout import read_layout
from memspec.spec.spec_family_checks import check_reading


def _v(answer: dict, version: int) -> dict:
    return {**answer, "reading": {**answer["reading"], "version": version}}


#: A first-line gold as the numbered-entry families write it: an optional opener line ending
#: in a colon or comma, then no number before the entry's on the first line.
NUMBERED = {"scorer": "regex", "first": "whole", "reading": {"version": 5},
            "gold": r"(?is)^(?:[^\n\d]*[:,][ \t]*\n\s*)?(?:(?!\d)[^\n])*?"
                    r"(?:\bclause\s*|(?<![\d.,]))12(?!\d)"}
#: A verdict label on the first line.
VERDICT = {"scorer": "regex", "reading": {"version": 5},
           "gold": r"(?i)^(?:(?!\b(?:yes|no)\b[.!,:;]).)*?\bverdict\b[\W_]*No\b"}
#: A note of at least twelve words that opens with its entry.
NOTE = {"scorer": "regex", "first": "whole", "reading": {"version": 5},
        "gold": r"(?is)^(?=\s*(?:\S+\s+){11,}\S)\W*clause 12\b"}
CHOICE = _v(CHOICE_V2, 5)
CALL = _v(CALL_V2, 5)
#: A whole reply whose gold wants a call written positionally.
FETCH = {"scorer": "regex", "first": "whole",
         "gold": r"^(?:(?!fetch\(\s*['\"]http://)[\s\S])*?fetch\(\s*['\"]https://x\.example",
         "reading": {"version": 5, "signatures": ["fetch(url)"]}}
CLEAN = {"scorer": "regex", "first": "whole",
         "gold": r"^(?:(?!clean_folder\([^)]*dry_run\s*=\s*True)[\s\S])*?"
                 r"clean_folder\(\s*['\"]/p['\"](?![^)]*dry_run\s*=\s*True)[^)]*\)",
         "reading": {"version": 5, "signatures": ["clean_folder(path, older_than_days)"]}}


@pytest.mark.parametrize("response", [
    "Since you asked about the deposit:\n\n## Answer\n**Clause 12**",
    "Happy to help!\n\n- Her worry was about the deposit.\n- The pack covers it in **Clause 12**.",
    "Good question!\n\n| For | Clause |\n|---|---|\n| your sister's deposit | **12** |",
    "Of the 2 readings you relayed, the one she meant is covered here:\n\nClause 12 covers it.",
    "## Answer\nClause 12",
])
def test_layout_reads_as_prose_so_a_first_line_answer_is_found(response: str) -> None:
    assert read(NUMBERED, response).verdict == "right"
    assert read(_v(NUMBERED, 4), response).verdict == "wrong"


@pytest.mark.parametrize("response", [
    "- Clause 11\n- Clause 12",
    "| Clause |\n|---|\n| 11 |\n| 12 |",
    "## Clause 11\nClause 12 is the other one.",
    "The pack says:\n\nClause 11, then Clause 12.",
])
def test_layout_keeps_the_first_attempt_first(response: str) -> None:
    assert read(NUMBERED, response).verdict == "wrong"


def test_the_layout_step_reads_tables_labels_and_bullets() -> None:
    assert read_layout("| For | Study |\n|---|---|\n| a friend | **2** |") == \
        "For a friend; Study **2**"
    assert read_layout("**Verdict:**\nNo. It is over the limit.") == \
        "Verdict: No. It is over the limit."
    assert read_layout("- one\n- two.\n- three") == "one; two. three"
    assert read_layout("- one\n- two", keep_lists=True) == "- one\n- two"


@pytest.mark.parametrize(("response", "verdict"), [
    ("Let's check the numbers:\n\n**Verdict:** No. The order is over the limit.", "right"),
    ("Looking at the rules:\n\n**Verdict: No.** It ends at 7.", "right"),
    ("**Verdict:**\nNo.", "right"),
    ("No. Verdict: No.", "wrong"),
])
def test_a_lead_in_line_is_an_opener_and_a_label_reads_with_its_line(response: str,
                                                                     verdict: str) -> None:
    assert read(VERDICT, response).verdict == verdict


@pytest.mark.parametrize("response", [
    "Clause 11 looks close but isn't it. The one to show her is Clause 12.",
    "Clause 11 is the one before it; the one she asked about is Clause 12.",
    "Clause 11 looks similar, but it's Clause 12.",
    "Clause 11 isn't the one: Clause 12.",
])
def test_a_rejection_written_after_its_mention_sets_the_mention_aside(response: str) -> None:
    reading = read(NUMBERED, response)
    assert reading.verdict == "right", reading
    assert read(_v(NUMBERED, 4), response).verdict == "wrong"


@pytest.mark.parametrize("response", [
    "Clause 11 looks close.", "Clause 11 looks right.", "Clause 11 is the one.",
])
def test_a_mention_the_clause_does_not_turn_down_stays_the_attempt(response: str) -> None:
    assert read(NUMBERED, response).verdict == "wrong"


def test_a_choice_is_read_with_rejections_after_their_mention() -> None:
    reading = read(CHOICE, "The Harbour Room looks similar, but it's the Terrace Room.")
    assert (reading.verdict, reading.chosen) == ("right", 0)


def test_a_negation_after_the_answer_is_what_the_note_says() -> None:
    note = ("Clause 12. The landlord isn't responsible if your things are lost, so get "
            "insurance.")
    assert read(NOTE, note).verdict == "right"
    # Version 4 set "isn't responsible if ..." aside as a rejected mention: too short.
    assert read(_v(NOTE, 4), note).verdict == "wrong"
    # Before the answer, a rejection is still set aside, and a rejected note is no answer.
    assert read(NOTE, "Not Clause 11, but Clause 12: the landlord pays for repairs to the "
                      "boiler and the pipes, always.").verdict == "right"
    assert read(NOTE, "Not Clause 12. Clause 11: the landlord pays for repairs to the "
                      "boiler and the pipes.").verdict == "wrong"


def test_calls_keep_reading_every_rejection() -> None:
    # In a call or a choice, a negated call or option anywhere is no attempt.
    assert read(CALL, "copy_file('a', 'b') — never copy_file('b', 'a').").verdict == "right"
    assert read(CALL, "Let me do it. Not copy_file('b', 'a'), but copy_file('a', 'b')."
                ).verdict == "right"


@pytest.mark.parametrize(("answer", "response"), [
    (NOTE, "Happy to summarise, but which clause does your sister's question need?"),
    (CALL, "Just to check: should the copy overwrite an existing report.pdf in b/?"),
    (NUMBERED, "Glad to; which clause is hers?"),
])
def test_a_clause_that_asks_is_a_question_back(answer: dict, response: str) -> None:
    assert read(answer, response).verdict == "abstain"
    assert read(_v(answer, 4), response).verdict != "abstain"


def test_an_offer_after_the_answer_is_no_question_back() -> None:
    assert read(CALL, "copy_file('a', 'b'). Shall I also check the folder?").verdict == "right"


@pytest.mark.parametrize(("response", "verdict"), [
    ("fetch(url='https://x.example/a')", "right"),
    ("Fetching it: fetch(url=\"https://x.example/a\")", "right"),
    ("fetch(url='http://x.example/a')", "wrong"),
])
def test_keyword_calls_read_in_their_bound_form(response: str, verdict: str) -> None:
    assert read(FETCH, response).verdict == verdict
    assert read(_v(FETCH, 4), response).verdict == "wrong"


def test_keywords_a_signature_does_not_name_stay_keywords() -> None:
    assert read(CLEAN, "clean_folder(older_than_days=45, path='/p')").verdict == "right"
    # dry_run is not a declared positional parameter: bound, it stays dry_run=True.
    assert read(CLEAN, "clean_folder(older_than_days=45, path='/p', dry_run=True)"
                ).verdict == "wrong"


def test_signatures_are_checked_and_need_version_5() -> None:
    problems: list[str] = []
    check_reading({"version": 5, "signatures": ["fetch(url)", "fetch(url='x')"]}, ("r",),
                  lambda message, where: problems.append(f"{where}: {message}"))
    assert problems == ["('r', 'signatures', 1): signature \"fetch(url='x')\" is not a call "
                        "of parameter names, such as copy_file(destination, source)"]
    problems.clear()
    check_reading({"version": 4, "signatures": ["fetch(url)"]}, ("r",),
                  lambda message, where: problems.append(message))
    assert problems == ["reading signatures are read from reading version 5 on"]


@pytest.mark.parametrize("opening", ["Sure! Here it is:", "Of course! Here's what I found:",
                                     "Happy to help. Below:"])
def test_the_rest_of_a_line_an_opener_began_is_a_lead_in_however_short(opening: str) -> None:
    # "Here it is:" alone is three words, which on a line of its own would be a label read
    # with the line under it; after "Sure!" it is what is left of a lead-in line.
    response = f"{opening}\n\nVerdict: No. The order is over the threshold."
    assert read(VERDICT, response).verdict == "right"
    assert read(VERDICT, "Here it is:\nVerdict: No.").verdict == "right"

"""The answer reading stage: replies written the way chat models write them are read as the
answer they give; hedges and questions abstain whatever they name; two options or nothing
placed is unscorable; rejected mentions are not attempts; calls are parsed by Python."""

from __future__ import annotations

import pytest

from memspec.analysis.reading import read
from memspec.analysis.score_outcome import outcome
from memspec.analysis.scoring import answer_problems, is_correct

OPTIONS = ["Terrace Room", "Harbour Room", "Garden Room"]
CHOICE = {"scorer": "choice", "options": OPTIONS, "gold": "Terrace Room", "gold_index": 0,
          "distractors": {"stale": "Harbour Room"}, "reading": {"version": 2}}
CALL = {"scorer": "regex", "first": "call",
        "gold": r"^copy_file\(\s*'a'\s*,\s*'b'\s*\)",
        "distractors": {"habit": "copy_file('b', 'a')"},
        "reading": {"version": 2, "signature": "copy_file(destination, source)"}}
LINE = {"scorer": "regex", "gold": r"^Clause 4\b", "reading": {"version": 2}}


@pytest.mark.parametrize("response", [
    "A", "A.", "**A**", "(A)", "A)", "*A*", "`A`", "Answer: A", "ANSWER: A", "answer: A",
    "option A", "Option A: Terrace Room", "The right one is (A).", "Terrace Room",
    "terrace room", "A) Terrace Room", "**A) Terrace Room**",
    "The one with the terrace is the right booking (option A).",
    "Good question! The entry copied from my diary is **A**.",
    "Sure! Here's my pick:\n\n- **A** — the Terrace Room\n\nHope this helps!",
    "Let me think. The note is from last year.\n\nANSWER: A",
    "## Answer\n\n> A) Terrace Room", "I'd go with A.", "Not B, but A.", "A, not B.",
    "Great — A.", "TL;DR: A", "In short: Terrace Room.", "That's A.",
    "Rather than the Harbour Room, the Terrace Room.",
])
def test_a_choice_is_read_in_every_form_chat_models_write(response: str) -> None:
    reading = read(CHOICE, response)
    assert reading.verdict == "right", reading


@pytest.mark.parametrize("response", [
    "B", "**B**", "Answer: B", "(B) Harbour Room", "Harbour Room", "I'd pick B.",
    "B, not A.", "Not A, but B.", "Instead of the Terrace Room, the Harbour Room.",
    "The Harbour Room, as usual.",
])
def test_the_stale_option_is_wrong_and_acts_on_the_distractor(response: str) -> None:
    found = outcome({"answer": CHOICE, "family": "f", "group": 0}, response)
    assert (found.answered, found.correct, found.relied) == (True, False, True)


@pytest.mark.parametrize("response", [
    "Do you mean Terrace Room or Harbour Room? Tell me which and I'll send it.",
    "Do you mean the Terrace Room or the Harbour Room?",
    "A or B?", "Terrace Room or Harbour Room?",
    "Could you confirm which room you mean? A is the Terrace Room.",
    "Which one do you want, A or B?",
    "I'm not sure — maybe A.", "Probably A.", "It's either A or B.",
    "A, probably, but I can't be certain.", "My best guess is A.",
    "Sure! It could be either the Terrace Room or the Harbour Room.",
    "I need more information before I choose. A might be right.",
    "Hard to say; A looks likely.", "I don't know.", "",
    "**Not sure.** Perhaps (A).",
])
def test_a_hedge_or_a_question_abstains_even_naming_the_gold_first(response: str) -> None:
    reading = read(CHOICE, response)
    assert reading.verdict == "abstain", reading
    found = outcome({"answer": CHOICE, "family": "f", "group": 0}, response)
    assert not found.answered and found.correct is False


@pytest.mark.parametrize("response", [
    "A) Harbour Room",  # a letter and another option's text
    "A. Or B.", "The answer is A. Option B would also work.",
    "(A) and (C) are both fine.", "Hmm.", "The room with the view.",
])
def test_two_options_named_or_nothing_placed_is_unscorable(response: str) -> None:
    reading = read(CHOICE, response)
    assert reading.verdict == "unscorable", reading
    assert is_correct(CHOICE, response) is None
    found = outcome({"answer": CHOICE, "family": "f", "group": 0}, response)
    assert found.unscorable and found.answered and found.correct is None


@pytest.mark.parametrize("response", [
    "copy_file('a', 'b')", "```python\ncopy_file(\"a\", \"b\")\n```",
    "copy_file(source='b', destination='a')", "copy_file('a', source='b')",
    "copy_file( 'a' ,'b' )", "Sure! Running `copy_file('a', 'b')` now.",
    "I'll call it (destination first, source second): copy_file('a', 'b')",
    "Not copy_file('b', 'a'), but copy_file('a', 'b')",
    "Instead of copy_file('b', 'a'), I'll use copy_file('a', 'b').",
    "Rather than calling copy_file('b', 'a'), copy_file('a', 'b').",
    "Copy the file(s) with copy_file('a', 'b').",
])
def test_a_call_is_read_by_python_with_keywords_bound(response: str) -> None:
    assert read(CALL, response).verdict == "right", read(CALL, response)


@pytest.mark.parametrize("response", [
    "copy_file('b', 'a')", "copy_file(source='a', destination='b')",
    "not_copy_file('a', 'b')", "call (destination first, source second)",
    "copy_file('b', 'a') -- no wait, copy_file('a', 'b')",
    "Instead of copy_file('a', 'b'), copy_file('b', 'a').",
])
def test_a_wrong_call_or_prose_is_not_the_right_call(response: str) -> None:
    assert read(CALL, response).verdict == "wrong", read(CALL, response)


def test_prose_that_looks_like_a_call_is_no_call() -> None:
    reading = read(CALL, "call (destination first, source second)")
    assert reading.attempt == "" and reading.verdict == "wrong"


@pytest.mark.parametrize("response", [
    "Clause 4", "**Clause 4**", "That would be Clause 4.", "In short: Clause 4.",
    "Sure! Clause 4.", "# Clause 4", "- Clause 4", "Not Clause 2, but Clause 4.",
    "Good question! Clause 4. Hope this helps!",
])
def test_a_line_answer_is_read_past_markdown_courtesies_and_rejections(response: str) -> None:
    assert read(LINE, response).verdict == "right", read(LINE, response)


@pytest.mark.parametrize("response", ["Clause 2", "Clause 2, not Clause 4."])
def test_a_wrong_line_stays_wrong(response: str) -> None:
    assert read(LINE, response).verdict == "wrong"


def test_a_paradigm_where_asking_is_an_answer_reads_the_question() -> None:
    asking = {"scorer": "regex", "first": "whole", "gold": r"^[^?]*\?",
              "reading": {"version": 2, "questions": "answer"}}
    assert read(asking, "Do you want Monday or Tuesday?").verdict == "right"
    assert read({**asking, "reading": {"version": 2}},
                "Do you want Monday or Tuesday?").verdict == "abstain"


def test_declared_abstain_and_opener_forms_are_read() -> None:
    declared = {**LINE, "reading": {"version": 2, "openers": [r"per the memo[,:]"],
                                    "abstain": [r"^let me check"]}}
    assert read(declared, "Per the memo, Clause 4").verdict == "right"
    assert read(declared, "Let me check the file first.").verdict == "abstain"


def test_one_reply_read_against_many_answers_is_read_by_each_answer_s_own_settings() -> None:
    # What a reply is made into is kept between readings (the audit reads one reply against
    # many items' answers): each answer still gets its own gold, options, openers, abstention
    # patterns and version, and its own list of steps.
    reply = "Per the memo, Clause 4 (not Clause 5)."
    plain = read(LINE, reply)
    declared = {**LINE, "reading": {"version": 2, "openers": [r"per the memo[,:]"]}}
    assert [read(declared, reply).verdict, plain.verdict, read(declared, reply).verdict] == [
        "right", "wrong", "right"]
    assert read({**LINE, "gold": r"^Clause 5\b"}, "Clause 4 (not Clause 5).").verdict == "wrong"
    assert read({**LINE, "gold": r"^Clause 5\b"}, "Clause 5.").verdict == "right"
    refusing = {**LINE, "reading": {"version": 2, "abstain": [r"^clause"]}}
    assert read(refusing, "Clause 4.").verdict == "abstain"
    assert read(LINE, "Clause 4.").verdict == "right"
    first, second = read(CHOICE, "**A**"), read(CHOICE, "**A**")
    assert first.steps == second.steps and len(first.steps) == 4
    other = {**CHOICE, "options": list(reversed(OPTIONS)), "gold_index": 2}
    assert read(other, "Garden Room").verdict == "wrong"
    assert read(CHOICE, "Garden Room").verdict == "wrong"
    assert read(other, "Terrace Room").verdict == "right"


def test_the_gold_must_be_right_under_the_reading() -> None:
    broken = {**CHOICE, "distractors": {"same": "Terrace Room"}}
    assert answer_problems(broken)
    assert answer_problems(CHOICE) == []


def test_without_a_declared_reading_the_old_scoring_holds() -> None:
    old = {key: value for key, value in CHOICE.items() if key != "reading"}
    # The old reading takes the first option text it finds, even inside a question.
    assert is_correct(old, "Do you mean Terrace Room or Harbour Room?") is True
    assert is_correct(CHOICE, "Do you mean Terrace Room or Harbour Room?") is False


def test_only_replies_the_reader_cannot_place_go_to_the_judge() -> None:
    from memspec.analysis.judge import build_requests
    routed = {**CHOICE, "rubric": "Which room does the reply send?",
              "reading": {"version": 2, "unplaced": "judge"}}
    instances = [{"id": f"i{n}", "answer": routed, "family": "f", "group": n, "axes": {},
                  "phases": [{"name": "task", "messages": [{"role": "user",
                                                             "content": "Which room?"}]}]}
                 for n in range(3)]
    replies = {"i0": "A", "i1": "(A) and (B) both work.", "i2": "The room with the view."}
    requests, unblind = build_requests(instances, replies, 0)
    assert sorted(u["response"] for u in unblind.values()) == ["i1", "i2"]
    found = outcome(instances[1], replies["i1"])
    assert found.unscorable and found.correct is None


def test_a_whole_reply_pattern_is_matched_from_the_start_of_the_reply() -> None:
    # "Not a list": with (?m), searched, the pattern could start at the paragraph that
    # follows a numbered step; read, it is tried at the reply's start only.
    prose = {"scorer": "regex", "first": "whole",
             "gold": r"(?m)^(?!.*^\s*\d+[.)]\s)(?:\S+\s+){5,}",
             "reading": {"version": 2, "keep_lists": True}}
    listed = "1. Drill the hole.\nThen put the plug in, drive the screw and hang it up."
    assert read(prose, listed).verdict == "wrong"
    old = {key: value for key, value in prose.items() if key != "reading"}
    assert is_correct(old, listed) is True  # the frozen reading: the second line matches
    assert read(prose, "Drill the hole, put the plug in and drive the screw.").verdict == \
        "right"


def test_a_proposal_the_reply_acts_on_is_not_asking_first() -> None:
    acts = {"scorer": "regex", "first": "whole", "gold": r"^(?:(?!schedule\()[^?])*?schedule\(",
            "reading": {"version": 2, "questions": "answer"}}
    asks = {**acts, "gold": r"^(?:(?!schedule\()[^?])*\?"}
    booked = "Sure! How about Friday at 12:30? schedule('interview', 'Friday', '12:30')"
    assert read(acts, booked).verdict == "right"
    assert read(asks, booked).verdict == "wrong"
    assert read(asks, "How about Friday at 12:30?").verdict == "right"
    old = {key: value for key, value in acts.items() if key != "reading"}
    assert is_correct(old, booked) is False  # the frozen reading counted it as asking


def test_version_3_reads_a_rejection_word_inside_a_quoted_reply_as_its_wording() -> None:
    plain = {"scorer": "regex", "first": "call", "gold": r"^send_reply\((?![\s\S]*\bDNS\b)",
             "reading": {"version": 3}}
    reply = ('send_reply("The site\'s proof of identity has run out, so browsers can no longer '
             'vouch for it.")')
    assert read(plain, reply).verdict == "right", read(plain, reply)
    # Version 2, which releases frozen with it keep, set the rest of the call aside.
    assert read({**plain, "reading": {"version": 2}}, reply).verdict == "wrong"
    # Outside the quotes a cue still rejects what follows it, in version 3 too.
    rejected = 'Not send_reply("The DNS is propagating."), but send_reply("It takes a day.")'
    assert read(plain, rejected).verdict == "right", read(plain, rejected)
    assert read(plain, 'send_reply("The DNS is propagating."), not send_reply("It takes a day.")'
                ).verdict == "wrong"


def test_a_family_that_measures_the_opening_label_keeps_it() -> None:
    # "In short:" is an opener the reading sets aside; a family whose preference is that
    # very label declares keep_openers, and the label stays for its gold to see.
    label = {"scorer": "regex", "first": "whole", "gold": r"(?i)^(?:in short|tl;dr)\s*:",
             "reading": {"version": 2}}
    assert read(label, "In short: it bends light.").verdict == "wrong"
    kept = {**label, "reading": {"version": 2, "keep_openers": True}}
    assert read(kept, "In short: it bends light.").verdict == "right"
    assert read(kept, "It bends light. Hope this helps!").verdict == "wrong"
    assert read(kept, "In short: it bends light.\n\nHope this helps!").attempt == \
        "In short: it bends light."


def test_a_family_whose_replies_quote_not_keeps_rejected_mentions() -> None:
    # The quoted clause's own "not" is no rejection: set aside, it would cut the quotation.
    quote = {"scorer": "regex", "first": "whole",
             "gold": r'^"The Tenant shall not keep any animal', "reading": {"version": 2}}
    reply = '"The Tenant shall not keep any animal on the Premises." So no pets.'
    assert read(quote, reply).verdict == "wrong"
    kept = {**quote, "reading": {"version": 2, "keep_rejected": True}}
    assert read(kept, reply).verdict == "right"

"""The answer reading stage: what a response answers, read before any scorer decides.

Declared by a spec (``reading: {version: 2, ...}`` in a paradigm or a family's answer, copied
into each instance's answer); an instance without it is scored as before, by
``analysis.scoring`` alone. The steps, each shown by ``memspec check-answer``:

1. markdown set aside (emphasis, inline code, fences, headings, quotes, bullets);
2. openers and sign-offs set aside ("Sure!", "In short:", "Hope this helps");
3. abstentions: a first line that declines, or a clarifying question, a request for more
   information or a hedge up to the sentence that holds the answer (never right, whatever
   option it names);
4. rejected mentions set aside ("not X", "rather than X", "instead of X");
5. the first attempt: the option named (``choices``), the first call Python parses
   (``calls``), the first line or the whole reply;
6. the verdict: right, wrong, abstain or unscorable (an answer that names two options or
   cannot be placed: reported apart, never guessed)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..core import safe_regex
from .reading_calls import calls
from .reading_choices import ChoiceReading, read_choice
from .reading_clauses import sentences, set_aside_rejected
from .reading_courtesies import set_aside_courtesies
from .reading_either import set_aside_either
from .reading_layout import read_layout
from .reading_markdown import set_aside
from .reading_phrases import HEDGES, QUESTIONS, alternation
from .reading_v5 import QUESTION_CLAUSES, bound_calls, set_aside_rejected_v5
from .score_outcome import DEFAULT_ABSTAIN_PATTERNS
from .scoring import LIST_MARKER, attempt_is_right, canonical_text, first_mode, gold_as_read

#: The reading versions a spec may declare (1 is the reading without this stage).
READING_VERSIONS = (2, 3, 4, 5)
_QUESTION = alternation(QUESTIONS)
_HEDGE = alternation(HEDGES)
#: How many texts each step keeps what it made of (its own answer, by the text and the
#: settings it reads): the audit reads one response against the answers of many items, and
#: a score reads the same few replies (a policy's constant answer) again and again. Each
#: step is a function of its text and settings alone, so a kept result is the result.
_KEPT = 1024


@dataclass(frozen=True)
class Reading:
    """What the reading made of one response: its steps, the first attempt, the verdict."""

    steps: tuple[tuple[str, str], ...]
    attempt: str
    verdict: str  # right, wrong, abstain or unscorable
    why: str
    chosen: int | None = None  # the option named, for a choice answer

    @property
    def correct(self) -> bool | None:
        """Right or not; None where the reply is unscorable (no verdict to give)."""
        return None if self.verdict == "unscorable" else self.verdict == "right"


def reads(answer: Mapping[str, Any]) -> bool:
    """Whether ``answer`` declares the reading stage."""
    return bool(answer.get("reading")) and answer["scorer"] != "judge"


def _abstains(answer: Mapping[str, Any], body: str, extra: Sequence[str]) -> str | None:
    """Why the body is an abstention by the declined-first-line patterns, or None."""
    config = answer["reading"]
    head = body.splitlines()[0] if body.strip() else ""
    if not head:
        return "nothing is left once markdown and courtesies are set aside"
    return _declines(head, (*DEFAULT_ABSTAIN_PATTERNS, *answer.get("abstain", ()),
                            *config.get("abstain", ()), *extra))


@lru_cache(maxsize=_KEPT)
def _declines(head: str, patterns: tuple[str, ...]) -> str | None:
    """Why a first line declines to answer by the first of ``patterns`` it matches, or
    None."""
    for pattern in patterns:
        if safe_regex.search(pattern, head, ignore_case=True):
            return f"its first line declines to answer ({pattern!r})"
    return None


def _rejected(answer: Mapping[str, Any], text: str) -> tuple[str, list[str]]:
    """Step 4 as the answer's reading version does it (version 3 leaves the wording inside
    quoted strings and brackets alone; version 5 also reads rejections written after their
    mention and, in a line or whole answer, only those before the first sentence that
    rejects nothing)."""
    if answer["reading"]["version"] >= 5:
        kept, removed = set_aside_rejected_v5(
            text, answer["scorer"] != "choice" and first_mode(answer) != "call")
        return kept, list(removed)
    kept, removed = _set_aside_rejected(text, answer["reading"]["version"] < 3)
    return kept, list(removed)


@lru_cache(maxsize=_KEPT)
def _set_aside_rejected(text: str, inner_cues: bool) -> tuple[str, tuple[str, ...]]:
    kept, removed = set_aside_rejected(text, inner_cues=inner_cues)
    return kept, tuple(removed)


@lru_cache(maxsize=_KEPT)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(sentences(text))


@lru_cache(maxsize=_KEPT)
def _choice(text: str, options: tuple[str, ...]) -> ChoiceReading:
    return read_choice(text, list(options))


def _holds_attempt(answer: Mapping[str, Any], sentence: str) -> bool:
    """Whether a sentence commits to an answer (a choice's letter, a call)."""
    kept, _ = _rejected(answer, sentence)
    if answer["scorer"] == "choice":
        # Only a letter named as the answer commits: options named by their text in a
        # sentence ("My note says X, the directory Y.") may still lead to a question.
        return bool(_choice(kept, tuple(answer["options"])).labelled)
    return bool(calls(kept))


def _asks_or_hedges(answer: Mapping[str, Any], body: str) -> str | None:
    """The sentence that asks back or hedges, up to the one that holds the answer (for a
    line or whole answer: a hedge in its first sentence, a question anywhere in its first
    line); None."""
    if answer["reading"].get("questions") == "answer":
        return None  # asking is an answer of its own in this paradigm
    # Version 5: a clause that asks is a question wherever in its sentence it starts.
    clauses = answer["reading"]["version"] >= 5

    def asks(sentence: str) -> bool:
        return bool(_QUESTION.search(sentence)
                    or (clauses and QUESTION_CLAUSES.search(sentence)))

    if answer["scorer"] != "choice" and first_mode(answer) != "call":
        first_line = _sentences(body.splitlines()[0])
        for index, sentence in enumerate(first_line):
            if asks(sentence) or (index == 0 and _HEDGE.search(sentence)):
                return sentence
        return None
    for sentence in _sentences(body):
        if asks(sentence) or _HEDGE.search(sentence):
            return sentence
        if _holds_attempt(answer, sentence):
            return None
    return None


def _decides(answer: Mapping[str, Any], after: str) -> bool:
    """Whether the reply after a neutral "either X or Y" places an answer of its own: one
    option (a choice), a call, or words on the rest of its line (a line or a whole reply)."""
    if answer["scorer"] == "choice":
        return read_choice(_rejected(answer, after)[0], answer["options"]).chosen is not None
    if first_mode(answer) == "call":
        return bool(calls(after))
    return bool(re.search(r"\w", after.split("\n", 1)[0]))


def _line(text: str) -> str:
    first = text.splitlines()[0] if text.strip() else ""
    return LIST_MARKER.sub("", first).strip()


def attempt_of(answer: Mapping[str, Any], text: str) -> tuple[str, list[tuple[str, str]]]:
    """The first attempt in ``text`` (already set aside and without rejected mentions) by
    the answer's ``first`` mode, and the candidates seen."""
    mode = first_mode(answer)
    if mode == "call":
        found = calls(text, answer["reading"].get("signature"))
        shown = [("calls found", "; ".join(f"{c.text} -> {c.canonical}" for c in found)
                  or "none")]
        return (found[0].canonical if found else ""), shown
    if mode == "line":
        return _line(text), []
    return text.strip(), []


def _gold_call(answer: Mapping[str, Any]) -> str:
    gold = gold_as_read(answer)
    if first_mode(answer) == "call":
        found = calls(gold, answer["reading"].get("signature"))
        if found:
            return found[0].canonical
    return gold


def prepared(answer: Mapping[str, Any], response: str) -> tuple[str, list[tuple[str, str]]]:
    """Steps 1 and 2: the response with markdown and courtesies set aside."""
    config = answer["reading"]
    body, steps = _prepared(response, bool(config.get("keep_lists")),
                            tuple(config.get("openers", ())), not config.get("keep_openers"),
                            config["version"] >= 5)
    return body, list(steps)


@lru_cache(maxsize=_KEPT)
def _prepared(response: str, keep_lists: bool, declared: tuple[str, ...], openers: bool,
              layout: bool = False) -> tuple[str, tuple[tuple[str, str], ...]]:
    # Version 5 reads tables, headings, labels and bullet runs as prose lines first.
    text = set_aside(read_layout(response, keep_lists) if layout else response,
                     keep_lists=keep_lists)
    # keep_openers: the lead-in a reply opens with ("In short:") is what the family measures.
    body, courtesies = set_aside_courtesies(text, declared, openers=openers, lead_ins=layout)
    return body, (("markdown set aside", text or "(empty)"),
                  ("openers and sign-offs set aside", " | ".join(courtesies) or "none"))


def read(answer: Mapping[str, Any], response: str, extra_abstain: Sequence[str] = ()
         ) -> Reading:
    """What ``response`` answers to ``answer`` (which declares the reading), step by step."""
    body, steps = prepared(answer, response)
    declined = _abstains(answer, body, extra_abstain)
    if declined:
        return Reading(tuple(steps), "", "abstain", declined)
    if answer["reading"]["version"] >= 4:
        # Version 4: "either X or Y" hedges only where no decision follows it.
        body, pairs, open_pair = set_aside_either(body, lambda after: _decides(answer, after),
                                                  answer.get("options") or ())
        if open_pair:
            return Reading(tuple(steps), "", "abstain", f"it leaves the answer open between "
                           f"two: {open_pair!r}")
        steps.append(("neutral either ... or set aside", " | ".join(pairs) or "none"))
    asked = _asks_or_hedges(answer, body)
    if asked:
        return Reading(tuple(steps), "", "abstain", f"it asks back or hedges before it "
                       f"answers: {asked!r}")
    # keep_rejected: the replies quote text whose "not" belongs to the quotation.
    kept, rejected = ((body, []) if answer["reading"].get("keep_rejected")
                      else _rejected(answer, body))
    steps.append(("rejected mentions", " | ".join(rejected) or "none"))
    if answer["scorer"] == "choice":
        choice = _choice(kept, tuple(answer["options"]))
        steps.append(("options labelled", ", ".join(chr(65 + i) for i in choice.labelled)
                      or "none"))
        if choice.chosen is None:
            return Reading(tuple(steps), "", "unscorable", choice.why)
        gold = answer["gold_index"]
        verdict = "right" if choice.chosen == gold else "wrong"
        taken = f"{chr(65 + choice.chosen)}) {answer['options'][choice.chosen]}"
        return Reading(tuple(steps), taken, verdict, f"{choice.why}; the right option is "
                       f"{chr(65 + gold)}", choice.chosen)
    if answer["reading"]["version"] >= 5 and first_mode(answer) != "call":
        # Calls written with keywords read in their bound form, as a gold writes them.
        kept = bound_calls(kept, tuple(answer["reading"].get("signatures", ())))
    attempt, seen = attempt_of(answer, kept)
    steps.extend(seen)
    if not attempt:
        return Reading(tuple(steps), "", "wrong", f"no {first_mode(answer)} to take in it")
    # A whole reply's pattern is matched from its start: searched, a pattern with (?m) could
    # begin at any line ("not a list" tested from the paragraph after a list).
    right = attempt_is_right(answer, attempt, _gold_call(answer),
                             anchored=first_mode(answer) == "whole")
    return Reading(tuple(steps), attempt, "right" if right else "wrong",
                   ("the gold accepts the first attempt" if right else
                    "the gold does not accept the first attempt"))


def acts_on_distractor(answer: Mapping[str, Any], reading: Reading) -> bool | None:
    """Whether the read first attempt acts on a declared distractor (None: none declared,
    or nothing was read)."""
    distractors = list(answer.get("distractors", {}).values())
    if not distractors or reading.verdict in ("abstain", "unscorable"):
        return None if not distractors or reading.verdict == "unscorable" else False
    if answer["scorer"] == "choice":
        return reading.chosen is not None and answer["options"][reading.chosen] in distractors
    unordered = bool(answer.get("unordered_args"))
    mine = canonical_text(reading.attempt, unordered)
    for distractor in distractors:
        body, _ = prepared(answer, distractor)
        theirs, _ = attempt_of(answer, _rejected(answer, body)[0])
        if mine == canonical_text(theirs, unordered):
            return True
    return False


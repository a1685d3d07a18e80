"""What the first-attempt scorer makes of one response, said in words: the part it took, the
verdict and why. ``memspec check-answer`` prints it; a family's ``answer.accepts`` and
``answer.rejects`` examples are held to it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..analysis.reading import acts_on_distractor as read_acts
from ..analysis.reading import read, reads
from ..analysis.score_outcome import acts_on_distractor, is_abstention
from ..analysis.scoring import canonical_text, first_attempt, first_choice, first_mode, is_correct

#: What each ``first`` mode takes of a response, for the explanation.
_MODES = {"line": "the first non-blank line", "call": "the first function call",
          "label": "the first option named", "whole": "the whole response"}


@dataclass(frozen=True)
class Verdict:
    """The scorer's reading of one response."""

    taken: str  # what the first attempt is, as the scorer reads it
    verdict: str  # correct, wrong, abstains, unscorable or judged
    why: str
    relied: bool | None = None  # whether it acts on a declared distractor (None: none declared)
    steps: tuple[tuple[str, str], ...] = ()  # the reading stage's steps, where declared

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"

    def lines(self) -> list[str]:
        """The verdict as ``memspec check-answer`` prints it."""
        out = [f"{name}: {text!r}" if "\n" in text else f"{name}: {text}"
               for name, text in self.steps]
        out += [f"took: {self.taken!r}", f"verdict: {self.verdict}", f"why: {self.why}"]
        if self.relied is not None:
            out.append(f"acts on a distractor: {'yes' if self.relied else 'no'}")
        return out


def explain(answer: Mapping[str, Any], response: str) -> Verdict:
    """How ``answer``'s scorer reads ``response``, first attempt only (as ``memspec score``)."""
    scorer = answer["scorer"]
    if scorer == "judge":
        return Verdict(response.strip(), "judged",
                       "a judge scores this answer against its rubric; no program decides")
    if reads(answer):
        return _read_verdict(answer, response)
    if is_abstention(answer, response):
        return Verdict(response.strip().splitlines()[0] if response.strip() else "",
                       "abstains", "its first line declines to answer (an abstention is "
                       "its own outcome, scored wrong)", False if answer.get("distractors")
                       else None)
    relied = acts_on_distractor(answer, response)
    correct = is_correct(answer, response)
    verdict = "correct" if correct else "wrong"
    mode = first_mode(answer)
    if scorer == "choice":
        options = answer["options"]
        chosen = first_choice(response, options)
        right = answer["gold_index"]
        taken = "" if chosen is None else f"{chr(65 + chosen)}) {options[chosen]}"
        if chosen is None:
            why = "no option label leads it and no option's text appears in it"
        else:
            why = (f"{_MODES[mode]} is {chr(65 + chosen)}; the right option is "
                   f"{chr(65 + right)}) {options[right]}")
        return Verdict(taken, verdict, why, relied)
    attempt = first_attempt(answer, response)
    taken_from = f"{_MODES[mode]} ({mode})"
    if not attempt:
        return Verdict("", verdict, f"nothing to take: the response has no {_MODES[mode]}",
                       relied)
    if scorer == "exact":
        why = (f"{taken_from}, unquoted, " +
               ("equals the gold" if correct else f"differs from the gold {answer['gold']!r}"))
    elif scorer == "regex":
        how = "from its start" if mode == "call" else "anywhere in it"
        why = (f"the gold pattern {answer['gold']!r} " + ("matches" if correct else
               "does not match") + f" {taken_from}, {how}")
    else:
        unordered = bool(answer.get("unordered_args"))
        mine = canonical_text(attempt, unordered)
        gold = canonical_text(answer["gold"], unordered)
        why = (f"{taken_from} in canonical form is {mine!r}; the gold's is {gold!r}"
               + (" (arguments in any order)" if unordered else ""))
    return Verdict(attempt, verdict, why, relied)


def _read_verdict(answer: Mapping[str, Any], response: str) -> Verdict:
    """The verdict of the declared reading stage, with its steps."""
    reading = read(answer, response)
    words = {"right": "correct", "abstain": "abstains"}
    relied = read_acts(answer, reading)
    return Verdict(reading.attempt, words.get(reading.verdict, reading.verdict), reading.why,
                   relied, reading.steps)


def applies(when: Mapping[str, Any] | None, variant: Mapping[str, str]) -> bool:
    """Whether an example with ``when`` (axis -> value or values) applies to a variant."""
    for axis, wanted in (when or {}).items():
        values = wanted if isinstance(wanted, list) else [wanted]
        if variant.get(axis) not in values:
            return False
    return True


def example_problem(answer: Mapping[str, Any], response: str, expected: str) -> str | None:
    """Why an example response fails its declaration (``accepts``: it must score correct;
    ``rejects``: it must not), or None."""
    verdict = explain(answer, response)
    if (expected == "accepts") == verdict.correct:
        return None
    # Newlines of a multi-line example would break the one-line error.
    shown = re.sub(r"\s*\n\s*", " ⏎ ", response.strip())
    return (f"the scorer {'rejects' if expected == 'accepts' else 'accepts'} {shown!r}: "
            f"took {verdict.taken!r}, {verdict.verdict} ({verdict.why})")

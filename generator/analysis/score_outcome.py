"""How one response fares on one instance: answered or abstained, correct, acting on a
declared distractor (the per-item outcome every statistic of ``memspec score`` is built on)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import safe_regex
from .scoring import canonical_text, first_attempt, first_choice, first_line, is_correct

#: Responses that decline to answer, matched against the first line of a response. A
#: paradigm or family adds its own with ``answer.abstain``; ``score --abstain-pattern`` too.
DEFAULT_ABSTAIN_PATTERNS = (
    r"^\s*$",
    r"^\W*(?:sorry,?\s*)?I (?:do not|don't|dont) know\b",
    r"^\W*(?:sorry,?\s*)?I(?:'m| am) not (?:sure|certain)\b",
    r"^\W*(?:sorry,?\s*)?I can(?:not|'t) (?:answer|help|determine|tell|say|recall|remember)\b",
    r"^\W*(?:I have )?(?:no|not enough) (?:idea|information)\b",
    r"^\W*(?:I am |I'm )?unable to (?:answer|determine|tell|recall)\b",
    r"^\W*I (?:won't|will not|refuse to) (?:answer|help|choose|say)\b",
    # "I don't have enough information to answer.", "I do not have any record of that."
    r"^\W*(?:sorry,?\s*)?I (?:do not|don't|dont) have (?:enough|sufficient|any|the) "
    r"(?:information|context|record|memory|details)\b",
    # "I have no record of this conversation.", "I have no memory of that."
    r"^\W*(?:sorry,?\s*)?I have no (?:record|memory|recollection|information|way)\b",
    r"^\W*(?:sorry,?\s*)?I (?:do not|don't|dont|can(?:not|'t)) (?:remember|recall)\b",
    r"^\W*(?:there is|there's) (?:not enough|no|insufficient) "
    r"(?:information|record|context)\b",
)


@dataclass(frozen=True)
class Outcome:
    """How one response fared on one instance."""

    instance: Mapping[str, Any]
    response: str | None
    answered: bool
    correct: bool | None  # None: only a judge can say
    relied: bool | None  # None: the answer declares no distractor
    judge: float | None = None
    judge_norm: float | None = None
    #: Under a declared reading: the reply names two options or cannot be placed; neither
    #: right nor wrong, counted apart (and sent to a judge where the answer says so).
    unscorable: bool = False

    @property
    def unit(self) -> tuple[str, int]:
        """The group this instance belongs to: the unit of every statistic."""
        return (self.instance["family"], self.instance["group"])


def is_abstention(answer: Mapping[str, Any], response: str,
                  extra: Sequence[str] = ()) -> bool:
    """Whether the first line of ``response`` begins by declining to answer (an answer that
    mentions doubt later, e.g. "C) Terrace. I don't know why the note says B", is an answer);
    under a declared reading, whether the reading finds an abstention."""
    if answer.get("reading") and answer["scorer"] != "judge":
        from .reading import read  # the reading stage builds on this module
        return read(answer, response, extra).verdict == "abstain"
    head = first_line(response) if response.strip() else ""
    patterns = (*DEFAULT_ABSTAIN_PATTERNS, *answer.get("abstain", ()), *extra)
    return any(safe_regex.search(p, head, ignore_case=True) for p in _abstain_searches(patterns))


@functools.lru_cache(maxsize=256)
def _abstain_searches(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """The patterns as one alternation, searched once per response rather than once per
    pattern, where none has a group of its own (a backreference or a named group would change
    meaning in one); each under the regex time limit either way."""
    if any(safe_regex.compiled(p, True).groups for p in patterns):
        return patterns
    return ("|".join(f"(?:{p})" for p in patterns),)


def acts_on_distractor(answer: Mapping[str, Any], response: str) -> bool | None:
    """Whether the first attempt acts on a declared distractor (e.g. the stale value)."""
    distractors = list(answer.get("distractors", {}).values())
    if not distractors or answer["scorer"] == "judge":
        return None
    if answer.get("reading"):
        from .reading import acts_on_distractor as read_acts
        from .reading import read
        return read_acts(answer, read(answer, response))
    if answer["scorer"] == "choice":
        chosen = first_choice(response, answer["options"])
        return chosen is not None and answer["options"][chosen] in distractors
    unordered = bool(answer.get("unordered_args"))
    attempt = canonical_text(first_attempt(answer, response), unordered)
    return any(attempt == canonical_text(first_attempt(answer, d), unordered)
               for d in distractors)


def outcome(instance: Mapping[str, Any], response: str | None,
            extra_abstain: Sequence[str] = ()) -> Outcome:
    """Score one response (None: missing) on one instance, first attempt only."""
    answer = instance["answer"]
    if response is not None and answer.get("reading") and answer["scorer"] != "judge":
        return _read_outcome(instance, response, extra_abstain)
    if response is None or is_abstention(answer, response, extra_abstain):
        # Not answered: its own outcome. It is not correct (so it counts against accuracy
        # over all items), and it neither relies on a distractor nor avoids one.
        programmatic = answer["scorer"] != "judge"
        return Outcome(instance, response, False, False if programmatic else None, None)
    return Outcome(instance, response, True, is_correct(answer, response),
                   acts_on_distractor(answer, response))


def _read_outcome(instance: Mapping[str, Any], response: str,
                  extra_abstain: Sequence[str]) -> Outcome:
    """The outcome of a response to an instance whose answer declares the reading stage."""
    from .reading import acts_on_distractor as read_acts
    from .reading import read

    answer = instance["answer"]
    reading = read(answer, response, extra_abstain)
    if reading.verdict == "abstain":
        return Outcome(instance, response, False, False, None)
    if reading.verdict == "unscorable":
        return Outcome(instance, response, True, None, None, unscorable=True)
    return Outcome(instance, response, True, reading.correct, read_acts(answer, reading))


def routed_to_judge(o: Outcome) -> bool:
    """Whether an unscorable reply goes to a judge: its answer's reading says
    ``unplaced: judge``."""
    return o.unscorable and o.instance["answer"]["reading"].get("unplaced") == "judge"


def metric_value(o: Outcome, metric: str) -> float | None:
    """An answered item's correctness or reliance; None where it does not count."""
    if not o.answered:
        return None
    value = o.correct if metric == "accuracy" else o.relied
    return None if value is None else float(value)

"""First-attempt scoring of one response against one instance's answer.

Only the first action or answer counts, so a later self-correction does not rescue a wrong
first move. How "first" is found depends on the answer's ``first`` mode:

- ``line``: the first non-blank line (code fences and list bullets dropped);
- ``call``: the first function call ``name(...)``, with balanced parentheses (a regex gold
  must match from its start);
- ``label``: the first option label (``B``, ``B)``, ``(B)``, ``Option B``, markdown emphasis
  read past) at the start, else
  the option whose text appears earliest;
- ``whole``: the whole response.

Defaults: exact, canonical and regex use ``line``, choice ``label``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from ..core import safe_regex

DEFAULT_FIRST = {"exact": "line", "canonical": "line", "regex": "line", "choice": "label"}

_FENCE = re.compile(r"^\s*```[\w-]*\s*$")
LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
#: A run of the characters a dotted name is made of, and what may follow a name that is called.
_NAME_RUN = re.compile(r"[A-Za-z0-9_.]+")
_OPEN_CALL = re.compile(r"\s*\(")
_NAME_START = re.compile(r"[A-Za-z_]")
# A label is an upper-case letter that stands alone: "B", "B)", "(B)", "B.", "B:", "B, because",
# "Option B". (``\s*(?:[:\-]\s*)?``, not ``\s*[:\-]?\s*``: two runs of spaces side by side
# split a long run every way, quadratic in its length.)
_LABEL = re.compile(r"^\s*(?:(?:option|answer|choice)\s*(?:[:\-]\s*)?)?\(?([A-Z])(?:[).:\],]|\s*$)",
                    re.I)
#: A letter a model set apart by emphasis before going on ("**B** is the one", "*(C)* —"): a
#: label, where a bare "A quick look" is an article.
_EMPHASIZED_LABEL = re.compile(r"^\s*(?:\*+|__)\s*\(?([A-Z])[).:]?\s*(?:\*+|__)", re.I)
_BARE_LABEL = re.compile(r"^\s*(?:option|answer|choice)\s*(?:[:\-]\s*)?([A-Z])\b", re.I)
#: Markdown emphasis a model wraps a label in ("**B**", "**Answer:** B"), read past.
_EMPHASIS = re.compile(r"\*+|__")
#: A keyword argument (``name=value``, not ``==``), as canonical text writes it.
_KEYWORD = re.compile(r"[^\W\d]\w*=(?!=)")
_QUOTES = str.maketrans({q: "'" for q in "\u2018\u2019\u201c\u201d`\""})


def first_line(response: str) -> str:
    for line in response.splitlines():
        if _FENCE.match(line) or not line.strip():
            continue
        return LIST_MARKER.sub("", line).strip()
    return ""


def _call_start(response: str) -> tuple[int, int] | None:
    r"""Where the first ``name(`` begins and where its parenthesis is, or None: what
    ``[A-Za-z_][A-Za-z0-9_.]*\s*\(`` finds, in one pass. That pattern, searched, is tried
    again from every letter of a long name not followed by ``(``, quadratic in its length;
    here each run of name characters is read once, and its name starts at its first letter or
    underscore (a leading digit or dot is no part of a name)."""
    for run in _NAME_RUN.finditer(response):
        start = _NAME_START.search(response, run.start(), run.end())
        if start is None:
            continue
        opening = _OPEN_CALL.match(response, run.end())
        if opening is not None:
            return start.start(), opening.end()
    return None


def first_call(response: str) -> str:
    """The first ``name(...)`` span, parentheses balanced and quoted strings respected."""
    found = _call_start(response)
    if found is None:
        return ""
    begin, end = found
    depth, quote, escaped = 0, None, False
    for index in range(end - 1, len(response)):
        char = response[index]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return response[begin : index + 1]
    return ""


def first_choice(response: str, options: list[str]) -> int | None:
    """Index of the first option chosen: a leading label, else the earliest option text."""
    line = first_line(response) or response
    head = _EMPHASIS.sub("", line)
    label = _EMPHASIZED_LABEL.match(line) or _LABEL.match(head) or _BARE_LABEL.match(head)
    if label:
        index = ord(label.group(1).upper()) - ord("A")
        if 0 <= index < len(options):
            return index
    lowered = response.casefold()
    positions = [(lowered.find(o.casefold()), -len(o), i) for i, o in enumerate(options)]
    found = [p for p in positions if p[0] >= 0]
    return min(found)[2] if found else None


def canonical_text(text: str, unordered_args: bool = False) -> str:
    """Whitespace, case, quote style and (optionally) the order of a call's keyword arguments
    normalised away."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    text = re.sub(r"\s+", " ", text).strip().rstrip(".;")
    text = re.sub(r"\s*([(),=])\s*", r"\1", text)
    if unordered_args:
        call = re.fullmatch(r"([^(]*)\((.*)\)", text)
        if call:
            args = [a for a in _split_args(call.group(2)) if a]
            # Keywords may come in any order; positional arguments mean what their place
            # says (``copy(src, dst)`` swapped is another call), so they keep it.
            positional = [a for a in args if not _KEYWORD.match(a)]
            keywords = sorted(a for a in args if _KEYWORD.match(a))
            text = f"{call.group(1)}({','.join([*positional, *keywords])})"
    return text


def _split_args(text: str) -> list[str]:
    parts, depth, quote, current = [], 0, None, []
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char == "'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def first_mode(answer: Mapping[str, Any]) -> str:
    """The answer's ``first`` mode, or its scorer's default."""
    return answer.get("first", DEFAULT_FIRST.get(answer["scorer"], "whole"))


def first_attempt(answer: Mapping[str, Any], response: str) -> str:
    """The part of ``response`` that counts, by the answer's ``first`` mode (read by the
    reading stage where the answer declares it)."""
    if answer.get("reading") and answer["scorer"] != "judge":
        from .reading import read  # the stage reads through this module's helpers
        return read(answer, response).attempt
    mode = first_mode(answer)
    if mode == "line":
        return first_line(response)
    if mode == "call":
        return first_call(response)
    return response.strip()


def is_correct(answer: Mapping[str, Any], response: str) -> bool | None:
    """Whether the first attempt in ``response`` is right; None when only a judge can say
    (or, under a declared reading, when the reply is unscorable)."""
    scorer = answer["scorer"]
    if scorer == "judge":
        return None
    if answer.get("reading"):
        # The declared reading stage decides; None where the reply is unscorable.
        from .reading import read
        return read(answer, response).correct
    if scorer == "choice":
        return first_choice(response, answer["options"]) == answer["gold_index"]
    return attempt_is_right(answer, first_attempt(answer, response), gold_as_read(answer))


def attempt_is_right(answer: Mapping[str, Any], attempt: str, gold: str,
                     anchored: bool = False) -> bool:
    """Whether a first attempt (of an exact, regex or canonical answer) is right, ``gold``
    the answer's gold as read (a regex gold is its pattern, whatever ``gold`` says); with
    ``anchored``, a regex gold is matched from the attempt's start whatever its mode."""
    scorer = answer["scorer"]
    if scorer == "exact":
        return attempt.strip().strip("`'\"") == gold
    if scorer == "regex":
        if anchored or first_mode(answer) == "call":
            # The call's name is part of what the pattern tests: matched from the start, so
            # that `not_copy_file(...)` is not taken for `copy_file(...)`.
            return safe_regex.match(answer["gold"], attempt)
        return safe_regex.search(answer["gold"], attempt)
    unordered = bool(answer.get("unordered_args"))
    return canonical_text(attempt, unordered) == canonical_text(gold, unordered)


def gold_as_read(answer: Mapping[str, Any]) -> str:
    """An exact or canonical gold read as the first line of a response is read: a gold that
    begins like a list item ('- a', '1. a') is compared without its marker, as the response's
    line is, so that it can be answered at all. Any other gold is itself."""
    gold = answer["gold"]
    if first_mode(answer) != "line" or "\n" in gold.strip():
        return gold  # a gold of several lines is never one line's answer: refused as it is
    return LIST_MARKER.sub("", gold).strip() or gold


def answer_problems(answer: Mapping[str, Any]) -> list[str]:
    """Why an instance's answer does not work: the gold (or example) must score as correct,
    every distractor as wrong. Empty when the answer is sound."""
    scorer = answer["scorer"]
    if scorer == "judge":
        return []
    if scorer == "regex":
        error = safe_regex.pattern_error(answer["gold"])
        if error is not None:
            return [f"gold is not a valid regular expression: {error}"]
    try:
        return _scored_problems(answer, scorer)
    except safe_regex.PatternTooSlow as exc:
        # Refused here, on the family's own example and distractors: at score time it would
        # meet every response.
        return [f"gold {exc} on the family's own example or distractors"]


def _scored_problems(answer: Mapping[str, Any], scorer: str) -> list[str]:
    problems = []
    example = answer.get("example", answer.get("gold"))
    what = "example" if "example" in answer else "gold"
    if (scorer != "regex" or "example" in answer) and not is_correct(answer, example):
        problems.append(f"the scorer rejects the {what} response {example!r}")
    for name, value in answer.get("distractors", {}).items():
        if value == answer.get("gold") or is_correct(answer, value):
            problems.append(f"the scorer accepts distractor {name!r} ({value!r})")
    return problems

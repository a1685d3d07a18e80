"""Clauses of a reply: where a mention that a cue rejects ends, and the sentences a reply is
made of, with parentheses and quoted strings read as one piece (a call's commas and dots do
not end a clause)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .reading_phrases import REJECTION_CUES, alternation

_CUES = alternation(REJECTION_CUES)
_CLAUSE_BREAK = re.compile(r"\s+(?:but|so|and then|then|which|because|since)\b|\s[—–-]\s")
#: What joins a rejected mention to the answer that replaces it ("Not X, but Y").
_BUT = re.compile(r"[\s,;:—–-]*(?:(?:but|rather|instead|use|it's|it is)\b[\s,:—–-]*)?", re.I)
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n")
_PAIRS = {"(": ")", "[": "]", "{": "}"}


def _skip_quoted(text: str, index: int) -> int:
    """Where the string opened at ``index`` ends (past its closing quote), or ``index + 1``
    where the quote is an apostrophe inside a word ("what's")."""
    quote = text[index]
    if index > 0 and (text[index - 1].isalnum()):
        return index + 1
    end = index + 1
    while end < len(text):
        if text[end] == "\\":
            end += 2
            continue
        if text[end] == quote:
            return end + 1
        if text[end] == "\n":
            return index + 1  # an unclosed quote is an apostrophe, not a string
        end += 1
    return index + 1


def outside_strings(text: str, start: int) -> Iterator[tuple[int, str, int]]:
    """Each character from ``start`` that is outside quoted strings, with the bracket depth
    around it (an opening bracket at the depth before it, a closing one at the depth after
    it: -1 for one that closes nothing)."""
    depth, index = 0, start
    while index < len(text):
        char = text[index]
        if char in "'\"":
            index = _skip_quoted(text, index)
            continue
        if char in ")]}":
            depth -= 1
        yield index, char, depth
        if char in _PAIRS:
            depth += 1
        index += 1


def clause_end(text: str, start: int) -> int:
    """Where the clause that begins at ``start`` ends: at a comma, semicolon, colon, sentence
    end or line break outside brackets and strings, or before a linking word ("but",
    "because")."""
    for index, char, depth in outside_strings(text, start):
        if depth < 0:
            return index
        if depth or char in _PAIRS:
            continue
        if char in ",;:\n":
            return index
        if char in ".!?" and (index + 1 == len(text) or text[index + 1].isspace()):
            return index
        if index > start and _CLAUSE_BREAK.match(text, index) is not None:
            return index
    return len(text)


_LEAD = re.compile(r"\s*(?:(?:the|a|an|to|use|using|call|calling|running|option)\s+)*", re.I)
_CALL_HEAD = re.compile(r"[A-Za-z_][\w.]*\(")


def balanced_end(text: str, start: int) -> int | None:
    """Where the bracket opened at ``start`` closes (past it), strings read whole; None
    where it never closes."""
    for index, char, depth in outside_strings(text, start):
        if char in ")]}" and depth == 0:
            return index + 1
    return None


def _item_end(text: str, start: int) -> int | None:
    """Where a call or a quoted string named right after a cue ends: the mention is that
    item alone ("instead of copy_file('a', 'b') I call ..."); None for words."""
    lead = _LEAD.match(text, start).end()
    head = _CALL_HEAD.match(text, lead)
    if head is not None:
        return balanced_end(text, head.end() - 1)
    if lead < len(text) and text[lead] in "'\"":
        end = _skip_quoted(text, lead)
        return end if end > lead + 1 else None
    return None


def set_aside_rejected(text: str, inner_cues: bool = True) -> tuple[str, list[str]]:
    """``text`` without the mentions it rejects ("not X", "rather than X", "instead of X",
    "Not X, but Y" keeps "Y"), and those mentions. A cue with nothing after it before the
    clause ends rejects nothing. Without ``inner_cues`` (reading version 3), a cue inside a
    quoted string or brackets is the answer's own wording ('send_reply("... no longer ...")'),
    not a rejection."""
    top = None if inner_cues else {index for index, char, depth in outside_strings(text, 0)
                                   if depth == 0 and char not in _PAIRS}
    kept, removed, position = [], [], 0
    for cue in _CUES.finditer(text):
        if cue.start() < position or (top is not None and cue.start() not in top):
            continue
        end = _item_end(text, cue.end()) or clause_end(text, cue.end())
        if not text[cue.end():end].strip():
            continue
        kept.append(text[position:cue.start()])
        removed.append(text[cue.start():end].strip())
        position = _BUT.match(text, end).end() if text[end:end + 1] != "\n" else end
    kept.append(text[position:])
    return "".join(kept).strip(), removed


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order (a line break ends one too), strings and brackets
    read whole: the dot of ``'a.txt'`` or of ``copy_file('x. y')`` ends none."""
    found, start = [], 0
    for index, char, depth in outside_strings(text, 0):
        if index < start or depth or char in _PAIRS:
            continue
        end = _SENTENCE_END.match(text, index)
        if end is not None:
            found.append(text[start:end.end()].strip())
            start = end.end()
    found.append(text[start:].strip())
    return [s for s in found if s]

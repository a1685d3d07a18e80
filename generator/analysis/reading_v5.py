"""What reading version 5 adds to the steps of version 4, one mechanism per kind of misreading
(docs/scoring.md, "Reading version 5"):

- rejections written after the mention they reject: a clause whose predicate turns its own
  subject down ("Clause 28 looks close but isn't it", "Guide 35 is the one before it",
  "Study 7 looks similar, but it's Study 8") is set aside like "not X";
- a rejection is about the first attempt: in a reply read as a line or a whole text, rejected
  mentions are set aside only up to the first sentence that rejects nothing; after it, a
  negation is what the answer says ("Clause 6. The landlord isn't responsible if ...");
- a clause that asks is a question back, wherever in its sentence it starts ("Happy to
  summarise, but which study ...?", "Just to check: should the backup overwrite ...?");
- calls in a reply read as a line or a whole text are written in their bound form before the
  gold reads them, by the signatures the reading declares (``signatures``), so that
  ``fetch(url='https://...')`` reads as ``fetch('https://...')``.

The layout step (tables, headings, labels, bullet runs, lead-in lines) is in
``reading_layout``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from .reading_calls import bound_call, calls, parse_signature
from .reading_clauses import clause_end, outside_strings, set_aside_rejected
from .reading_phrases import QUESTION_CLAUSE, REJECTING_PREDICATES, REJECTION_CUES, alternation

_PREDICATE = alternation(REJECTING_PREDICATES)
_CUES = alternation(REJECTION_CUES)
QUESTION_CLAUSES = alternation(QUESTION_CLAUSE)
#: A clause's subject before its rejecting predicate: a short mention, no clause break in it.
_SUBJECT = re.compile(r"[^\s.;:!?\n,][^.;:!?\n,]{0,60}?\s*(?=" + _PREDICATE.pattern + ")",
                      re.I)
#: What joins a rejected clause to the answer after it ("..., but it's Study 8", "; the one
#: she asked about is ...").
_JOIN = re.compile(r"[\s,;:—–-]*(?:(?:but|rather|instead)\b[\s,:—–-]*)?(?:(?:it's|it is)\b"
                   r"\s*)?", re.I)
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n")
_KEPT = 1024


def _clause_starts(text: str) -> list[int]:
    """Where each clause that may open with a mention begins: the text's start and after
    each sentence end or semicolon outside strings and brackets."""
    starts = [0]
    for index, char, depth in outside_strings(text, 0):
        if depth == 0 and (char in ";\n" or (char in ".!?" and text[index + 1:index + 2]
                                             in ("", " ", "\n"))):
            starts.append(index + 1)
    return starts


def set_aside_subject_rejections(text: str) -> tuple[str, list[str]]:
    """``text`` without the clauses whose predicate rejects their own subject, and those
    clauses. A "looks close but isn't it" sentence goes whole."""
    kept, removed, position = [], [], 0
    for start in _clause_starts(text):
        lead = start + len(text[start:]) - len(text[start:].lstrip())
        if lead < position:
            continue
        subject = _SUBJECT.match(text, lead)
        if subject is None:
            continue
        predicate = _PREDICATE.match(text, subject.end())
        end = clause_end(text, predicate.end())
        join = _JOIN.match(text, end)
        # "... but isn't it." turns the whole sentence down: nothing of it is an answer.
        rest = re.match(r"[\s,]*but\s+(?:isn'?t|is not|it'?s not|not)\s+(?:it|the one)\b"
                        r"[^.;!?\n]*[.;!?]?", text[end:], re.I)
        stop = end + rest.end() if rest else join.end()
        kept.append(text[position:lead])
        removed.append(text[lead:stop].strip(" ,;"))
        position = stop
    kept.append(text[position:])
    return "".join(kept).strip(), removed


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for index, char, depth in outside_strings(text, 0):
        if index < start or depth or char in "([{":
            continue
        end = _SENTENCE_END.match(text, index)
        if end is not None:
            spans.append((start, end.end()))
            start = end.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


@lru_cache(maxsize=_KEPT)
def set_aside_rejected_v5(text: str, leading_only: bool) -> tuple[str, tuple[str, ...]]:
    """Step 4 of reading version 5: subject rejections and cue rejections (version 3's, a
    cue inside strings or brackets being the answer's own wording) set aside; with
    ``leading_only`` (a line or whole answer), only before the first sentence that rejects
    nothing, the rest kept as written."""
    cut = len(text)
    if leading_only:
        for start, end in _sentence_spans(text):
            sentence = text[start:end]
            if not _CUES.search(sentence) and not _PREDICATE.search(sentence):
                cut = start
                break
    head, tail = text[:cut], text[cut:]
    head, subjects = set_aside_subject_rejections(head)
    head, cued = set_aside_rejected(head, inner_cues=False)
    gap = "\n" if "\n" in text[len(text[:cut].rstrip()):cut] else " "
    kept = f"{head}{gap}{tail}" if head and tail else head or tail
    return kept.strip(), (*subjects, *cued)


def bound_calls(text: str, signatures: Sequence[str]) -> str:
    """``text`` with every call to a function ``signatures`` declares written in its bound
    form (keyword arguments of the declared parameters in their places; others kept as
    keywords after them), the rest of the text as written."""
    if not signatures:
        return text
    bound = {}
    for signature in signatures:
        name, params = parse_signature(signature)
        bound[name] = (name, params)
    out, position = [], 0
    for call in calls(text):
        name = call.text.split("(", 1)[0]
        if name not in bound:
            continue
        written = bound_call(call.text, bound[name])
        if written is None or written == call.canonical:
            continue  # nothing bound: the call stays as written
        out.append(text[position:call.start])
        out.append(written)
        position = call.start + len(call.text)
    out.append(text[position:])
    return "".join(out)

"""The convention learner: what a system scores on a dataset once it has seen one other item
of it answered, knowing the dataset's answer form and nothing of the user's sessions.

Such a system reads what a memoryless one reads (the visible request, ``audit_view``) and
answers as a chat model does without memory (the item's declared default answer, its
``prior``), then puts that answer into the form the item it saw was rightly answered in. The
form is learned from the seen item's example right response as a small program: the
example cut into text copied from the seen item's own request and default answer (the whole
answer, its first sentence, a passage the request quotes) and literal text between (a label,
a heading, quotation marks). Run on another item, the program copies that item's own
request and answer into the same places: "Verdict: " before the default answer, the quoted
passage first, a one-sentence summary on top. Where the example copies nothing (a rewrite),
the learner tries the rewrites of the default answer it knows (a list set as prose), then,
last, the seen item's own example word for word.

A program is kept only if it rightly answers the item it was learned from (by that item's
scorer), as a person checking their reading of the convention would; each item is answered
by the program learned from the dataset's next item in order (the last from the first), so
no item ever sees its own gold.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from ..analysis.policies import oracle
from ..analysis.scoring import is_correct
from .audit_view import probe_text

Item = Mapping[str, Any]
#: A piece of a learned form: literal text, or the name of a part of the item to copy.
Piece = tuple[str, str]
#: The shortest part of an item the learner looks for in an example (shorter runs are
#: coincidences of wording, not copies).
MIN_COPY = 12
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_QUOTED = re.compile(rf"[\"“«]([^\"“”«»]{{{MIN_COPY},}})[\"”»]")
_QUOTE_MARK = re.compile("[\"“«]")
_LIST_MARK = re.compile(r"^[ \t>]*(?:\d+[.)]|[-*•+])[ \t]+", re.MULTILINE)


def _first_sentence(text: str) -> str:
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0]


def _quoted(text: str) -> str:
    """The longest passage the text quotes ('' if none)."""
    return max(_QUOTED.findall(text), key=len, default="")


def _as_prose(text: str) -> str:
    """A list's items set as one paragraph: markers dropped, lines joined."""
    lines = [line.strip() for line in _LIST_MARK.sub("", text).splitlines()]
    return " ".join(line for line in lines if line)


#: Rewrites of the default answer the learner knows, tried where an example copies nothing.
REWRITES: Mapping[str, Callable[[str], str]] = {"answer as prose": _as_prose}


def parts(item: Item, quoting: bool = True) -> dict[str, str]:
    """What the learner may copy from an item, by name: its default answer whole and its
    first sentence, and (if ``quoting``) the passage its request quotes (empty where there
    is none, or where the item's messages were not read)."""
    prior = item["answer"].get("prior") or ""
    named = {"answer": prior, "answer's first sentence": _first_sentence(prior)}
    if quoting:
        named["quoted passage"] = _quoted(probe_text(item)) if "phases" in item else ""
    return named


def learn_form(example: str, named: Mapping[str, str]) -> list[Piece]:
    """``example`` cut into copies of the ``named`` parts (the longest that starts at each
    place, at least ``MIN_COPY`` characters) and literal text between."""
    pieces: list[Piece] = []
    at = 0
    usable = sorted(((value, name) for name, value in named.items() if len(value) >= MIN_COPY),
                    key=lambda pair: (-len(pair[0]), pair[1]))
    while at < len(example):
        found = next((pair for pair in usable if example.startswith(pair[0], at)), None)
        if found is None:
            if pieces and pieces[-1][0] == "text":
                pieces[-1] = ("text", pieces[-1][1] + example[at])
            else:
                pieces.append(("text", example[at]))
            at += 1
        else:
            pieces.append(("copy", found[1]))
            at += len(found[0])
    return pieces


def apply_form(form: Sequence[Piece], named: Mapping[str, str]) -> str:
    """The answer ``form`` gives with another item's ``named`` parts."""
    return "".join(value if kind == "text" else named[value] for kind, value in form)


def _candidates(seen: Item) -> list[Callable[[Item], str]]:
    """The forms learned from ``seen``, in the order tried: the example's copies, the known
    rewrites of the default answer, the example word for word. (Without a default answer
    only the last applies.)"""
    example = oracle(seen, 0)
    out: list[Callable[[Item], str]] = []
    if seen["answer"].get("prior"):
        # The request's quotes are read only where the example quotes something: reading the
        # request is most of the learner's cost.
        quoting = bool(_QUOTE_MARK.search(example))
        form = learn_form(example, parts(seen, quoting))
        if any(kind == "copy" for kind, _ in form):
            out.append(lambda item, form=form, quoting=quoting:
                       apply_form(form, parts(item, quoting)))
        out += [lambda item, rewrite=rewrite: rewrite(item["answer"].get("prior") or "")
                for _, rewrite in sorted(REWRITES.items())]
    out.append(lambda item, example=example: example)
    return out


#: Readings the convention learner keeps per dataset (see ``_Readings``).
KEPT_READINGS = 1024


class _Readings:
    """Whether a text rightly answers an answer block, kept by the block's JSON and the text
    (the first ``KEPT_READINGS`` of a dataset, so that memory stays flat as an audit streams
    it): a dataset's items repeat answer blocks (groups that drew the same values), and the
    learner's answer to such an item is the same text, read the same way. A block kept
    answers only a block equal to it (so that NaN, or 1 and true, stay apart)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[bytes, str], tuple[Mapping[str, Any], bool]] = {}

    def correct(self, answer: Mapping[str, Any], text: str) -> bool:
        """``is_correct(answer, text)``, as a bool."""
        try:
            key = (orjson.dumps(answer), text)
        except orjson.JSONEncodeError:  # an integer past 64 bits: read as it is
            return bool(is_correct(answer, text))
        kept = self._kept.get(key)
        if kept is not None and kept[0] == answer:
            return kept[1]
        result = bool(is_correct(answer, text))
        if len(self._kept) < KEPT_READINGS:
            self._kept[key] = (answer, result)
        return result


def convention_answer(seen: Item, item: Item, readings: _Readings | None = None) -> str:
    """How a system that has seen ``seen`` rightly answered answers ``item``: by the first
    form learned from ``seen`` that answers ``seen`` itself rightly (``readings`` keeps the
    checks of a dataset's items)."""
    readings = _Readings() if readings is None else readings
    *learned, word_for_word = _candidates(seen)
    for answer in learned:
        if readings.correct(seen["answer"], answer(seen)):
            return answer(item)
    # The seen item's own right answer needs no check against itself.
    return word_for_word(item)


def convention_hits(items: Iterable[Item]) -> list[bool]:
    """Whether the convention learner answers each of ``items`` (one dataset, in order)
    rightly, each learning from the next item (the last from the first). The items are read
    once, in order, and at most three are held (with the readings ``_Readings`` keeps): a
    release's audit streams them."""
    hits: list[bool] = []
    readings = _Readings()
    first = previous = None
    for item in items:
        if previous is None:
            first = item
        else:
            hits.append(_learns(previous, item, readings))
        previous = item
    if previous is not None:
        hits.append(_learns(previous, first, readings))
    return hits


def _learns(item: Item, teacher: Item, readings: _Readings) -> bool:
    """Whether the convention learner, taught by ``teacher``, answers ``item`` rightly."""
    return readings.correct(item["answer"], convention_answer(teacher, item, readings))


def convention_score(items: Iterable[Item]) -> float:
    """The share of ``items`` (one dataset, in order) the convention learner answers
    rightly (``convention_hits``)."""
    hits = convention_hits(items)
    return sum(hits) / len(hits)

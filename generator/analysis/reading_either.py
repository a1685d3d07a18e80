"""An "either ... or" in a reply, read by what follows it (reading version 4).

"It's either A or B." leaves the answer open between two: a hedge, an abstention. "You can
use either X or Y; I'd go with X." and "Either X or Y could work, but the directory says X."
name both only to set them side by side, then decide: the decision after the either is the
answer, and the neutral pair is no attempt (its first-named option is not taken as the
choice). "Either way, the answer is B" has no pair at all. Versions 2 and 3 read every
"either ... or" within a sentence as a hedge, and keep doing so."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .reading_clauses import clause_end, outside_strings

_EITHER = re.compile(r"\beither\b", re.I)
#: What follows an "either" that opens no pair ("either way", "either one", "either of
#: them"), unless an option's own text begins there ("either one o'clock or ...").
_NO_PAIR = re.compile(r"\s+(?:way|one|of|side|case)\b", re.I)
_OR = re.compile(r"\bor\b", re.I)
#: What joins the pair to the decision after it ("... or Y, but I'd go with X").
_JOIN = re.compile(r"[\s,;:—–-]*(?:(?:but|and|though|although|so)\b[\s,:—–-]*)?", re.I)


_SENTENCE_BREAK = re.compile(r"[.!?](?=\s)|\n")


def _sentence_start(text: str, index: int) -> int:
    """Where the sentence holding ``index`` begins (after the last sentence end before it)."""
    starts = [m.end() for m in _SENTENCE_BREAK.finditer(text, 0, index)]
    return starts[-1] if starts else 0


def _pair_end(text: str, start: int, opaque: Sequence[str] = ()) -> int | None:
    """Where the "or" of a pair opened before ``start`` ends: the first "or" outside strings
    and brackets before the sentence ends (a call's dots and commas end nothing, nor do the
    words of an option's text, ``opaque``, which may be sentences of their own); None."""
    folded, skip_to = text.casefold(), start
    for index, char, depth in outside_strings(text, start):
        if depth or index < skip_to:
            continue
        whole = next((o for o in opaque if o and folded.startswith(o, index)), None)
        if whole is not None:
            skip_to = index + len(whole)
            continue
        if char == "\n" or (char in ".!?" and text[index + 1:index + 2] in ("", " ")):
            return None
        found = _OR.match(text, index)
        if found is not None and (index == 0 or not text[index - 1].isalnum()):
            return found.end()
    return None


def _past_option(text: str, start: int, opaque: Sequence[str]) -> int:
    """Past the option text that follows the pair's "or" at ``start`` (its own dots end no
    clause), or ``start`` where none does."""
    lead = len(text) - len(text[start:].lstrip())
    folded = text.casefold()
    whole = next((o for o in opaque if o and folded.startswith(o, lead)), None)
    return lead + len(whole) if whole is not None else start


def _opens_no_pair(text: str, start: int, opaque: Sequence[str]) -> bool:
    """Whether the "either" ending at ``start`` is "either way", "either one" and the like
    rather than the head of a pair: the words match and no option's text begins there."""
    if _NO_PAIR.match(text, start) is None:
        return False
    lead = len(text) - len(text[start:].lstrip())
    folded = text.casefold()
    return not any(o and folded.startswith(o, lead) for o in opaque)


def set_aside_either(text: str, decides: Callable[[str], bool], opaque: Sequence[str] = ()
                     ) -> tuple[str, list[str], str | None]:
    """``text`` without the neutral "either X or Y" pairs a decision follows, those pairs,
    and the first pair no decision follows (a hedge: None where every pair is followed by
    one): each pair is set aside with its sentence's lead-in. ``decides`` says whether a
    piece of reply places an answer; ``opaque`` the options' texts, read whole."""
    opaque = sorted({o.casefold().strip() for o in opaque}, key=len, reverse=True)
    kept, removed, position = [], [], 0
    for either in _EITHER.finditer(text):
        if either.start() < position or _opens_no_pair(text, either.end(), opaque):
            continue
        pair = _pair_end(text, either.end(), opaque)
        if pair is None:
            continue
        end = clause_end(text, _past_option(text, pair, opaque))
        after = text[end:]
        if not decides(after):
            return text, removed, text[either.start():end].strip()
        # The pair's whole sentence up to it goes too ("You could cite either X or Y"):
        # its lead-in is no part of the decision that follows.
        begins = max(position, _sentence_start(text, either.start()))
        kept.append(text[position:begins])
        removed.append(text[begins:end].strip())
        position = _JOIN.match(text, end).end() if text[end:end + 1] != "\n" else end
    kept.append(text[position:])
    return "".join(kept).strip(), removed, None

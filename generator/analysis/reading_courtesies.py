"""Openers and sign-offs set aside: "Sure!", "Good question!", "Great —", "In short:",
"TL;DR:" at the start of a reply, "Hope this helps" and what follows at its end. Built-in
forms (``phrases``) and those a spec declares (``reading.openers``, under the regex time
limit) alike."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..core import safe_regex
from .reading_layout import lead_in_end
from .reading_phrases import OPENERS, SIGN_OFFS, alternation

_OPENER = alternation(OPENERS)
_SIGN_OFF = re.compile(rf"(?:^|(?<=[.!?])\s+|\n)(?:{alternation(SIGN_OFFS).pattern})", re.I)


def _declared_opener(text: str, declared: Sequence[str]) -> int:
    """Where a declared opener at the start of ``text`` ends (0: none)."""
    for pattern in declared:
        seconds = safe_regex.regex_seconds()
        try:
            found = safe_regex.compiled(pattern, True).match(text, timeout=seconds)
        except TimeoutError:
            raise safe_regex.PatternTooSlow(pattern, seconds) from None
        if found is not None and found.end() > 0:
            return found.end()
    return 0


def set_aside_courtesies(text: str, declared: Sequence[str] = (), openers: bool = True,
                         lead_ins: bool = False) -> tuple[str, list[str]]:
    """``text`` without its openers (one after another: "Sure! Here's the call:"; kept when
    ``openers`` is false) and its closing courtesy, and what was set aside. With ``lead_ins``
    (reading version 5), a line that introduces the lines after it is an opener too."""
    removed = []
    mid_line = False  # whether an opener was set aside earlier on the line text starts with
    while openers:
        found = _OPENER.match(text)
        end = found.end() if found is not None else _declared_opener(text, declared)
        if not end and lead_ins:
            # The rest of a line an opener began ("Sure! Here it is:") is read as the whole
            # line is: a lead-in however few words are left of it.
            end = lead_in_end(text, whole_line=not mid_line)
        if not end or not text[end:].strip():
            break  # an opener that is the whole reply is the reply ("Sure.")
        removed.append(text[:end].strip())
        mid_line = "\n" not in text[:end] and not text[end:].startswith("\n")
        text = text[end:].lstrip()
    closing = _SIGN_OFF.search(text)
    if closing is not None and text[:closing.start()].strip():
        removed.append(text[closing.start():].strip())
        text = text[:closing.start()].rstrip()
    return text, removed

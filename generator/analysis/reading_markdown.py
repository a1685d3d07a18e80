"""Markdown set aside before an answer is matched: what a chat model wraps an answer in
(emphasis, inline code, code fences, headings, bullets, block quotes, rules) is removed, the
words it wraps kept, so that ``**B**``, ``# Answer`` and a fenced call read as what they say."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
_RULE = re.compile(r"^\s*(?:[-*_]\s*){3,}$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
#: A list marker: a dash, star, bullet or plus, or a number followed by ``.`` or ``)``.
BULLET = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+")
_STRONG = re.compile(r"\*\*|__")
# Single-star or single-underscore emphasis around words; an underscore inside a name
# (``copy_file``) has a word character on one side, so it is no emphasis.
_EM_STAR = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_EM_UNDER = re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")
_INLINE_CODE = re.compile(r"`+")


def set_aside(text: str, keep_lists: bool = False) -> str:
    """``text`` without its markdown, line by line (blank lines dropped). With
    ``keep_lists``, bullets and numbered items keep their markers: a family that measures a
    response's format (a list or prose) reads them."""
    lines = []
    for line in text.splitlines():
        if _FENCE.match(line) or _RULE.match(line):
            continue
        line = _HEADING.sub("", line)
        line = _QUOTE.sub("", line)
        if not keep_lists:
            line = BULLET.sub("", line)
        line = _STRONG.sub("", line)
        line = _EM_STAR.sub(r"\1", line)
        line = _EM_UNDER.sub(r"\1", line)
        line = _INLINE_CODE.sub("", line).strip()
        if line:
            lines.append(line)
    return "\n".join(lines)

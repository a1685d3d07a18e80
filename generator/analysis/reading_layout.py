"""A reply's layout read as prose before its markdown is set aside (reading version 5).

Chat models put a first-line answer under a heading, in a bullet after a bullet of context, in
a table cell or after a line that introduces it. Versions 2-4 set the markup aside line by
line, so the answer was no longer on the first line a gold anchored at the start reads. Version
5 reads the layout first:

- a table: its header row names what each column holds, so each body row reads as one line
  of "header value" pairs ("| For | Study |" over "| your friend's | **2** |" reads
  "For your friend's; Study 2"); the separator row goes;
- a heading or a line that is only a short label ending in a colon ("## Answer", "Verdict:")
  labels the line under it: the two read as one line ("Answer: Guide 10", "Verdict: No.");
- consecutive bullets or numbered items read as one line, in order (a family that measures a
  list keeps its lines: ``keep_lists``);
- a lead-in line (a line of several words ending in a colon, with the answer on the lines
  after it: "Let's check the numbers:", "A 9-inch pan is:") is an opener, set aside with the
  other openers (``lead_in``)."""

from __future__ import annotations

import re

from .reading_markdown import BULLET

_TABLE_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?(?:\s*:?-{2,}:?\s*\|)+\s*:?-*:?\s*\|?\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
#: A label: at most three words (markup around them allowed) and a colon, nothing after.
_LABEL = re.compile(r"^[\W_]*(?:[\w'’]+[\W_]*?\s+){0,2}[\w'’]+[*_\s]*:[*_\s]*$")
#: A lead-in: a line ending in a colon (markup after it allowed), read only where more follows.
_LEAD_IN = re.compile(r"[^\n]*:[*_\s]*\n+(?=\S)")
_MARKUP = re.compile(r"[*_`]+")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in _TABLE_ROW.match(line).group(1).split("|")]


def _table(lines: list[str]) -> list[str]:
    """A table's rows as lines of "header value" pairs (no header row: the cells alone)."""
    header = _cells(lines[0]) if len(lines) > 1 and _TABLE_RULE.match(lines[1]) else None
    body = lines[2:] if header is not None else lines
    read = []
    for line in body:
        if _TABLE_RULE.match(line):
            continue
        cells = _cells(line)
        names = header or [""] * len(cells)
        pairs = [f"{name} {cell}".strip() if name else cell
                 for name, cell in zip(names, cells, strict=False) if cell]
        read.append("; ".join(pairs))
    return read


def _joined(items: list[str]) -> str:
    """Bullet items as one line: an item that ends a sentence is followed by a space, another
    by a semicolon (so that "Clause 28" and "Clause 29" stay two)."""
    out = ""
    for item in items:
        if out:
            out += " " if re.search(r"[.!?:;][*_`)\"']*$", out) else "; "
        out += item
    return out


def read_layout(text: str, keep_lists: bool = False) -> str:
    """``text`` with its tables, headings, labels and bullet runs read as prose lines (the
    markup inside the lines is left for the markdown step)."""
    lines = [line for line in text.splitlines() if line.strip()]
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _TABLE_ROW.match(line):
            end = index
            while end < len(lines) and (_TABLE_ROW.match(lines[end])
                                        or _TABLE_RULE.match(lines[end])):
                end += 1
            out.extend(_table(lines[index:end]))
            index = end
            continue
        if not keep_lists and BULLET.match(line):
            end = index
            while end < len(lines) and BULLET.match(lines[end]):
                end += 1
            out.append(_joined([BULLET.sub("", item).strip() for item in lines[index:end]]))
            index = end
            continue
        heading = _HEADING.match(line)
        label = heading.group(1) if heading else (line if _LABEL.match(line) else None)
        if label is not None and index + 1 < len(lines) and not _HEADING.match(
                lines[index + 1]):
            words = _MARKUP.sub("", label).strip().rstrip(":").strip()
            if heading is None or len(words.split()) <= 3:
                # The label and the line it labels read as one ("Answer: Guide 10").
                lines[index + 1] = f"{words}: {BULLET.sub('', lines[index + 1]).strip()}"
                index += 1
                continue
        out.append(line)
        index += 1
    return "\n".join(out)


def lead_in_end(text: str, whole_line: bool = True) -> int:
    """Where a lead-in line at the start of ``text`` ends (0: none): a line ending in a colon,
    with more lines after it ("Let's check the numbers:"), of more than three words where it
    is a ``whole_line`` (three or fewer make a label, read with its line); where ``text``
    starts mid-line, after an opener, the rest of that line at any length."""
    found = _LEAD_IN.match(text)
    if found is None:
        return 0
    line = found.group(0).strip()
    return found.end() if not whole_line or len(_MARKUP.sub("", line).split()) > 3 else 0

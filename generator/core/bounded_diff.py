"""Word-level differences of two texts, in time bounded by their length.

``difflib.SequenceMatcher`` (without its junk heuristic, which would make a diff depend on
how often a word recurs) takes time proportional to the product of the two lengths: two
responses of 20,000 words each take minutes. Past ``most`` pairs of tokens, the common
beginning and end are found in one pass each, and only what lies between them is matched,
or, where that is still too long to match, marked changed as a whole: no one reads a
difference of tens of thousands of words word by word."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

#: Pairs of tokens a full match may compare: about a tenth of a second.
MOST_PAIRS = 1_000_000

Opcode = tuple[str, int, int, int, int]


def opcodes(a: Sequence[str], b: Sequence[str], most: int = MOST_PAIRS) -> list[Opcode]:
    """``SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()`` where ``len(a) * len(b)``
    is at most ``most``; past it, the same kind of list, bounded as the module says."""
    if len(a) * len(b) <= most:
        return difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_end, b_end = len(a) - tail, len(b) - tail
    found: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    middle_a, middle_b = a[head:a_end], b[head:b_end]
    if len(middle_a) * len(middle_b) <= most:
        found += [(tag, a0 + head, a1 + head, b0 + head, b1 + head) for tag, a0, a1, b0, b1
                  in difflib.SequenceMatcher(a=middle_a, b=middle_b, autojunk=False)
                  .get_opcodes()]
    elif middle_a or middle_b:
        tag = "replace" if middle_a and middle_b else "delete" if middle_a else "insert"
        found.append((tag, head, a_end, head, b_end))
    if tail:
        found.append(("equal", a_end, len(a), b_end, len(b)))
    return found

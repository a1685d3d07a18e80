"""A marker of one arm (rules 2): in a family with act/don't-act arms, a word that the views of
many of one arm's instances say and no instance of the other arm does. A memoryless system
that notices it knows which arm an item is in, and so whether to act, without memory.

Counted over every instance (an exact check, not a draw): per arm, in how many instances'
views each word occurs; memory grows with the family's vocabulary, not its instances.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from .audit_responses import arm_of
from .audit_structure import Finding
from .audit_view import visible_text

Item = Mapping[str, Any]
_WORD = re.compile(r"[^\W\d_]{3,}")
#: A word marks an arm when at least this share of the arm's instances say it (and none of
#: the other arm's do): a name drawn per group reaches a few percent, a marker far more.
MARKER_SHARE = 0.25
#: And at least this many of them, so that a family of a few groups is not judged on chance.
MARKER_MIN = 5


class ArmMarkers:
    """The words only one arm's views say, counted while a family streams by."""

    def __init__(self) -> None:
        self.words: dict[str, Counter[str]] = {"act": Counter(), "dont": Counter()}
        self.count: Counter[str] = Counter()

    def add(self, item: Item) -> None:
        arm = arm_of(item)
        if arm is None:
            return
        self.count[arm] += 1
        self.words[arm].update({w.lower() for w in _WORD.findall(visible_text(item))})

    def finding(self, family: str) -> Finding | None:
        if not self.count["act"] or not self.count["dont"]:
            return None
        marks = []
        for arm, other in (("act", "dont"), ("dont", "act")):
            floor = max(MARKER_MIN, MARKER_SHARE * self.count[arm])
            marks += [(arm, word, n) for word, n in sorted(self.words[arm].items())
                      if n >= floor and not self.words[other][word]]
        detail = "; ".join(f"{word!r} in {n} of the {self.count[arm]} {arm} instances and "
                           "none of the other arm's" for arm, word, n in marks[:3])
        return Finding("leakage: arm marker", family, not marks,
                       f"{len(marks)} words only one arm's views say",
                       (f"a word tells the arms apart without memory: {detail}"
                        + (f"; and {len(marks) - 3} more" if len(marks) > 3 else ""))
                       if marks else "")

"""Which option a reply names, in every form chat models write one: a letter alone, ``**A**``
(once markdown is set aside, ``A``), ``(A)``, ``A)``, ``Answer: A``, ``ANSWER: A``,
``option A``, ``The right one is (A).``, ``... is A.``, the option's text, or a letter and
its text. The rule for what counts, written in docs/scoring.md:

1. a letter named as an answer (a label) decides: if the labels name two different options,
   or a letter is followed by another option's text, the reply is unscorable;
2. with no label, the option whose text appears first is the answer;
3. with neither, the reply cannot be placed: unscorable."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ChoiceReading:
    """The option a reply names (None: none, or two), every option it labels, and why."""

    chosen: int | None
    labelled: tuple[int, ...]
    why: str


#: What may stand between a letter and its option's text: "A) X", "A: X", "A - X", "(A) X".
_JOINER = re.compile(r"[\s)\]:\-–—]*")


def _label_patterns(letters: str) -> list[re.Pattern[str]]:
    """The forms of a label over the letters of the options (``A-C``); group 1 the letter."""
    upper = f"[{letters}]"
    either = f"[{letters}{letters.lower()}]"
    end = r"(?![\w'’])"
    return [
        # A line that is only a letter: "A", "(B).", "C!"
        re.compile(rf"^\W*?\(?({either})\)?\W*$", re.M),
        # A letter alone after a sentence or a colon, at the end of a line: "... Tan. B",
        # "quarter past nine: C."
        re.compile(rf"(?:[.!?]\s+|:\s*)\(?({upper})\)?\s*[.!]?\s*$", re.M),
        # A line that starts with a label: "A)", "(B)", "C.", "D:", "A -", "B, because".
        re.compile(rf"^\s*\(?({upper})(?:[).:\]]|,\s|\s[—–-]\s?)", re.M),
        # A letter in parentheses anywhere: "(A)"; a letter and a parenthesis: "go with B)".
        re.compile(rf"\(({either})\){end}"),
        re.compile(rf"(?<![\w(])({upper})\)"),
        # Named by a word that makes it a label: "option A", "choice b", "Answer: A",
        # "ANSWER: A", "answer is A", "letter C".
        re.compile(rf"\b(?i:options?|choice|letter)\s*[:#-]?\s*\(?({either}){end}"),
        re.compile(rf"\b(?i:answer)\s*(?:(?i:is)\s*)?[:=\-–—]?\s*\(?({upper}){end}"),
        # A verb of choosing before a capital letter that ends its clause: "... is A.",
        # "I'd pick B", "go with C —".
        re.compile(rf"\b(?i:is|be|pick|choose|select|go with|going with|picking|choosing"
                   rf"|it's|that's|or|and|so|thus|hence|therefore)\s+\(?({upper})\)?"
                   rf"(?=\s*(?:[.!,;:()]|$|\s[—–-]))"),
    ]


def _label_mentions(text: str, count: int) -> list[tuple[int, int, int]]:
    """Each label found: (where it is, where it ends, the option's index), in order."""
    letters = "".join(chr(65 + i) for i in range(min(count, 26)))
    found = {}
    for pattern in _label_patterns(letters):
        for match in pattern.finditer(text):
            index = ord(match.group(1).upper()) - 65
            found.setdefault(match.start(1), (match.start(1), match.end(), index))
    return sorted(found.values())


def _text_mentions(folded: str, options: list[str]) -> list[tuple[int, int]]:
    """Each option's text found: (where, the option's index), the longest option where two
    start at one place."""
    found = []
    for index, option in enumerate(options):
        needle = option.casefold().strip()
        start = folded.find(needle) if needle else -1
        while start >= 0:
            found.append((start, -len(needle), index))
            start = folded.find(needle, start + 1)
    return [(start, index) for start, _, index in sorted(found)]


def read_choice(text: str, options: list[str]) -> ChoiceReading:
    """The option ``text`` names, by the rule of this module."""
    labels = _label_mentions(text, len(options))
    folded = text.casefold()
    texts = _text_mentions(folded, options)
    labelled = tuple(dict.fromkeys(index for _, _, index in labels))
    for _, end, index in labels:
        # A letter and the text of another option: "A) <the text of B>" places nothing.
        following = [i for start, i in texts
                     if end <= start <= end + 3 and _JOINER.fullmatch(text[end:start])]
        if following and following[0] != index:
            return ChoiceReading(None, labelled, f"the letter {chr(65 + index)} is followed "
                                 f"by the text of option {chr(65 + following[0])}")
    if len(labelled) > 1:
        names = " and ".join(chr(65 + i) for i in labelled)
        return ChoiceReading(None, labelled, f"two different options are named as "
                             f"answers: {names}")
    if labelled:
        return ChoiceReading(labelled[0], labelled, f"option {chr(65 + labelled[0])} is "
                             "named as the answer")
    if texts:
        index = texts[0][1]
        return ChoiceReading(index, (), f"no letter is named; the first option's text in "
                             f"it is that of {chr(65 + index)}")
    return ChoiceReading(None, (), "no option is named, by letter or by its text")

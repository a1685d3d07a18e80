"""A regular expression for the word forms of a term: the ``word_forms`` template filter.

A gold that lists a concept's key terms should accept them as a reader does, in any regular
form: "specialise", "specialises", "specialised", "specialising", "specialisation" and
"specializes" are one term; so are "trade", "trades", "traded" and "trading". The term is
written once, in any of its forms, and the pattern is built from it by fixed spelling rules
(no dictionary, no locale), so the same term always gives the same pattern.

The rules, applied to the term's last word (the words before it are kept as written, and
any run of spaces or hyphens between words is accepted):

- a word ending in a consonant and ``y`` (or in ``-ies``, ``-ied``) takes ``-y``, ``-ies``,
  ``-ied`` and ``-ying`` ("battery", "batteries");
- otherwise its *stem* is found by setting aside ``-es`` after x, ch, sh, ss, z or o
  ("boxes"), else one of ``-ation(s)``, ``-ing``, ``-ed`` where four letters stay (a doubled
  final consonant undone, but for l, s, f and z: "knotting" is "knot", "rolling" "roll"),
  else a plural ``-s`` (not ``-ss``, ``-us``, ``-is``) where three stay, and then a final
  ``-e`` where three stay ("trades", "trade" and "trading" have the stem "trad");
- the forms are the stem followed by one of ``-e``, ``-s``, ``-es``, ``-ed``, ``-ing``,
  ``-ings``, ``-er``, ``-ers``, ``-ation``, ``-ations``, or by nothing unless a final ``-e``
  was set aside after a letter other than s ("tape" gives "taping" but not "tap"; "lenses"
  gives "lens"); a stem that ends in a consonant after
  a vowel, and is the word as written (or its singular, or undoubled), may double that
  consonant before ``-ed``, ``-ing``, ``-er``, ``-ers`` ("knotted");
- a stem of five letters or more ending in ``is``/``iz`` or ``ys``/``yz`` takes either
  spelling ("specialise", "specialize"; "analyse", "analyze").

The pattern ends at a word boundary, so a form is a whole word ("trade" is not "tradition").
A term whose last character is not a letter is matched as written.
"""

from __future__ import annotations

import re
from typing import NamedTuple

#: Endings a stem takes, and those before which its final consonant may double.
_ENDINGS = ("e", "s", "es", "ed", "ing", "ings", "er", "ers", "ation", "ations")
_DOUBLING = ("ed", "ing", "er", "ers")
_Y_ENDINGS = ("y", "ies", "ied", "ying")
#: The fewest letters a stem keeps once -ation(s), -ing or -ed is set aside.
MIN_STEM = 4
_VOWELS = frozenset("aeiou")
#: Final consonants that English doubles at the end of a word in its base form as well.
_DOUBLED_IN_BASE = frozenset("lsfz")
_SIBILANT_ES = ("xes", "ches", "shes", "sses", "zes", "oes")
_SEPARATOR = r"[\s\-]+"


class _Stem(NamedTuple):
    stem: str
    endings: tuple[str, ...]
    bare: bool  # the stem alone is a form ("knot"; not "tap" of "tape")
    may_double: bool  # its final consonant may double ("knotted"; not "trad" of "trade")


def _is_consonant(letter: str) -> bool:
    return letter.isalpha() and letter.lower() not in _VOWELS


def _stem(word: str) -> _Stem:
    """The word's stem and the endings it takes (the module's rules)."""
    lower = word.lower()
    if (lower.endswith(("ies", "ied")) and len(word) >= 6) or (
            lower.endswith("y") and len(word) >= 4 and _is_consonant(lower[-2])):
        return _Stem(word[:-3] if lower[-1] != "y" else word[:-1], _Y_ENDINGS, False, False)
    if lower.endswith(_SIBILANT_ES) and len(word) >= 5:
        return _Stem(word[:-2], _ENDINGS, True, False)
    for ending in ("ations", "ation", "ing", "ed"):
        if lower.endswith(ending) and len(word) - len(ending) >= MIN_STEM:
            stem = word[:-len(ending)]
            doubled = stem[-1].lower() == stem[-2].lower() and _is_consonant(stem[-1]) \
                and stem[-1].lower() not in _DOUBLED_IN_BASE
            return _Stem(stem[:-1] if doubled else stem, _ENDINGS, True, doubled)
    if lower.endswith("s") and lower[-2] not in "sui" and len(word) >= 4:
        word, lower = word[:-1], lower[:-1]  # "pegs", "trades"
    if lower.endswith("e") and len(word) >= 4:
        # "lenses" may be of "lens" or "lense": a stem in s is a form of its own too.
        return _Stem(word[:-1], _ENDINGS, lower[-2] == "s", False)
    return _Stem(word, _ENDINGS, True, True)


def _spelled(stem: str) -> str:
    """The stem as a pattern, an -ise/-ize (-yse/-yze) stem in either spelling."""
    if len(stem) > MIN_STEM and stem[-2:].lower() in ("is", "iz", "ys", "yz"):
        return re.escape(stem[:-1]) + "[sSzZ]"
    return re.escape(stem)


def word_forms(term: str) -> str:
    """A regular expression matching ``term`` in its regular word forms (see the module's
    docstring for the rules), ending at a word boundary; the term as written, escaped,
    where its last character is not a letter."""
    if not isinstance(term, str) or not term.strip():
        raise ValueError(f"word_forms needs a term, got {term!r}")
    words = term.split()
    head = "".join(re.escape(word) + _SEPARATOR for word in words[:-1])
    if not words[-1][-1].isalpha():
        return head + re.escape(words[-1])
    found = _stem(words[-1])
    endings = list(found.endings)
    stem = found.stem
    if found.may_double and len(stem) >= 2 and _is_consonant(stem[-1]) \
            and stem[-2].lower() in _VOWELS and stem[-1].lower() not in "wxy":
        endings.append(re.escape(stem[-1]) + "(?:" + "|".join(_DOUBLING) + ")")
    optional = "?" if found.bare else ""
    return f"{head}{_spelled(stem)}(?:{'|'.join(endings)}){optional}\\b"

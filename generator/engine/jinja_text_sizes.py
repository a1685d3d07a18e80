"""How long the text is that a value becomes, counted without building it: ``str()`` of it,
its JSON (``tojson``), its pretty form (``pprint``), its HTML-escaped and URL-quoted forms,
and how many lines ``str.splitlines`` cuts a text into.

Each is an upper bound worked out from lengths the value already knows, walking a container
item by item only until the count passes ``most``, so that a list of ten thousand references
to one long list is counted in a few steps, not in the trillions of characters its text
would be. The filters that build these texts run in C, beyond the alarm of a budget: their
size is checked with these counts before they run (``jinja_sized_filters``)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, ItemsView, Iterable, KeysView, ValuesView
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.utils import Namespace

#: The most characters (or items) one value a template builds may hold, and the most a render
#: may print: a few megabytes of text, far above any instance.
MAX_BUILT = 2_000_000

#: What ``str.splitlines`` ends a line at.
_LINE_BREAKS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
#: What HTML escaping turns into five characters (``&amp;``, ``&#39;`` …).
_HTML_SPECIAL = ("&", "<", ">", "'", '"')
#: What ``tojson`` writes as six characters (``\\u003c``) after JSON has been written.
_JSON_HTML_UNSAFE = ("<", ">", "&", "'")
#: The width ``pprint`` fills lines to.
_PPRINT_WIDTH = 80


def length(value: Any) -> int:
    """The length of a text or container, 1 for anything else."""
    return len(value) if isinstance(value, (str, list, tuple, dict)) else 1


def number(value: Any) -> int:
    """``value`` where it is a whole number (not a boolean), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _items(value: Any) -> Iterable[Any]:
    """What ``str()`` of a container prints: a dict's keys and values, others' items."""
    return itertools.chain.from_iterable(value.items()) if isinstance(value, dict) else value


#: The deepest a value may nest for its size to be worked out: far deeper than any data (a pool
#: nests 48 levels at most), far shallower than Python's recursion limit, which ``str()`` or
#: ``==`` of a deeper one would hit in C.
MAX_NESTING = 200


class NestedTooDeeply(SecurityError):
    """A value nests deeper than ``MAX_NESTING``: its size is not worked out."""


_TEXT_ONLY = frozenset({str})


def _flat_length(value: Any) -> int | None:
    """The text length of a list or tuple of texts, or of a dict of texts to texts, at C
    speed (``str()`` quotes each and puts ", " or ": " between them); None where an item is
    anything else."""
    if type(value) is dict:
        if _TEXT_ONLY.issuperset(map(type, value)) and \
                _TEXT_ONLY.issuperset(map(type, value.values())):
            return sum(map(len, value)) + sum(map(len, value.values())) + 8 * len(value) + 2
        return None
    if _TEXT_ONLY.issuperset(map(type, value)):
        return sum(map(len, value)) + 4 * len(value) + 2
    return None


def _counted_once(memo: dict[Any, int], key: Any, depth: int, most: int, what: str,
                  count: Callable[[], int]) -> int:
    """``count()`` of the container ``key`` names (its identity, and where it stands), kept
    in ``memo``: a container referred to many times is counted once. A container met again
    while it is being counted holds itself: over ``most``. Raises ``NestedTooDeeply`` where
    ``depth`` is past ``MAX_NESTING`` (``what`` says what could not be done)."""
    known = memo.get(key)
    if known is not None:
        return known
    if depth > MAX_NESTING:
        raise NestedTooDeeply(f"a value nested more than {MAX_NESTING} levels deep cannot be "
                              f"{what}")
    memo[key] = most + 1
    memo[key] = total = count()
    return total


def _container_length(value: Any, most: int, memo: dict[int, int], depth: int) -> int:
    """``text_length`` of a container, each distinct container counted once (``memo``, by
    identity) however often it is referred to: a list holding the same list twice, forty
    levels deep, is 80 objects and a trillion items written out, and is counted in 80
    steps. A container met again while it is being counted holds itself: over ``most``."""

    def count() -> int:
        total = _flat_length(value) if type(value) in (list, tuple, dict) else None
        if total is None:
            total = 2 if isinstance(value, (list, tuple, dict)) else 16  # "dict_items([…])"
            for item in _items(value):
                total += (len(item) + 4 if type(item) is str
                          else _length_of(item, most, memo, depth + 1) + 2)
                if total > most:
                    break
        return total

    return _counted_once(memo, id(value), depth, most, "compared, hashed or turned into text",
                         count)


def _length_of(value: Any, most: int, memo: dict[int, int], depth: int) -> int:
    kind = type(value)
    if kind is str:
        return len(value)
    if kind is int:
        return value.bit_length() * 31 // 100 + 2  # log10(2) < 0.31: its digits and a sign
    if kind in (float, bool) or value is None:
        return len(repr(value))  # a few characters, at once
    if isinstance(value, (list, tuple, dict, KeysView, ValuesView, ItemsView)):
        return _container_length(value, most, memo, depth)
    if isinstance(value, Namespace):  # printed as "<Namespace {…}>", its attributes in C
        return 13 + _container_length(value._Namespace__attrs, most, memo, depth)
    return length(value)


def text_length(value: Any, most: int = MAX_BUILT) -> int:
    """The logical size of ``value``: about how many characters ``str(value)`` has, which is
    what any C operation that walks it (``==``, ``in``, hashing, sorting, ``str()``, JSON)
    reads, counted only until the count passes ``most`` (then a number over it). A text's length;
    a number's digits; a list's, tuple's or dict's items as their text, two characters of
    quotes a text and two of separator an item, a container referred to twice counted twice
    (but walked once); a dict view's or a namespace's contents likewise. A text whose
    escapes make its quoted form longer (a control character, which no render may hold
    anyway) is counted at its length. Raises ``NestedTooDeeply`` past ``MAX_NESTING``."""
    kind = type(value)
    if kind is str:  # the commonest case first, before any set-up
        return len(value)
    return _length_of(value, most, {}, 0)


def line_count(text: str) -> int:
    """At most how many lines ``str.splitlines`` cuts ``text`` into: one more than its line
    breaks (``\\r\\n`` counted as two)."""
    return sum(map(text.count, _LINE_BREAKS)) + 1


# ------------------------------------------------------------------------------ HTML, URLs


def html_escaped_length(value: Any) -> int:
    """At most how many characters HTML escaping makes of ``value`` (``escape``): a text with
    its ``& < > ' "`` as five characters each; anything else as its text (``str()``), every
    character counted as five."""
    if isinstance(value, str):
        coarse = 5 * len(value)
        if coarse <= MAX_BUILT:
            return coarse
        return len(value) + 4 * sum(map(value.count, _HTML_SPECIAL))
    return 5 * text_length(value, MAX_BUILT // 5 + 1)


def url_quoted_length(value: Any) -> int:
    """At most how many characters URL quoting makes of ``value`` (``urlencode``): three a
    byte of its UTF-8 (four bytes at most a character), of a text or of the text of anything
    else."""
    if isinstance(value, str):
        return 3 * len(value) if value.isascii() else 12 * len(value)
    return 12 * text_length(value, MAX_BUILT // 12 + 1)


# ------------------------------------------------------------------------------------ JSON


def _json_text(text: str, exact: bool) -> int:
    """Characters of ``text`` as ``tojson`` writes it: in quotes, each character beyond ASCII
    as ``\\uXXXX`` (two of them beyond the BMP), ``< > & '`` as ``\\u00XX``. At most six
    (twelve) a character; ``exact``, counted (a pass over the text, and its JSON built)."""
    if not exact:
        return (6 if text.isascii() else 12) * len(text) + 2
    return len(json.dumps(text)) + 5 * sum(map(text.count, _JSON_HTML_UNSAFE))


def _json_walk(value: Any, step: int | None, depth: int, most: int, exact: bool,
               memo: dict[tuple[int, int], int]) -> int:
    """``json_length`` of ``value`` at ``depth``, a container met again at the same depth
    counted from ``memo`` (by identity) rather than walked again, until the count passes
    ``most`` (then a number over it)."""
    if isinstance(value, str):
        return _json_text(value, exact)
    if not isinstance(value, (list, tuple, dict)):
        return text_length(value, most) + 2  # a number, true, null; a key's quotes

    def count() -> int:
        # ", " between items, or ",\n" and the indent of the level below.
        per_item = 2 if step is None else 2 + step * (depth + 1)
        total = 2 if step is None else 3 + step * depth
        pairs = value.items() if isinstance(value, dict) else ((None, item) for item in value)
        for name, item in pairs:
            if name is not None:
                total += 2 + _json_walk(name, step, depth + 1, most, exact, memo)
            total += per_item + _json_walk(item, step, depth + 1, most, exact, memo)
            if total > most:
                break
        return total

    return _counted_once(memo, (id(value), depth), depth, most, "written as JSON", count)


def json_length(value: Any, indent: Any = None, most: int = MAX_BUILT) -> int:
    """At most about how many characters ``tojson`` (with ``indent``) makes of ``value``,
    counted until the count passes ``most``. Texts are first counted at the most a character
    can take; only where that passes ``most`` are they counted exactly, which costs a pass
    over each (the walk stops once their JSON alone passes ``most``)."""
    step = None if indent is None else (len(indent) if isinstance(indent, str)
                                        else max(number(indent), 0))
    coarse = _json_walk(value, step, 0, most, False, {})
    return coarse if coarse <= most else _json_walk(value, step, 0, most, True, {})


# ---------------------------------------------------------------------------------- pprint


def _repr_length(text: str, most: int) -> int:
    """Characters of ``repr(text)``: its length and quotes where every character prints as
    itself but a backslash or a quote (escaped); else at most ten a character (``\U0001f600``),
    or, where that passes ``most``, counted (``repr`` built, at most ten times the text)."""
    if text.isprintable():
        return len(text) + 2 + text.count("\\") + text.count("'")
    coarse = 10 * len(text) + 2
    return coarse if coarse <= most else len(repr(text))


def _pprint_text(text: str, indent: int, most: int) -> int:
    """``repr`` of ``text`` where it fits the line; else pprint's chunks of it, each in quotes
    on a line of its own at ``indent``: one a line of the text at least, and no two chunks
    together shorter than the room on a line (a chunk is a word at least)."""
    quoted = _repr_length(text, most)
    room = _PPRINT_WIDTH - indent
    if quoted <= room:
        return quoted
    chunks = min(line_count(text) + 2 * len(text) // max(room - 2, 1), len(text) + 1)
    return quoted + 2 + chunks * (indent + 4)


def _pprint_walk(value: Any, indent: int, most: int, memo: dict[tuple[int, int], int],
                 depth: int = 0) -> int:
    """``pprint_length`` of ``value`` at ``indent``, a container met again at the same indent
    counted from ``memo`` (by identity), until the count passes ``most`` (then a number over
    it)."""
    if isinstance(value, str):
        return _pprint_text(value, indent, most)
    if not isinstance(value, (list, tuple, dict)):
        return text_length(value, most)

    def count() -> int:
        # Each item on a line of its own, one deeper; a dict's value after its key, where
        # its own lines are indented past the key.
        total = 2
        if isinstance(value, dict):
            for name, item in value.items():
                # A key is written as its repr, on one line.
                key_length = _repr_length(name, most) if isinstance(name, str) else \
                    text_length(name, most)
                total += indent + 3 + key_length + 2 + \
                    _pprint_walk(item, indent + 1 + key_length + 2, most, memo, depth + 1)
                if total > most:
                    break
        else:
            for item in value:
                total += indent + 3 + _pprint_walk(item, indent + 1, most, memo, depth + 1)
                if total > most:
                    break
        return total

    return _counted_once(memo, (id(value), indent), depth, most, "pretty-printed", count)


def pprint_length(value: Any, most: int = MAX_BUILT) -> int:
    """At most about how many characters ``pprint`` makes of ``value``, counted until the
    count passes ``most``: every item on a line of its own at the indent pprint gives it, long
    texts cut into quoted chunks a line each."""
    return _pprint_walk(value, 0, most, {})

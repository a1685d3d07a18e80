"""What a template may hold and print: the reserved and control characters refused in its
text, the roles of its messages, the size limits of a render, and ``finalize``, which lets
only plain data print (no object's memory address, which changes from run to run)."""

from __future__ import annotations

import re
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError

from ..core.canonical import SCALARS
from .jinja_sized_filters import MAX_BUILT, refuse_over, text_length

ROLES = ("system", "user", "assistant", "tool")

#: Control characters no template, pool or slot value may hold (each is refused on loading).
_RESERVED = ("\x02", "\x03", "\x1f")
#: The other control characters (C0 but tab, newline and carriage return; DEL; C1): a pool
#: may not hold them, and neither may a template's text, its string literals ("\x1b") or what
#: it makes of numbers (``"%c"|format(27)``, ``"{:c}".format(27)``, ``"a".translate({97: 27})``),
#: as they would act on a terminal or a viewer rather than show.
_CONTROL_CHARACTER = re.compile("[\x00\x01\x04-\x08\x0b\x0c\x0e-\x1e\x7f-\x9f]")
#: The str methods and filters that make characters from numbers.
_MAKES_CHARACTERS = frozenset({"format", "format_map", "translate"})


def refuse_control_characters(text: str, what: str) -> str:
    """``text`` unless it holds a control character (``_CONTROL_CHARACTER``): a
    SecurityError naming it and ``what`` made it."""
    found = _CONTROL_CHARACTER.search(text)
    if found is not None:
        raise SecurityError(f"{what} produced the control character "
                            f"U+{ord(found.group()):04X}, which memspec text may not hold")
    return text


#: The first of them marks the fields of a rendered message: MARK role MARK name MARK line
#: MARK body MARK. Splitting a phase's text at it (in C, at memchr speed) gives [outside, role,
#: name, line, body, outside, role, …], five parts a message and the text after the last.
_MARK = _RESERVED[0]
#: A ``{name}`` left over from str.format habits, which Jinja would print literally.
SINGLE_BRACE_RE = re.compile(r"(?<!\{)\{\s*[A-Za-z_][A-Za-z0-9_.]*\s*\}(?!\})")
#: Largest ``range()`` a template may build.
MAX_RANGE = 10_000
#: Largest text a single render may produce, in characters.
MAX_RENDER_CHARS = MAX_BUILT


#: One role-tagged message of a phase, in the form an instance holds it: ``role``, ``content``
#: and, when the template names the speaker, ``name``.
Message = dict[str, str]


def _too_large(length: int) -> bool:
    return length > MAX_RENDER_CHARS


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


_UNPRINTABLE_HINT = "did you forget the () of a call, or a |list after map/select?"
#: How CPython prints an object that has no text of its own: ``<… at 0x7f3a…>``.
_OBJECT_ADDRESS_RE = re.compile(r"<[^<>\n]*? at 0x[0-9a-f]{6,}>", re.IGNORECASE)


def object_address(text: str) -> str | None:
    """The first ``<… at 0x…>`` in ``text``: an object printed with its memory address, which
    changes from run to run (a method or iterator turned into text by ``~``, ``|string``,
    ``%`` or ``.format``, perhaps upper-cased by a filter). None when there is none, which a
    substring test mostly settles: a ``<`` first, since one character is found by memchr and
    two by a loop that takes a hundred times as long over a rendered phase."""
    if "<" not in text or ("0x" not in text and "0X" not in text):
        return None
    found = _OBJECT_ADDRESS_RE.search(text)
    return found.group(0) if found else None


def _refuse_unprintable(value: Any) -> None:
    """Raise unless ``value`` is plain data throughout (strings, numbers, booleans, None, and
    lists, tuples and dicts of them); an undefined value raises its own error."""
    if type(value) in SCALARS:
        return
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()
    if isinstance(value, (list, tuple)):
        for item in value:
            _refuse_unprintable(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_unprintable(key)
            _refuse_unprintable(item)
    elif not isinstance(value, (str, int, float, bool)):
        raise jinja2.TemplateRuntimeError(
            f"a {type(value).__name__} cannot be printed ({_UNPRINTABLE_HINT})")



def _finalize(value: Any) -> Any:
    """Only plain data may be printed, inside lists and dicts too: a method or generator would
    print its memory address, which changes from run to run."""
    if type(value) is str:  # nearly every {{ }} of every template prints a string
        return value
    if isinstance(value, jinja2.Undefined):
        return value  # printing it raises the undefined error itself
    if isinstance(value, (list, tuple, dict)):
        # Its text is made by str() in C, out of the alarm's reach: sized first (before
        # its items are looked at too, which would take as long as they are many).
        refuse_over(text_length(value), f"printing a {type(value).__name__}")
    _refuse_unprintable(value)
    return value


def _plain_text(text: str) -> bool:
    """Whether ``text`` is canonical as it is (plain ASCII without carriage returns) and holds
    no object's memory address."""
    return text.isascii() and "\r" not in text and object_address(text) is None

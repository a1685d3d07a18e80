"""Regular expressions written by strangers (a family's regex gold and abstain patterns, an
``--abstain-pattern``), matched with a time limit.

A pattern such as ``(x+x+)+y`` takes time exponential in the text it is tried on. Python's
``re`` can only be stopped by the alarm of a budget, which does not reach threads other than
the main one; the ``regex`` package stops a match itself after a timeout, wherever it runs.
Patterns are compiled as ``re`` would read them (``regex.VERSION0``)."""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

from .errors import SpecError, elide

if TYPE_CHECKING:
    import regex

#: Seconds of processor time one match of a pattern from a spec or the command line may take
#: (the ``regex`` package counts processor time, not the clock), by default: a
#: sound pattern takes microseconds on an answer.
DEFAULT_REGEX_SECONDS = 1.0


class PatternTooSlow(Exception):
    """Matching a pattern took longer than its time limit."""

    def __init__(self, pattern: str, seconds: float) -> None:
        super().__init__(f"pattern {_shown(pattern)} took longer than {seconds:g} s to match "
                         "($MEMSPEC_REGEX_SECONDS)")
        self.pattern = pattern
        self.seconds = seconds


def _shown(pattern: str) -> str:
    """The pattern quoted for an error line, its middle elided where it is long."""
    return elide(repr(pattern), 120)


def regex_seconds() -> float:
    """The time limit of one match: ``$MEMSPEC_REGEX_SECONDS``, else the default."""
    text = os.environ.get("MEMSPEC_REGEX_SECONDS", "").strip()
    if not text:
        return DEFAULT_REGEX_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= 3600:
        raise SpecError.single("$MEMSPEC_REGEX_SECONDS must be a number of seconds above 0 and "
                               f"at most 3,600, not {text!r}")
    return value


@functools.cache
def _engine() -> Any:
    """The ``regex`` package, imported at its first use (a command that matches no pattern
    from a stranger does not pay for its import)."""
    import regex  # noqa: PLC0415

    return regex


@functools.lru_cache(maxsize=4096)
def compiled(pattern: str, ignore_case: bool = False) -> regex.Pattern[str]:
    """``pattern`` compiled (kept: the same few patterns are tried on every response)."""
    engine = _engine()
    return engine.compile(pattern, engine.VERSION0 | (engine.IGNORECASE if ignore_case else 0))


def pattern_error(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid regular expression, or None where it is."""
    try:
        compiled(pattern)
    except (_engine().error, ValueError, OverflowError, RecursionError) as exc:
        return str(exc)
    return None


def search(pattern: str, text: str, ignore_case: bool = False) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``; PatternTooSlow past the limit."""
    return _run(pattern, text, ignore_case, anchored=False)


def match(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches at the start of ``text``; PatternTooSlow past the limit."""
    return _run(pattern, text, False, anchored=True)


def _run(pattern: str, text: str, ignore_case: bool, anchored: bool) -> bool:
    seconds = regex_seconds()
    found = compiled(pattern, ignore_case)
    try:
        if anchored:
            return found.match(text, timeout=seconds) is not None
        return found.search(text, timeout=seconds) is not None
    except TimeoutError:
        raise PatternTooSlow(pattern, seconds) from None

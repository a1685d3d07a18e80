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


#: Length of the runs of one character a pattern searched in responses is tried on before it
#: is accepted: a pattern that backtracks exponentially (``(a|aa)+$``) or in a high power of
#: the text's length times out on them, while a sound one takes microseconds.
PROBE_RUN = 1024


def _probes(pattern: str) -> tuple[str, ...]:
    """Texts a pattern is tried on before it is accepted: a run of each character it names
    (and of a space, a letter and a digit, which its classes may stand for), each ended by a
    character nothing in it expects, so that a match that can fail only at the end is
    driven through every way of splitting the run."""
    characters = sorted({c for c in pattern if c.isprintable()} | set(" a0"))
    return tuple(c * PROBE_RUN + "\x00" for c in characters)


@functools.lru_cache(maxsize=1024)
def searched_pattern_problem(pattern: str, ignore_case: bool = True) -> str | None:
    """Why ``pattern`` cannot be searched in every response (an abstain pattern, matched
    case aside against a response's first line; a declared outcome or signal, matched as it
    is against a first attempt), or None where it can: it must compile in the engine that
    matches it, and every probe (``_probes``) must be searched within the time limit. Worked
    out once a pattern text in a process."""
    error = pattern_error(pattern)
    if error is not None:
        return f"is not a valid regular expression: {error}"
    for text in _probes(pattern):
        try:
            search(pattern, text, ignore_case=ignore_case)
        except PatternTooSlow as exc:
            return (f"took longer than {exc.seconds:g} s to match ($MEMSPEC_REGEX_SECONDS) a "
                    f"line of {PROBE_RUN:,} times {text[0]!r}, and every response would be "
                    "searched with it")
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

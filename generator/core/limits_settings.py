"""How large the budgets are: the time and memory one group, or one analysis command, may
take by default, and the environment variables that change that."""

from __future__ import annotations

import os

from .errors import SpecError

#: Seconds one group of one family may take to render and check, by default.
DEFAULT_GROUP_SECONDS = 20.0
#: Megabytes of memory one group may take on top of what the process holds when it starts,
#: by default. A render is at most a few million characters, so this is generous; it is there
#: so that a template doubling a string in a loop, or asking for a gigabyte of padding in one
#: call, fails at once instead of driving the machine out of memory.
DEFAULT_GROUP_MEGABYTES = 512


def group_seconds() -> float:
    """The time budget of one group: ``$MEMSPEC_GROUP_SECONDS``, else the default."""
    return float(_setting("MEMSPEC_GROUP_SECONDS", DEFAULT_GROUP_SECONDS, float, 10**6))


def group_megabytes() -> int:
    """The memory budget of one group: ``$MEMSPEC_GROUP_MEGABYTES``, else the default."""
    return int(_setting("MEMSPEC_GROUP_MEGABYTES", DEFAULT_GROUP_MEGABYTES, int, 10**7))


def _setting(name: str, default: float, kind: type, most: int) -> float:
    """A positive number from the environment variable ``name`` (read when a run starts, so
    that a bad one is a located error rather than a failure to start)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not 0 < value <= most:
        what = "a number of seconds" if kind is float else "a whole number of megabytes"
        raise SpecError.single(f"${name} must be {what} above 0 and at most {most:,}, "
                               f"not {text!r}")
    return value


#: Seconds and megabytes an analysis command (score, audit, report, preview, judge-requests,
#: export) may take in all, by default: far above what the largest bundled release needs, so
#: that only a hostile input (a pattern that backtracks, a response built to be slow to read)
#: meets them.
DEFAULT_COMMAND_SECONDS = 3600.0
DEFAULT_COMMAND_MEGABYTES = 8192


def command_seconds() -> float:
    """The time budget of an analysis command: ``$MEMSPEC_COMMAND_SECONDS``, else the default."""
    return float(_setting("MEMSPEC_COMMAND_SECONDS", DEFAULT_COMMAND_SECONDS, float, 10**6))


def command_megabytes() -> int:
    """The memory budget of an analysis command: ``$MEMSPEC_COMMAND_MEGABYTES``, else the
    default."""
    return int(_setting("MEMSPEC_COMMAND_MEGABYTES", DEFAULT_COMMAND_MEGABYTES, int, 10**7))

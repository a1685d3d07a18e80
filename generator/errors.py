"""Typed errors that carry where the problem is: file, line, column and JSON path."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

#: Exit status for a run that went well.
EXIT_OK = 0
#: Exit status for a check that failed (verification mismatch, refused freeze).
EXIT_CHECK_FAILED = 1
#: Exit status for bad input (a spec, template, pool or argument that cannot be used).
EXIT_BAD_INPUT = 2
#: Exit status when standard output's reader went away: a shell's for a process ended by
#: SIGPIPE (128 + 13), which is what a pipeline expects of its writers.
EXIT_BROKEN_PIPE = 141

PathPart = str | int


def format_json_path(path: Sequence[PathPart]) -> str:
    """Render a JSON path as ``$.slots.name[0]``."""
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def lookalike_note(text: str) -> str:
    """A note naming the characters of an id-like ``text`` that are not printable ASCII, or ''.

    A Cyrillic letter that looks Latin, a zero-width joiner or a right-to-left override makes
    two ids look the same on screen; the note says which character differs, e.g.
    `` (it holds U+043E CYRILLIC SMALL LETTER O at position 15)``."""
    odd = [(i, c) for i, c in enumerate(text) if not " " <= c <= "~"]
    if not odd:
        return ""
    shown = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, '') or 'CONTROL CHARACTER'} at "
                      f"position {i + 1}" for i, c in odd[:3])
    more = f" and {len(odd) - 3} more" if len(odd) > 3 else ""
    return f" (it holds {shown}{more})"


def unknown_name(what: str, name: str, known: Sequence[str], plural: str = "") -> str:
    """``unknown WHAT 'NAME'`` and what to use instead: the known names closest to it where
    some are close (a typo), else every known name (``plural``: of ``what``, if not WHAT+s).
    Deterministic: ``difflib`` ranks by a similarity ratio, ties in the order of ``known``,
    which callers sort."""
    from difflib import get_close_matches

    plural = plural or f"{what}s"
    close = [repr(c) for c in get_close_matches(name, known, n=3, cutoff=0.75)]
    if close:
        names = close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"
        return f"unknown {what} {name!r}; did you mean {names}? ({len(known)} known)"
    return f"unknown {what} {name!r}; known {plural}: " + (", ".join(known) or "none")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input, located as precisely as we can."""

    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    json_path: tuple[PathPart, ...] | None = None

    def sort_key(self) -> tuple:
        return (
            self.file or "",
            self.line if self.line is not None else 0,
            self.column if self.column is not None else 0,
            format_json_path(self.json_path) if self.json_path is not None else "",
            self.message,
        )

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}:{self.column if self.column is not None else 1}"
            where += ": "
        path = f" (at {format_json_path(self.json_path)})" if self.json_path else ""
        return f"{where}{self.message}{path}"


@dataclass
class MemspecError(Exception):
    """Base of every error memspec reports to a user; carries one or more problems."""

    problems: list[Problem] = field(default_factory=list)
    exit_code: int = EXIT_BAD_INPUT

    def __post_init__(self) -> None:
        super().__init__(self.render())

    def render(self) -> str:
        unique = dict.fromkeys(sorted(self.problems, key=Problem.sort_key))
        return "\n".join(str(p) for p in unique)

    def __str__(self) -> str:
        return self.render()

    def __reduce__(self) -> tuple:
        # Errors raised in a worker process travel back pickled: keep the problems and the
        # exit status, whatever the subclass's constructor takes.
        return (_rebuild_error, (type(self), list(self.problems), self.exit_code))


def _rebuild_error(kind: type[MemspecError], problems: list[Problem],
                   exit_code: int) -> MemspecError:
    error = Exception.__new__(kind)
    error.problems = problems
    error.exit_code = exit_code
    Exception.__init__(error, error.render())
    return error


class SpecError(MemspecError):
    """Bad input: a spec, template, pool, release or argument that cannot be used (exit 2)."""

    @classmethod
    def single(
        cls,
        message: str,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        json_path: Sequence[PathPart] | None = None,
    ) -> SpecError:
        return cls([Problem(message, file, line, column, tuple(json_path) if json_path else None)])

    @classmethod
    def merge(cls, errors: Iterable[MemspecError]) -> SpecError:
        problems: list[Problem] = []
        for err in errors:
            problems.extend(err.problems)
        return cls(problems)


class CheckFailed(MemspecError):
    """A check on generated or built output failed (exit 1)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems, EXIT_CHECK_FAILED)

    @classmethod
    def single(cls, message: str, file: str | None = None) -> CheckFailed:
        return cls([Problem(message, file)])


class ProblemCollector:
    """Gathers problems so that every error is reported at once, not just the first."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, problem: Problem) -> None:
        self.problems.append(problem)

    def extend(self, err: MemspecError) -> None:
        self.problems.extend(err.problems)

    def raise_if_any(self) -> None:
        if self.problems:
            raise SpecError(list(self.problems))

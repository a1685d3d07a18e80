"""Typed errors that carry where the problem is: file, line, column and JSON path."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice

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
#: Longest line an error prints: it quotes its input, it does not reprint it.
MAX_LINE = 400
#: Problems of one kind printed in full; the rest are counted in one line.
SHOWN_PER_KIND = 20
#: Characters that would act on a terminal or split a line if printed as they are: controls
#: (C0, DEL, C1), line and paragraph separators, and bidirectional overrides and isolates.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: What differs between two problems of one kind: quoted text and numbers. (Each quoted text
#: is matched as runs between escapes, not a character at a time: the kind is worked out for
#: every problem of a flood, counted ones too, and a long quoted id was most of its cost.)
_SPECIFICS = re.compile(r"'[^'\\]*(?:\\.[^'\\]*)*'|\"[^\"\\]*(?:\\.[^\"\\]*)*\"|\b\d[\d,]*\b")
#: A character that is not printable ASCII.
_NOT_PLAIN = re.compile("[^ -~]")


def printable(text: str) -> str:
    """``text`` safe to print on one line of a terminal: every character that could move the
    cursor, change colours, start a new line (a forged ``ok:``) or reorder what follows is
    shown as its escape (``\\x1b``, ``\\n``, ``\\u202e``)."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"),
                            text) if _UNPRINTABLE.search(text) else text


def elide(text: str, limit: int = MAX_LINE) -> str:
    """``text`` cut to at most ``limit`` characters by dropping its middle, saying how much
    (in ASCII, so that a line of ASCII is as many bytes as characters)."""
    if len(text) <= limit:
        return text
    keep = limit - len(f" ... [{len(text):,} characters left out] ... ")
    note = f" ... [{len(text) - keep:,} characters left out] ... "
    return text[: keep - keep // 3] + note + text[len(text) - keep // 3:]


def problem_kind(problem: Problem) -> str:
    """What problems alike share: the message without its quoted values and numbers
    (``unknown instance id '…'`` is one kind, whatever the id, in whichever file). A long
    message is cut as ``elide`` cuts it to print it first (its start and end kept, the count
    of what was left out a number), so that the kind of each problem of a flood costs a
    bounded time however long the values it quotes."""
    return _SPECIFICS.sub("…", elide(problem.message, MAX_LINE))


#: Problems of a kind left out: how many, and the file they all name (None if several).
Tally = dict[str, tuple[int, str | None]]


def count_left_out(tally: Tally, kind: str, problem: Problem) -> None:
    """Count ``problem`` (of ``kind``) in ``tally`` rather than keep it."""
    count, file = tally.get(kind, (0, problem.file))
    tally[kind] = (count + 1, file if file == problem.file else None)


def summarised(problems: Iterable[Problem], counted: Tally | None = None) -> list[Problem]:
    """At most ``SHOWN_PER_KIND`` problems of each kind, then one line per kind counting the
    rest (``and 999,980 more like this``); ``counted`` adds kinds already cut short."""
    shown: list[Problem] = []
    more = dict(counted or {})
    seen: dict[str, int] = {}
    for problem in problems:
        kind = problem_kind(problem)
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] <= SHOWN_PER_KIND:
            shown.append(problem)
        else:
            count_left_out(more, kind, problem)
    for message, (count, file) in sorted(more.items()):
        shown.append(Problem(f"and {count:,} more like this ({message})", file, None, None,
                             (), True))
    return shown


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
    # Found by the regex engine, not a loop in Python: a flood of bad lines asks this of
    # every line's id.
    odd = [(m.start(), m.group()) for m in islice(_NOT_PLAIN.finditer(text), 3)]
    if not odd:
        return ""
    shown = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, '') or 'CONTROL CHARACTER'} at "
                      f"position {i + 1}" for i, c in odd)
    count = _count_not_plain(text) if len(odd) == 3 else len(odd)
    more = f" and {count - 3} more" if count > 3 else ""
    return f" (it holds {shown}{more})"


#: The bytes of printable ASCII, deleted to count the rest.
_PLAIN_BYTES = bytes(range(0x20, 0x7f))


def _count_not_plain(text: str) -> int:
    """How many characters of ``text`` are not printable ASCII: those beyond ASCII (dropped
    by encoding) and the ASCII controls (left once printable bytes are deleted), each
    counted by a loop in C."""
    ascii_bytes = text.encode("ascii", "ignore")
    return len(text) - len(ascii_bytes) + len(ascii_bytes.translate(None, _PLAIN_BYTES))


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
    #: A line that counts problems left out (``summarised``): sorted after its kind's.
    tally: bool = False

    def sort_key(self) -> tuple:
        return (
            self.file or "",
            self.tally,
            self.line if self.line is not None else 0,
            self.column if self.column is not None else 0,
            format_json_path(self.json_path) if self.json_path is not None else "",
            self.message,
        )

    def __str__(self) -> str:
        """One printable line (``printable``), at most ``MAX_LINE`` characters after the
        ``error: `` it is printed with (``elide``)."""
        where = ""
        if self.file:
            where = printable(self.file)
            if self.line is not None:
                where += f":{self.line}:{self.column if self.column is not None else 1}"
            where += ": "
        path = f" (at {format_json_path(self.json_path)})" if self.json_path else ""
        return elide(f"{where}{printable(self.message)}{printable(path)}", MAX_LINE - 7)


@dataclass
class MemspecError(Exception):
    """Base of every error memspec reports to a user; carries one or more problems."""

    problems: list[Problem] = field(default_factory=list)
    exit_code: int = EXIT_BAD_INPUT

    def __post_init__(self) -> None:
        # Rendered when shown (``__str__``), not when raised: a file of a million bad lines
        # raises a million of them, of which the collector keeps twenty.
        super().__init__()

    def render(self) -> str:
        """One line per problem, sorted; a flood of one kind summarised (``summarised``)."""
        unique = dict.fromkeys(sorted(summarised(self.problems), key=Problem.sort_key))
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
    Exception.__init__(error)
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
    """Gathers problems so that every error is reported at once, not just the first; of each
    kind (``problem_kind``) it keeps ``SHOWN_PER_KIND`` and counts the rest, so a file of a
    million bad lines costs a count, not a million problems held in memory."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self._kept: dict[str, int] = {}
        self._more: Tally = {}
        #: How many problems were added, kept or counted.
        self.total = 0

    def add(self, problem: Problem) -> None:
        self.total += 1
        kind = problem_kind(problem)
        kept = self._kept.get(kind, 0)
        if kept < SHOWN_PER_KIND:
            self._kept[kind] = kept + 1
            self.problems.append(problem)
        else:
            count_left_out(self._more, kind, problem)

    def extend(self, err: MemspecError) -> None:
        for problem in err.problems:
            self.add(problem)

    def __bool__(self) -> bool:
        return bool(self.problems)

    @property
    def left_out(self) -> int:
        """How many problems were counted rather than kept."""
        return sum(count for count, _ in self._more.values())

    def raise_if_any(self) -> None:
        if self.problems:
            raise SpecError(summarised(self.problems, self._more))

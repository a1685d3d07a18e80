"""Jinja's failures described: where in which template file an error happened (from the
traceback of the compiled code) and what to say about it."""

from __future__ import annotations

import re
from types import CodeType, TracebackType

import jinja2
from jinja2.exceptions import SecurityError, TemplateSyntaxError, UndefinedError

from ..core.errors import lookalike_note
from ..core.limits import group_megabytes, group_seconds


def _template_frames(tb: TracebackType | None, names: set[str]) -> list[tuple[str, int]]:
    """(template file, line) of every traceback frame that runs template code, outermost first."""
    frames = []
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename in names:
            frames.append((filename, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _line_at(code: CodeType, offset: int) -> int:
    """The source line of the instruction at byte ``offset`` of ``code``, or of the nearest
    instruction before it that has one (a loop's jump back has none of its own)."""
    line = code.co_firstlineno
    for start, _end, number in code.co_lines():
        if start > offset:
            break
        if number is not None:
            line = number
    return line


def numbered_traceback(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` with a line number in every entry. Python leaves an entry's line empty where
    the instruction that raised has none, as a loop's jump back, where the interpreter
    checks for signals: a time budget's alarm lands there, and Jinja, which maps every
    entry of a template's code to the template's line, fails on it with a TypeError in
    place of the budget's error."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    if all(entry.tb_lineno is not None for entry in entries):
        return entries[0] if entries else None
    rebuilt = None
    for entry in reversed(entries):
        line = entry.tb_lineno
        if line is None:
            line = _line_at(entry.tb_frame.f_code, entry.tb_lasti)
        rebuilt = TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, line)
    return rebuilt


def _column_of(source: str, line: int | None, needle: str | None) -> int:
    if line is None or not needle:
        return 1
    lines = source.splitlines()
    if 0 < line <= len(lines):
        found = lines[line - 1].find(needle)
        if found >= 0:
            return found + 1
    return 1


_UNDEFINED_NAME = re.compile(r"'([^']+)' is undefined|has no attribute '([^']+)'")
_ATTRIBUTE_NAME = re.compile(r"attribute '([^']+)'")


def memory_message() -> str:
    """What a template that runs out of memory is told."""
    return (f"template went over the memory budget of {group_megabytes()} MB for one group "
            "($MEMSPEC_GROUP_MEGABYTES): a string or list grown without bound?")


#: What a template that recurses without end is told.
RECURSION_MESSAGE = ("template recursion too deep: a template that includes, extends or "
                     "imports itself (directly or through others), or a macro that calls "
                     "itself without end")


def _describe_jinja_error(exc: BaseException) -> tuple[str, str | None]:
    if isinstance(exc, SecurityError):
        match = _ATTRIBUTE_NAME.search(str(exc))
        return f"unsafe template: {exc}", match.group(1) if match else None
    if isinstance(exc, UndefinedError):
        match = _UNDEFINED_NAME.search(str(exc))
        needle = (match.group(1) or match.group(2)) if match else None
        return f"undefined in template: {exc}{lookalike_note(needle or '')}", needle
    if isinstance(exc, MemoryError):
        return memory_message(), None
    if isinstance(exc, RecursionError):
        return RECURSION_MESSAGE, None
    return f"template error: {type(exc).__name__}: {exc}", None


def _deepest_bracket(env: jinja2.Environment, source: str) -> tuple[int, int]:
    """Line and column of the first bracket nested more than a hundred deep, or 1:1: where a
    template too deeply nested for Jinja's recursive parser goes wrong."""
    depth = 0
    try:
        for line, kind, value in env.lex(source):
            if kind == "operator" and value in "([{":
                depth += 1
                if depth > 100:
                    return line, _column_of(source, line, value)
            elif kind == "operator" and value in ")]}":
                depth -= 1
    except TemplateSyntaxError:
        pass
    return 1, 1


def _compile_budget_message(what: str, exc: BaseException) -> str:
    """Why compiling a template or expression was given up: its constant expressions, which
    Jinja works out while compiling, took longer or more memory than a group may."""
    if isinstance(exc, MemoryError):
        spent = f"more than the memory budget of {group_megabytes()} MB " \
                "($MEMSPEC_GROUP_MEGABYTES)"
    else:
        spent = f"longer than {group_seconds():g} s ($MEMSPEC_GROUP_SECONDS)"
    return f"{what} took {spent} to compile (its constant expressions are worked out then)"

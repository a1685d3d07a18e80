"""Reading instances: their phases are an ordered list, looked up by name here."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from ..core.errors import SpecError
from .schemas import first_error

#: Every digit as 0, so that a run of 20 digits (an integer past 64 bits, which orjson
#: would read as a float) is found by a plain substring search, ten times faster than a
#: regular expression.
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_DIGITS = b"0" * 20
#: The deepest an instance's values nest. Specs nest at most 48 levels (``yamlsafe``), and an
#: instance wraps them in a few more; a data line nested deeper was not made by memspec, and
#: what reads it later (an export writing it as JSON) would hit Python's recursion limit
#: with no file to name, so it is refused here, at its line.
MAX_INSTANCE_DEPTH = 100


def read_instances(path: Path, validate: bool = False) -> Iterator[dict[str, Any]]:
    """The instances of one JSONL data file, streamed line by line; a line that is not JSON
    is an error at its line and column. With ``validate``, for a release nobody here pinned,
    each must also be an instance by the schema."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            # orjson reads a line several times faster; what it refuses (bytes that are not
            # UTF-8, NaN, a lone surrogate) is read again by the standard library, which
            # accepts what it always did and reports the rest at its line and column. A
            # line with 20 digits in a row may hold an integer orjson would read as a float.
            if _LONG_DIGITS in raw.translate(_DIGITS_AS_ZERO):
                instance = _standard_loads(raw, path, number)
            else:
                try:
                    instance = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    instance = _standard_loads(raw, path, number)
            # Only a line holding more openers than the limit can nest past it: counting
            # them in C spares every other line the walk.
            if raw.count(b"[") + raw.count(b"{") > MAX_INSTANCE_DEPTH and \
                    _nesting(instance) > MAX_INSTANCE_DEPTH:
                raise SpecError.single(f"not an instance: nested more than "
                                       f"{MAX_INSTANCE_DEPTH} levels deep", str(path), number, 1)
            if validate or not isinstance(instance, dict):
                error = first_error("instance", instance)
                if error:
                    raise SpecError.single(f"not an instance: {error}", str(path), number, 1)
            yield instance


def _nesting(value: Any) -> int:
    """How many levels of lists and objects ``value`` nests, walked without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in
                         (node.values() if isinstance(node, dict) else node))
    return deepest


def _standard_loads(raw: bytes, path: Path, number: int) -> Any:
    """Line ``number`` of ``path`` parsed by the standard library, or its error at its line
    and column."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SpecError.single(f"not UTF-8: {exc.reason}", str(path), number,
                               exc.start + 1) from None
    except RecursionError:
        raise SpecError.single("not readable JSON: nested too deeply", str(path),
                               number, 1) from None
    except ValueError as exc:
        column = getattr(exc, "colno", 1)
        raise SpecError.single(f"not valid JSON: {getattr(exc, 'msg', exc)}",
                               str(path), number, column) from None


def family_sources(folder: Path, names: Iterable[str], validate: bool = False
                   ) -> dict[str, Callable[[], Iterator[dict[str, Any]]]]:
    """Per data file among a release's ``names`` (``data/<family>.jsonl``), by family, a
    function that streams its instances afresh each time it is called (checked against the
    instance schema with ``validate``)."""
    return {name.removeprefix("data/").removesuffix(".jsonl"):
            partial(read_instances, folder / name, validate)
            for name in names if name.startswith("data/")}


def phase_messages(instance: Mapping[str, Any], phase: str) -> list[dict[str, str]]:
    """The messages of one phase of an instance (empty if the phase rendered none)."""
    for entry in instance["phases"]:
        if entry["phase"] == phase:
            return entry["messages"]
    return []


def all_messages(instance: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every message of an instance, phase after phase, in order."""
    return [message for entry in instance["phases"] for message in entry["messages"]]


def phase_text(instance: Mapping[str, Any], phases: list[str]) -> str:
    """The contents of the named phases' messages, joined by newlines."""
    return "\n".join(m["content"] for p in phases for m in phase_messages(instance, p))


def pair_key(instance: Mapping[str, Any], axis: str) -> tuple:
    """What pairs two instances along ``axis``: the same family, group, design and values of
    every other axis."""
    rest = tuple(sorted((k, v) for k, v in instance["axes"].items() if k != axis))
    return (instance["family"], instance["group"], instance["design"], rest)

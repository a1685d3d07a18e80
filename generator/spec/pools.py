"""Curated pools: YAML lists of values or records that slots draw from."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.canonical import dumps
from ..core.errors import Problem, SpecError
from .schemas import schema_problems
from .yamlsafe import Located, load_yaml_file

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class Pool:
    """A loaded pool: its id, items and the file it came from."""

    pool_id: str
    description: str
    items: tuple[Any, ...]
    file: str
    source: dict[str, Any]
    keys: tuple[str, ...] = ()  # canonical JSON of each item, for equality tests

    def __post_init__(self) -> None:
        if not self.keys:
            object.__setattr__(self, "keys", tuple(dumps(item) for item in self.items))
        object.__setattr__(self, "_positions", {id(item): i for i, item in enumerate(self.items)})

    def key_of(self, value: Any) -> str:
        """The canonical JSON of ``value``: read off the pool where it is one of the pool's
        own items (a slot drawn from it holds the item itself), else written out."""
        index = self._positions.get(id(value))  # type: ignore[attr-defined]
        if index is not None and self.items[index] is value:  # an id can be reused: check
            return self.keys[index]
        return dumps(value)


def _walk_strings(value: Any, path: tuple) -> list[tuple[tuple, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _walk_strings(v, (*path, k))]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _walk_strings(v, (*path, i))]
    return []


def pool_problems(located: Located) -> list[Problem]:
    """Schema errors plus duplicates, control characters and mixed item shapes."""
    problems = schema_problems("pool", located)
    if problems:
        return problems
    items = located.data["items"]
    seen: dict[str, int] = {}
    shape: tuple[str, Any] | None = None
    for index, item in enumerate(items):
        path = ("items", index)
        line, col = located.where(path)
        key = dumps(item)
        if key in seen:
            problems.append(Problem(f"duplicate pool item (same as item {seen[key]})",
                                    located.file, line, col, path))
        seen.setdefault(key, index)
        item_shape = ("record", tuple(sorted(item))) if isinstance(item, dict) else (
            "value", type(item).__name__)
        if shape is None:
            shape = item_shape
        elif item_shape != shape:
            problems.append(Problem(
                f"pool items must all have the same shape: item {index} is {item_shape}, "
                f"item 0 is {shape}", located.file, line, col, path))
        for spath, text in _walk_strings(item, path):
            if _CONTROL.search(text):
                sl, sc = located.where(spath)
                problems.append(Problem("control character in pool text", located.file, sl, sc,
                                        spath))
    return problems


def load_pool(path: Path, display: str) -> Pool:
    """Load and check one pool file."""
    located = load_yaml_file(path, display)
    problems = pool_problems(located)
    if problems:
        raise SpecError(problems)
    data = located.data
    return Pool(data["pool"], data["description"], tuple(data["items"]), display,
                dict(data.get("source", {})))

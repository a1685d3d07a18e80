"""Finding instances whose content repeats, in memory that grows by 8 bytes per instance.

A release may hold millions of instances. Keeping every content key (or id) to look new ones
up in would grow by a few hundred bytes per instance; this index keeps 64 bits of each key in
a flat array, and only where two of those agree are the instances read back from the written
files and their full keys compared. So a duplicate is never missed and never reported wrongly.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..core.canonical import content_hash, normal_content_hash


def content_key(instance: Mapping[str, Any]) -> str:
    """What makes two instances the same content: XXH3-128 of their phases and answer."""
    return content_hash({"phases": instance["phases"], "answer": instance["answer"]})


def written_content_key(instance: Mapping[str, Any]) -> str:
    """``content_key`` of an instance memspec generated or wrote itself, which is normal
    already (``normal_content_hash``): the same key, without normalising it again. Files
    of unknown origin (an audit's) take ``content_key``."""
    return normal_content_hash({"phases": instance["phases"], "answer": instance["answer"]})


class ContentIndex:
    """The content keys (hex digests) of a stream of instances, in the order they came."""

    def __init__(self) -> None:
        self._prefixes = array("Q")

    def __len__(self) -> int:
        return len(self._prefixes)

    def add(self, key: str) -> None:
        """Remember the next instance's key (a hex digest of at least 16 digits)."""
        self._prefixes.append(int(key[:16], 16))

    def prefixes(self) -> bytes:
        """The 64-bit prefixes held, in order, as bytes (what ``extend`` takes)."""
        return self._prefixes.tobytes()

    def extend(self, prefixes: bytes) -> None:
        """Append the prefixes another index's ``prefixes`` gave."""
        self._prefixes.frombytes(prefixes)

    def candidates(self) -> list[int]:
        """Positions whose 64-bit prefix some other position shares, ascending."""
        import numpy as np  # imported on use: most commands never need it

        prefixes = np.frombuffer(self._prefixes, dtype=np.uint64)
        if prefixes.size < 2:
            return []
        order = np.argsort(prefixes, kind="stable")
        ordered = prefixes[order]
        shared = np.flatnonzero(ordered[1:] == ordered[:-1])
        positions = np.union1d(order[shared], order[shared + 1])
        return [int(p) for p in positions]

    def first_duplicate(self, records: Callable[[list[int]], Iterable[tuple[str, Any]]]
                        ) -> tuple[Any, Any] | None:
        """The earliest instance (in stream order) whose full key an earlier one has, with that
        earlier one; None if every key is unique.

        ``records(positions)`` gives ``(key, instance)`` for the instances at those positions,
        in ascending order; it is called only if some prefixes collide."""
        wanted = self.candidates()
        if not wanted:
            return None
        first_with_key: dict[str, Any] = {}
        for key, instance in records(wanted):
            if key in first_with_key:
                return instance, first_with_key[key]
            first_with_key[key] = instance
        return None


def records_from_files(paths: list[Path], key_of: Callable[[Mapping[str, Any]], str]
                       ) -> Callable[[list[int]], Iterator[tuple[str, dict[str, Any]]]]:
    """A ``records`` function for :meth:`ContentIndex.first_duplicate` over JSONL files that
    hold the stream in order, one instance per line."""

    def records(positions: list[int]) -> Iterator[tuple[str, dict[str, Any]]]:
        wanted = iter(positions)
        target = next(wanted, None)
        position = 0
        for path in paths:
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    if target is None:
                        return
                    if position == target:
                        instance = json.loads(line)
                        yield key_of(instance), instance
                        target = next(wanted, None)
                    position += 1

    return records

"""Which items of a family's pools the groups drawn so far used: `validate` renders groups
until every item has been drawn (a forbidden word in one item shows only where it is drawn),
and says which items it did not reach."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..core.canonical import dumps
from .spec import FamilySpec

#: What gives the pool items one group drew for one source, from the group's slot values.
_Drawn = Callable[[Mapping[str, Any]], Iterable[Any]]


def _sources(family: FamilySpec) -> list[tuple[str, _Drawn]]:
    """Each pool a slot, table column or crossed factor draws from (by its pool key in
    ``family.pools``), with what reads the items it drew off a group's slots."""
    out: list[tuple[str, _Drawn]] = []
    for name, slot in family.slots.items():
        if "from" in slot:
            many = "count" in slot
            out.append((name, lambda s, n=name, m=many: s[n] if m else [s[n]]))
        for column, spec in slot.get("table", {}).get("columns", {}).items():
            if "from" in spec:
                out.append((f"{name}.{column}",
                            lambda s, n=name, c=column: [row[c] for row in s[n]]))
        for factor, spec in slot.get("crossed", {}).items():
            if isinstance(spec, dict) and "from" in spec:
                out.append((f"{name}.{factor}", lambda s, n=name, f=factor: [s[n][f]]))
    return out


class PoolCoverage:
    """The items of a family's pools not drawn yet, by pool file."""

    def __init__(self, family: FamilySpec) -> None:
        self._sources = [(family.pools[key].file, drawn) for key, drawn in _sources(family)
                         if key in family.pools]
        #: Pool file -> canonical JSON of each item not drawn yet -> the item.
        self._left: dict[str, dict[str, Any]] = {}
        for key, _ in _sources(family):
            pool = family.pools.get(key)
            if pool is not None:
                self._left.setdefault(pool.file, dict(zip(pool.keys, pool.items, strict=True)))

    def add(self, slots: Mapping[str, Any]) -> None:
        """Count the items one group's slots drew."""
        for file, drawn in self._sources:
            left = self._left[file]
            if left:
                for item in drawn(slots):
                    left.pop(dumps(item), None)

    def new_items(self, slots: Mapping[str, Any]) -> int:
        """How many items not drawn yet one group's slots draw."""
        new: set[tuple[str, str]] = set()
        for file, drawn in self._sources:
            left = self._left[file]
            if left:
                new.update((file, key) for key in map(dumps, drawn(slots)) if key in left)
        return len(new)

    def drawn_left(self, slots: Mapping[str, Any]) -> dict[str, set[str]]:
        """The items not drawn yet that one group's slots draw, by pool file."""
        found: dict[str, set[str]] = {}
        for file, drawn in self._sources:
            left = self._left[file]
            for key in map(dumps, drawn(slots)):
                if key in left:
                    found.setdefault(file, set()).add(key)
        return found

    def item(self, file: str, key: str) -> Any:
        """The item of pool ``file`` whose canonical JSON is ``key`` (not drawn yet)."""
        return self._left[file][key]

    @property
    def complete(self) -> bool:
        return not any(self._left.values())

    def missing(self) -> dict[str, list[Any]]:
        """The items not drawn, by pool file (pools whose every item was drawn left out)."""
        return {file: list(left.values()) for file, left in sorted(self._left.items()) if left}

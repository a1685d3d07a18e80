"""A family's slots: merged with its paradigm's, and each checked (its source, a table's
columns, a crossed slot's factors, a shared slot's keys) beyond what the schema says."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .spec_types import (
    MAX_CROSSED_CELLS,
    RANDOM_SOURCES,
    RESERVED_NAMES,
    SLOT_SOURCES,
    ParadigmSpec,
)
from .yamlsafe import Located


def check_slot(name: str, slot: Mapping[str, Any], earlier: Mapping[str, Mapping[str, Any]],
                located: Located, problem: Any) -> None:
    where = ("slots", name)
    if name in RESERVED_NAMES:
        problem(f"slot name {name!r} is reserved (templates receive it from memspec)", where)
    if any(c in text for text in _strings(slot) for c in "\x02\x03\x1f"):
        problem("slot values may not contain control characters", where)
    _check_source(slot, where, list(earlier), problem, table_allowed=True)
    for column, spec in slot.get("table", {}).get("columns", {}).items():
        col_where = (*where, "table", "columns", column)
        if column in ("row", "index"):
            problem(f"column name {column!r} is reserved (column expressions receive it)",
                    col_where)
        _check_source(spec, col_where, list(earlier), problem, table_allowed=False)
    if "shared_by" in slot:
        _check_shared(name, slot, earlier, problem)
    if "crossed" in slot:
        _check_crossed(slot["crossed"], where, problem)


def merged_slots(paradigm: ParadigmSpec | None, own: Mapping[str, Mapping[str, Any]],
                  located: Located, problem: Any
                  ) -> tuple[dict[str, Mapping[str, Any]], dict[str, Located]]:
    """A family's slots: its paradigm's first, in their order, then its own. A family slot of
    a paradigm slot's name replaces it, in the paradigm's place, only if it says
    ``override: true`` (so that nobody shadows a shared slot by accident); ``override`` on a
    slot the paradigm lacks is refused too. With them, the paradigm's file for each slot
    taken from it."""
    shared = paradigm.slots if paradigm is not None else {}
    slots: dict[str, Mapping[str, Any]] = {}
    origins: dict[str, Located] = {}
    for name, slot in shared.items():
        if name in own:
            if not own[name].get("override"):
                assert paradigm is not None
                line, _ = paradigm.located.where(("slots", name))
                problem(f"slot {name!r} is declared by paradigm {paradigm.paradigm_id!r} "
                        f"({paradigm.located.file}:{line}); say 'override: true' to replace "
                        "it for this family", ("slots", name))
            slots[name] = own[name]
        else:
            slots[name] = slot
            assert paradigm is not None
            origins[name] = paradigm.located
    for name, slot in own.items():
        if name in shared:
            continue
        if slot.get("override"):
            problem(f"slot {name!r} says 'override: true', but paradigm "
                    f"{paradigm.paradigm_id if paradigm else '?'!r} declares no slot of that "
                    "name", ("slots", name, "override"))
        slots[name] = slot
    return slots, origins


def _check_source(spec: Mapping[str, Any], where: tuple, earlier: list[str], problem: Any,
                  table_allowed: bool) -> None:
    """One slot's (or table column's) source: exactly one, and its modifiers fit it."""
    what = "slot" if table_allowed else "column"
    sources = [k for k in SLOT_SOURCES if k in spec]
    if not table_allowed and "table" in sources:
        problem("a table column cannot itself be a table", (*where, "table"))
    if len(sources) == 2 and "balanced" in sources and sources[0] in ("from", "of", "range"):
        if spec["balanced"] is not True:
            problem(f"with {sources[0]!r}, 'balanced' must be true (balance over its values)",
                    where)
        for key in ("count", "distinct", "distinct_from"):
            if key in spec:
                problem(f"{key!r} cannot be combined with a balanced draw", (*where, key))
    elif len(sources) != 1:
        problem(f"{what} {where[-1]!r} needs exactly one of "
                f"{', '.join(k for k in SLOT_SOURCES if table_allowed or k != 'table')}"
                + (f" (it has {', '.join(sources)})" if sources else ""), where)
    elif sources[0] == "balanced" and spec["balanced"] is True:
        problem("'balanced: true' needs 'from' (a pool), 'of' or 'range'; otherwise list the "
                "values", where)
    if "from" not in spec and "of" not in spec:
        for key in ("count", "distinct", "distinct_from"):
            if key in spec:
                problem(f"{key!r} only applies to {what}s drawn 'from' a pool or 'of' a list",
                        (*where, key))
    if "of" in spec and spec["of"] not in earlier:
        problem(f"'of' names {spec['of']!r}, which is not an earlier slot", (*where, "of"))
    for other in spec.get("distinct_from", []):
        if other not in earlier:
            problem(f"distinct_from names {other!r}, which is not an earlier slot",
                    (*where, "distinct_from"))
    if "range" in spec and spec["range"][0] > spec["range"][1]:
        problem("range must be [low, high] with low <= high", (*where, "range"))


def _check_crossed(factors: Mapping[str, Any], where: tuple, problem: Any) -> None:
    """Every factor of a crossed slot has values, and their combinations are not too many to
    take each once per block (a pool's size is known only once it is loaded: not counted)."""
    cells = 1
    for factor, spec in factors.items():
        if isinstance(spec, list):
            count = len(spec)
            if len({repr(v) for v in spec}) != count:
                problem(f"factor {factor!r} lists a value twice: it would be drawn twice as "
                        "often as the others", (*where, "crossed", factor))
        elif "range" in spec:
            low, high = spec["range"]
            count = high - low + 1
            if count < 1:
                problem("range must be [low, high] with low <= high",
                        (*where, "crossed", factor, "range"))
        else:
            continue
        cells *= max(count, 1)
    if cells > MAX_CROSSED_CELLS:
        problem(f"crossed slot has {cells} combinations, more than {MAX_CROSSED_CELLS}",
                (*where, "crossed"))


def _check_shared(name: str, slot: Mapping[str, Any], earlier: Mapping[str, Mapping[str, Any]],
                  problem: Any) -> None:
    """A shared slot must be random, keyed by earlier slots, and depend only on slots that are
    the same wherever its keys are: otherwise "shared" would be a promise it cannot keep."""
    where = ("slots", name, "shared_by")
    keys = list(slot["shared_by"])
    for key in keys:
        if key not in earlier:
            problem(f"shared_by names {key!r}, which is not an earlier slot", where)
    if not any(k in slot for k in RANDOM_SOURCES) or slot.get("balanced") is not None:
        problem("shared_by only applies to a random draw (from, of, range, choice or table); "
                "a balanced slot is assigned per group by definition", where)
    specs = [slot, *slot.get("table", {}).get("columns", {}).values()]
    depends = [d for spec in specs for d in [spec.get("of"), *spec.get("distinct_from", [])]
               if d is not None]
    for other in depends:
        source = earlier.get(other, {})
        is_random = any(k in source for k in (*RANDOM_SOURCES, "balanced", "crossed"))
        shared_alike = set(source.get("shared_by", [None])) <= set(keys)
        if other not in keys and is_random and not shared_alike:
            problem(f"slot {name!r} is shared but depends on {other!r}, which is drawn per "
                    f"group; share {other!r} by a subset of {keys} too", where)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []

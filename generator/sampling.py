"""Slot values of one group: drawn from pools, assigned in balanced blocks, derived or fixed.

Every draw uses a random stream keyed by (seed, family, group, slot), so a group's values do
not depend on which other groups are generated, or in what order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .canonical import dumps
from .render import Renderer, TemplateOrigin
from .rng import KeyedRandom
from .spec import FamilySpec


def _jsonable(value: Any) -> Any:
    """Plain JSON data from an expression result (tuples become lists); TypeError otherwise."""
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    raise TypeError(f"a {type(value).__name__} is not plain data")


def balanced_value(values: list[Any], seed: int, family_id: str, slot: str, group: int) -> Any:
    """The value of ``group`` under balanced assignment.

    Groups are cut into consecutive blocks of ``len(values)``; each block takes every value once,
    in an order shuffled per block. Over any number of groups, counts differ by at most one,
    and exactly balance whenever the count is a multiple of the number of values.
    """
    block, position = divmod(group, len(values))
    order = KeyedRandom(seed, (family_id, "balanced", slot, block)).shuffled(values)
    return order[position]


def sample_slots(family: FamilySpec, renderer: Renderer, seed: int, group: int) -> dict[str, Any]:
    """Every slot value of one group, in declaration order."""
    values: dict[str, Any] = {}
    located = family.located
    for name, slot in family.slots.items():
        rng = KeyedRandom(seed, (family.family_id, group, "slot", name))
        where = ("slots", name)
        if "from" in slot:
            items = list(family.pools[name].items)
            if slot.get("balanced") is True:
                values[name] = balanced_value(items, seed, family.family_id, name, group)
                continue
            excluded = set()
            for other in slot.get("distinct_from", []):
                other_value = values[other]
                for item in other_value if isinstance(other_value, list) else [other_value]:
                    excluded.add(dumps(item))
            keys = family.pools[name].keys
            candidates = [item for item, key in zip(items, keys, strict=True)
                          if key not in excluded]
            count = slot.get("count")
            need = count or 1
            distinct = slot.get("distinct", True)
            if not candidates or (distinct and len(candidates) < need):
                raise located.error(
                    f"pool {family.pools[name].file} has {len(candidates)} usable items; slot "
                    f"{name!r} needs {need} distinct", where)
            if count is None:
                values[name] = rng.choice(candidates)
            elif distinct:
                values[name] = rng.sample(candidates, count)
            else:
                values[name] = [rng.choice(candidates) for _ in range(count)]
        elif "value" in slot:
            values[name] = slot["value"]
        elif "range" in slot:
            low, high = slot["range"]
            values[name] = rng.randint(low, high)
        elif "choice" in slot:
            values[name] = rng.choice(slot["choice"])
        elif "balanced" in slot:
            values[name] = balanced_value(list(slot["balanced"]), seed, family.family_id, name,
                                          group)
        else:
            line, col = located.text_start((*where, "expr"))
            origin = TemplateOrigin(located.file, line - 1, col, f"expression of slot {name!r}")
            evaluate = renderer.expression(slot["expr"], origin)
            context = {**values, "group": group, "family": family.family_id}
            try:
                values[name] = _jsonable(evaluate(context))
            except TypeError as exc:
                raise located.error(f"expression of slot {name!r} gave no plain value: {exc}",
                                    (*where, "expr")) from None
    return values

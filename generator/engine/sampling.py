"""Slot values of one group: drawn from pools or lists, assigned in balanced blocks, tabled,
derived or fixed.

Every draw uses a random stream keyed by (seed, family, group, slot), so a group's values do
not depend on which other groups are generated, or in what order. A slot ``shared_by`` other
slots is keyed by their values instead of the group: every group that agrees on them draws the
same value (one corpus shared by many probes, say).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.canonical import SCALARS, dumps
from ..core.errors import SpecError
from ..core.rng import KeyedRandom, first_sample, number_keys, stream_key
from ..spec.spec import MAX_CROSSED_CELLS, FamilySpec
from .render import Renderer, RenderScope, TemplateOrigin, object_address

#: What draws one slot's value for a group, given the group's sampler.
Drawer = Callable[["_Sampler"], Any]
#: How many candidate lists (a pool less the values of other slots) a family keeps.
_KEPT_CANDIDATES = 512


def _jsonable(value: Any) -> Any:
    """Plain JSON data from an expression result (tuples become lists); TypeError otherwise,
    also for text holding an object's memory address, which changes from run to run.

    A result that is plain data already (most are: a pool item, a list of them, a string) is
    given back as it is, not copied: slot values are never changed once drawn (templates run
    in an immutable sandbox, transforms work on a copy), as pool items drawn by ``from`` are
    not."""
    return value if _is_json(value) else _json_copy(value)


def _is_json(value: Any) -> bool:
    """Whether ``value`` is plain JSON data as it is: exact dicts (string keys), lists,
    strings without a memory address, numbers, booleans and None."""
    kind = type(value)
    if kind is str:
        return "<" not in value or object_address(value) is None
    if kind is dict:
        for key, item in value.items():
            # Text without a "<" (most of it) holds no address: told without a call.
            if type(key) is not str or not ((type(item) is str and "<" not in item)
                                            or _is_json(item)):
                return False
        return True
    if kind is list:
        # A loop, not all() over a generator (a frame of its own): every slot expression's
        # result comes through here.
        for item in value:  # noqa: SIM110
            if not ((type(item) is str and "<" not in item) or _is_json(item)):
                return False
        return True
    return kind in SCALARS


def _json_copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:  # the common containers first, by exact type
        return {str(k): _jsonable(v) for k, v in value.items()}
    if kind is list:
        return [_jsonable(v) for v in value]
    if kind is str or isinstance(value, str):
        address = object_address(value)
        if address:
            raise TypeError(f"{address!r} is an object printed with its memory address, which "
                            "changes from run to run (did you forget the () of a call?)")
        return value
    if kind in SCALARS or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    raise TypeError(f"a {type(value).__name__} is not plain data")


def balanced_at(values: Sequence[Any], seed: int, path: tuple[str | int, ...],
                position: int) -> Any:
    """The value at ``position`` of a balanced sequence over ``values``.

    Positions are cut into consecutive blocks of ``len(values)``; each block takes every value
    once, in an order shuffled per block (keyed by ``path`` and the block number). Over any
    prefix, counts differ by at most one, and exactly balance at every multiple of the block.
    """
    block, offset = divmod(position, len(values))
    return values[_block_order(seed, (*path, block), len(values))[offset]]


@functools.lru_cache(maxsize=256)
def _block_order(seed: int, path: tuple[str | int, ...], size: int) -> tuple[int, ...]:
    """The shuffled order of one block of a balanced sequence of ``size`` values: the same
    shuffle of positions as of the values themselves, so consecutive groups, which share a
    block, shuffle it once."""
    return tuple(KeyedRandom(seed, path).shuffled(range(size)))


def balanced_value(values: list[Any], seed: int, family_id: str, slot: str, group: int) -> Any:
    """The value of ``group`` under balanced assignment of a slot across groups."""
    return balanced_at(values, seed, (family_id, "balanced", slot), group)


class _Sampler:
    """Draws the slots of one group, in declaration order."""

    def __init__(self, family: FamilySpec, renderer: Renderer, seed: int, group: int,
                 cache: dict[tuple, Any] | None = None) -> None:
        self.family = family
        self.renderer = renderer
        self.seed = seed
        self.group = group
        self.values: dict[str, Any] = {}
        #: What a slot's expression sees: the slots drawn so far, ``group`` and ``family``.
        self.scope = renderer.scope({"group": group, "family": family.family_id})
        #: What the family's sampling keeps across groups: compiled expressions by where they
        #: are written, candidate lists by pool and exclusions.
        self._cache = {} if cache is None else cache
        self._group_key: bytes | None = None

    def error(self, message: str, where: tuple) -> SpecError:
        return self.family.located_at(where).error(message, where)

    def stream_path(self, name: str, slot: Mapping[str, Any]) -> tuple[str | int, ...]:
        """The random path of a slot: its group, or the values of the slots it is shared by."""
        family_id = self.family.draw_key
        if "shared_by" in slot:
            return (family_id, "shared", name,
                    *(dumps(self.values[other]) for other in slot["shared_by"]))
        return (family_id, self.group, "slot", name)

    def stream(self, name: str, slot: Mapping[str, Any]) -> KeyedRandom:
        """The random stream of a slot that draws (balanced slots draw from their block's)."""
        if "shared_by" in slot:
            return KeyedRandom(self.seed, self.stream_path(name, slot))
        return KeyedRandom.keyed(self.seed, self.group_key() + stream_key((name,)))

    def group_key(self) -> bytes:
        """The key of the stream (family, group, "slot"); a slot's stream is its child, keyed
        by it and the slot's name. Encoded once for every slot of the group."""
        if self._group_key is None:
            key_of = self._cache.get(("group key",))
            if key_of is None:
                key_of = self._cache["group key",] = number_keys((self.family.draw_key,),
                                                                 ("slot",))
            self._group_key = key_of(self.group)
        return self._group_key

    def plan(self) -> list[tuple[str, Drawer]]:
        """Each slot with what draws it, in declaration order: made once for the family (kept
        in the sampling cache), so that a group does only what depends on it."""
        plan = self._cache.get(("plan",))
        if plan is None:
            plan = self._cache[("plan",)] = [(name, self._drawer(name, slot))
                                             for name, slot in self.family.slots.items()]
        return plan

    def _drawer(self, name: str, slot: Mapping[str, Any]) -> Drawer:
        """What draws ``slot`` for one group. The common slots (an expression, a fixed value,
        a balanced or distinct draw from a pool) are done without looking the slot over again;
        the rest by ``slot``."""
        if "expr" in slot:
            label, where = f"slot {name!r}", ("slots", name, "expr")
            evaluate = self.expression(slot["expr"], where, label)
            return lambda sampler: sampler.evaluate(evaluate, sampler.scope, where, label)
        if "value" in slot:
            value = slot["value"]
            return lambda sampler: value
        if "crossed" in slot:
            cells, path = self.crossed_cells(name, slot), (self.family.draw_key, "balanced", name)
            return lambda sampler: balanced_at(cells, sampler.seed, path, sampler.group)
        if "from" not in slot or "shared_by" in slot or not slot.get("distinct", True):
            return lambda sampler: sampler.slot(name, slot)
        items = self.family.pools[name].items
        if slot.get("balanced") is True and "distinct_from" not in slot and items:
            path = (self.family.draw_key, "balanced", name)
            return lambda sampler: balanced_at(items, sampler.seed, path, sampler.group)
        if "balanced" in slot:
            return lambda sampler: sampler.slot(name, slot)
        where, excluding, part = ("slots", name), "distinct_from" in slot, stream_key((name,))
        count = slot.get("count")

        def draw(sampler: _Sampler) -> Any:
            usable = sampler.candidates(name, slot, where) if excluding else items
            # The slot's stream (``stream``), its key made of parts encoded once.
            key = sampler.group_key() + part
            if count and len(usable) >= count:  # what ``draw`` does with it
                return first_sample(sampler.seed, key, usable, count)
            return sampler.draw(name, slot, usable, KeyedRandom.keyed(sampler.seed, key), where)

        return draw

    def crossed_cells(self, name: str, slot: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every combination of a crossed slot's factors, as a record, in order (the last
        factor varying fastest): what its balanced blocks take once each."""
        factors = []
        for factor, spec in slot["crossed"].items():
            if isinstance(spec, list):
                factors.append(spec)
            elif "range" in spec:
                factors.append(list(range(spec["range"][0], spec["range"][1] + 1)))
            else:
                factors.append(self.family.pools[f"{name}.{factor}"].items)
            if not factors[-1]:
                raise self.error(f"factor {factor!r} of slot {name!r} has no values",
                                 ("slots", name, "crossed", factor))
        if math.prod(len(values) for values in factors) > MAX_CROSSED_CELLS:
            raise self.error(f"crossed slot {name!r} has more than {MAX_CROSSED_CELLS} "
                             "combinations", ("slots", name, "crossed"))
        names = list(slot["crossed"])
        return [dict(zip(names, combination, strict=True))
                for combination in itertools.product(*factors)]

    def candidates(self, pool_key: str, spec: Mapping[str, Any], where: tuple) -> list[Any]:
        """What a ``from`` or ``of`` draw picks among, less anything ``distinct_from`` excludes.

        ``pool_key`` names the loaded pool: the slot, or ``slot.column`` for a table column."""
        if "from" in spec:
            pool = self.family.pools[pool_key]
            if "distinct_from" not in spec:
                return pool.items  # type: ignore[return-value]  # read, never changed
            excluded = self._excluded(spec, pool.key_of)
            # The pool less the same items recurs from group to group: kept (a few hundred
            # lists at most), read and never changed, as the pool's own items are.
            kept_key = ("candidates", pool_key, excluded)
            kept = self._cache.get(kept_key)
            if kept is None:
                if len(self._cache) > _KEPT_CANDIDATES:
                    for key in [k for k in self._cache if k[0] == "candidates"]:
                        del self._cache[key]
                kept = self._cache[kept_key] = [
                    item for item, key in zip(pool.items, pool.keys, strict=True)
                    if key not in excluded]
            return kept
        items = self.values[spec["of"]]
        if not isinstance(items, list) or not items:
            raise self.error(f"'of' needs slot {spec['of']!r} to hold a non-empty list, "
                             f"not {items!r}", (*where, "of"))
        excluded = self._excluded(spec, dumps)
        return [item for item in items if dumps(item) not in excluded]

    def _excluded(self, spec: Mapping[str, Any], key_of: Any) -> frozenset[str]:
        """The canonical JSON of every value of the slots ``distinct_from`` names."""
        excluded = []
        for other in spec.get("distinct_from", []):
            other_value = self.values[other]
            for item in other_value if isinstance(other_value, list) else [other_value]:
                excluded.append(key_of(item))
        return frozenset(excluded)

    def expression(self, source: str, where: tuple, label: str) -> Any:
        """The compiled expression at ``where``, kept for the sampler's later groups."""
        if where not in self._cache:
            located = self.family.located_at(where)
            line, col = located.text_start(where)
            origin = TemplateOrigin(located.file, line - 1, col, f"expression of {label}")
            self._cache[where] = self.renderer.expression(source, origin)
        return self._cache[where]

    def evaluate(self, evaluate: Any, context: Mapping[str, Any], where: tuple, label: str
                 ) -> Any:
        try:
            return _jsonable(evaluate(context))
        except TypeError as exc:
            raise self.error(f"expression of {label} gave no plain value: {exc}",
                             where) from None

    # ------------------------------------------------------------------ one slot per group

    def slot(self, name: str, slot: Mapping[str, Any]) -> Any:
        """One group's value of a slot the drawer does not draw itself (``_drawer`` takes
        expressions, fixed values, crossed slots and the common pool draws)."""
        where = ("slots", name)
        if "table" in slot:
            return self.table(name, slot["table"], self.stream_path(name, slot), where)
        if "from" in slot or "of" in slot:
            items = self.candidates(name, slot, where)
            if slot.get("balanced") is True:
                if not items:
                    raise self.error(f"slot {name!r} has nothing to balance over", where)
                return balanced_value(items, self.seed, self.family.draw_key, name, self.group)
            return self.draw(name, slot, items, self.stream(name, slot), where)
        if "range" in slot:
            low, high = slot["range"]
            if slot.get("balanced") is True:
                return balanced_value(list(range(low, high + 1)), self.seed,
                                      self.family.draw_key, name, self.group)
            return self.stream(name, slot).randint(low, high)
        if "choice" in slot:
            return self.stream(name, slot).choice(slot["choice"])
        return balanced_value(list(slot["balanced"]), self.seed, self.family.draw_key, name,
                              self.group)

    def draw(self, name: str, spec: Mapping[str, Any], items: list[Any], rng: KeyedRandom,
             where: tuple) -> Any:
        """One item, or ``count`` of them (distinct unless ``distinct: false``)."""
        count = spec.get("count")
        need = count or 1
        distinct = spec.get("distinct", True)
        if not items or (distinct and len(items) < need):
            source = self.family.pools[name].file if "from" in spec else f"slot {spec['of']!r}"
            raise self.error(f"{source} has {len(items)} usable items; slot {name!r} needs "
                             f"{need} distinct", where)
        if count is None:
            return rng.choice(items)
        if distinct:
            return rng.sample(items, count)
        return [rng.choice(items) for _ in range(count)]

    # ------------------------------------------------------------------------- tables

    def table(self, name: str, table: Mapping[str, Any], path: tuple[str | int, ...],
              where: tuple) -> list[dict[str, Any]]:
        """``rows`` records; each column is drawn across the rows like a slot across groups:
        a pool or list column is distinct across rows unless ``distinct: false``, a balanced
        column takes every value once per block of rows, an ``expr`` column sees ``row`` (the
        row's earlier columns) and ``index``."""
        rows: list[dict[str, Any]] = [{} for _ in range(table["rows"])]
        for column, spec in table["columns"].items():
            col_where = (*where, "table", "columns", column)
            col_path = (*path, "column", column)
            for index, value in enumerate(self.column(name, column, spec, len(rows), col_path,
                                                      rows, col_where)):
                rows[index][column] = value
        return rows

    def column(self, name: str, column: str, spec: Mapping[str, Any], n: int,
               path: tuple[str | int, ...], rows: list[dict[str, Any]], where: tuple
               ) -> list[Any]:
        rng = KeyedRandom(self.seed, path)
        values: list[Any] | None = None
        if "from" in spec or "of" in spec:
            values = self.candidates(f"{name}.{column}", spec, where)
            if not values:
                raise self.error(f"column {column!r} has nothing to draw from", where)
        elif "range" in spec:
            low, high = spec["range"]
            if spec.get("balanced") is True:
                values = list(range(low, high + 1))
            else:
                return [rng.randint(low, high) for _ in range(n)]
        elif isinstance(spec.get("balanced"), list):
            values = list(spec["balanced"])
        if values is not None and spec.get("balanced") is not None:
            return [balanced_at(values, self.seed, (*path, "balanced"), i) for i in range(n)]
        if values is not None:
            if not spec.get("distinct", True):
                return [rng.choice(values) for _ in range(n)]
            if len(values) < n:
                raise self.error(f"column {column!r} needs {n} distinct values (one per row) "
                                 f"and has {len(values)}; say 'distinct: false' to allow "
                                 "repeats", where)
            return rng.sample(values, n)
        if "value" in spec:
            return [spec["value"]] * n
        if "choice" in spec:
            return [rng.choice(spec["choice"]) for _ in range(n)]
        label = f"column {column!r} of slot {name!r}"
        evaluate = self.expression(spec["expr"], (*where, "expr"), label)
        return [self.evaluate(evaluate, RenderScope(self.scope, row=dict(rows[i]), index=i),
                              (*where, "expr"), label) for i in range(n)]


def sample_slots(family: FamilySpec, renderer: Renderer, seed: int, group: int,
                 cache: dict[tuple, Any] | None = None) -> dict[str, Any]:
    """Every slot value of one group, in declaration order.

    ``cache``, a dict the caller keeps across groups of the family, holds what sampling can
    reuse from group to group (compiled slot expressions, candidate lists); the values drawn
    do not depend on it."""
    sampler = _Sampler(family, renderer, seed, group, cache)
    values, scope = sampler.values, sampler.scope
    for name, draw in sampler.plan():
        values[name] = scope[name] = draw(sampler)
    return values

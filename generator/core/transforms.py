"""Generic transforms that derive one variant of a group from another.

A family names them from YAML (``transform: {name: rotate, args: {slot: options}}``). Each is a
function over a copy of the group's slot values; new ones are added with
``@register_transform`` or, from another package, through the ``memspec.transforms`` entry point
group, without editing this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from .canonical import dumps
from .length_match import closest_lengths
from .rng import KeyedRandom


@dataclass(frozen=True)
class TransformCall:
    """What a transform is applied for: the axis value, its position, the spec's args and a
    random stream private to this group, variant and axis."""

    axis: str
    value: str
    index: int
    args: Mapping[str, Any]
    rng: KeyedRandom


ApplyFn = Callable[[dict[str, Any], TransformCall], None]
ArgsCheckFn = Callable[[Mapping[str, Any], list[str]], list[str]]


@dataclass(frozen=True)
class Transform:
    """A registered transform: ``apply`` edits slot values in place; ``check_args`` returns
    problems with a spec's args (given the family's slot names) before anything is generated."""

    name: str
    apply: ApplyFn
    check_args: ArgsCheckFn
    description: str
    #: Which columns of which slot the transform forges, given the spec's args: a counterfeit
    #: memory that the audit measures against the record it forges (None: not a forgery).
    forges: Callable[[Mapping[str, Any]], tuple[str, list[str]]] | None = None
    #: Whether the forged values are strangers (none of the originals may survive in the
    #: text) rather than the originals rearranged.
    foreign: bool = False


_REGISTRY: dict[str, Transform] = {}
_ENTRY_POINTS_LOADED = False


def register_transform(name: str, check_args: ArgsCheckFn, *,
                       forges: Callable[[Mapping[str, Any]], tuple[str, list[str]]] | None
                       = None, foreign: bool = False) -> Callable[[ApplyFn], ApplyFn]:
    """Decorator registering ``fn`` as the transform ``name`` (``forges`` and ``foreign``:
    see ``Transform``)."""

    def decorate(fn: ApplyFn) -> ApplyFn:
        if name in _REGISTRY and _REGISTRY[name].apply is not fn:
            raise ValueError(f"transform {name!r} is already registered")
        _REGISTRY[name] = Transform(name, fn, check_args, (fn.__doc__ or "").strip(),
                                    forges, foreign)
        return fn

    return decorate


def get_transform(name: str) -> Transform | None:
    """The transform registered as ``name``, loading plugins on first use."""
    global _ENTRY_POINTS_LOADED
    if name not in _REGISTRY and not _ENTRY_POINTS_LOADED:
        _ENTRY_POINTS_LOADED = True
        for ep in entry_points(group="memspec.transforms"):
            ep.load()  # importing the module registers its transforms
    return _REGISTRY.get(name)


def transform_names() -> list[str]:
    """Names of every registered transform, sorted."""
    get_transform("")  # loads plugins
    return sorted(_REGISTRY)


# ------------------------------------------------------------------- argument checking

def _needs_slots(*keys: str, lists: bool = False) -> ArgsCheckFn:
    def check(args: Mapping[str, Any], slots: list[str]) -> list[str]:
        problems = [f"unknown argument {k!r}" for k in args if k not in keys]
        for key in keys:
            if key not in args:
                problems.append(f"missing argument {key!r}")
                continue
            names = args[key] if lists else [args[key]]
            if lists and not (isinstance(names, list) and len(names) >= 2):
                problems.append(f"argument {key!r} must list at least two slot names")
                continue
            problems += [f"argument {key!r} names unknown slot {n!r}" for n in names
                         if n not in slots]
        return problems

    return check


def _check_substitute(args: Mapping[str, Any], slots: list[str]) -> list[str]:
    problems = [f"unknown argument {k!r}" for k in args if k != "map"]
    mapping = args.get("map")
    if not isinstance(mapping, dict) or not mapping:
        return [*problems, "argument 'map' must map target slots to source slots"]
    for target, source in mapping.items():
        for name in (target, source):
            if name not in slots:
                problems.append(f"argument 'map' names unknown slot {name!r}")
    return problems


def _list_slot(context: dict[str, Any], name: str) -> list[Any]:
    value = context[name]
    if not isinstance(value, list):
        raise TypeError(f"slot {name!r} must hold a list, not {type(value).__name__}")
    return value


# ------------------------------------------------------------------- built-in transforms

@register_transform("rotate", _needs_slots("slot"))
def rotate(context: dict[str, Any], call: TransformCall) -> None:
    """Cyclically rotate a list slot left by the axis value's position (0, 1, 2 ...)."""
    items = _list_slot(context, call.args["slot"])
    shift = call.index % len(items) if items else 0
    context[call.args["slot"]] = items[shift:] + items[:shift]


@register_transform("swap", _needs_slots("slots", lists=True))
def swap(context: dict[str, Any], call: TransformCall) -> None:
    """Exchange the values of slots cyclically: with two slots, a and b trade values."""
    names = list(call.args["slots"])
    values = [context[n] for n in names]
    for name, value in zip(names, values[1:] + values[:1], strict=True):
        context[name] = value


@register_transform("substitute", _check_substitute)
def substitute(context: dict[str, Any], call: TransformCall) -> None:
    """Replace each target slot's value by a source slot's (``map: {target: source}``)."""
    snapshot = dict(context)
    for target, source in call.args["map"].items():
        context[target] = snapshot[source]


@register_transform("shuffle", _needs_slots("slot"))
def shuffle(context: dict[str, Any], call: TransformCall) -> None:
    """Shuffle a list slot with the variant's own random stream."""
    context[call.args["slot"]] = call.rng.shuffled(_list_slot(context, call.args["slot"]))


# ------------------------------------------------------------- transforms over tables
# A table slot is a list of records (mappings). These three rewrite the records a variant sees:
# rebind and scramble corrupt who-did-what bindings; counterfeit swaps in someone else's life.

def _check_table_args(required: Mapping[str, type]) -> ArgsCheckFn:
    def check(args: Mapping[str, Any], slots: list[str]) -> list[str]:
        problems = [f"unknown argument {k!r}" for k in args if k not in required]
        problems += [f"missing argument {k!r}" for k in required if k not in args]
        for key, kind in required.items():
            if key in args and not isinstance(args[key], kind):
                problems.append(f"argument {key!r} must be a {kind.__name__}")
        if isinstance(args.get("slot"), str) and args["slot"] not in slots:
            problems.append(f"argument 'slot' names unknown slot {args['slot']!r}")
        if isinstance(args.get("values"), str) and args["values"] not in slots:
            problems.append(f"argument 'values' names unknown slot {args['values']!r}")
        for key in ("fields", "key"):
            value = args.get(key)
            if isinstance(value, list) and (not value or not all(isinstance(v, str)
                                                                 for v in value)):
                problems.append(f"argument {key!r} must list column names")
        if isinstance(args.get("fields"), dict):
            for column, source in args["fields"].items():
                if source not in slots:
                    problems.append(f"argument 'fields' maps column {column!r} to unknown "
                                    f"slot {source!r}")
        return problems

    return check


def _records(context: dict[str, Any], name: str) -> list[dict[str, Any]]:
    rows = _list_slot(context, name)
    if not all(isinstance(row, dict) for row in rows):
        raise TypeError(f"slot {name!r} must hold a table (a list of records)")
    return [dict(row) for row in rows]


@register_transform("rebind", _check_table_args({"slot": str, "field": str, "values": str}))
def rebind(context: dict[str, Any], call: TransformCall) -> None:
    """Reassign one column among a list of values cyclically (``values`` names a list slot):
    with two, every record of the one is given to the other and vice versa."""
    rows = _records(context, call.args["slot"])
    values = _list_slot(context, call.args["values"])
    if len(values) < 2:
        raise ValueError(f"slot {call.args['values']!r} must list at least two values")
    field = call.args["field"]
    for row in rows:
        if row[field] in values:
            row[field] = values[(values.index(row[field]) + 1) % len(values)]
    context[call.args["slot"]] = rows


_SCRAMBLE_ATTEMPTS = 200


@register_transform("scramble", _check_table_args({"slot": str, "fields": list, "key": list}),
                    forges=lambda args: (args["slot"], list(args["fields"])))
def scramble(context: dict[str, Any], call: TransformCall) -> None:
    """Permute the ``fields`` columns across records, each independently, until no record
    carries any of the original ``key`` tuples (say who, where and when): the same entries,
    their relational structure destroyed."""
    rows = _records(context, call.args["slot"])
    fields, key = call.args["fields"], call.args["key"]
    if not set(fields) & set(key):
        raise ValueError("'key' must include at least one of the scrambled fields")
    original = {tuple(dumps(row[k]) for k in key) for row in rows}

    def survives(row: Mapping[str, Any]) -> bool:
        return tuple(dumps(row[k]) for k in key) in original

    for _ in range(_SCRAMBLE_ATTEMPTS):
        columns = {f: call.rng.shuffled([row[f] for row in rows]) for f in fields}
        candidate = [{**row, **{f: columns[f][i] for f in fields}} for i, row in enumerate(rows)]
        _repair(candidate, fields, survives, call.rng)
        if not any(survives(row) for row in candidate):
            context[call.args["slot"]] = candidate
            return
    raise ValueError(f"no permutation of {fields} destroys every {key} tuple "
                     f"(tried {_SCRAMBLE_ATTEMPTS}); the table has too little variety")


def _repair(rows: list[dict[str, Any]], fields: list[str], survives: Callable[[Any], bool],
            rng: KeyedRandom) -> None:
    """Swap each surviving record's scrambled fields with a random other record where that
    leaves neither of them surviving; a few passes clear what a shuffle leaves behind."""
    for _ in range(4):
        stuck = [i for i, row in enumerate(rows) if survives(row)]
        if not stuck:
            return
        for i in stuck:
            for j in rng.shuffled(range(len(rows))):
                a = {**rows[i], **{f: rows[j][f] for f in fields}}
                b = {**rows[j], **{f: rows[i][f] for f in fields}}
                if j != i and not survives(a) and not survives(b):
                    rows[i], rows[j] = a, b
                    break


@register_transform("counterfeit", _check_table_args({"slot": str, "fields": dict}),
                    forges=lambda args: (args["slot"], list(args["fields"])), foreign=True)
def counterfeit(context: dict[str, Any], call: TransformCall) -> None:
    """Replace every value of the named columns by a stranger: ``fields`` maps a column to a
    list slot of candidates. The mapping is one to one and consistent across records, never
    reuses an original value, and gives each value the unused candidate closest to it in
    length (ties broken by the variant's random stream), so the forgery keeps the format and,
    nearly, the length of the original."""
    rows = _records(context, call.args["slot"])
    for column, source in call.args["fields"].items():
        originals = list(dict.fromkeys(row[column] for row in rows))
        taken = set(originals)
        candidates = [c for c in _list_slot(context, source) if c not in taken]
        if not all(isinstance(v, str) for v in [*originals, *candidates]):
            raise TypeError(f"column {column!r} and slot {source!r} must hold strings")
        if len(set(candidates)) < len(originals):
            raise ValueError(f"slot {source!r} has {len(set(candidates))} candidates unused by "
                             f"column {column!r}, which needs {len(originals)}")
        order = call.rng.shuffled(list(dict.fromkeys(candidates)))
        mapping = closest_lengths(originals, order)
        for row in rows:
            row[column] = mapping[row[column]]
    context[call.args["slot"]] = rows

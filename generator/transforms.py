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


_REGISTRY: dict[str, Transform] = {}
_ENTRY_POINTS_LOADED = False


def register_transform(name: str, check_args: ArgsCheckFn) -> Callable[[ApplyFn], ApplyFn]:
    """Decorator registering ``fn`` as the transform ``name``."""

    def decorate(fn: ApplyFn) -> ApplyFn:
        if name in _REGISTRY and _REGISTRY[name].apply is not fn:
            raise ValueError(f"transform {name!r} is already registered")
        _REGISTRY[name] = Transform(name, fn, check_args, (fn.__doc__ or "").strip())
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

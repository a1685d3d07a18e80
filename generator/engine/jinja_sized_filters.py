"""Size checks for the filters and string methods whose work runs in C, out of the alarm's
reach: what they would build, or how many steps they would take, is worked out from their
arguments before they run, and a call over the limit is refused instead of run.

A budget's alarm interrupts Python code between two of its steps; ``" "|center(10**9)``,
``lists|sum(start=[])`` (quadratic: every step copies what came before) or sorting two
million copies of a long string is one step that takes seconds. The one mechanism: a table
of estimates by name (``FILTER_COSTS``, ``METHOD_COSTS``); ``sized_filters`` wraps each listed
filter, ``check_method_call`` is what the sandbox asks before calling a method. The same
wrapped filters serve Jinja's constant folding at compile time, so a refused call is never
folded into a template's code either."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.utils import _PassArg

#: The most characters (or items) one value a template builds may hold, and the most a render
#: may print: a few megabytes of text, far above any instance.
MAX_BUILT = 2_000_000
#: The most elementary steps (comparisons of characters, copies of items) one call may take:
#: a fraction of a second of C.
MAX_STEPS = 50_000_000

Estimate = Callable[..., int]


def refuse_over(size: int, what: str, most: int = MAX_BUILT) -> None:
    """Raise SecurityError where ``size`` is over ``most``."""
    if size > most:
        raise SecurityError(f"{what} would build a value of {size:,} characters or items, over "
                            f"the limit of {most:,}" if most == MAX_BUILT else
                            f"{what} would take {size:,} steps, over the limit of {most:,}")


def _length(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple, dict)) else 1


def text_length(value: Any, most: int = MAX_BUILT) -> int:
    """About how many characters ``str(value)`` has, counted only until the count passes
    ``most`` (then a number over it): a text's length; a number's digits; a list's, tuple's
    or dict's items as their text, two characters of quotes a text and two of separator an
    item. ``str()`` of a container runs in C, out of the alarm's reach, so it is sized first;
    a text whose escapes make its quoted form longer (a control character, which no render
    may hold anyway) is counted at its length."""
    kind = type(value)
    if kind is str:
        return len(value)
    if kind is int:
        return value.bit_length() * 31 // 100 + 2  # log10(2) < 0.31: its digits and a sign
    if kind in (float, bool) or value is None:
        return len(repr(value))  # a few characters, at once
    if isinstance(value, (list, tuple, dict)):
        total = 2
        items = itertools.chain.from_iterable(value.items()) if isinstance(value, dict) \
            else value
        for item in items:
            total += (len(item) + 4 if type(item) is str
                      else text_length(item, most - total) + 2)
            if total > most:
                break
        return total
    return _length(value)


def _number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# ------------------------------------------------------------------- format widths

#: A %-conversion's width and precision (``%-*.9d``): digits, or ``*`` taken from the values.
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d*)(?:\.(\*|\d*))?")
_PERCENT_PLAIN = re.compile(r"%[-+ #0]*(\*|\d*)(?:\.(\*|\d*))?")
#: The spec of a ``{}`` field (``{0:>{1}}``): everything after its colon.
_BRACE_SPEC = re.compile(r"\{[^{}]*?:([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_DIGITS = re.compile(r"\d+")


def format_width(template: str, values: Iterable[Any], braces: bool) -> int:
    """The widest padding a format string could ask for: the numbers in its specs, and, where
    a width is taken from the values (``%*d``, ``{:{}}``), the largest whole number among
    them."""
    widest, from_values = 0, False
    if braces:
        for spec in _BRACE_SPEC.findall(template):
            widest = max([widest, *map(int, _DIGITS.findall(spec))])
            from_values = from_values or "{" in spec
    else:
        # A mapping key runs to the first ")" after its "(": past the last ")" of the text no
        # "%(" has one, and the pattern without the key is used there, so that a text of many
        # unclosed "%(" is not scanned to its end from each of them.
        close = template.rfind(")") + 1
        specs = [*_PERCENT_SPEC.finditer(template, 0, close),
                 *_PERCENT_PLAIN.finditer(template, close)]
        for match in specs:
            for part in match.groups():
                if part == "*":
                    from_values = True
                elif part:
                    widest = max(widest, int(part))
    if from_values:
        widest = max([widest, *(_number(v) for v in values)])
    return widest


def _format_values(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[Any]:
    values = [*args, *kwargs.values()]
    for value in list(values):
        if isinstance(value, (tuple, list)):
            values.extend(value)
        elif isinstance(value, dict):
            values.extend(value.values())
    return values


# ------------------------------------------------------------------ estimates


def _replaced(text: Any, old: Any, new: Any, count: Any = -1) -> int:
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str)):
        return 0
    if len(new) <= len(old):
        return len(text)
    # Counted only where the coarse bound is over: ``count`` is a pass over the text.
    times = len(text) + 1 if not old else len(text) // len(old)
    if isinstance(count, int) and count >= 0:
        times = min(times, count)
    if len(text) + times * (len(new) - len(old)) > MAX_BUILT:
        times = text.count(old) if old else len(text) + 1
        if isinstance(count, int) and count >= 0:
            times = min(times, count)
    return len(text) + times * (len(new) - len(old))


def _total_length(items: Any) -> int:
    """The lengths of ``items``' texts added up: at C speed where every item is a text, as
    the texts a template joins are; else each as ``text_length`` counts it."""
    if all(type(item) is str for item in items):
        return sum(map(len, items))
    total = 0
    for item in items:
        total += text_length(item)
        if total > MAX_BUILT:
            break
    return total


def _joined(separator: Any, items: Any) -> int:
    if not isinstance(items, (list, tuple)):
        return 0
    separators = len(separator) * max(len(items) - 1, 0) if isinstance(separator, str) else 0
    return separators + _total_length(items)


def _sorting_steps(items: Any) -> int:
    """Comparisons times what one comparison may read: a sort of n items compares each about
    log2(n) times, and comparing two texts reads them both."""
    if not isinstance(items, (list, tuple, dict)):
        return 0
    values = items.values() if isinstance(items, dict) else items
    return max(len(items), 1).bit_length() * (len(items) + _total_length(values))


def _padded(value: Any, width: Any = 80, *rest: Any, **kwargs: Any) -> int:
    return max(_length(value), _number(width))


def _indented(text: Any, width: Any = 4, *rest: Any, **kwargs: Any) -> int:
    if not isinstance(text, str):
        return 0
    pad = len(width) if isinstance(width, str) else _number(width)
    return len(text) + (text.count("\n") + 1) * pad


def formatted_size(text: str, values: list[Any], braces: bool) -> int:
    """At most about how many characters formatting ``text`` with ``values`` builds: the
    text, the widest padding asked for, and the values' own text (a list's, made by str())."""
    return len(text) + format_width(text, values, braces) + _total_length(values)


def _percent(value: Any, *args: Any, **kwargs: Any) -> int:
    text = value if isinstance(value, str) else ""
    return formatted_size(text, _format_values(args, kwargs), braces=False)


def _filter_join(value: Any, d: Any = "", attribute: Any = None) -> int:
    # With an attribute, the values joined are sized by ``_join_filter`` once read.
    return _joined(d, value) if attribute is None else 0


def _filter_replace(value: Any, old: Any, new: Any, count: Any = None) -> int:
    return _replaced(value, old, new, -1 if count is None else count)


#: Filters (by name) and what they would build, from the arguments they are called with.
FILTER_COSTS: dict[str, tuple[Estimate, str]] = {
    "center": (_padded, "size"),
    "indent": (_indented, "size"),
    "format": (_percent, "size"),
    "replace": (_filter_replace, "size"),
    "join": (_filter_join, "size"),
    "string": (lambda value, *a, **k: text_length(value), "size"),
    "sort": (lambda value, *a, **k: _sorting_steps(value), "steps"),
    "dictsort": (lambda value, *a, **k: _sorting_steps(value), "steps"),
    "unique": (lambda value, *a, **k: _sorting_steps(value), "steps"),
}

#: Methods of ``str`` (by name) and what they would build.
METHOD_COSTS: dict[str, Estimate] = {
    "center": _padded, "ljust": _padded, "rjust": _padded,
    "zfill": _padded,
    "expandtabs": lambda text, size=8: _length(text) * max(_number(size), 1),
    "replace": lambda text, old, new, count=-1: _replaced(text, old, new, count),
    "join": _joined,
    "format": lambda text, *args, **kwargs: formatted_size(
        text, _format_values(args, kwargs), braces=True),
    "format_map": lambda text, mapping: formatted_size(
        text, _format_values((), mapping if isinstance(mapping, dict) else {}), braces=True),
}


def _materialised(value: Any) -> Any:
    """A one-pass iterable (a generator, a map) as a list, so that its size can be known
    before the call and it can still be read by the call; anything else as it is."""
    if isinstance(value, (str, list, tuple, dict)) or not isinstance(value, Iterable):
        return value
    return list(value)


def _checked(name: str, function: Callable[..., Any], estimate: Estimate, kind: str
             ) -> Callable[..., Any]:
    skip = 0 if _PassArg.from_obj(function) is None else 1  # the context Jinja passes first

    @functools.wraps(function)  # keeps how Jinja calls it (``jinja_pass_arg``)
    def sized(*args: Any, **kwargs: Any) -> Any:
        if len(args) > skip:
            args = (*args[:skip], _materialised(args[skip]), *args[skip + 1:])
            try:
                cost = estimate(*args[skip:], **kwargs)
            except TypeError:  # called wrongly: the filter itself says how
                return function(*args, **kwargs)
            if kind == "size":
                refuse_over(cost, f"filter {name!r}")
            else:
                refuse_over(cost, f"filter {name!r}", MAX_STEPS)
        return function(*args, **kwargs)

    return sized


def linear_sum(items: list[Any], start: Any) -> Any:
    """``sum(items, start)``, linear where it adds lists or tuples: Python's ``sum`` copies
    everything added so far at every step, so adding n lists takes n times their total size;
    this joins them once, to the same value, and refuses one over ``MAX_BUILT``."""
    kind = type(start)
    if kind in (list, tuple) and all(type(item) is kind for item in items):
        refuse_over(len(start) + sum(len(item) for item in items), "filter 'sum'")
        return kind(itertools.chain(start, *items))
    return sum(items, start)


def _sum_filter(jinja_sum: Callable[..., Any]) -> Callable[..., Any]:
    """The ``sum`` filter, its attribute read as Jinja's reads it, then ``linear_sum``."""
    from jinja2.filters import make_attrgetter  # noqa: PLC0415

    @functools.wraps(jinja_sum)
    def summed(environment: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
        if attribute is not None:
            iterable = map(make_attrgetter(environment, attribute), iterable)
        return linear_sum(list(iterable), start)

    return summed


def _join_filter(checked_join: Callable[..., Any]) -> Callable[..., Any]:
    """The size-checked ``join`` filter, which with ``attribute`` first reads each item's
    attribute as Jinja's would and then joins those values, sized as any others: Jinja's own
    reads them inside the join, where no size check sees them."""
    from jinja2.filters import make_attrgetter  # noqa: PLC0415

    @functools.wraps(checked_join)
    def joined(eval_ctx: Any, value: Any, d: Any = "", attribute: Any = None) -> Any:
        if attribute is not None:
            value = list(map(make_attrgetter(eval_ctx.environment, attribute), value))
        return checked_join(eval_ctx, value, d)

    return joined


def sized_filters(filters: dict[str, Callable[..., Any]]) -> None:
    """Replace, in ``filters``, every filter of ``FILTER_COSTS`` by its size-checked self,
    ``join`` by one that sizes the attributes it joins too, and ``sum`` by a linear one."""
    for name, (estimate, kind) in FILTER_COSTS.items():
        if name in filters:
            filters[name] = _checked(name, filters[name], estimate, kind)
    if "join" in filters:
        filters["join"] = _join_filter(filters["join"])
    if "sum" in filters:
        filters["sum"] = _sum_filter(filters["sum"])


def check_method_call(method: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """Refuse a call of a ``str`` method (``"x".center(10**9)``) that would build a value
    over ``MAX_BUILT``; any other call passes."""
    owner = getattr(method, "__self__", None)
    if type(owner) is not str:
        return
    estimate = METHOD_COSTS.get(method.__name__)
    if estimate is None:
        return
    try:
        size = estimate(owner, *args, **kwargs)
    except TypeError:  # called wrongly: the method itself says how
        return
    refuse_over(size, f"{method.__name__}()")

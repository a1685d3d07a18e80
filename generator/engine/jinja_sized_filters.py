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
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.utils import Namespace, _PassArg

from .jinja_text_sizes import (
    MAX_BUILT,
    html_escaped_length,
    json_length,
    line_count,
    pprint_length,
    text_length,
    url_quoted_length,
)
from .jinja_text_sizes import length as _length
from .jinja_text_sizes import number as _number

#: The most elementary steps (comparisons of characters, copies of items) one call may take:
#: a fraction of a second of C.
MAX_STEPS = 50_000_000

#: The most binary digits a whole number a template makes by ``*`` or ``**`` may have: a
#: hundred times what a pool may hold (400 decimal digits), and small enough that any
#: arithmetic on it takes milliseconds (division takes time square in the length).
MAX_INT_BITS = 100_000

Estimate = Callable[..., int]


def refuse_over(size: int, what: str, most: int = MAX_BUILT) -> None:
    """Raise SecurityError where ``size`` is over ``most``."""
    if size > most:
        raise SecurityError(f"{what} would build a value of {size:,} characters or items, over "
                            f"the limit of {most:,}" if most == MAX_BUILT else
                            f"{what} would take {size:,} steps, over the limit of {most:,}")


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
    # A separator that is no text is made one by str(), in C, too.
    return text_length(separator) * max(len(items) - 1, 1) + _total_length(items)


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
    # Every line str.splitlines() makes, "\u2028" ends one as "\n" does.
    return len(text) + line_count(text) * pad


def _wrapped(text: Any, width: Any = 79, break_long_words: Any = True, wrapstring: Any = None,
             *rest: Any, **kwargs: Any) -> int:
    """``wordwrap``: the text and ``wrapstring`` (a newline by default) between its lines.
    Each line holds a character at least; and no two lines of one paragraph together hold
    fewer characters than the width, spaces dropped at their ends included."""
    if not isinstance(text, str):
        return 0
    between = 1 if wrapstring is None else text_length(wrapstring)
    lines = len(text) + 1
    if len(text) + lines * between > MAX_BUILT:  # counted only where the coarse bound is over
        lines = min(lines, line_count(text) + 2 * len(text) // max(_number(width), 1))
    return len(text) + lines * between


def _urlized(value: Any, trim_url_limit: Any = None, nofollow: Any = False, target: Any = None,
             rel: Any = None, extra_schemes: Any = None) -> int:
    """``urlize``: the text HTML-escaped, and each word that becomes a link (one with a
    ``.``, an ``@`` or a ``:``) written twice inside an ``<a>`` element with ``rel`` and
    ``target``."""
    escaped = html_escaped_length(value)
    links = sum(map(value.count, ".@:")) if isinstance(value, str) else escaped
    per_link = 64 + text_length(target) + text_length(rel)
    return 2 * escaped + links * per_link


def _xml_attributes(value: Any, *rest: Any, **kwargs: Any) -> int:
    """``xmlattr``: each key, and its value's text HTML-escaped, as ``key="value"``."""
    if not isinstance(value, dict):
        return 0
    total = 1
    for key, item in value.items():
        total += text_length(key) + 4 + html_escaped_length(item)
        if total > MAX_BUILT:
            break
    return total


def formatted_size(text: str, values: list[Any], braces: bool) -> int:
    """At most about how many characters formatting ``text`` with ``values`` builds: the
    text, the widest padding asked for, and the values' own text (a list's, made by str())."""
    return len(text) + format_width(text, values, braces) + _total_length(values)


def _percent(value: Any, *args: Any, **kwargs: Any) -> int:
    if not isinstance(value, str):  # made a text by str(), in C, and then formatted
        return text_length(value) + _total_length(_format_values(args, kwargs))
    return formatted_size(value, _format_values(args, kwargs), braces=False)


def _filter_join(value: Any, d: Any = "", attribute: Any = None) -> int:
    # With an attribute, the values joined are sized by ``_join_filter`` once read.
    return _joined(d, value) if attribute is None else 0


def _filter_replace(value: Any, old: Any, new: Any, count: Any = None) -> int:
    if isinstance(value, str) and isinstance(old, str) and isinstance(new, str):
        return _replaced(value, old, new, -1 if count is None else count)
    # Each made a text by str(), in C, then ``new`` put wherever ``old`` could be.
    text, old_length, new_length = text_length(value), text_length(old), text_length(new)
    times = text + 1 if old_length == 0 else text // old_length
    return text + old_length + new_length + times * max(new_length - old_length, 0)


def _batched(value: Any, linecount: Any = 1, fill_with: Any = None) -> int:
    # The last batch is filled up to ``linecount`` items, in C.
    return _length(value) + (0 if fill_with is None else _number(linecount))


def _sliced(value: Any, slices: Any = 1, fill_with: Any = None) -> int:
    return _length(value) + _number(slices)


def _compared(value: Any, *args: Any, **kwargs: Any) -> int:
    """``max``, ``min``: every item compared once with the best so far, in C."""
    if not isinstance(value, (list, tuple, dict)):
        return 0
    return len(value) + _total_length(value)  # a dict's keys, as max() reads it


def _keyed_steps(pairs: Any = (), *args: Any, **kwargs: Any) -> int:
    """``dict(pairs)``, ``namespace(pairs)``: every key hashed and compared with an equal one
    before it, in C: about the keys' length in all (a list of two million references to a
    megabyte would compare terabytes)."""
    if isinstance(pairs, dict):
        return len(pairs) + _total_length(pairs)
    if not isinstance(pairs, (list, tuple)):
        return 0
    steps = 0
    for pair in pairs:  # counted until over the limit: a few pairs of long keys pass it
        if isinstance(pair, (list, tuple)) and pair:
            key = pair[0]
            steps += 1 + (len(key) if type(key) is str else text_length(key))
            if steps > MAX_STEPS:
                break
    return steps


def _matched(candidates: Any, originals: Any = (), *args: Any, **kwargs: Any) -> int:
    """``match_lengths`` (and ``dict.fromkeys``): both lists made keys of a dict (hashed and
    compared, in C)."""
    return sum(len(values) + _total_length(values) for values in (candidates, originals)
               if isinstance(values, (list, tuple)))


def _as_text(value: Any, *args: Any, **kwargs: Any) -> int:
    return text_length(value)


def _sorted(value: Any, *args: Any, **kwargs: Any) -> int:
    return _sorting_steps(value)


#: Filters (by name) and what they would build, from the arguments they are called with:
#: "size" is the characters or items of the value they build (a one-pass iterable they are
#: given is read into a list first, so that it can be counted and still be read), "steps"
#: the comparisons they make (likewise), "serialised" the characters of the text they make of
#: their first argument, passed as it is (a generator's JSON is an error, not a list's),
#: "text" those of their first argument made a text by ``str()`` (checked only where it is
#: not a text already: upper, lower … are called on texts in every render).
FILTER_COSTS: dict[str, tuple[Estimate, str]] = {
    "center": (_padded, "size"),
    "indent": (_indented, "size"),
    "wordwrap": (_wrapped, "serialised"),
    "format": (_percent, "size"),
    "replace": (_filter_replace, "size"),
    "join": (_filter_join, "size"),
    "string": (_as_text, "size"),
    "tojson": (lambda value, indent=None: json_length(value, indent), "serialised"),
    "pprint": (lambda value: pprint_length(value), "serialised"),
    "escape": (html_escaped_length, "serialised"),
    "e": (html_escaped_length, "serialised"),
    "forceescape": (html_escaped_length, "serialised"),
    "urlencode": (url_quoted_length, "size"),
    "urlize": (_urlized, "serialised"),
    "xmlattr": (_xml_attributes, "serialised"),
    "batch": (_batched, "size"),
    "slice": (_sliced, "size"),
    "sort": (_sorted, "steps"),
    "dictsort": (_sorted, "steps"),
    "unique": (_sorted, "steps"),
    "groupby": (_sorted, "steps"),
    "max": (_compared, "steps"),
    "match_lengths": (_matched, "steps"),
    "min": (_compared, "steps"),
    **{name: (_as_text, "text") for name in (
        "safe", "striptags", "capitalize", "lower", "upper", "title", "trim", "wordcount")},
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
    """``function`` (the filter ``name``), refusing a call whose ``estimate`` of ``kind`` is
    over its limit."""
    skip = 0 if _PassArg.from_obj(function) is None else 1  # the context Jinja passes first
    what = f"filter {name!r}"
    if kind == "text":
        return _checked_text(what, function, estimate, skip,
                             _ONE_METHOD.get(name) if skip == 0 else None)

    @functools.wraps(function)  # keeps how Jinja calls it (``jinja_pass_arg``)
    def sized(*args: Any, **kwargs: Any) -> Any:
        if len(args) > skip:
            if kind != "serialised":
                args = (*args[:skip], _materialised(args[skip]), *args[skip + 1:])
            try:
                cost = estimate(*args[skip:], **kwargs)
            except TypeError:  # called wrongly: the filter itself says how
                return function(*args, **kwargs)
            refuse_over(cost, what, MAX_STEPS if kind == "steps" else MAX_BUILT)
        return function(*args, **kwargs)

    return sized


#: Filters whose whole work on a text is one str method (``soft_str(s).lower()``): a text is
#: handed to the method at once, so that the size check costs templates that lower-case their
#: slots in every render nothing at all.
_ONE_METHOD = {"lower": str.lower, "upper": str.upper, "capitalize": str.capitalize}


def _checked_text(what: str, function: Callable[..., Any], estimate: Estimate, skip: int,
                  method: Callable[[str], str] | None = None) -> Callable[..., Any]:
    """``function`` (a filter that makes its first argument a text by ``str()``), refusing a
    first argument whose text would be over ``MAX_BUILT``; a text passes at once (to
    ``method``, where that is all the filter does with one)."""
    if method is not None:

        @functools.wraps(function)
        def by_method(*args: Any, **kwargs: Any) -> Any:
            if len(args) == 1 and type(args[0]) is str and not kwargs:
                return method(args[0])
            if args:
                refuse_over(estimate(args[0]), what)
            return function(*args, **kwargs)

        return by_method

    @functools.wraps(function)
    def sized(*args: Any, **kwargs: Any) -> Any:
        if len(args) > skip and type(args[skip]) is not str:
            refuse_over(estimate(args[skip]), what)
        return function(*args, **kwargs)

    return sized


def linear_sum(items: list[Any], start: Any) -> Any:
    """``sum(items, start)``, linear where it adds lists or tuples: Python's ``sum`` copies
    everything added so far at every step, so adding n lists takes n times their total size;
    this joins them once, to the same value, and refuses one over ``MAX_BUILT``.

    An item of another kind among them (``lists + [(1,)]``) is added as Python adds it to the
    sum so far, once: a list and a tuple raise the TypeError Python's ``sum`` would raise
    (after its quadratic copies); anything that a list or tuple would take and give back
    something else is refused rather than summed in quadratic time."""
    kind = type(start)
    if kind not in (list, tuple):
        return sum(items, start)  # numbers; a text is refused by sum() itself, at once
    refuse_over(len(start) + sum(len(item) for item in items if isinstance(item, (list, tuple))),
                "filter 'sum'")
    joined = list(start)
    for item in items:
        # A subclass (``groupby``'s tuples) is joined as its class is, unless it would add
        # itself its own way (``__radd__``).
        if isinstance(item, kind) and not hasattr(type(item), "__radd__"):
            joined.extend(item)
        else:
            added = kind(joined) + item  # raises where Python's sum would
            if type(added) is not kind:
                raise SecurityError(f"filter 'sum' adds a {type(item).__name__} to a "
                                    f"{kind.__name__}: only {kind.__name__}s are summed")
            joined = list(added)
    return kind(joined)


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


def refuse_long_number(operator: str, left: int, right: int) -> None:
    """Raise SecurityError where ``left * right`` or ``left ** right`` would have more than
    ``MAX_INT_BITS`` binary digits (``left ** right`` as ``right`` times ``left``'s, which
    it is within ``right``)."""
    if operator == "*":
        bits = left.bit_length() + right.bit_length()
    elif operator == "**" and right > 0:
        bits = left.bit_length() * right
    else:
        return
    if bits > MAX_INT_BITS:
        raise SecurityError(f"'{operator}' would build a number of about {bits:,} binary "
                            f"digits, over the limit of {MAX_INT_BITS:,}")


def check_method_call(method: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """Refuse a call of a ``str`` method (``"x".center(10**9)``) that would build a value
    over ``MAX_BUILT``, and one of the ``dict`` or ``namespace`` globals (or ``dict.fromkeys``)
    that would compare keys for over ``MAX_STEPS`` steps; any other call passes."""
    owner = getattr(method, "__self__", None)
    if not isinstance(owner, str):  # a Markup's methods (``("x"|e).center(…)``) too
        if args and (method is dict or method is Namespace):
            refuse_over(_keyed_steps(args[0]), "namespace()" if method is Namespace
                        else "dict()", MAX_STEPS)
        elif args and owner is dict:  # dict.fromkeys(keys)
            refuse_over(_matched(args[0]), f"{method.__name__}()", MAX_STEPS)
        return
    estimate = METHOD_COSTS.get(method.__name__)
    if estimate is None:
        return
    try:
        size = estimate(owner, *args, **kwargs)
    except TypeError:  # called wrongly: the method itself says how
        return
    refuse_over(size, f"{method.__name__}()")

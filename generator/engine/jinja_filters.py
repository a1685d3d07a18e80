"""The filters and globals memspec gives templates besides Jinja's (``letter``,
``add_days``, a bounded ``range``), and quicker forms of Jinja's own list filters
(``map(attribute=)``, ``select``, ``reject``, ``selectattr``, ``rejectattr``) and a
``format`` that refuses control characters."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError, UndefinedError

from .jinja_output import MAX_RANGE, refuse_control_characters


def _letter(index: int) -> str:
    if not isinstance(index, int) or index < 0 or index >= 26:
        raise jinja2.TemplateRuntimeError(f"letter needs an index in 0..25, got {index!r}")
    return chr(ord("A") + index)


def _add_days(day: str, days: int) -> str:
    """The ISO date ``days`` after ``day`` (calendar arithmetic only: no clock, no zone)."""
    try:
        start = datetime.date.fromisoformat(day)
    except (TypeError, ValueError):
        raise jinja2.TemplateRuntimeError(f"add_days needs an ISO date, got {day!r}") from None
    if not isinstance(days, int) or isinstance(days, bool) or abs(days) > 100_000:
        raise jinja2.TemplateRuntimeError(f"add_days needs a whole number of days, got {days!r}")
    return (start + datetime.timedelta(days=days)).isoformat()


def _safe_range(*args: int) -> range:
    result = range(*args)
    if len(result) > MAX_RANGE:
        raise SecurityError(f"range of {len(result)} items exceeds the limit of {MAX_RANGE}")
    return result


@jinja2.pass_context
def _map(context: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
    """Jinja's ``map``; the common ``map(attribute='name')`` reads each item as Jinja's getter
    would (the sandbox's getitem: the key of a dict, else the checked attribute), without the
    general getter's loop over dotted parts, defaults and post-processing."""
    attribute = kwargs.get("attribute")
    if args or len(kwargs) != 1 or type(attribute) is not str or not attribute.isidentifier():
        return jinja2.filters.sync_do_map(context, value, *args, **kwargs)
    return _map_attribute(context.environment.getitem, value, attribute)


def _map_attribute(getitem: Callable[[Any, str], Any], value: Any, attribute: str) -> Any:
    """An iterator over the values of ``attribute`` of the items, as Jinja's: for a list of
    dicts that all hold the key, read at once (reading a dict's key has no effect a later
    read could notice), else item by item as they are asked for."""
    if type(value) is list:
        try:
            return iter([item[attribute] for item in value])
        except (LookupError, TypeError, UndefinedError):  # an item without it: one by one
            pass
    return _each_attribute(getitem, value, attribute)


def _each_attribute(getitem: Callable[[Any, str], Any], value: Any, attribute: str) -> Any:
    if value:  # as Jinja's map: nothing from an empty or false value
        for item in value:
            yield item[attribute] if type(item) is dict and attribute in item else \
                getitem(item, attribute)


def _select_filter(keep: bool, by_attribute: bool, jinja_filter: Callable[..., Any]
                   ) -> Callable[..., Any]:
    """Jinja's select, reject, selectattr or rejectattr (``jinja_filter``); with a plain test
    named, and for the attribute forms a plain attribute name, it reads each item as Jinja's
    getter would (the key of a dict, else the sandbox's getitem) and calls the test as it is,
    where Jinja builds a getter and dispatches the test by name for every item."""

    @jinja2.pass_context
    def select(context: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        at = 1 if by_attribute else 0
        attribute = args[0] if by_attribute and args else None
        test = context.environment.plain_test(args[at]) if len(args) > at and not kwargs \
            else None
        if test is None or (by_attribute and not (type(attribute) is str
                                                  and attribute.isidentifier())):
            return jinja_filter(context, value, *args, **kwargs)
        return _selected(context.environment.getitem, value, attribute, test, args[at + 1:],
                         keep)

    return select


def _selected(getitem: Callable[[Any, str], Any], value: Any, attribute: str | None,
              test: Callable[..., Any], test_args: tuple[Any, ...], keep: bool) -> Any:
    if value:  # as Jinja's: nothing from an empty or false value
        for item in value:
            if attribute is None:
                subject = item
            elif type(item) is dict and attribute in item:
                subject = item[attribute]
            else:
                subject = getitem(item, attribute)
            if bool(test(subject, *test_args)) is keep:
                yield item


def _checked_format(format_filter: Callable[..., str]) -> Callable[..., str]:
    """Jinja's ``format`` filter, refusing a result with a control character
    (``"%c"|format(27)``)."""

    def checked_format(value: Any, *args: Any, **kwargs: Any) -> str:
        return refuse_control_characters(format_filter(value, *args, **kwargs), "format")

    return checked_format

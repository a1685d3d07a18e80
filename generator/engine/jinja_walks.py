"""Every value a template or expression hands to work done in C is sized first by its logical
size: the characters it would have written out, a part it holds several times counted each
time (``jinja_text_sizes.text_length``).

A list that holds the same list twice, forty levels deep, is 80 objects in memory and a
trillion items to ``==``, to ``in``, to hashing (a dict key, ``unique``, ``groupby``), to
sorting, to ``str()`` or JSON: each of those walks it in C, where a budget's alarm never
fires until it returns. So one gate stands where the sandbox sees a value go into such work:
the operands of comparisons (``==``, ``!=``, ``<`` …, ``in``, ``not in``) and dict-literal keys
(written so by the code generator), every filter and every test (wrapped here), every call
(``loop.changed``, ``list.count``, ``dict()`` …, in the sandbox's ``call``), and the value of
an expression (written out as canonical JSON). A value over ``MAX_WALKED`` is refused there,
at the template's line; the same walk, kept by identity, takes as many steps as the value has
distinct parts, so the gate costs a template nothing where its values are texts and numbers
and little where they are lists of them."""

from __future__ import annotations

import functools
from collections.abc import Callable, ItemsView, KeysView, ValuesView
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.runtime import Macro
from jinja2.utils import Namespace, _PassArg
from markupsafe import Markup

from .jinja_text_sizes import MAX_BUILT, text_length

#: The longest a value a C operation walks may be, written out: what a render may print.
MAX_WALKED = MAX_BUILT

#: Values a C operation reads in one step, or in time linear in their own length at memchr
#: speed (a text, a number): nothing to size.
_FLAT = frozenset({str, int, float, bool, type(None), Markup})
#: Values a C operation walks item by item.
_WALKED = (list, tuple, dict, KeysView, ValuesView, ItemsView, Namespace)


def refuse_walked(value: Any, what: str) -> None:
    """Raise SecurityError where ``value`` is a container whose logical size (its text's
    length, shared parts counted each time) is over ``MAX_WALKED``, or that nests too deeply
    to size; ``what`` is the work it was handed to."""
    if type(value) in _FLAT or not isinstance(value, _WALKED):
        return
    size = text_length(value, MAX_WALKED)
    if size > MAX_WALKED:
        raise SecurityError(
            f"{what} would read a value of over {MAX_WALKED:,} characters written out (a "
            "part it holds several times counted each time), over the limit")


def refuse_walked_arguments(what: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """``refuse_walked`` of every argument of a call."""
    for value in args:
        if type(value) not in _FLAT:
            refuse_walked(value, what)
    for value in kwargs.values():
        if type(value) not in _FLAT:
            refuse_walked(value, what)


def walked_operand(value: Any, operator: str) -> Any:
    """``value``, once sized as an operand of ``operator`` (a comparison, a dict key)."""
    if type(value) not in _FLAT:
        refuse_walked(value, operator)
    return value


def gated(kind: str, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (the filter or test ``name``), every argument sized before it runs
    (after the context, environment or evaluation context Jinja passes first)."""
    skip = 0 if _PassArg.from_obj(function) is None else 1
    what = f"{kind} {name!r}"

    @functools.wraps(function)  # keeps how Jinja calls it (``jinja_pass_arg``)
    def walked(*args: Any, **kwargs: Any) -> Any:
        for value in args[skip:]:
            if type(value) not in _FLAT:
                refuse_walked(value, what)
        if kwargs:
            refuse_walked_arguments(what, (), kwargs)
        return function(*args, **kwargs)

    return walked


#: Filters and tests that read only the top level of what they are given (its length, an item,
#: its items in turn, a type or an attribute) and hand nothing of it to work in C that walks
#: further; a filter or test they call by name is gated itself. Everything else is gated:
#: a filter or test not named here (a new one included) is sized. (``attr`` is not one:
#: it turns the name it is given into text, in C, before it reads the attribute.)
READ_AT_TOP = frozenset({
    "filter:batch", "filter:count", "filter:d", "filter:default",
    "filter:first", "filter:items", "filter:last", "filter:length", "filter:list",
    "filter:map", "filter:reject", "filter:rejectattr", "filter:reverse", "filter:select",
    "filter:selectattr", "filter:slice", "filter:sum",
    "test:boolean", "test:callable", "test:defined", "test:escaped", "test:false",
    "test:float", "test:integer", "test:iterable", "test:mapping", "test:none",
    "test:number", "test:sameas", "test:sequence", "test:string", "test:true",
    "test:undefined"})


def gate_all(kind: str, functions: dict[str, Callable[..., Any]]) -> None:
    """Replace every filter or test (``kind``) of ``functions`` by its ``gated`` self, but
    those that read only the top level of what they are given (``READ_AT_TOP``)."""
    for name, function in list(functions.items()):
        if f"{kind}:{name}" not in READ_AT_TOP:
            functions[name] = gated(kind, name, function)


def refuse_walked_call(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Size the arguments of a call a template makes, and the object a method belongs to
    (``big.count(x)`` walks ``big``); a macro's (template code, under the alarm) pass."""
    if isinstance(function, Macro):
        return
    name = getattr(function, "__name__", None) or type(function).__name__
    what = f"{name}()"
    owner = getattr(function, "__self__", None)
    if owner is not None and type(owner) not in _FLAT:
        refuse_walked(owner, what)
    if args or kwargs:
        refuse_walked_arguments(what, args, kwargs)


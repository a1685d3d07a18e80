"""Calls read by Python's own parser: a call-shaped span of a reply is a call only if
``ast`` parses it as one (so "call (destination first, ...)" is prose), and its keyword
arguments are bound to the parameter names a spec declares (``copy_file(destination,
source)``), so that ``copy_file(source='b', destination='a')`` reads as
``copy_file('a', 'b')``."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .reading_clauses import balanced_end

#: A name and the parenthesis right after it (no space: "see (A)" is prose).
_HEAD = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\(")
#: A plural written with parentheses, "file(s)": prose, though Python parses it.
_PLURAL = re.compile(r"[A-Za-z_][\w.]*\((?:s|es)\)")


@dataclass(frozen=True)
class Call:
    """One call found in a reply: where it starts, its text and its canonical text."""

    start: int
    text: str
    canonical: str


def _is_call(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name)


def _parsed(source: str) -> ast.Call | None:
    try:
        node = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return node if isinstance(node, ast.Call) and _is_call(node) else None


def calls(text: str, signature: str | None = None) -> list[Call]:
    """Every call in ``text``, in order of where it starts, nested ones not counted apart:
    each span ``name(...)`` that Python parses as a call, in canonical text (bound to
    ``signature`` where it names the same function)."""
    found, position = [], 0
    bound = parse_signature(signature) if signature else None
    while True:
        head = _HEAD.search(text, position)
        if head is None:
            return found
        # A name continues a longer word ("not_copy_file(" is that name, never "copy_file(").
        end = balanced_end(text, head.end() - 1)
        source = text[head.start():end] if end else ""
        node = _parsed(source) if source and not _PLURAL.fullmatch(source) else None
        if node is None:
            position = head.end()
            continue
        found.append(Call(head.start(), source, canonical_call(node, bound)))
        position = end


def parse_signature(signature: str) -> tuple[str, tuple[str, ...]]:
    """``name(p1, p2)`` as its function name and parameter names; a ValueError where it is
    not one."""
    node = _parsed(signature)
    if node is None or node.keywords or not all(isinstance(a, ast.Name) for a in node.args):
        raise ValueError(f"a signature is a call of names, such as copy_file(destination, "
                         f"source), not {signature!r}")
    return ast.unparse(node.func), tuple(a.id for a in node.args)  # type: ignore[attr-defined]


def bound_call(source: str, signature: tuple[str, tuple[str, ...]]) -> str | None:
    """``source`` (one call) in its bound form, keyword arguments the signature does not
    name kept as keywords after the bound ones (reading version 5); None where it is no
    call."""
    node = _parsed(source)
    return None if node is None else canonical_call(node, signature, keep_extra=True)


def canonical_call(node: ast.Call, signature: tuple[str, tuple[str, ...]] | None,
                   keep_extra: bool = False) -> str:
    """The call as Python writes it back (one quote style, one spacing), its arguments bound
    to the signature's parameters in their order where it is the signature's function and
    they bind (else as written). With ``keep_extra``, keywords the signature does not name
    follow the bound arguments as keywords (``dry_run=True`` stays a keyword)."""
    name = ast.unparse(node.func)
    if signature is None or name != signature[0]:
        return ast.unparse(node)
    params = signature[1]
    values: dict[str, str] = {}
    extra: list[str] = []
    if len(node.args) > len(params) or any(isinstance(a, ast.Starred) for a in node.args):
        return ast.unparse(node)
    for param, arg in zip(params, node.args, strict=False):
        values[param] = ast.unparse(arg)
    for keyword in node.keywords:
        if keep_extra and keyword.arg is not None and keyword.arg not in params:
            extra.append(f"{keyword.arg}={ast.unparse(keyword.value)}")
            continue
        if keyword.arg is None or keyword.arg not in params or keyword.arg in values:
            return ast.unparse(node)  # **kwargs, an unknown or a repeated name: as written
        values[keyword.arg] = ast.unparse(keyword.value)
    parts, gap = [], False
    for param in params:
        if param not in values:
            gap = True
        elif gap:
            parts.append(f"{param}={values[param]}")
        else:
            parts.append(values[param])
    return f"{name}({', '.join([*parts, *extra])})"

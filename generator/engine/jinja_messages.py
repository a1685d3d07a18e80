"""The ``{% message %}`` block: its Jinja extension, the filter that marks (or collects) each
message as it renders, the analysis of whether a template's blocks print straight into its
output, and the splitting of rendered text into role-tagged messages."""

from __future__ import annotations

import operator
import unicodedata
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension

from ..core.canonical import has_lone_surrogate
from .jinja_context import _Context
from .jinja_output import (
    _MARK,
    MAX_RENDER_CHARS,
    ROLES,
    SINGLE_BRACE_RE,
    Message,
    _article,
    _plain_text,
    object_address,
)

if TYPE_CHECKING:
    from .render import CompiledTemplate


#: The filter a ``{% message %}`` block applies to its body (a name no template needs to use).
MESSAGE_FILTER = "_message_block"


class MessageExtension(Extension):
    """``{% message "user" %}...{% endmessage %}`` marks one message of a phase's output.

    The block compiles to a filter block: its body renders in a scope of its own (a ``set``
    inside does not leak out), and the filter wraps it in the markers ``split_messages`` reads.
    A filter is called directly, where a call block would build a macro and pass it through the
    sandbox's call checks: every message of every instance goes through here."""

    tags = {"message"}

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        role = parser.parse_expression()
        name: nodes.Expr = nodes.Const("")
        if parser.stream.skip_if("comma"):
            name = parser.parse_expression()
        body = parser.parse_statements(("name:endmessage",), drop_needle=True)
        wrap = nodes.Filter(None, MESSAGE_FILTER, [role, name, nodes.Const(lineno)], [], None,
                            None, lineno=lineno)
        return nodes.FilterBlock(body, wrap).set_lineno(lineno)


#: What a message block prints in a render that collects its messages (``render_messages``
#: of a template whose blocks print straight to its output): the n-th block the n-th of these,
#: a string no other output can be (identity), in place of the marked text it would print.
_BLOCK_TOKENS = [f"{_MARK}{n}{_MARK}" for n in range(256)]


def _block_token(index: int) -> str:
    """The string the ``index``-th collected message block prints."""
    while index >= len(_BLOCK_TOKENS):
        _BLOCK_TOKENS.append(f"{_MARK}{len(_BLOCK_TOKENS)}{_MARK}")
    return _BLOCK_TOKENS[index]


@jinja2.pass_context
def _message_block(context: _Context, body: str, role: Any, name: Any, lineno: int) -> str:
    """One message's rendered body after the markers that carry its role, name and line; in
    a render that collects messages, the message is handed over and a token printed instead
    (a name that is not canonical as it is, which the markers' way makes so, excepted)."""
    collected = context.message_blocks
    if role in ROLES and not name and _MARK not in body:
        # Nearly every block: a role and a body, nothing to refuse.
        if collected is None:
            return f"{_MARK}{role}{_MARK}{_MARK}{lineno}{_MARK}{body}{_MARK}"
        collected.append({"role": role, "content": body.strip()})
        try:
            return _BLOCK_TOKENS[len(collected) - 1]
        except IndexError:
            return _block_token(len(collected) - 1)
    return _named_or_refused_block(collected, body, role, name, lineno)


def _named_or_refused_block(collected: list[Message] | None, body: str, role: Any, name: Any,
                            lineno: int) -> str:
    """``_message_block`` of a block with a name, or refused."""
    if role not in ROLES:
        raise jinja2.TemplateRuntimeError(
            f"message role {role!r} (line {lineno}) is not one of {', '.join(ROLES)}"
        )
    if _MARK in body:
        raise jinja2.TemplateRuntimeError(f"message blocks cannot nest (line {lineno})")
    name = f"{name}" if name else ""
    if _MARK in name:
        raise jinja2.TemplateRuntimeError(
            f"message name {name!r} (line {lineno}) holds a reserved control character")
    if collected is not None and (not name or _plain_text(name)):
        content = body.strip()
        collected.append({"role": role, "content": content, "name": name} if name
                         else {"role": role, "content": content})
        return _block_token(len(collected) - 1)
    return f"{_MARK}{role}{_MARK}{name}{_MARK}{lineno}{_MARK}{body}{_MARK}"


#: What makes a template's output depend on files besides its own.
_REACHES_OTHERS = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)


#: Statements whose body prints into the output of the statement around them as it renders.
#: Every other statement that holds a body captures what its body prints (set, macro, call,
#: filter and block tags, a recursive loop's ``loop()``) and may change it before printing it.
_PRINTS_THROUGH = (nodes.For, nodes.If, nodes.With, nodes.Scope, nodes.ScopedEvalContextModifier)


def _is_message_block(node: nodes.Node) -> bool:
    return isinstance(node, nodes.FilterBlock) and isinstance(node.filter, nodes.Filter) and \
        node.filter.name == MESSAGE_FILTER


def _prints_directly(tree: nodes.Template) -> bool:
    """Whether every message block of a template prints what it returns straight into the
    template's output: not captured on the way (by a ``set`` block, a macro …), where the
    template could print it twice, in another order or changed; in a template that reaches no
    other (include, import, extends) and has no ``{% block %}`` (which ``self`` renders again,
    captured)."""
    if next(tree.find_all((*_REACHES_OTHERS, nodes.Block)), None) is not None:
        return False
    return _blocks_print_through(tree, True)


def _blocks_print_through(node: nodes.Node, through: bool) -> bool:
    """Whether the message blocks under ``node`` print into its output (``through``: what
    ``node`` prints reaches the template's output as it is)."""
    for child in node.iter_child_nodes():
        if _is_message_block(child):
            # A block inside another is an error its render reports.
            if not through or not _blocks_print_through(child, False):
                return False
        elif not _blocks_print_through(child, through and isinstance(child, _PRINTS_THROUGH)
                                       and not getattr(child, "recursive", False)):
            return False
    return True


def split_messages(text: str, template: CompiledTemplate) -> list[Message]:
    """Split rendered text into messages; text outside message blocks must be blank.

    ``text`` is what ``render_text`` returned, so every part of it is already canonical: NFC,
    ``\\n`` line endings, no lone surrogate (``make_message`` keeps it so)."""
    parts = text.split(_MARK)
    if len(parts) % 5 != 1:
        # Markers a template wrote itself ("\x02" in a string literal), not the tag's.
        raise template.origin.error("rendered text holds the control character U+0002 outside "
                                    "the markers of a {% message %} block", 1)
    if "".join(parts[::5]).strip():
        # Stray text: find it in order, so the first problem in the output is the one named.
        for index in range(0, len(parts), 5):
            _check_outside(parts[index], template)
            if index + 4 < len(parts):
                _message_from_parts(parts, index + 1, template)
    roles, names, contents = parts[1::5], parts[2::5], [body.strip() for body in parts[4::5]]
    if "{" not in text and _ROLE_SET.issuperset(roles) and all(contents) and not any(names):
        # What make_message would make of each, without its checks one by one: nothing here
        # can fail them (a role of ROLES, no content empty, no brace for a placeholder).
        return [{"role": role, "content": content}
                for role, content in zip(roles, contents, strict=True)]
    return [_message_from_parts(parts, index, template) for index in range(1, len(parts), 5)]


def _collected_whole(pieces: list[str], messages: list[Message]) -> bool:
    """Whether the messages a render collected are what ``split_messages`` would make of its
    text: its pieces of output are the blocks' tokens, in order, and blank text between; no
    message is empty; and the contents are canonical as rendered (plain ASCII, no carriage
    return), hold no ``{`` (which ``make_message`` looks into) and no memory address, and are
    well within the length a render may have. Where any of it is not so, the render by the
    markers says what is wrong or makes what is right."""
    count = len(messages)
    if len(pieces) == count:  # nothing printed between the blocks (trim_blocks sees to it)
        printed, marks = pieces, count * (len(str(count)) + 2)  # the tokens' length at most
    else:
        # The non-blank pieces (str.strip gives a piece holding no outer whitespace back as
        # it is) against the tokens.
        printed, marks = list(filter(None, map(str.strip, pieces))), sum(map(len, pieces))
        if len(printed) != count:
            return False
    if not all(map(operator.is_, printed, _BLOCK_TOKENS)):  # by identity, in C
        return False
    contents = list(map(itemgetter("content"), messages))
    if not all(contents):
        return False
    text = "".join(contents)
    if len(text) + marks > MAX_RENDER_CHARS // 2 or "{" in text:
        return False
    if _plain_text(text):
        return True
    if "\r" in text or has_lone_surrogate(text) or object_address(text) is not None:
        return False
    # Text beyond ASCII, made NFC message by message: what NFC makes of the whole marked text,
    # since the markers compose with nothing, and stripping whitespace commutes with it.
    for message in messages:
        content = message["content"]
        if not content.isascii() and not unicodedata.is_normalized("NFC", content):
            message["content"] = unicodedata.normalize("NFC", content)
    return True


def _copy_messages(messages: list[Message]) -> list[Message]:
    return [dict(message) for message in messages]


def _message_from_parts(parts: list[str], index: int, template: CompiledTemplate) -> Message:
    """``make_message`` of the message whose role is ``parts[index]``."""
    role, name, line, body = parts[index:index + 4]
    return make_message(role, body, name, template, int(line) if line.isdigit() else 1)


_ROLE_SET = frozenset(ROLES)


def make_message(role: str, body: str, name: str | None, template: CompiledTemplate,
                 line: int = 1) -> Message:
    """A message from rendered text: stripped, refused if empty or if a ``{name}`` is left.

    ``line`` is where the message starts in the template (its ``{% message %}`` tag). Stripping
    keeps canonical text canonical: whitespace composes with nothing under NFC."""
    if role not in ROLES:
        # The {% message %} tag checks its role; this catches markers a template wrote itself
        # ("\x02…" in a string literal), whose messages the instance schema does not see.
        raise template.origin.error(f"message role {role!r} is not one of {', '.join(ROLES)}",
                                    line, template.column_in_line(line, "message"))
    content = body.strip()
    if not content:
        raise template.origin.error(f"{_article(role)} {role} message rendered empty", line,
                                    template.column_in_line(line, "message"))
    leftover = SINGLE_BRACE_RE.search(content) if "{" in content else None
    if leftover:
        line, col = template.find_line(leftover.group(0))
        raise template.origin.error(
            f"single-brace placeholder {leftover.group(0)!r} left in the output; "
            "Jinja variables are written {{ name }}",
            line, col,
        )
    if name:
        return {"role": role, "content": content, "name": name}
    return {"role": role, "content": content}


def _check_outside(chunk: str, template: CompiledTemplate) -> None:
    stray = chunk.strip()
    if stray:
        line, col = template.find_line(stray.splitlines()[0][:40])
        raise template.origin.error(
            f"text outside a {{% message %}} block: {stray[:60]!r}", line, col
        )

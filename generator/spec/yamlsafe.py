"""Strict, safe YAML loading that remembers where every value came from.

Specs may come from strangers, so the loader accepts only plain data: no object tags, no
anchors or aliases (which also rules out alias bombs), no duplicate keys, no NaN or infinity,
bounded size and depth. Only ``true``/``false`` are booleans and dates stay strings, so that a
value means the same thing whichever YAML habits its author has.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..core.canonical import has_lone_surrogate
from ..core.code_cache import cached_data, code_versions, fingerprint
from ..core.errors import PathPart, SpecError

#: Largest spec, pool or release file accepted, in bytes.
MAX_FILE_BYTES = 4 * 1024 * 1024
#: Deepest nesting of mappings and sequences accepted.
MAX_DEPTH = 48
#: Largest integer accepted (the range every JSON reader handles exactly).
MAX_SAFE_INTEGER = 2**53 - 1

_CORE_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:map",
}


class _StrictResolver(yaml.resolver.BaseResolver):
    """Implicit typing close to YAML 1.2's core schema."""


_StrictResolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_StrictResolver.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)
_StrictResolver.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789")
)
_StrictResolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)?\.[0-9]+(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


class _StrictDumper(yaml.SafeDumper):
    """Writes YAML that the strict loader, and any YAML 1.1 reader, reads as the data it was
    given: a string that either would take for a number, boolean or null (``1e5``, ``no``)
    is quoted."""


def _quote_what_the_strict_loader_types() -> None:
    for first, resolvers in _StrictResolver.yaml_implicit_resolvers.items():
        for tag, pattern in resolvers:
            _StrictDumper.add_implicit_resolver(tag, pattern, [first])


_quote_what_the_strict_loader_types()


def dump_yaml(data: Any, display: str) -> str:
    """The YAML text of ``data`` (keys in the order given), checked to load back the same
    with ``load_yaml_text``: what memspec writes for an author, memspec reads as written."""
    text = yaml.dump(data, Dumper=_StrictDumper, sort_keys=False, allow_unicode=True,
                     width=100)
    if load_yaml_text(text, display).data != data:
        raise SpecError.single("cannot be written as YAML that reads back the same", display)
    return text


class _RefuseAnchors:
    """Composer hook shared by both parsers: refuse anchors and aliases as they are met."""

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        # Refuse aliases before the composer expands them: no alias can then multiply data.
        event = self.peek_event()  # type: ignore[attr-defined]
        mark = event.start_mark
        if isinstance(event, yaml.events.AliasEvent):
            raise SpecError.single("YAML aliases (*name) are not allowed in specs", None,
                                   mark.line + 1, mark.column + 1)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise SpecError.single(f"YAML anchors (&{anchor}) are not allowed in specs", None,
                                   mark.line + 1, mark.column + 1)
        # Stop deep nesting here, where its place is known, before Python's stack runs out.
        depth = getattr(self, "_depth", 0)
        if depth > MAX_DEPTH:
            raise SpecError.single(f"nesting deeper than {MAX_DEPTH} levels", None,
                                   mark.line + 1, mark.column + 1)
        self._depth = depth + 1
        try:
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth = depth


class _PureStrictLoader(
    _RefuseAnchors,
    yaml.reader.Reader,
    yaml.scanner.Scanner,
    yaml.parser.Parser,
    yaml.composer.Composer,
    _StrictResolver,
):
    """The strict loader on PyYAML's pure-Python scanner (used where libyaml is missing)."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        _StrictResolver.__init__(self)


class _LibyamlStrictLoader(_RefuseAnchors, yaml.composer.Composer, _StrictResolver):
    """The strict loader on libyaml's scanner and parser, several times faster.

    Only the events come from C; nodes are composed here, in Python, so that the same
    anchor, alias, tag, key and number checks apply as with the pure-Python parser."""

    def __init__(self, stream: str) -> None:
        self._events = CParser(stream)
        self.check_event = self._events.check_event
        self.peek_event = self._events.peek_event
        self.get_event = self._events.get_event
        yaml.composer.Composer.__init__(self)
        _StrictResolver.__init__(self)

    def dispose(self) -> None:
        """Release libyaml's parser."""
        self._events.dispose()


try:
    from yaml.cyaml import CParser
except ImportError:  # PyYAML built without libyaml
    _StrictLoader: type = _PureStrictLoader
else:
    _StrictLoader = _LibyamlStrictLoader


@dataclass(frozen=True)
class Located:
    """A parsed YAML document with the source position of every value in it."""

    data: Any
    file: str
    positions: dict[tuple[PathPart, ...], tuple[int, int]]
    text_starts: dict[tuple[PathPart, ...], tuple[int, int]] = field(default_factory=dict)

    def text_start(self, path: tuple[PathPart, ...]) -> tuple[int, int]:
        """Line and column where a string value's text begins (for inline templates)."""
        return self.text_starts.get(tuple(path)) or self.where(path)

    def where(self, path: tuple[PathPart, ...] | list[PathPart]) -> tuple[int, int]:
        """Line and column (1-based) of the value at ``path`` or its nearest located parent."""
        key = tuple(path)
        while key not in self.positions and key:
            key = key[:-1]
        return self.positions.get(key, (1, 1))

    def error(self, message: str, path: tuple[PathPart, ...] | list[PathPart] = ()) -> SpecError:
        """A SpecError located at the value at ``path``."""
        line, column = self.where(path)
        return SpecError.single(message, self.file, line, column, tuple(path) or None)


#: The SHA-256 of the bytes of every file ``read_text`` read in this process, by absolute path.
_read_digests: dict[str, str] = {}


def _remember_digest(path: Path, raw: bytes) -> None:
    """Keep the digest of the bytes read from ``path``: what a manifest pins is what was
    parsed and rendered, never a later read of a file someone edited meanwhile."""
    _read_digests[os.path.abspath(path)] = hashlib.sha256(raw).hexdigest()


def read_digest(path: Path) -> str | None:
    """The SHA-256 of the bytes ``read_text`` read from ``path`` in this process, if it did."""
    return _read_digests.get(os.path.abspath(path))


def read_text(path: Path, display: str) -> str:
    """Read a UTF-8 text file under the size cap, refusing a BOM, NUL bytes and bad bytes."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SpecError.single(f"cannot read file: {exc.strerror}", display) from None
    if size > MAX_FILE_BYTES:
        raise SpecError.single(
            f"file is {size} bytes, over the {MAX_FILE_BYTES}-byte limit", display, 1, 1
        )
    raw = path.read_bytes()
    _remember_digest(path, raw)
    if raw.startswith(b"\xef\xbb\xbf"):
        raise SpecError.single("file starts with a byte-order mark; save it as UTF-8 without BOM",
                               display, 1, 1)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SpecError.single("file is UTF-16 (it starts with a UTF-16 byte-order mark); save "
                               "it as UTF-8", display, 1, 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpecError.single(
            f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})", display, line, column
        ) from None
    if "\x00" in text:
        offset = text.index("\x00")
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        # ASCII saved as UTF-16 without a byte-order mark has a NUL in every other byte.
        sample = raw[:128]
        hint = " (the file looks like UTF-16; save it as UTF-8)" \
            if sample.count(0) * 3 >= len(sample) else ""
        raise SpecError.single(f"file contains a NUL character{hint}", display, line, column)
    return text


def load_yaml_text(text: str, display: str) -> Located:
    """Parse one YAML document strictly; errors name ``display`` with line and column.

    A parse that succeeded is kept between runs, named by the text and the parsing code, so
    the same text is parsed once; a text that fails is parsed (and fails) every time."""
    data, positions, text_starts = cached_data(
        "yaml", (parser_fingerprint(), _StrictLoader.__name__, text),
        lambda: _parse(text, display))
    return Located(data, display, positions, text_starts)


@functools.cache
def parser_fingerprint() -> str:
    """What, besides the text and the parser in use, decides what a parse gives: PyYAML's
    version and this package's source (this module and the checks it uses)."""
    return fingerprint(code_versions(["yaml", __name__, has_lone_surrogate.__module__]))


def _position(mark: Any) -> tuple[int, int]:
    """A YAML mark's line and column, counting from 1 (1:1 without one)."""
    return (mark.line + 1, mark.column + 1) if mark else (1, 1)


def _syntax_message(exc: yaml.MarkedYAMLError) -> str:
    """What is wrong, and, where the parser was inside something that began elsewhere (a
    bracket or a quote left open), where that began: the error is found where the parser
    stops, often lines after the mistake."""
    message = f"invalid YAML: {exc.problem or exc.context}"
    if exc.problem and exc.context and exc.context_mark is not None and \
            _position(exc.context_mark) != _position(exc.problem_mark):
        line, column = _position(exc.context_mark)
        message += f" ({exc.context} that begins at line {line}, column {column})"
    return message


def _parse(text: str, display: str) -> tuple[Any, dict, dict]:
    try:
        loader = _StrictLoader(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except SpecError as err:
        problem = err.problems[0]
        raise SpecError.single(problem.message, display, problem.line, problem.column) from None
    except yaml.MarkedYAMLError as exc:
        raise SpecError.single(_syntax_message(exc), display,
                               *_position(exc.problem_mark or exc.context_mark)) from None
    except yaml.YAMLError as exc:
        raise SpecError.single(f"invalid YAML: {exc}", display, 1, 1) from None
    except RecursionError:
        raise SpecError.single("YAML is nested too deeply", display, 1, 1) from None
    positions: dict[tuple[PathPart, ...], tuple[int, int]] = {}
    text_starts: dict[tuple[PathPart, ...], tuple[int, int]] = {}
    if root is None:
        return None, positions, text_starts
    return _construct(root, (), positions, display, 0, text_starts), positions, text_starts


def load_yaml_file(path: Path, display: str) -> Located:
    """Read and parse a YAML file; ``display`` is the name used in error messages."""
    return load_yaml_text(read_text(path, display), display)


def _construct(
    node: Node,
    path: tuple[PathPart, ...],
    positions: dict[tuple[PathPart, ...], tuple[int, int]],
    display: str,
    depth: int,
    text_starts: dict[tuple[PathPart, ...], tuple[int, int]],
) -> Any:
    line, column = node.start_mark.line + 1, node.start_mark.column + 1
    positions[path] = (line, column)
    if isinstance(node, ScalarNode):
        if node.style in ("|", ">"):
            # A block scalar's text starts on the line after its indicator.
            text_starts[path] = (line + 1, column)
        else:
            text_starts[path] = (line, column + (1 if node.style in ("'", '"') else 0))
    if depth > MAX_DEPTH:
        raise SpecError.single(f"nesting deeper than {MAX_DEPTH} levels", display, line, column)
    if node.tag not in _CORE_TAGS:
        raise SpecError.single(
            f"YAML tag {node.tag!r} is not allowed; specs hold plain data only",
            display, line, column,
        )
    if isinstance(node, MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                raise SpecError.single(
                    "mapping keys must be plain strings", display,
                    key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                )
            key = key_node.value
            if has_lone_surrogate(key):
                raise SpecError.single("key holds a lone surrogate (\\ud800-\\udfff), which "
                                       "UTF-8 cannot encode", display,
                                       key_node.start_mark.line + 1,
                                       key_node.start_mark.column + 1)
            if key == "<<":
                raise SpecError.single("YAML merge keys (<<) are not allowed in specs", display,
                                       key_node.start_mark.line + 1,
                                       key_node.start_mark.column + 1)
            if key in result:
                first = positions.get((*path, key), (line, column))
                raise SpecError.single(
                    f"duplicate key {key!r} (first defined at line {first[0]})",
                    display, key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                    (*path, key),
                )
            result[key] = _construct(value_node, (*path, key), positions, display, depth + 1,
                                     text_starts)
            # Point a value's errors at its key, where a reader looks first.
            positions[(*path, key)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        return result
    if isinstance(node, SequenceNode):
        return [
            _construct(item, (*path, index), positions, display, depth + 1, text_starts)
            for index, item in enumerate(node.value)
        ]
    assert isinstance(node, ScalarNode)
    if node.tag == "tag:yaml.org,2002:str":
        if has_lone_surrogate(node.value):
            # Only an escape ("\ud800") can make one: no UTF-8 file holds it, none can.
            raise SpecError.single("text holds a lone surrogate (\\ud800-\\udfff), which "
                                   "UTF-8 cannot encode", display, line, column, path)
        return node.value
    if node.tag == "tag:yaml.org,2002:bool":
        return node.value.lower() == "true"
    if node.tag == "tag:yaml.org,2002:null":
        return None
    if node.tag == "tag:yaml.org,2002:int":
        digits = node.value.replace("_", "").lstrip("+-")
        if len(digits) > 16:
            raise SpecError.single(f"integer with {len(digits)} digits is outside the safe "
                                   f"range ±{MAX_SAFE_INTEGER}", display, line, column, path)
        value = int(node.value.replace("_", ""))
        if abs(value) > MAX_SAFE_INTEGER:
            raise SpecError.single(
                f"integer {node.value} is outside the safe range ±{MAX_SAFE_INTEGER}",
                display, line, column, path,
            )
        return value
    text = node.value.lower()
    if "nan" in text or "inf" in text:
        raise SpecError.single(f"{node.value} is not allowed: NaN and infinity have no JSON form",
                               display, line, column, path)
    value_f = float(node.value.replace("_", ""))
    if not math.isfinite(value_f):
        raise SpecError.single(f"number {node.value} overflows", display, line, column, path)
    return value_f

"""The one byte form of every record memspec writes, and content hashes over it.

UTF-8, NFC-normalised strings (keys too), sorted keys, no insignificant whitespace, no NaN or
infinity, ``\\n`` line endings, one zero (``0.0``, never ``-0.0``). The same value always gives
the same bytes, on any machine; a value that has no such form (a lone surrogate, which UTF-8
cannot encode; an integer too long for every interpreter to print) is refused with
``CanonicalJSONError``.
"""

from __future__ import annotations

import copy
import json
import math
import re
import unicodedata
from typing import Any

import xxhash


class CanonicalJSONError(ValueError):
    """A value that has no canonical JSON form (NaN, infinity, a non-JSON type)."""


#: The most digits an integer may have: Python refuses to print longer ones when its limit
#: (PYTHONINTMAXSTRDIGITS) is set as low as it goes (sys.int_info.str_digits_check_threshold),
#: so a longer one would be written on one machine and refused on another.
MAX_INT_DIGITS = 640
_INT_BOUND = 10 ** MAX_INT_DIGITS
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (U+D800-U+DFFF), which no UTF-8 encodes."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def _normalize_str(value: str) -> str:
    if "\r" in value:
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    if value.isascii():
        return value
    if has_lone_surrogate(value):
        raise CanonicalJSONError(f"{value[:40]!r} holds a lone surrogate, which UTF-8 "
                                 "cannot encode")
    return unicodedata.normalize("NFC", value)


def _normalize_dict(value: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise CanonicalJSONError(f"object key {key!r} is not a string")
        norm_key = _normalize_str(key)
        if norm_key in out:
            raise CanonicalJSONError(f"object keys collide after normalisation: {key!r}")
        out[norm_key] = normalize(item)
    return out


def _normalize_int(value: int) -> int:
    if -_INT_BOUND < value < _INT_BOUND:
        return value
    raise CanonicalJSONError(f"an integer of more than {MAX_INT_DIGITS} digits has no "
                             "canonical JSON form")


#: The exact built-in types, each with what normalising one does: a dispatch on ``type()``
#: is quicker than a chain of ``isinstance`` tests, and every instance passes through here.
_BY_TYPE: dict[type, Any] = {
    str: _normalize_str,
    dict: _normalize_dict,
    list: lambda value: [normalize(item) for item in value],
    int: _normalize_int,
    bool: lambda value: value,
    type(None): lambda value: value,
}


def normalize(value: Any) -> Any:
    """Return ``value`` with every string NFC-normalised and every line ending ``\\n``."""
    exact = _BY_TYPE.get(type(value))
    if exact is not None:
        return exact(value)
    # Everything else (floats, tuples, subclasses of the built-in types) the long way.
    if isinstance(value, str):
        return _normalize_str(value)
    if isinstance(value, dict):
        return _normalize_dict(value)
    if isinstance(value, (list, tuple)):
        return [normalize(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return _normalize_int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalJSONError(f"{value!r} has no JSON form")
        return 0.0 if value == 0 else value
    raise CanonicalJSONError(f"value of type {type(value).__name__} has no JSON form")


def copy_data(value: Any) -> Any:
    """A copy of plain data (dicts, lists and scalars) that shares no dict or list with it,
    several times quicker than ``copy.deepcopy``, which it falls back on for anything else.
    (Containers that occur twice come out as two copies: data is a tree, not a graph.)"""
    kind = type(value)
    if kind is dict:
        return {key: copy_data(item) for key, item in value.items()}
    if kind is list:
        return [copy_data(item) for item in value]
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


#: The one encoder of canonical text, made once (``json.dumps`` with options makes one a call).
_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                            allow_nan=False)
#: The same, escaping everything beyond printable ASCII as ``\uXXXX``: CPython's C encoder
#: writes that form in about half the time (see ``_encode``).
_ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, sort_keys=True, separators=(",", ":"),
                                  allow_nan=False)


def _encode(value: Any) -> str:
    """``_ENCODER.encode(value)``, by the quicker ASCII encoder where that gives the same text.

    The two encoders differ only in ``\\uXXXX`` escapes, which the ASCII one writes for every
    character beyond printable ASCII (and both for control characters). Output without such
    an escape is therefore what the canonical encoder writes too; output with one (a string
    beyond ASCII, or a literal backslash before a u, taken for one to be safe) is encoded
    again the canonical way. Most instances are plain ASCII, and pay one scan for the check."""
    text = _ASCII_ENCODER.encode(value)
    return text if "\\u" not in text else _ENCODER.encode(value)


def dumps(value: Any) -> str:
    """Canonical JSON text of ``value`` (no trailing newline)."""
    return _encode(normalize(value))


def dump_bytes(value: Any) -> bytes:
    """Canonical JSON bytes of ``value`` as one line, with its final newline."""
    return (dumps(value) + "\n").encode("utf-8")


def dump_normalized_bytes(value: Any) -> bytes:
    """``dump_bytes`` of a value ``normalize`` already returned (normalising is idempotent,
    so this skips a second pass over every string of a generated instance)."""
    return (_encode(value) + "\n").encode("utf-8")


#: Canonical JSON of messages met lately, by their items: what ``dump_instance_bytes`` reuses.
_MESSAGE_JSON: dict[tuple, str] = {}
#: How many it keeps before it starts again from none: more than any pool recurs (a few hundred
#: messages), and a few megabytes at most.
_MESSAGE_JSON_ENTRIES = 1 << 11


def _message_json(message: Any) -> str:
    try:
        key = tuple(message.items())
        text = _MESSAGE_JSON.get(key)
    except (AttributeError, TypeError):  # not a dict of hashable values: encoded as it is
        return _encode(message)
    if text is None:
        if len(_MESSAGE_JSON) >= _MESSAGE_JSON_ENTRIES:
            _MESSAGE_JSON.clear()
        text = _MESSAGE_JSON[key] = _encode(message)
    return text


_PHASE_KEYS = {"messages", "phase"}


def _phases_json(phases: Any) -> str:
    if type(phases) is not list or not all(
            type(p) is dict and p.keys() == _PHASE_KEYS and type(p["messages"]) is list
            for p in phases):
        return _encode(phases)
    # The keys in sorted order, as the encoder writes them: "messages" before "phase". A
    # message met before is looked up here, without a call (most of them are).
    kept = _MESSAGE_JSON.get
    try:
        return "[" + ",".join([
            '{"messages":[' + ",".join([
                (type(m) is dict and kept(tuple(m.items()))) or _message_json(m)
                for m in p["messages"]]) + '],"phase":' + _encode(p["phase"]) + "}"
            for p in phases]) + "]"
    except TypeError:  # a message holding a list or a dict: written the long way
        return _encode(phases)


def dump_instance_bytes(instance: Any) -> bytes:
    """``dump_normalized_bytes`` of a generated instance, quicker: each message's JSON is kept
    for the instances after it. Messages are most of an instance's bytes and of its encoding
    time, and those drawn from a pool recur in instance after instance. The keys sorted before
    and after ``phases`` are encoded as two objects and the phases put between them, so the
    bytes are the same (tested)."""
    if type(instance) is not dict or "phases" not in instance:
        return dump_normalized_bytes(instance)
    before = _encode({k: v for k, v in instance.items() if k < "phases"})
    after = _encode({k: v for k, v in instance.items() if k > "phases"})
    text = ((before[:-1] + "," if len(before) > 2 else "{") + '"phases":'
            + _phases_json(instance["phases"]) + ("," + after[1:] if len(after) > 2 else "}"))
    return (text + "\n").encode("utf-8")


def dump_pretty_bytes(value: Any) -> bytes:
    """Canonical, indented JSON bytes for files people read (manifests)."""
    text = json.dumps(
        normalize(value), ensure_ascii=False, sort_keys=True, indent=2, allow_nan=False
    )
    return (text + "\n").encode("utf-8")


def content_hash(value: Any) -> str:
    """XXH3-128 hex digest of the canonical bytes of ``value``: for finding duplicates."""
    return xxhash.xxh3_128_hexdigest(dumps(value).encode("utf-8"))

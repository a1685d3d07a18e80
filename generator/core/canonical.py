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
from collections.abc import Callable, Mapping
from itertools import chain
from typing import Any

import orjson
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
        # A dict or list of scalars (most are: a pool item, a list of names) is copied in C;
        # of a dict holding others, only those are copied one by one.
        copied = value.copy()
        if not SCALARS.issuperset(map(type, value.values())):
            for key, item in value.items():
                if type(item) not in SCALARS:
                    copied[key] = copy_data(item)
        return copied
    if kind is list:
        if SCALARS.issuperset(map(type, value)):
            return value[:]
        return [copy_data(item) for item in value]
    if kind in SCALARS:
        return value
    return copy.deepcopy(value)


def _same_data(copy: Any, value: Any) -> bool:
    """Whether ``copy`` is ``value`` to the type of every part (``1``, ``1.0`` and ``True``
    compare equal but are not the same data), keys in the same order."""
    kind = type(value)
    if type(copy) is not kind:
        return False
    if kind is dict:
        return list(copy) == list(value) and all(
            _same_data(copy[key], item) for key, item in value.items())
    if kind is list:
        return len(copy) == len(value) and all(map(_same_data, copy, value))
    return bool(copy == value)


class PlainCopies:
    """Fresh copies of one value of plain data, made many times (a family's analysis block,
    one for each of its instances): parsed from its JSON bytes by orjson, a few times
    quicker than ``copy_data``, where that gives the value back part for part (checked
    once: not where it holds NaN, a tuple or an integer beyond 64 bits), else by
    ``copy_data``. The value must not change while copies are made of it."""

    def __init__(self, value: Any) -> None:
        self._value = value
        try:
            data: bytes | None = orjson.dumps(value, option=_KEY_OPTIONS)
        except TypeError:
            data = None
        self._data = data if data is not None and _same_data(orjson.loads(data), value) \
            else None

    def __call__(self) -> Any:
        if self._data is not None:
            return orjson.loads(self._data)
        return copy_data(self._value)


#: The types of plain scalars (immutable, so never copied), and of text.
SCALARS = frozenset({str, int, float, bool, type(None)})
TEXT = frozenset({str})
TEXT_OR_NULL = frozenset({str, type(None)})


#: The one encoder of canonical text, made once (``json.dumps`` with options makes one a call).
_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                            allow_nan=False)
#: orjson writes what ``_ENCODER`` writes (the same escapes, keys sorted by code point, no
#: spaces) for strings, integers of 64 bits, booleans, None, and dicts and lists of them, in a
#: fraction of the time; floats it writes its own way (``1e-05`` as ``0.00001``), so a value
#: holding one is written by ``_ENCODER``.
_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS
_ORJSON_LINE = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
_ORJSON_INTS = range(-(1 << 63), 1 << 64)


def _orjson_writes(value: Any) -> bool:
    """Whether orjson writes ``value`` byte for byte as the canonical encoder: plain dicts
    (string keys), lists, strings, booleans, None and integers of 64 bits throughout."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or (type(item) is not str and not _orjson_writes(item)):
                return False
        return True
    if kind is list:
        return all(type(item) is str or _orjson_writes(item) for item in value)
    return kind is int and value in _ORJSON_INTS


def _orjson_agrees() -> bool:
    """Whether the installed orjson writes what the standard library writes where it is used:
    every character a JSON writer may choose to escape (ASCII, DEL and the C1 controls, the
    line and paragraph separators, the byte order mark), characters beyond, keys in code
    point order, the bounds of its integers. If a version ever did otherwise, it is not used,
    so the canonical bytes never depend on which orjson is installed."""
    text = "".join(map(chr, range(0xA0))) + "\u00a0\u00e9\u2028\u2029\ufeff\U0001f600"
    sample = [text, *text, {char: index for index, char in enumerate(text)},
              [True, False, None, 0, -1, -(1 << 63), (1 << 64) - 1], {"b": {"a": []}}]
    try:
        return orjson.dumps(sample, option=_ORJSON_OPTIONS) == \
            _ENCODER.encode(sample).encode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        return False


_USE_ORJSON = _orjson_agrees()


def _encode(value: Any) -> str:
    """Canonical JSON text of a normalised ``value``."""
    return _encode_line(value, _ORJSON_OPTIONS, _orjson_writes).decode("utf-8")


def _encode_line(value: Any, options: int,
                 orjson_writes: Callable[[Any], bool] | None) -> bytes:
    """Canonical JSON bytes of a normalised ``value``: by orjson where ``orjson_writes``
    says it wrote the canonical bytes (None: the caller vouches for it), else by the standard
    library. orjson goes first: it refuses most of what it cannot write (an integer beyond 64
    bits, a key that is not a string, a type it does not know), and the check afterwards
    finds the strings it walked already in the processor's cache."""
    if _USE_ORJSON:
        try:
            line = orjson.dumps(value, option=options)
        except TypeError:
            pass
        else:
            if orjson_writes is None or orjson_writes(value):
                return line
    text = _ENCODER.encode(value)
    return (text + "\n" if options & orjson.OPT_APPEND_NEWLINE else text).encode("utf-8")


def dumps(value: Any) -> str:
    """Canonical JSON text of ``value`` (no trailing newline)."""
    return _encode(normalize(value))


def dump_bytes(value: Any) -> bytes:
    """Canonical JSON bytes of ``value`` as one line, with its final newline."""
    return dump_normalized_bytes(normalize(value))


def dump_normalized_bytes(value: Any) -> bytes:
    """``dump_bytes`` of a value ``normalize`` already returned (normalising is idempotent,
    so this skips a second pass over every string of a generated instance)."""
    return _encode_line(value, _ORJSON_LINE, _orjson_writes)


def _messages_are_text(phases: Any) -> bool:
    """Whether ``phases`` are a list of phases whose messages are dicts of strings, as
    rendering makes them (or None, as a Parquet row has a message without a name).
    Messages are most of an instance, so their types are read in C: ``dict.values`` of
    anything but a dict raises TypeError."""
    if type(phases) is not list:
        return False
    try:
        for phase in phases:
            messages = phase["messages"]
            if type(messages) is not list or not all(
                    key == "messages" or (type(key) is str and _orjson_writes(item))
                    for key, item in phase.items()):
                return False
            if not (TEXT_OR_NULL.issuperset(map(type, chain.from_iterable(
                    map(dict.values, messages))))
                    and TEXT.issuperset(map(type, chain.from_iterable(messages)))):
                return False
    except (TypeError, KeyError):
        return False
    return True


def _instance_writes(instance: Any) -> bool:
    """``_orjson_writes`` of an instance, its messages checked as ``_messages_are_text``."""
    return type(instance) is dict and all(
        type(key) is str and (_messages_are_text(item) if key == "phases"
                              else _orjson_writes(item))
        for key, item in instance.items())


def writes_canonically(value: Any) -> bool:
    """Whether orjson's bytes of ``value`` are its canonical bytes: where it holds no float
    (orjson writes those its own way) and nothing orjson refuses, which it says itself."""
    return _orjson_writes(value)


#: The part of an instance that is the same in many (a family's analysis block) and may
#: hold floats, which orjson does not write canonically, so that a line holding it would
#: be written by the standard library: ``dump_instance_bytes`` can write it apart, once.
REPEATED_PART = "analysis"
_REPEATED_HEAD = b'{"' + REPEATED_PART.encode("ascii") + b'":'


def dump_instance_bytes(instance: Any, checked: bool = False,
                        repeated: TextMemo | None = None) -> bytes:
    """``dump_normalized_bytes`` of an instance, its messages (most of its bytes) checked in
    C; ``checked``: the caller checked with ``writes_canonically`` every part of it that
    could hold a float (a generator, of the parts it did not make of text), and nothing is
    checked here. With ``repeated``, its ``REPEATED_PART`` is written through that memo and
    set at its place in the line (first, where it sorts before every other key), so the
    rest is written by orjson even when that part holds a float."""
    if repeated is not None and not checked and type(instance) is dict \
            and REPEATED_PART in instance:
        rest = dict(instance)
        part = rest.pop(REPEATED_PART)
        if rest and all(type(key) is str and key > REPEATED_PART for key in rest):
            tail = _encode_line(rest, _ORJSON_LINE, _instance_writes)
            return b"".join((_REPEATED_HEAD, repeated(part).encode("utf-8"), b",", tail[1:]))
    return _encode_line(instance, _ORJSON_LINE, None if checked else _instance_writes)


def dump_pretty_bytes(value: Any) -> bytes:
    """Canonical, indented JSON bytes for files people read (manifests)."""
    text = json.dumps(
        normalize(value), ensure_ascii=False, sort_keys=True, indent=2, allow_nan=False
    )
    return (text + "\n").encode("utf-8")


def content_hash(value: Any) -> str:
    """XXH3-128 hex digest of the canonical bytes of ``value``: for finding duplicates."""
    return xxhash.xxh3_128_hexdigest(dumps(value).encode("utf-8"))


def normal_content_hash(record: Mapping[str, Any]) -> str:
    """``content_hash`` of a record that is normal already (a part of an instance as it is
    written or read back: ``normalize`` would return it unchanged), not normalised again
    and its messages checked in C, as ``dump_instance_bytes`` does."""
    return xxhash.xxh3_128_hexdigest(_encode_line(record, _ORJSON_OPTIONS, _instance_writes))


#: orjson writes these types as others (a dataclass as an object, a date as a string);
#: for a key it refuses them instead, as it refuses a key that is not a string.
_KEY_OPTIONS = (orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
                | orjson.OPT_PASSTHROUGH_SUBCLASS)


def json_key(value: Any) -> bytes | None:
    """Bytes that are equal for two values of plain data (dicts, lists and JSON's scalars,
    as an instance holds) only when they are the same value of the same types: ``1``,
    ``1.0`` and ``true`` differ (a tuple reads as a list, as JSON has only lists). A key to
    remember what was made of a value; None where there is none (then nothing is
    remembered): a value orjson cannot write, or one holding a null, which orjson also
    writes for NaN and infinity."""
    try:
        key = orjson.dumps(value, option=_KEY_OPTIONS)
    except TypeError:
        return None
    return None if b"null" in key else key


class TextMemo:
    """``dumps`` of values that repeat (a family's analysis block, in each of its
    instances), each distinct one (``json_key``) written once."""

    def __init__(self) -> None:
        self._texts: dict[bytes, str] = {}

    def __call__(self, value: Any) -> str:
        key = json_key(value)
        if key is None:
            return dumps(value)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = dumps(value)
        return text

"""JSON documents read from files memspec may not have written (a downloaded release's
``manifest.json``, a trusted manifest, a scores file): every way such a file can be wrong is
an error naming it, and the line and column where there is one. A file larger than any such
document may be is refused by its size before a byte of it is read (a sparse terabyte takes
no room on disk and hours to read); one nested deeper than Python's parser can follow is
refused as such, where it would otherwise end in an error that names no file; so is an
integer too long for Python to read."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from .errors import SpecError

#: The largest JSON document read whole: a manifest of a hundred thousand files is a few
#: tens of megabytes.
MAX_JSON_FILE_BYTES = 256 * 1024 * 1024


def utf8_text(raw: bytes, shown: str, first_line: int = 1) -> str:
    """``raw`` decoded as UTF-8 (the bytes of ``shown``, from its line ``first_line``), or a
    SpecError at the line and column of the first byte that is not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + raw.count(b"\n", 0, exc.start)
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpecError.single(f"not UTF-8: byte 0x{raw[exc.start]:02x} ({exc.reason})", shown,
                               line, column) from None


def json_value(text: str | bytes, shown: str, first_line: int = 1) -> Any:
    """The JSON value ``text`` holds (the text of ``shown``, from its line ``first_line``),
    or a SpecError at the line and column where it stops being JSON."""
    if isinstance(text, bytes):
        text = utf8_text(text, shown, first_line)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError.single(f"not valid JSON: {exc.msg}", shown,
                               first_line + exc.lineno - 1, exc.colno) from None
    except RecursionError:
        raise SpecError.single("not readable JSON: nested too deeply", shown,
                               first_line, 1) from None
    except ValueError:  # the one other refusal of the parser: an integer too long to read
        raise SpecError.single("not readable JSON: an integer of more than "
                               f"{sys.get_int_max_str_digits():,} digits", shown,
                               first_line, 1) from None


def read_json_file(path: Path, shown: str | None = None,
                   most: int = MAX_JSON_FILE_BYTES) -> Any:
    """The JSON value in ``path`` (named ``shown`` in errors), read whole once its size is
    known to be at most ``most``; every failure a located SpecError."""
    name = shown if shown is not None else str(path)
    try:
        size = os.stat(path).st_size
        if size > most:
            raise SpecError.single(f"file of {size:,} bytes is over the {most:,}-byte limit of "
                                   "a JSON document (refused before reading it)", name)
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError.single(f"cannot read: {exc.strerror or exc}", name) from None
    return json_value(raw, name)


#: Zero bytes a file may leave unwritten (holes) and still be read: no release or document
#: memspec writes has any, but a copy tool may punch a few in runs of zeros. A file with more
#: is a sparse file, which takes no room on disk and hours to read.
MAX_HOLE_BYTES = 64 * 1024 * 1024
#: How many extents are looked at before the file is judged by what was seen.
_MOST_EXTENTS = 4096


def hole_bytes(path: Path, size: int) -> int:
    """How many of the ``size`` bytes of ``path`` are holes (never written, read as zeros),
    found without reading the file (``SEEK_HOLE``/``SEEK_DATA``; 0 where the system cannot
    tell). A file of more extents than are looked at counts the rest as holes."""
    if not hasattr(os, "SEEK_HOLE"):
        return 0
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0
    try:
        holes = position = 0
        for _ in range(_MOST_EXTENTS):
            if position >= size:
                return holes
            hole = os.lseek(fd, position, os.SEEK_HOLE)
            if hole >= size:
                return holes
            try:
                data = os.lseek(fd, hole, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after this hole
                return holes + size - hole
            holes += data - hole
            position = data
        return holes + max(0, size - position)
    except OSError:
        return 0
    finally:
        os.close(fd)

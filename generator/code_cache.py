"""Compiled Python code (and parsed specs) kept between runs, as Python keeps its own code in
``__pycache__``.

Compiling is a large part of what a short command does (a quarter of `memspec validate`):
Jinja turns every template and expression into Python source and Python compiles it, and
fastjsonschema does the same for every schema. The results are code objects, which
``marshal`` stores exactly; a later run that would compile the same thing loads them instead.

An entry is named by the SHA-256 of everything its code depends on (the source, the name it
is compiled under, the Python, library and memspec code that compile it), so an entry never
goes stale: anything that changes makes a new name. Nothing random, timed or machine-specific
enters a name, and a cached code object is the same code a fresh compile gives, so the cache
changes no output. Reading or writing it never fails a command: a missing, unreadable,
corrupt or unwritable cache only means compiling again.

The cache lives in ``$MEMSPEC_CACHE_DIR`` if that is set (empty turns it off), else in
``$XDG_CACHE_HOME/memspec`` or ``~/.cache/memspec``. It is safe to delete at any time.

Parsing YAML is kept the same way (``cached_data``): a strict parse that remembers every
value's place costs ten times what loading its result costs.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
from collections.abc import Callable, Iterable
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any, TypeVar

#: Environment variable naming the cache folder; set to the empty string to turn caching off.
CACHE_DIR_VARIABLE = "MEMSPEC_CACHE_DIR"
#: Bumped when the layout of an entry changes.
_FORMAT = b"memspec-code-cache-1"
_HEADER = len(hashlib.sha256().digest())

_directory: tuple[str | None, Path | None] | None = None
#: What ``_read`` returns for no usable entry (None is a value a parse may give).
_MISSING = object()
T = TypeVar("T")


def cache_directory() -> Path | None:
    """Where compiled code is kept, or None when caching is off."""
    global _directory
    setting = os.environ.get(CACHE_DIR_VARIABLE)
    # Looked up once per setting: tests and embedding programs may change the variable.
    if _directory is not None and _directory[0] == setting:
        return _directory[1]
    if setting is not None:
        folder = Path(setting) if setting else None
    else:
        # A relative XDG_CACHE_HOME is to be ignored, as its specification says.
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not os.path.isabs(base):
            base = os.path.join(os.path.expanduser("~"), ".cache")
        folder = Path(base, "memspec") if os.path.isabs(base) else None
    _directory = (setting, folder)
    return folder


def fingerprint(parts: Iterable[str | bytes]) -> str:
    """A SHA-256 hex digest naming everything in ``parts``, in order (each part is length
    prefixed, so no two different lists of parts share a fingerprint)."""
    digest = hashlib.sha256(_FORMAT + MAGIC_NUMBER + sys.version.encode())
    for part in parts:
        data = part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def module_sources(modules: Iterable[str]) -> list[bytes]:
    """The source bytes of the named, already imported modules (for a fingerprint: the code
    that compiles something decides what it compiles to)."""
    sources = []
    for name in sorted(set(modules)):
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            sources.append(name.encode() + b"\0" + Path(file).read_bytes())
    return sources


def cached_code(kind: str, parts: Iterable[str | bytes], build: Callable[[], CodeType]
                ) -> CodeType:
    """The code ``build`` returns for these ``parts``: from the cache when a run before built
    it, else built now and kept for the next run. ``parts`` must name everything the code
    depends on; ``build`` may raise, and then nothing is kept."""
    return _cached(kind, parts, build, CodeType)


def cached_data(kind: str, parts: Iterable[str | bytes], build: Callable[[], T]) -> T:
    """As ``cached_code``, for the plain data ``marshal`` stores exactly (dicts in their
    order, lists, tuples, strings, numbers, booleans, None): what parsing a file gives, say.
    Each call returns objects of its own, shared with no other call."""
    return _cached(kind, parts, build, object)


def _cached(kind: str, parts: Iterable[str | bytes], build: Callable[[], T],
            expected: type) -> T:
    folder = cache_directory()
    if folder is None:
        return build()
    path = folder / kind / fingerprint(parts)
    if not _private(path.parent):
        return build()
    value = _read(path, expected)
    if value is _MISSING:
        value = build()
        _write(path, value)
    return value  # type: ignore[return-value]


_checked: dict[Path, bool] = {}


def _private(folder: Path) -> bool:
    """Whether code loaded from ``folder`` can only have been put there by this user: it is
    theirs and no one else may write in it (else anyone who can would choose what runs).
    A folder that does not exist yet will be made private."""
    if folder not in _checked:
        try:
            status = folder.stat()
        except FileNotFoundError:
            return True  # made by _write, with mode 0o700; checked on the next call
        except OSError:
            status = None
        owner = getattr(os, "getuid", lambda: None)()
        # Without POSIX owners (Windows), the folder's access lists guard it, not mode bits.
        _checked[folder] = status is not None and (
            owner is None or (status.st_uid == owner and not status.st_mode & 0o022))
    return _checked[folder]


def _read(path: Path, expected: type) -> Any:
    try:
        data = path.read_bytes()
    except OSError:
        return _MISSING
    payload = data[_HEADER:]
    if hashlib.sha256(payload).digest() != data[:_HEADER]:
        return _MISSING  # torn or damaged: build again, and the write replaces it
    try:
        value = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return _MISSING
    return value if isinstance(value, expected) else _MISSING


def _write(path: Path, value: Any) -> None:
    try:
        payload = marshal.dumps(value)
    except ValueError:  # something marshal cannot store: this value is simply not kept
        return
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary.write_bytes(hashlib.sha256(payload).digest() + payload)
        # Atomic: a process reading at the same moment sees no entry or a whole one.
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)

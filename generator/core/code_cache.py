"""Compiled Python code (and parsed specs) kept between runs, as Python keeps its own code in
``__pycache__``.

Compiling is a large part of what a short command does (a quarter of `memspec validate`):
Jinja turns every template and expression into Python source and Python compiles it, and
fastjsonschema does the same for every schema. The results are code objects, which
``marshal`` stores exactly; a later run that would compile the same thing loads them instead.

An entry is named by the SHA-256 of everything its code depends on (the source, the name it
is compiled under, the Python, the versions of the libraries that run while compiling and the
source of every memspec module), so an entry never goes stale: anything that changes makes a
new name. Nothing random, timed or machine-specific enters a name, and a cached code object is
the same code a fresh compile gives, so the cache changes no output. Reading or writing it
never fails a command: a missing, unreadable, corrupt or unwritable cache only means
compiling again.

Code is loaded only from where no one but this user could have put it: the cache root, each
folder below it and each entry must be this user's and writable by no one else (checked
without following symlinks), and each entry carries an HMAC-SHA256 under a key made of a
secret kept in the root (mode 0600) and of that secret file's identity on disk, so that a
cache shipped in a checkout or an archive, key file included, is never trusted
(``_entry_key``).

The cache lives in ``$MEMSPEC_CACHE_DIR`` if that is set (empty turns it off), else in the
folder ``.memspec_cache`` of the project a command works on (as ``.ruff_cache`` or
``.pytest_cache``): a command writes nothing outside its project and its ``--out``. A command
that works on no project (``verify``, ``score`` of a downloaded release) keeps no cache. It is
safe to delete at any time.

Parsing YAML is kept the same way (``cached_data``): a strict parse that remembers every
value's place costs ten times what loading its result costs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import importlib.metadata
import marshal
import os
import stat
import sys
from collections.abc import Callable, Iterable
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any, TypeVar

#: Environment variable naming the cache folder; set to the empty string to turn caching off.
CACHE_DIR_VARIABLE = "MEMSPEC_CACHE_DIR"
#: The cache's folder inside a project, beside its specs/ (``memspec init`` ignores it in git).
PROJECT_CACHE = ".memspec_cache"
#: Bumped when the layout of an entry changes.
_FORMAT = b"memspec-code-cache-2"
_HEADER = len(hashlib.sha256().digest())

#: The project folder's cache set by ``use_project`` (None: no project, no cache).
_project_folder: Path | None = None
#: The folder found for the last (variable, project) pair asked about.
_directory: tuple[tuple[str | None, Path | None], Path | None] | None = None
#: What ``_read`` returns for no usable entry (None is a value a parse may give).
_MISSING = object()
T = TypeVar("T")


def use_project(root: Path | None) -> None:
    """Keep this process's cache (and its forked workers') in the project at ``root``, or
    none when ``root`` is None; ``$MEMSPEC_CACHE_DIR``, where set, still decides."""
    global _project_folder
    _project_folder = None if root is None else root / PROJECT_CACHE


def cache_directory() -> Path | None:
    """Where compiled code is kept, or None when caching is off."""
    global _directory
    setting = os.environ.get(CACHE_DIR_VARIABLE)
    # Looked up once per setting: tests and embedding programs may change the variable.
    if _directory is not None and _directory[0] == (setting, _project_folder):
        return _directory[1]
    # Set but empty: caching is off.
    folder = _project_folder if setting is None else (Path(setting) if setting else None)
    _directory = ((setting, _project_folder), folder)
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


def code_versions(modules: Iterable[str]) -> list[str]:
    """What identifies the code of the named modules' packages (for a fingerprint: the code
    that compiles or evaluates something decides what it gives): this package by the source
    of every one of its modules (a change to any of them, even one a filter merely calls, is a
    new fingerprint), another package by its distribution's version, the standard library by
    Python's version (which ``fingerprint`` covers already)."""
    own = __name__.partition(".")[0]
    parts: list[str] = []
    for top in sorted({name.partition(".")[0] for name in modules if name}):
        if top == own:
            parts.append(f"{own}={package_source_digest()}")
        elif top not in sys.stdlib_module_names and not top.startswith("_"):
            parts.append(f"{top}={_distribution_version(top)}")
    return parts


@functools.cache
def package_source_digest() -> str:
    """The SHA-256 of the source of every module of this package, by path, in order."""
    folder = Path(__file__).resolve().parents[1]  # the package root, every subpackage
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        name = path.relative_to(folder).as_posix().encode()
        data = path.read_bytes()
        digest.update(len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


@functools.cache
def _distribution_version(package: str) -> str:
    """The installed version of the distribution that provides the import name ``package``
    (its module's own ``__version__`` where it sets one, read without a module-level
    ``__getattr__`` that may warn; else the installed distribution of that name), else the
    module file's digest."""
    module = sys.modules.get(package)
    version = vars(module).get("__version__") if module is not None else None
    if isinstance(version, str):
        return version
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        return importlib.metadata.version(package)  # most import names are their package's
    file = getattr(module, "__file__", None)
    return hashlib.sha256(Path(file).read_bytes()).hexdigest() if file else "unknown"


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


def stored_data(kind: str, parts: Iterable[str | bytes]) -> Any:
    """The plain data ``keep_data`` kept under these ``parts``, or None where there is none
    this run may trust (or caching is off)."""
    place = _place(kind, parts)
    value = _MISSING if place is None else _read(*place, object)
    return None if value is _MISSING else value


def keep_data(kind: str, parts: Iterable[str | bytes], value: Any) -> None:
    """Keep ``value`` (plain data, as ``cached_data`` keeps it) under these ``parts``."""
    place = _place(kind, parts)
    if place is not None:
        _write(*place, value)


def _place(kind: str, parts: Iterable[str | bytes]) -> tuple[Path, bytes, bytes] | None:
    """Where the entry of ``kind`` named by ``parts`` lives, with the key and label that
    authenticate it, or None when caching is off or the cache cannot be trusted."""
    folder = cache_directory()
    key = None if folder is None else _entry_key(folder)
    if folder is None or key is None:
        return None
    name = fingerprint(parts)
    return folder / kind / name, key, f"{kind}/{name}".encode()


def _cached(kind: str, parts: Iterable[str | bytes], build: Callable[[], T],
            expected: type) -> T:
    place = _place(kind, parts)
    if place is None:
        return build()
    value = _read(*place, expected)
    if value is _MISSING:
        value = build()
        _write(*place, value)
    return value  # type: ignore[return-value]


# ------------------------------------------------------------------ trusting what is read

#: The secret's file in the cache root, made by the first run that uses the root.
KEY_FILE = "key"
_KEY_BYTES = 32
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)
#: The key of each cache root already opened (None: a root not to use).
_keys: dict[Path, bytes | None] = {}


def _own(status: os.stat_result, kind: int, private_mask: int) -> bool:
    """Whether ``status`` (of ``lstat`` or ``fstat``: a symlink is never followed) is of the
    ``kind`` wanted, this user's, and has none of ``private_mask``'s permission bits (no one
    else may write; for the secret, read). Without POSIX owners (Windows) a folder's access
    lists guard it, not its mode bits."""
    if (status.st_mode & 0o170000) != kind:
        return False
    owner = getattr(os, "getuid", None)
    return owner is None or (status.st_uid == owner() and not status.st_mode & private_mask)


def _private_folder(folder: Path) -> bool:
    """Whether ``folder`` is a real folder (no symlink) of this user's that no one else may
    write to, made now (mode 0700) if missing."""
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        return _own(os.lstat(folder), stat.S_IFDIR, 0o022)
    except OSError:
        return False


def _entry_key(root: Path) -> bytes | None:
    """The key that authenticates the entries of the cache at ``root``, or None where the
    root cannot be trusted (then nothing is read or written there).

    The root must be a folder of this user's that no one else may write to, checked without
    following symlinks, as Python checks ``__pycache__``. Its secret is 32 random bytes in
    ``root/key``, a regular file of this user's that no one else may read (0600), written by
    the first run that used the root. The key is the hash of the secret *and of the file's
    identity on disk* (device and inode): a key file that arrived with a checkout, an archive
    or a restored CI cache (``XDG_CACHE_HOME=$PWD/.cache``) was not the file any entry was
    made with, so whoever wrote it, knowing its secret, still cannot make an entry this run
    accepts; such a cache is only filled again."""
    if root in _keys:
        return _keys[root]
    key = None
    with contextlib.suppress(OSError):
        root.parent.mkdir(parents=True, exist_ok=True)
        if _private_folder(root):
            key = _read_secret(root / KEY_FILE) or _make_secret(root / KEY_FILE)
    _keys[root] = key
    return key


def _read_secret(path: Path) -> bytes | None:
    """The key made of the secret at ``path``, or None where there is none to trust."""
    try:
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | _BINARY)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(descriptor)
        if not _own(status, stat.S_IFREG, 0o077) or status.st_size != _KEY_BYTES:
            return None
        secret = file.read(_KEY_BYTES + 1)
    if len(secret) != _KEY_BYTES:
        return None
    identity = f"{status.st_dev}:{status.st_ino}".encode()
    return hashlib.sha256(b"memspec-cache-key\0" + secret + identity).digest()


def _make_secret(path: Path) -> bytes | None:
    """Write a new secret at ``path`` (0600) unless another process just did, then read
    whichever is there."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
                             | _BINARY, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(os.urandom(_KEY_BYTES))
            # A hard link fails where the name exists: two first runs agree on one secret.
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    return _read_secret(path)


def _read(path: Path, key: bytes, label: bytes, expected: type) -> Any:
    """The value kept at ``path``, or ``_MISSING`` unless the entry and its folder are this
    user's alone and its tag is the one ``key`` gives its name and payload: a planted,
    swapped, torn or damaged entry is never loaded, only built again (and replaced)."""
    try:
        if not _own(os.lstat(path.parent), stat.S_IFDIR, 0o022):
            return _MISSING
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | _BINARY)
    except OSError:
        return _MISSING
    with os.fdopen(descriptor, "rb") as file:
        if not _own(os.fstat(descriptor), stat.S_IFREG, 0o022):
            return _MISSING
        data = file.read()
    payload = data[_HEADER:]
    if not hmac.compare_digest(_tag(key, label, payload), data[:_HEADER]):
        return _MISSING
    try:
        value = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return _MISSING
    return value if isinstance(value, expected) else _MISSING


def _tag(key: bytes, label: bytes, payload: bytes) -> bytes:
    """The HMAC-SHA256 of an entry: its kind and name, then its payload."""
    return hmac.new(key, len(label).to_bytes(8, "big") + label + payload,
                    hashlib.sha256).digest()


def _write(path: Path, key: bytes, label: bytes, value: Any) -> None:
    try:
        payload = marshal.dumps(value)
    except ValueError:  # something marshal cannot store: this value is simply not kept
        return
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        if not _private_folder(path.parent):
            return
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW
                             | _BINARY, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(_tag(key, label, payload) + payload)
        # Atomic: a process reading at the same moment sees no entry or a whole one.
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)

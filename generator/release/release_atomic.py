"""Putting a release in place whole or not at all: a hidden staging folder beside the target
(one freeze per output folder at a time), sealed with its manifest and SHA256SUMS, synced,
and moved into place with one rename (a release already there is swapped out in one step);
single files are written as hidden siblings and renamed over their target. What a killed
writer leaves behind is hidden, and removed by the next one."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import glob
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import SpecError
from ..core.writeback import StreamedFile
from ..formats.manifest import MANIFEST_FILE, SUMS_FILE, sha256_file, sums_text
from ..formats.release_folders import refuse_writing_inside_release

TMP_PREFIX = ".memspec-tmp-"


def write_seal(folder: Path, manifest_data: bytes) -> None:
    """Write manifest.json and SHA256SUMS over every other file of ``folder``."""
    (folder / MANIFEST_FILE).write_bytes(manifest_data)
    hashes = {
        path.relative_to(folder).as_posix(): sha256_file(path)
        for path in folder.rglob("*") if path.is_file() and path.name != SUMS_FILE
    }
    (folder / SUMS_FILE).write_bytes(sums_text(hashes).encode("utf-8"))


def fsync_tree(folder: Path) -> None:
    for path in [*folder.rglob("*"), folder]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextmanager
def staging_folder(out: Path, full_name: str) -> Iterator[Path]:
    """A hidden build folder inside ``out``, removed afterwards whatever happens; an ``out``
    created here is removed too if the build fails, so a refused freeze writes nothing."""
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    lock = os.open(out, os.O_RDONLY)
    try:
        # One writer per output folder at a time: the folder itself is the lock, which readers
        # of its releases share (``reading_release``). A freeze waits for the verifies reading
        # there and for another freeze writing there (under the command's budget); two freezes
        # of one release refuse each other by the release's own lock, taken before this.
        fcntl.flock(lock, fcntl.LOCK_EX)
        _WRITING.add(out.resolve())
        for stale in out.glob(f"{TMP_PREFIX}{full_name}-*"):
            shutil.rmtree(stale, ignore_errors=True)  # left by an interrupted freeze
        folder = out / f"{TMP_PREFIX}{full_name}-{os.getpid()}"
        folder.mkdir()
        try:
            yield folder
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            if created and not any(out.iterdir()):
                out.rmdir()
            raise
        finally:
            if folder.exists():
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        _WRITING.discard(out.resolve())
        os.close(lock)


#: Output folders whose writer's lock this process holds: what it reads there it wrote.
_WRITING: set[Path] = set()


@contextmanager
def reading_release(folder: Path) -> Iterator[None]:
    """Hold off any freeze into the folder that holds the release ``folder`` while it is read,
    and wait for one under way: a freeze holds that folder's lock, exclusive, from its first
    write to its last rename, and readers share it, so a release is never read half swapped.
    A folder that cannot be opened (or one this process is writing) is read as it is."""
    parent = folder.parent
    try:
        if parent.resolve() in _WRITING:
            yield
            return
        lock = os.open(parent, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_SH)  # waits, under the command's budget
        yield
    finally:
        os.close(lock)


@contextmanager
def release_lock(spec_path: Path, full_name: str, display: str) -> Iterator[None]:
    """One freeze of a release at a time in a project, whatever folder each writes to (both
    would write its committed manifest): an exclusive lock on the release's own spec file,
    which the kernel lets go when the process ends, however it ends (a killed freeze leaves
    no lock behind, and nothing to clean)."""
    try:
        lock = os.open(spec_path, os.O_RDONLY)
    except OSError:  # a release not read from a file (built in memory): nothing to share
        yield
        return
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SpecError.single(f"another memspec freeze of {full_name} is running in this "
                                   "project; try again when it is done", display) from None
        yield
    finally:
        os.close(lock)


def fsync_dir(folder: Path) -> None:
    """Make the renames in ``folder`` durable."""
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


#: renameat2(2) flag: swap two paths in one step (Linux 3.15+, most local file systems).
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(first: Path, second: Path) -> bool:
    """Swap two existing paths in one atomic step; False where the system cannot (then nothing
    has changed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second),
                 _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))


def refuse_to_replace_foreign(final: Path, is_own: Callable[[Path], bool], what: str) -> None:
    """Refuse to build into ``final`` when something other than an earlier ``what`` (a real
    folder ``is_own`` recognises) is there: a build replaces its own output, never a user's
    files."""
    if final.is_symlink() or (final.exists() and not (final.is_dir() and is_own(final))):
        raise SpecError.single(f"{final} exists and is not {what}; move it away or choose "
                               "another --out")


def move_into_place(staged: Path, final: Path, *, sync: bool = True) -> None:
    """Put the release built in ``staged`` at ``final``. A release already there is swapped
    out in one step (it ends up in ``staged``, which its caller removes), so it is never
    missing or partial; where the system cannot swap, it is renamed away just before.
    ``sync=False`` leaves syncing the folder to the caller."""
    if final.exists() and not _exchange(staged, final):
        old = final.with_name(f"{TMP_PREFIX}{final.name}-old-{os.getpid()}")
        os.rename(final, old)
        os.rename(staged, final)
        shutil.rmtree(old)
    elif not final.exists():
        os.rename(staged, final)
    if sync:
        fsync_dir(final.parent)


def process_gone(pid: int) -> bool:
    """Whether no process has this id (a writer that was killed)."""
    try:
        os.kill(pid, 0)  # signal 0 sends nothing: it only asks whether the process exists
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _remove_stale_siblings(path: Path) -> None:
    """Remove the temporary siblings of ``path`` that killed writers left behind."""
    for stale in path.parent.glob(f"{glob.escape(TMP_PREFIX + path.name)}-*"):
        pid = stale.name.rpartition("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and process_gone(int(pid)):
            stale.unlink(missing_ok=True)


@contextmanager
def atomic_writer(path: Path, *, just_before: Callable[[], None] | None = None
                  ) -> Iterator[StreamedFile]:
    """A file opened for writing that appears at ``path`` whole or not at all: written as a
    hidden sibling (whose bytes go to disk as it grows, see ``StreamedFile``), synced, and
    renamed over the target when the block ends without an error.
    ``just_before`` is a last step taken the moment before that rename (a release moved into
    place, so that it and its manifest appear together)."""
    if path.is_dir():
        raise SpecError.single("is a folder; give a file name", str(path))
    refuse_writing_inside_release(path)
    if not path.parent.is_dir():
        raise SpecError.single(f"no folder {path.parent} to write into", str(path))
    _remove_stale_siblings(path)
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}-{os.getpid()}")
    try:
        try:
            handle = StreamedFile(tmp)
        except OSError as exc:  # name the file asked for, not the hidden sibling
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if just_before is not None:
            just_before()
        os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write_bytes(path: Path, data: bytes, *,
                       just_before: Callable[[], None] | None = None) -> None:
    """Write a file by writing a temporary sibling and renaming it over the target (see
    ``atomic_writer``)."""
    with atomic_writer(path, just_before=just_before) as handle:
        handle.write(data)


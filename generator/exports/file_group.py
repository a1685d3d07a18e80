"""Files that belong together, written into a folder shared with other files (the requests of
``judge-requests`` and their unblinding map), all or none; and the readers' side of it: a
file of such a group is refused while the group is part way into place.

The files are written in a hidden folder beside them; once all are on disk a journal naming
them is written there, and they are renamed into place one by one. Each rename is atomic, so
every file is always whole, old or new; but between the first rename and the last the group
mixes old and new files. A writer killed there leaves its journal, and the next writer
completes the moves; until then a reader of the group refuses (``refuse_while_moving``)
rather than read one file of a new group beside another of the old one.

Readers that are not memspec see no journal; for them a group may carry a sums file, in
``sha256sum``'s format, naming every other file's SHA-256. It is moved into place last, so
whatever a reader reads, the files it read belong together exactly when their bytes are the
ones the sums file it read names (``sha256sum -c`` on a copy of the group checks it): any
mix of two groups, or a group left mid-move, fails that check."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import SpecError
from ..formats.manifest import sums_text
from ..release.release_atomic import TMP_PREFIX, atomic_write_bytes, process_gone
from .export_swap import check_paths, write_synced

#: The names a writer is moving into place, written once all of them are staged.
JOURNAL = ".moving.json"
#: A journal is a list of a few names; one larger than this was not written by a writer here.
MAX_JOURNAL_BYTES = 1 << 20
_STAGING = f"{TMP_PREFIX}export-"


def write_all(out: Path, files: Mapping[str, bytes], sums: str | None = None) -> list[Path]:
    """Write ``files`` (relative paths) under ``out``, all or none: every path is checked to
    stay inside ``out`` first; the files are then written in a hidden folder of ``out``, and
    only once all are written are they renamed into place, each file they replace kept (as a
    second link) and put back if any rename fails, so a failure leaves the previous files
    as they were; a kill while they move is completed by the next writer there. With
    ``sums``, a file of that name listing every other file's SHA-256 (``sha256sum``'s
    format) is written with them and moved last: the mark, for readers that are not
    memspec, that the files beside it are one group. An export, which owns its folder, is
    swapped in whole instead (``export_swap.write_export``)."""
    if sums is not None:
        files = {**files, sums: sums_text({name: hashlib.sha256(data).hexdigest()
                                          for name, data in files.items()}).encode("utf-8")}
    check_paths(out, files)
    # The sums file last: until it is in place, the sums beside the files are the previous
    # group's (or none), which the files already moved no longer match.
    order = [*sorted(name for name in files if name != sums), *([sums] if sums else [])]
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    _finish_interrupted(out)
    staging = out / f"{_STAGING}{os.getpid()}"
    try:
        write_synced(staging, files)
        # Every file is on disk: from here on, a writer killed midway is completed by the
        # next one (``_finish_interrupted``, in this order), never left part old, part new.
        atomic_write_bytes(staging / JOURNAL, json.dumps(order).encode("utf-8"))
        _move_all(staging, out, order)
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / relative for relative in sorted(files)]


def _finish_interrupted(out: Path) -> None:
    """Complete the writers into ``out`` that were killed while they moved their files into
    place (their staging folder, of a process that is gone, holds the journal): the files
    not moved yet are moved now, in the journal's order. One killed before its journal was
    written had replaced nothing, and its staging folder is only removed."""
    for stale in sorted(out.glob(f"{glob.escape(_STAGING)}*")):
        pid = stale.name.rpartition("-")[2]
        if not (pid.isdigit() and int(pid) != os.getpid() and process_gone(int(pid))):
            continue
        for relative in _journal_names(stale) or []:
            staged = stale / relative
            if staged.is_file():
                (out / relative).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, out / relative)
        shutil.rmtree(stale, ignore_errors=True)


def _journal_names(staging: Path) -> list[str] | None:
    """The names the journal in ``staging`` lists, None where there is no journal; a journal
    that cannot be read as one lists no name."""
    journal = staging / JOURNAL
    try:
        with journal.open("rb") as handle:
            data = handle.read(MAX_JOURNAL_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        names = json.loads(data.decode("utf-8")) if len(data) <= MAX_JOURNAL_BYTES else []
    except (UnicodeDecodeError, ValueError, RecursionError):
        names = []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def _move_all(staging: Path, out: Path, names: list[str]) -> None:
    """Rename each of ``names`` from ``staging`` into ``out``, all or none: a file already
    there is first linked into ``staging/.previous`` (so that the name never stands empty:
    the rename then replaces it in one step), and on any failure every file moved so far
    goes back where it was."""
    previous = staging / ".previous"
    moved: list[tuple[Path, Path | None]] = []
    try:
        for relative in names:
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            kept = None
            if target.exists():
                kept = previous / relative
                kept.parent.mkdir(parents=True, exist_ok=True)
                _keep(target, kept)
            moved.append((target, kept))
            os.replace(staging / relative, target)
    except BaseException:
        for target, kept in reversed(moved):
            if kept is None:
                target.unlink(missing_ok=True)
            else:
                os.replace(kept, target)
        raise


def _keep(target: Path, kept: Path) -> None:
    """A second name for ``target``'s bytes at ``kept``: a hard link, or a copy where the
    file system has none."""
    try:
        os.link(target, kept)
    except OSError:
        shutil.copy2(target, kept)


def moving(path: Path) -> Path | None:
    """The staging folder of a writer part way through moving a group holding ``path`` into
    place (killed there, or running now), or None."""
    for staging in sorted(path.parent.glob(f"{glob.escape(_STAGING)}*")):
        names = _journal_names(staging)
        if names is not None and (not names or path.name in names):
            return staging  # an unreadable journal may name it: refused, not guessed
    return None


def refuse_while_moving(path: Path, writer: str) -> None:
    """Refuse, at ``path``, a file of a group that ``writer`` (the command that writes it) is
    part way through putting in place: the files beside it may be of the other group."""
    staging = moving(path)
    if staging is not None:
        raise SpecError.single(
            f"{writer} was stopped (or is still running) while it replaced this file and the "
            f"files written with it, so they may not belong together (its unfinished move is "
            f"in {staging.name}); run {writer} again to complete it", str(path))


@contextmanager
def settled(path: Path, writer: str) -> Iterator[None]:
    """A block that reads ``path`` (and may read it more than once) and sees one version of
    it and of its group: refused before if a writer is moving the group, and after if one
    moved it, or started to, while the block read it."""
    refuse_while_moving(path, writer)
    before = _identity(path)
    yield
    refuse_while_moving(path, writer)
    if _identity(path) != before:
        raise SpecError.single(f"was replaced (by {writer}) while it was read; run the "
                               "command again", str(path))


def _identity(path: Path) -> tuple[int, ...] | None:
    # A replaced file is a new inode: the same inode, size and time is the same file.
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)

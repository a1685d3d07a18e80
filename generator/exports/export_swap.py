"""Putting an export's folder in place whole: the new export is built in a hidden sibling of
its folder and swapped in by one atomic exchange of the two names, so that at every instant
the folder is the old complete export or the new complete one, whenever the process is killed.
What a killed export leaves behind is a hidden sibling, removed by the next export there."""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from ..core.errors import SpecError
from ..formats.release_folders import refuse_writing_inside_release
from ..release.release_atomic import TMP_PREFIX, fsync_dir, move_into_place, process_gone

#: Entries of a folder exported into that the export does not write itself (a user's notes,
#: files of another format) are carried into the new folder as hard links. Past this many,
#: the folder is not an export's and is refused rather than copied.
MAX_CARRIED = 1_000


def check_paths(out: Path, files: Mapping[str, bytes]) -> None:
    """Refuse, before anything is written, ``files`` (relative paths) that would be written
    outside ``out`` (through a symlink), over a folder, or below a file; and an ``out`` that
    is a file or lies inside a release."""
    refuse_writing_inside_release(out)
    if out.exists() and not out.is_dir():
        raise SpecError.single("is a file; --out names the folder to write into", str(out))
    base = out.resolve() if out.exists() else None
    for relative in files:
        path = out / relative
        existing = path.parent
        while not existing.exists() and not existing.is_symlink() and existing != out:
            existing = existing.parent
        inside = base is None or existing.resolve().is_relative_to(base)
        if not inside or path.is_symlink() or (path.exists() and not path.is_file()):
            raise SpecError.single(f"{relative} would be written outside {out} or over a "
                                   "folder (a symlink?)")
        for parent in PurePosixPath(relative).parents:
            if parent.parts and (out / parent).exists() and not (out / parent).is_dir():
                raise SpecError.single(f"{relative} needs {parent} in {out} to be a folder, "
                                       "and it is a file")


def write_export(out: Path, files: Mapping[str, bytes]) -> list[Path]:
    """Write the folder ``out`` holding ``files`` (relative paths), all or none: built whole
    in a hidden sibling (each file synced), what ``out`` already holds that the export does
    not write carried over as hard links, then exchanged with ``out`` in one step (where the
    system cannot exchange, the old folder is renamed away just before). A failure or a kill
    at any point leaves ``out`` as it was, or the new export whole."""
    check_paths(out, files)
    if out.is_symlink():  # swap the folder it leads to, not the link
        out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(out)
    staging = out.with_name(f"{TMP_PREFIX}{out.name}-export-{os.getpid()}")
    try:
        staging.mkdir()
        if out.is_dir():
            _carry_over(out, staging, files)
            shutil.copystat(out, staging)
        write_synced(staging, files)
        for folder in sorted({(staging / r).parent for r in files}, reverse=True):
            fsync_dir(folder)
        move_into_place(staging, out)  # staging now holds the old export, if any
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / relative for relative in sorted(files)]


def write_synced(folder: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` (relative paths) under ``folder``, each synced to disk."""
    for relative, data in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())


def _carry_over(out: Path, staging: Path, files: Mapping[str, bytes]) -> None:
    """Link into ``staging`` every entry of ``out`` that ``files`` does not replace (hidden
    leftovers of killed writers excepted), so the new folder keeps them."""
    written = {PurePosixPath(r).as_posix() for r in files}
    carried = 0
    for folder, dirs, names in os.walk(out):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not d.startswith(TMP_PREFIX)]
        for name in [*dirs, *names]:
            if name.startswith(TMP_PREFIX):
                continue
            source = here / name
            relative = source.relative_to(out).as_posix()
            target = staging / relative
            if relative in written:
                continue
            carried += 1
            if carried > MAX_CARRIED:
                raise SpecError.single(f"holds over {MAX_CARRIED:,} files the export does not "
                                       "write: export into a folder of its own", str(out))
            if source.is_symlink():
                os.symlink(os.readlink(source), target)
            elif source.is_dir():
                target.mkdir()
                shutil.copystat(source, target)
            else:
                try:
                    os.link(source, target)
                except OSError:  # a file system without hard links, or one not ours
                    shutil.copy2(source, target)


def _remove_stale(out: Path) -> None:
    """Remove the hidden siblings of ``out`` that killed exports left (a half-built export,
    or an old one swapped out and not yet removed)."""
    pattern = f"{glob.escape(TMP_PREFIX + out.name)}-export-*"
    for stale in out.parent.glob(pattern):
        pid = stale.name.rpartition("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and process_gone(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)

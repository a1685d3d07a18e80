"""Telling a built release folder by its own manifest, and keeping every writer out of one.

A release folder is one memspec sealed: its ``manifest.json`` names the release, its version
and its data root hash, and its ``SHA256SUMS`` pins that manifest's bytes. A folder that merely
holds a file called ``SHA256SUMS`` (a user's downloads, say) is not one, so ``freeze`` never
replaces it; and no command writes a file inside a real one, whose sums would no longer
hold."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path

from ..core.errors import SpecError
from .manifest import MANIFEST_FILE, SUMS_FILE

#: A manifest larger than this is no manifest memspec wrote (the largest bundled is ~20 kB).
_MANIFEST_BYTES = 64 * 1024 * 1024
_SUMS_BYTES = 64 * 1024 * 1024
_HEX64 = re.compile(r"[0-9a-f]{64}")


def release_identity(folder: Path) -> tuple[str, str, str] | None:
    """The release, version and root hash a release folder's own manifest gives, or None
    where ``folder`` is not a sealed release: not a real folder, no regular
    ``manifest.json`` naming all three, or no ``SHA256SUMS`` listing that manifest's bytes."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return None
        manifest = _regular_bytes(folder / MANIFEST_FILE, _MANIFEST_BYTES)
        sums = _regular_bytes(folder / SUMS_FILE, _SUMS_BYTES)
    except OSError:
        return None
    if manifest is None or sums is None:
        return None
    try:
        data = json.loads(manifest)
    except (ValueError, RecursionError):  # nested too deeply for the parser: not sealed
        return None
    if not isinstance(data, dict):
        return None
    name, version, root = data.get("release"), data.get("version"), data.get("root_sha256")
    if not (isinstance(name, str) and isinstance(version, str) and isinstance(root, str)
            and _HEX64.fullmatch(root)):
        return None
    pinned = f"{hashlib.sha256(manifest).hexdigest()}  {MANIFEST_FILE}\n".encode()
    if not (sums.startswith(pinned) or b"\n" + pinned in sums):
        return None
    return name, version, root


def _regular_bytes(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (no symlink) of at most ``limit``."""
    status = os.lstat(path)
    if not stat.S_ISREG(status.st_mode) or status.st_size > limit:
        return None
    return path.read_bytes()


def release_folder_holding(target: Path) -> Path | None:
    """The release folder ``target`` is, or lies inside (symlinks resolved), or None."""
    resolved = Path(os.path.abspath(target)).resolve()
    for folder in (resolved, *resolved.parents):
        if (folder / SUMS_FILE).is_file() and release_identity(folder) is not None:
            return folder
    return None


def refuse_writing_inside_release(target: Path) -> None:
    """A clear error when ``target`` is a release folder or inside one: every command that
    writes a file or folder asks this first, as a file written there is in no SHA256SUMS and
    the release would no longer verify."""
    folder = release_folder_holding(target)
    if folder is not None:
        raise SpecError.single(f"is inside the release {folder}: the release would no longer "
                               "verify with it there; write it elsewhere", str(target))

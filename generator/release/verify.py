"""Checking a built release: SHA256SUMS, its manifest, the committed manifest, and
optionally a rebuild from the specs compared byte for byte."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import MemspecError, Problem, SpecError
from ..core.json_files import (
    MAX_HOLE_BYTES,
    MAX_JSON_FILE_BYTES,
    hole_bytes,
    read_json_file,
    utf8_text,
)
from ..engine.parallel import available_cores
from ..formats.manifest import (
    MANIFEST_FILE,
    SUMS_FILE,
    describe_versions,
    load_manifest,
    manifest_differences,
    parse_sums,
    sha256_file,
    sha256_files,
    sums_text,
    version_differences,
)
from ..formats.parquet_export import content_sha256, file_writer
from ..spec.catalog import Catalog
from ..spec.schemas import schema_errors
from .release_atomic import reading_release
from .verify_contents import unreadable_contents


@dataclass
class VerifyReport:
    """What verification found; ``ok`` when nothing is wrong.

    Two verdicts: a release whose files disagree with what its seal (or a manifest from
    outside it) pins does not verify (``memspec verify`` exits 1); one whose seal cannot be
    read as such at all (SHA256SUMS or manifest.json not UTF-8, not JSON or not a manifest,
    nested too deeply, too large to be one) is bad input, ``unreadable`` (exit 2)."""

    release_dir: Path
    checked_files: int = 0
    problems: list[Problem] = field(default_factory=list)
    unreadable: bool = False
    anchored: bool = False  # compared with a manifest from outside the release
    draft: bool = False  # an unpublished draft (freeze --draft)
    notes: list[str] = field(default_factory=list)  # nothing wrong, but worth saying

    @property
    def ok(self) -> bool:
        return not self.problems

    def fail(self, message: str, file: str | None = None) -> None:
        self.problems.append(Problem(message, file))

    def refuse(self, problems: list[Problem]) -> None:
        """Record ``problems`` that make the release unreadable (bad input, not a mismatch)."""
        self.problems += problems
        self.unreadable = True


#: How much larger than the bytes a manifest pins a Parquet file another pyarrow wrote may be
#: (its encodings and metadata of the same rows): times the pinned size, plus a margin for
#: the footer of a small file. Past it the file is refused before a byte of it is read.
OTHER_WRITER_FACTOR = 4
OTHER_WRITER_MARGIN = 1 << 20


def other_writer_bytes(pinned: int) -> int:
    """The most bytes a Parquet file of ``pinned`` bytes may take as another writer's copy."""
    return pinned * OTHER_WRITER_FACTOR + OTHER_WRITER_MARGIN


def _recorded(folder: Path, key: str) -> dict[str, Any]:
    """What manifest.json records of each file under ``key`` (``sha256``, ``bytes``,
    ``writer``) where it records it, or nothing if the manifest cannot be read."""
    try:
        manifest = read_json_file(folder / MANIFEST_FILE)
        return {name: info[key] for name, info in manifest["files"].items() if key in info}
    except (SpecError, KeyError, TypeError, AttributeError):
        return {}


def _committed_path(manifest: object, catalog: Catalog) -> Path | None:
    """The committed manifest of the release a manifest names, if it names one inside the
    project's manifests/ (None for anything else, however malformed)."""
    try:
        full_name = f"{manifest['release']}-{manifest['version']}"  # type: ignore[index]
    except (KeyError, TypeError):
        return None
    path = catalog.project.manifests / f"{full_name}.json"
    try:
        inside = path.resolve().is_relative_to(catalog.project.manifests.resolve())
    except (OSError, ValueError):
        return None
    return path if inside else None


def _anchor_sha256(folder: Path, catalog: Catalog | None, trusted: Path | None) -> str | None:
    """SHA-256 of the manifest from outside the release (``trusted``, else the project's
    committed one for the release manifest.json names), or None when there is none: it tells
    whether a manifest.json that disagrees with SHA256SUMS is itself intact."""
    if trusted is not None:
        return sha256_file(trusted) if trusted.is_file() else None
    if catalog is None:
        return None
    try:
        manifest = read_json_file(folder / MANIFEST_FILE)
    except SpecError:
        return None
    path = _committed_path(manifest, catalog)
    return sha256_file(path) if path is not None and path.is_file() else None


def _same_rows(path: Path, info: dict) -> bool:
    """Whether a Parquet file holds the rows its manifest entry pins."""
    from pyarrow import ArrowException

    try:
        return content_sha256(path) == (info.get("rows"), info.get("content_sha256"))
    except (OSError, ValueError, ArrowException):
        return False


def check_trusted_manifest(path: Path) -> None:
    """Refuse (as bad input) a ``--manifest`` that is missing or is not a release manifest:
    comparing with it could only report a difference that says nothing about the release."""
    if not path.is_file():
        raise SpecError.single("trusted manifest not found", str(path))
    load_manifest(path)


def verify_release(folder: Path, catalog: Catalog | None, **options: Any) -> VerifyReport:
    """``_verify_release``, never while a freeze writes into the folder holding ``folder``
    (``reading_release``): a release swapped in midway would be read half old, half new."""
    with reading_release(folder):
        return _verify_release(folder, catalog, **options)


def _verify_release(folder: Path, catalog: Catalog | None, *, regenerate: bool = False,
                    trusted: Path | None = None, accept_draft: bool = True) -> VerifyReport:
    """Verify the release in ``folder``; every problem names the file concerned.

    The release's own SHA256SUMS and manifest.json prove it is whole; only a manifest from
    outside it (the project's committed one, or ``trusted``) proves it is the right release.
    Without either, ``report.anchored`` is False. A draft (``freeze --draft``) has no
    committed manifest: it is checked against itself (and a rebuild), or refused as
    unpublished unless ``accept_draft``."""
    report = VerifyReport(folder)
    sums_path = folder / SUMS_FILE
    if not folder.is_dir():
        report.fail("release folder not found", str(folder))
        return report
    if not sums_path.is_file():
        report.fail("SHA256SUMS is missing", str(sums_path))
        return report
    if sums_path.stat().st_size > MAX_JSON_FILE_BYTES:  # a sparse terabyte: never read
        report.refuse([Problem(f"file of {sums_path.stat().st_size:,} bytes is over the "
                               f"{MAX_JSON_FILE_BYTES:,}-byte limit (refused before reading "
                               "it)", SUMS_FILE)])
        return report
    try:
        # Bytes as they are: reading text would turn \r\n or \r into \n, and coreutils
        # reads such a file as other names, so it must not pass here either.
        sums = utf8_text(sums_path.read_bytes(), SUMS_FILE)
        listed = parse_sums(sums, SUMS_FILE)
    except MemspecError as exc:  # located at its line and column
        report.refuse(exc.problems)
        return report
    if sums_text(listed) != sums:
        report.fail("SHA256SUMS is not in its canonical form (sorted lines, each ending in a "
                    "newline): it was edited", SUMS_FILE)
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*")
               if p.is_file() or p.is_symlink()}
    present.discard(SUMS_FILE)
    for name in sorted(present - set(listed)):
        report.fail("file is not listed in SHA256SUMS (added?)", name)
    if MANIFEST_FILE not in listed:
        # manifest.json lists every other file; only SHA256SUMS itself lists manifest.json.
        report.fail(f"{MANIFEST_FILE} is not listed (the file was edited)", SUMS_FILE)
    to_hash: list[str] = []
    # Sizes first: a file of another size than the manifest says (a sparse terabyte) is
    # refused at once, without reading it. A Parquet copy another pyarrow may have written
    # (its entry names its writer) may differ in size and is checked by its rows below, but
    # only within what another writer's encoding of the same rows could take.
    sizes = _recorded(folder, "bytes")
    writers = _recorded(folder, "writer") if sizes else {}
    for name in sorted(listed):
        path = folder / name
        if name not in present:
            report.fail("file listed in SHA256SUMS is missing", name)
        elif path.is_symlink() or not path.is_file():
            report.fail("not a regular file", name)
        elif isinstance(sizes.get(name), int) and name not in writers and \
                path.stat().st_size != sizes[name]:
            report.fail(f"file is {path.stat().st_size:,} bytes; manifest.json says "
                        f"{sizes[name]:,} (file changed)", name)
        elif isinstance(sizes.get(name), int) and name in writers and \
                path.stat().st_size > other_writer_bytes(sizes[name]):
            report.fail(f"file is {path.stat().st_size:,} bytes; manifest.json says "
                        f"{sizes[name]:,}, and another writer's copy of the same rows takes "
                        f"at most {other_writer_bytes(sizes[name]):,} (file changed)", name)
        elif hole_bytes(path, path.stat().st_size) > MAX_HOLE_BYTES:
            # A size pinned by a forged manifest: the holes of a sparse file are refused
            # before hashing reads them (a terabyte of them takes no room, and hours).
            report.refuse([Problem(f"file of {path.stat().st_size:,} bytes is sparse: "
                                   f"{hole_bytes(path, path.stat().st_size):,} of them were "
                                   "never written (refused before reading it)", name)])
        elif name == MANIFEST_FILE and path.stat().st_size > MAX_JSON_FILE_BYTES:
            # No manifest pins its own size: one past what a manifest may be is not hashed,
            # and refused where it is read, below.
            pass
        elif sizes and name != MANIFEST_FILE and name not in sizes:
            report.fail("listed in SHA256SUMS but not in manifest.json (added?)", name)
        else:
            to_hash.append(name)
        report.checked_files += 1
    digests = sha256_files([folder / name for name in to_hash], available_cores())
    actual = dict(zip(to_hash, digests, strict=True))
    recorded = _recorded(folder, "sha256")
    for name, digest in sorted(actual.items()):
        if digest == listed[name]:
            continue
        if recorded.get(name) == digest:
            report.fail(f"the entry for {name} was altered (the file matches manifest.json)",
                        SUMS_FILE)
        elif name == MANIFEST_FILE and digest == _anchor_sha256(folder, catalog, trusted):
            report.fail(f"the entry for {name} was altered (the file matches the "
                        f"{'trusted' if trusted else 'committed'} manifest)", SUMS_FILE)
        else:
            report.fail("SHA-256 differs from SHA256SUMS (file changed)", name)
    if MANIFEST_FILE not in present:
        report.fail("manifest.json is missing", MANIFEST_FILE)
        return report
    try:
        manifest = read_json_file(folder / MANIFEST_FILE, MANIFEST_FILE)
    except SpecError as exc:
        report.refuse(exc.problems)
        return report
    errors = schema_errors("manifest", manifest)
    if errors:
        report.refuse([Problem(f"manifest.json does not match its schema: "
                               f"{errors[0].message}", MANIFEST_FILE)])
        return report
    expected = set(manifest["files"]) | {MANIFEST_FILE}
    for name in sorted(set(listed) - expected) if not sizes else ():  # else said above
        report.fail("listed in SHA256SUMS but not in manifest.json (added?)", name)
    rewritten = 0
    for name, info in sorted(manifest["files"].items()):
        if name not in listed:
            report.fail(f"{name} is in manifest.json but not in SHA256SUMS", SUMS_FILE)
        elif actual.get(name) not in (None, info["sha256"]) and actual.get(name) == listed[name]:
            # Other bytes are a change unless the file itself says another writer made them
            # (its footer, not the pyarrow installed here: a release may be verified on a
            # machine with either writer).
            if "writer" not in info or file_writer(folder / name) == info["writer"]:
                report.fail("file differs from manifest.json (and SHA256SUMS was rewritten to "
                            "match it)", name)
            elif _same_rows(folder / name, info):
                rewritten += 1
            else:
                report.fail(f"rows differ from manifest.json's content_sha256 (the bytes "
                            f"were pinned as {info['writer']} wrote them; these are another "
                            "writer's, and their rows are not the release's)", name)
    if not report.problems:
        # Garbage sealed anew (the sums and the manifest's entries re-hashed) agrees with
        # every digest: only reading the files as what they are tells.
        garbage = unreadable_contents(folder, manifest, actual)
        if garbage:
            report.refuse(garbage)
    if rewritten:
        report.notes.append(f"{rewritten} Parquet files hold other bytes than the manifest "
                            "pins (another pyarrow wrote them); their rows match its "
                            "content_sha256")
    data_hashes = {n: i["sha256"] for n, i in manifest["files"].items() if n.startswith("data/")}
    root = hashlib.sha256(sums_text(data_hashes).encode("utf-8")).hexdigest()
    if root != manifest["root_sha256"]:
        report.fail("root hash does not match the data files", MANIFEST_FILE)
    draft = report.draft = manifest.get("draft") is True
    if draft and not accept_draft:
        report.fail(f"{manifest['release']}-{manifest['version']} is an unpublished draft "
                    "(frozen with --draft; no committed manifest pins it): freeze it without "
                    "--draft to publish it, or pass --allow-draft to check it as a draft",
                    MANIFEST_FILE)
    if trusted is not None:
        report.anchored = True
        if trusted.read_bytes() != (folder / MANIFEST_FILE).read_bytes():
            report.fail("manifest.json differs from the trusted manifest", str(trusted))
    elif draft:
        if accept_draft:
            report.notes.append("a draft: checked against its own SHA256SUMS and "
                                "manifest.json only, as no committed manifest pins it")
    elif catalog is not None:
        report.anchored = True
        _compare_committed(folder, manifest, catalog, report)
    if regenerate and catalog is not None:
        _compare_rebuild(folder, manifest, catalog, report)
    return report


def _compare_committed(folder: Path, manifest: dict, catalog: Catalog,
                       report: VerifyReport) -> None:
    committed_path = _committed_path(manifest, catalog)
    if committed_path is None:  # a name no freeze writes: a forged manifest
        report.refuse([Problem("manifest names a release outside manifests/", MANIFEST_FILE)])
        return
    display = catalog.project.display(committed_path)
    if not committed_path.is_file():
        report.fail("no committed manifest for this release", display)
        return
    if committed_path.read_bytes() != (folder / MANIFEST_FILE).read_bytes():
        try:
            committed = read_json_file(committed_path)
        except SpecError:
            committed = {}
        if not isinstance(committed, dict):
            committed = {}
        lines = manifest_differences(committed, manifest) or ["bytes differ"]
        drift = version_differences(committed.get("environment", {}),
                                    manifest.get("environment", {}))
        if drift and committed.get("inputs") == manifest.get("inputs"):
            lines.append("the release was built with other versions of what shapes its bytes ("
                         + describe_versions(drift, "in the committed manifest",
                                             "in this release's") + ")")
        for line in lines:
            report.fail(f"manifest.json differs from the committed manifest: {line}", display)


def _compare_rebuild(folder: Path, manifest: dict, catalog: Catalog,
                     report: VerifyReport) -> None:
    from .freezing import find_release, freeze

    full_name = f"{manifest['release']}-{manifest['version']}"
    try:
        release = find_release(catalog, full_name)
    except MemspecError as err:
        report.problems.extend(err.problems)
        return
    with tempfile.TemporaryDirectory(prefix="memspec-verify-") as tmp:
        try:
            built = freeze(catalog, release, Path(tmp), write_manifest=False,
                           draft=manifest.get("draft") is True,
                           allow_audit_failures=manifest.get("draft") is True)
        except MemspecError as err:
            report.problems.extend(err.problems)
            return
        report.notes.extend(built.versions)
        rebuilt = built.path
        names = sorted({p.relative_to(rebuilt).as_posix() for p in rebuilt.rglob("*")
                        if p.is_file()} | {p.relative_to(folder).as_posix()
                                           for p in folder.rglob("*") if p.is_file()})
        for name in names:
            a, b = folder / name, rebuilt / name
            if not a.is_file():
                report.fail("rebuilt release has this file, the folder does not", name)
            elif not b.is_file():
                report.fail("the folder has this file, the rebuilt release does not", name)
            elif a.read_bytes() != b.read_bytes():
                if name.endswith(".parquet") and content_sha256(a) == content_sha256(b):
                    report.notes.append(f"{name}: other bytes than a rebuild here (another "
                                        "pyarrow wrote them), the same rows")
                else:
                    report.fail("bytes differ from a rebuild from the specs", name)

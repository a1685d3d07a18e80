"""Freezing a release: its files written into a hidden staging folder (``release_writing``),
checked against its committed manifest or pinned in a new one, sealed, and moved into place
(``release_atomic``), so an interrupted freeze never leaves a partial release; a new manifest
is written beside its place first and renamed right after the release. Also where a release is
found by its file or its name.

The names other modules, scripts and tests import from here (the atomic writers, the staging
folder, the release's families and inputs) are re-exported from the modules that hold them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import CheckFailed, MemspecError, Problem, SpecError, unknown_name
from ..engine.parallel import InProcess, executor_for
from ..formats.manifest import (
    comparable,
    content_of,
    describe_versions,
    load_manifest,
    manifest_bytes,
    manifest_differences,
    other_writer_files,
    reinstall_hint,
    version_differences,
)
from ..formats.parquet_export import writer_name
from ..formats.release_folders import release_identity
from ..formats.release_layouts import LATEST_LAYOUT as LATEST_LAYOUT
from ..spec.catalog import Catalog
from ..spec.spec import ReleaseSpec
from .release_atomic import TMP_PREFIX as TMP_PREFIX
from .release_atomic import atomic_write_bytes as atomic_write_bytes
from .release_atomic import atomic_writer as atomic_writer
from .release_atomic import fsync_dir as _fsync_dir
from .release_atomic import fsync_tree as _fsync_tree
from .release_atomic import move_into_place as _move_into_place
from .release_atomic import refuse_to_replace_foreign as refuse_to_replace_foreign
from .release_atomic import release_lock
from .release_atomic import staging_folder as _staging
from .release_atomic import write_seal as _write_seal
from .release_families import load_release_families as load_release_families
from .release_inputs import input_hashes as input_hashes
from .release_writing import ChunkSource as ChunkSource
from .release_writing import Progress as Progress
from .release_writing import rendered_chunks as rendered_chunks
from .release_writing import write_release_files as write_release_files


@dataclass(frozen=True)
class BuiltRelease:
    """A release written to ``path`` with its manifest."""

    release: ReleaseSpec
    path: Path
    manifest: dict[str, Any]
    notes: tuple[str, ...] = ()
    #: Byte-shaping packages installed in other versions than the committed manifest records,
    #: when the release came out byte-identical all the same (said by verify --regenerate).
    versions: tuple[str, ...] = ()



def committed_manifest_path(catalog: Catalog, release: ReleaseSpec) -> Path:
    return catalog.project.manifests / f"{release.full_name}.json"


def freeze(catalog: Catalog, release: ReleaseSpec, out: Path, **options: Any) -> BuiltRelease:
    """``_freeze``, one at a time for a release of this project (``release_lock``)."""
    with release_lock(release.path, release.full_name, catalog.project.display(release.path)):
        return _freeze(catalog, release, out, **options)


def _freeze(catalog: Catalog, release: ReleaseSpec, out: Path, *, write_manifest: bool,
            progress: Progress | None = None, allow_audit_failures: bool = False,
            workers: int = 1, engine: str = "local", scheduler: str | None = None,
            source: ChunkSource | None = None,
            rendered_inputs: Mapping[str, str] | None = None,
            draft: bool = False) -> BuiltRelease:
    """Build ``release`` into ``out/<name>-<version>``.

    With a committed manifest, the build must match it (else CheckFailed, nothing written) and
    the committed manifest's bytes are used, so the release is byte-identical wherever it is
    built. Without one, ``write_manifest`` decides whether to create it (freeze) or refuse
    (build). A ``draft`` is a version not yet published: built, audited and sealed like any
    other, marked as a draft, and neither checked against nor written into manifests/ (a
    version already published there is refused: it needs a new version).
    """
    committed_path = committed_manifest_path(catalog, release)
    if draft and committed_path.exists():
        raise CheckFailed.single(
            f"{release.full_name} is published ({catalog.project.display(committed_path)}); a "
            "draft is of a version not yet published: give the release a new version in "
            f"{catalog.project.display(release.path)}")
    committed = (load_manifest(committed_path, catalog.project.display(committed_path))
                 if committed_path.exists() else None)
    if committed is None and not write_manifest and not draft:
        raise CheckFailed.single(
            f"no committed manifest {catalog.project.display(committed_path)}; run "
            f"`memspec freeze {catalog.project.display(release.path)}` and commit it")
    final = out / release.full_name
    # A release is recognised by its own sealed manifest, naming this release and version.
    refuse_to_replace_foreign(
        final, lambda folder: (release_identity(folder) or ())[:2] == (release.name,
                                                                        release.version),
        f"a release {release.full_name} memspec built")
    # A committed release was audited when it was first frozen, and its manifest pins both
    # the data and the audit's outcome (the failures it was allowed to keep, if any).
    executor = executor_for(workers, engine, scheduler, catalog) if source is None \
        else InProcess()
    source = source or rendered_chunks(executor, catalog.project.root, release.seed)
    with _staging(out, release.full_name) as staged:
        try:
            built = write_release_files(catalog, release, staged, progress,
                                        refuse_audit_failures=not allow_audit_failures,
                                        committed=committed, source=source,
                                        rendered_inputs=rendered_inputs, draft=draft)
        finally:
            executor.close()
        notes: tuple[str, ...] = ()
        versions: tuple[str, ...] = ()
        if committed is not None:
            writer = writer_name()
            pinned, made = comparable(committed, built, writer)
            differences = manifest_differences(pinned, made)
            drift = version_differences(committed.get("environment", {}),
                                        built["environment"])
            display = catalog.project.display(committed_path)
            if differences or content_of(pinned) != content_of(made):
                differences = differences or ["manifest content differs"]
                # What to do is said once; then each difference, short.
                problems = [Problem(_changed_frozen_advice(catalog, release, display,
                                                           len(differences)))]
                problems += [Problem(f"{release.full_name} differs: {text}", display)
                             for text in differences]
                if drift and committed.get("inputs") == built["inputs"]:
                    # Same specs, templates and pools: the versions are what changed.
                    problems.append(Problem(
                        f"{release.full_name} was frozen with other versions of what shapes "
                        "its bytes (" + describe_versions(drift, "recorded", "installed")
                        + f"): {reinstall_hint(drift)} to rebuild it byte for byte", display))
                raise CheckFailed(problems)
            manifest_data = committed_path.read_bytes()
            manifest = committed
            notes = writer_notes(committed, writer)
            if drift:
                versions = ("rebuilt byte for byte with other versions than the manifest "
                            "records (" + describe_versions(drift, "recorded", "installed")
                            + ")",)
        else:
            manifest_data = manifest_bytes(built)
            manifest = built
            notes = tuple(f"the audit ran without {name}; the card says so"
                          for name in built["audit"].get("unavailable", ()))
        if progress:
            progress("sealing (SHA256SUMS) and syncing to disk", 0)
        _write_seal(staged, manifest_data)
        _fsync_tree(staged)
        if draft:
            _move_into_place(staged, final)
        elif committed is None:
            # The new manifest is written and synced beside its place first, and renamed
            # into place right after the release: the two appear one system call apart.
            committed_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(committed_path, manifest_data, just_before=lambda: (
                _move_into_place(staged, final, sync=False)))
            _fsync_dir(out)
        else:
            _move_into_place(staged, final)
    return BuiltRelease(release, final, manifest, notes, versions)


def _changed_frozen_advice(catalog: Catalog, release: ReleaseSpec, manifest: str,
                           count: int) -> str:
    """The one line that says what to do about a release that no longer builds as frozen."""
    return (f"{release.full_name} differs from its frozen manifest {manifest} ({count} "
            "difference(s) below). A frozen version never changes: give the release a new "
            f"version in {catalog.project.display(release.path)}; or, if {release.full_name} "
            f"was never published, delete {manifest} to discard it and freeze again (freeze "
            "--draft keeps a version out of manifests/ until it is ready)")


def writer_notes(manifest: Mapping[str, Any], writer: str) -> tuple[str, ...]:
    """What to tell a user whose Parquet writer is not the one ``manifest`` pins bytes from."""
    others = other_writer_files(manifest, writer)
    if not others:
        return ()
    pinned = sorted(set(others.values()))
    return (f"{len(others)} Parquet files were written by {writer}, the manifest pins their "
            f"bytes as {', '.join(pinned)} wrote them: their rows were checked instead "
            "(content_sha256), and SHA256SUMS lists the bytes written here",)


def find_release(catalog: Catalog, name_or_path: str) -> ReleaseSpec:
    """A release by file path or by ``<name>-<version>``."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".yaml" and candidate.is_file():
        resolved = candidate.resolve()
        if resolved not in {path.resolve() for path in catalog.release_paths()}:
            # Frozen from elsewhere, the release could not be found again by its name: build,
            # merge and verify --regenerate look for it only there.
            folder = catalog.project.display(catalog.project.specs / "releases")
            raise SpecError.single(
                f"a release file must be in {folder}/, where build, merge and verify "
                "--regenerate find it by its name; move it there", name_or_path)
        return catalog.release(resolved)
    matches = []
    for path in catalog.release_paths():
        try:
            release = catalog.release(path)
        except MemspecError:
            if path.stem == name_or_path:
                raise
            continue
        if name_or_path in (release.full_name, path.stem):
            matches.append(release)
    if len(matches) > 1:
        raise SpecError.single(f"release {name_or_path!r} is declared by several files: "
                               + ", ".join(m.located.file for m in matches))
    if matches:
        return matches[0]
    raise SpecError.single(unknown_name("release", name_or_path,
                                        [p.stem for p in catalog.release_paths()]))

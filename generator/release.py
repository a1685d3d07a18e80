"""Freezing a release: generate every family, write the files, pin them in a manifest.

Everything is written into a hidden temporary folder beside the target, synced, and moved into
place with one rename (a release already there is swapped out in one step), so an interrupted
freeze never leaves a partial release; a new manifest is written beside its place first and
renamed right after the release. What a killed freeze leaves behind is hidden, and removed by
the next one.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import glob
import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .audit import audit_families, describe_failure
from .canonical import dump_pretty_bytes
from .card import render_card
from .catalog import Catalog, UnknownFamily
from .content_index import ContentIndex, content_key, records_from_files
from .errors import CheckFailed, MemspecError, Problem, ProblemCollector, SpecError, unknown_name
from .generate import FamilyGenerator
from .instances import family_sources
from .limits import CommandBudget
from .loader_exports import LoaderExports
from .manifest import (
    CARD_FILE,
    CROISSANT_FILE,
    MANIFEST_FILE,
    SUMS_FILE,
    comparable,
    content_of,
    describe_versions,
    environment,
    load_manifest,
    manifest_bytes,
    manifest_differences,
    other_writer_files,
    reinstall_hint,
    sha256_file,
    sums_text,
    version_differences,
)
from .parallel import (
    ChunkResult,
    Executor,
    InProcess,
    add_fetched,
    chunk_jobs,
    executor_for,
    fingerprint_for,
    shard_groups,
)
from .parquet_export import writer_name
from .project import LIBRARY_PREFIX, Project
from .release_checks import ReleaseChecks, card_lines, release_check_problems
from .release_folders import refuse_writing_inside_release, release_identity
from .release_stats import ReleaseStats
from .render import Renderer
from .spec import FamilySpec, ReleaseFamily, ReleaseSpec
from .writeback import StreamedFile
from .yamlsafe import read_digest

TMP_PREFIX = ".memspec-tmp-"
#: The newest release layout (``manifest_version``): what a first freeze writes.
LATEST_LAYOUT = 5
PLOTS_DIR = "plots"
#: Told (name, groups done) as each chunk of a family is written, and (phase, 0) as each
#: later phase begins (the audit, the charts and card, the seal), so that a person watching
#: sees what a long freeze is doing after its last group.
Progress = Callable[[str, int], None]


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


#: Where a family's instances come from while a release is written: (groups done, chunk)
#: pairs, in order, given the family, its release entry and a generator for it.
ChunkSource = Callable[[FamilySpec, ReleaseFamily, FamilyGenerator],
                       Iterator[tuple[int, ChunkResult]]]


def rendered_chunks(executor: Executor, root: Path, seed: int,
                    shard: tuple[int, int] = (0, 1)) -> ChunkSource:
    """Instances rendered by ``executor`` (this process's generator when it renders here):
    every group of a family, or only the run of them that ``shard`` (I, N) takes."""
    fingerprint = fingerprint_for(executor, root)

    def source(family: FamilySpec, entry: ReleaseFamily, generator: FamilyGenerator
               ) -> Iterator[tuple[int, ChunkResult]]:
        first, count = shard_groups(0, entry.groups, shard)
        jobs = chunk_jobs(root, family, seed, first, count, entry, fingerprint,
                          executor.workers)
        for job, chunk in zip(jobs, executor.map(jobs, generator, keep=True), strict=True):
            yield job.count, chunk

    return source


def _with_rendered_inputs(inputs: Mapping[str, str], rendered: Mapping[str, str],
                          project: Project) -> dict[str, str]:
    """The inputs a build records, with the templates that rendered its instances in other
    processes; each must still be a file of the project that hashes the same."""
    merged = dict(inputs)
    for name, digest in rendered.items():
        path = project.resolve_inside(project.root, name, "input")
        if sha256_file(path) != digest:
            raise SpecError.single("changed since the shards were rendered (render them "
                                   "again)", name)
        merged[name] = digest
    return dict(sorted(merged.items()))


def load_release_families(catalog: Catalog, release: ReleaseSpec,
                          skip: frozenset[str] = frozenset(),
                          fields_of: Mapping[str, Collection[str]] | None = None
                          ) -> list[FamilySpec]:
    """Every family a release names (but those in ``skip``), loaded; all problems at once.
    ``fields_of`` gives the field names of families in ``skip`` that were loaded elsewhere,
    so that the release's subsets are checked against them too."""
    loader = catalog.loader()
    families, out = [], ProblemCollector()
    fields = dict(fields_of or {})
    for index, entry in enumerate(release.families):
        if entry.family_id in skip:
            continue
        try:
            families.append(catalog.family(entry.family_id, loader))
            fields[entry.family_id] = tuple(families[-1].fields)
        except UnknownFamily as err:
            line, col = release.located.where(("families", index, "family"))
            first, *rest = err.problems
            out.add(Problem(first.message, release.located.file, line, col,
                            ("families", index, "family")))
            for problem in rest:
                out.add(problem)
        except MemspecError as err:
            out.extend(err)
    for problem in subset_problems(release, fields) + release_check_problems(release, families):
        out.add(problem)
    out.raise_if_any()
    return families


def subset_problems(release: ReleaseSpec, fields_of: Mapping[str, Collection[str]]
                    ) -> list[Problem]:
    """A subset field that some family of the release (of those in ``fields_of``) gives no
    value, neither in its own fields nor in its entry's: every instance needs one."""
    problems = []
    for index, name in enumerate(release.subsets):
        lacking = [entry.family_id for entry in release.families
                   if entry.family_id in fields_of and name not in fields_of[entry.family_id]
                   and name not in entry.fields]
        if lacking:
            line, col = release.located.where(("subsets", index))
            problems.append(Problem(
                f"subset field {name!r} is not a field of {', '.join(lacking)} (neither in "
                "the family's 'fields' nor in its entry's here): every instance needs a value",
                release.located.file, line, col, ("subsets", index)))
    return problems


class _HashingWriter:
    """Writes a file while hashing it, so nothing is read twice."""

    def __init__(self, path: Path) -> None:
        self.handle = StreamedFile(path)
        self.digest = hashlib.sha256()
        self.size = 0
        self.records = 0

    def write(self, data: bytes) -> None:
        self.handle.write(data)
        self.digest.update(data)
        self.size += len(data)
        self.records += 1

    def close(self) -> dict[str, Any]:
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        return {"sha256": self.digest.hexdigest(), "bytes": self.size, "records": self.records}


def write_release_files(catalog: Catalog, release: ReleaseSpec, folder: Path,
                        progress: Progress | None = None, *,
                        refuse_audit_failures: bool = False,
                        committed: Mapping[str, Any] | None = None,
                        source: ChunkSource | None = None,
                        rendered_inputs: Mapping[str, str] | None = None,
                        draft: bool = False) -> dict[str, Any]:
    """Generate and write data files, charts and the card into ``folder``; return the
    manifest (without writing it). Raises on any spec error or failed check.
    A ``draft`` (of the latest layout only) is marked so in its manifest and its card.

    A ``committed`` manifest fixes the layout (its ``manifest_version``) and the audit's
    outcome: the manifest pins every data byte, so an audit of the same bytes could only
    repeat it. Otherwise the release gets the latest layout and is audited; a failed audit
    raises when ``refuse_audit_failures``, else its failures are recorded in the manifest and
    the card.

    Instances come from ``source`` (by default rendered here); ``rendered_inputs`` are the
    hashes of the templates that rendered them elsewhere (see ``shards``)."""
    project = catalog.project
    source = source or rendered_chunks(InProcess(), project.root, release.seed)
    layout = committed["manifest_version"] if committed is not None else LATEST_LAYOUT
    families = load_release_families(catalog, release)
    renderer = Renderer(project)
    (folder / "data").mkdir(parents=True)
    files: dict[str, dict[str, Any]] = {}
    family_counts: dict[str, dict[str, Any]] = {}
    seen_content = ContentIndex()
    templates: dict[str, str] = {}  # fetched by include, import or extends, in any process
    stats = ReleaseStats()
    release_checks = ReleaseChecks(release)
    checking = bool(release_checks)  # most releases declare none: one test, not one a line
    exports = LoaderExports(folder, release, layout) if layout >= 3 else None
    total = 0
    for index, (family, entry) in enumerate(zip(families, release.families, strict=True)):
        _refuse_field_clash(release, index, family)
        generator = FamilyGenerator(family, renderer, release.seed)
        name = f"data/{family.family_id}.jsonl"
        writer = _HashingWriter(folder / name)
        splits = _SplitContent(entry, family)
        if exports:
            exports.start(family)
        try:
            for done, chunk in source(family, entry, generator):
                generator.checks.add_tallies(chunk.tallies)
                add_fetched(templates, chunk.templates)
                for line, instance in chunk.records():
                    splits.add(instance)
                    seen_content.add(content_key(instance))
                    writer.write(line)
                    if layout >= 2:
                        stats.add(instance)
                    if exports:
                        exports.add(instance)
                    if checking:
                        release_checks.add(instance)
                if progress:
                    progress(family.family_id, done)
            generator.checks.finish()
        finally:
            info = writer.close()
            if exports:
                exports.finish()
        files[name] = info
        family_counts[family.family_id] = {
            "groups": entry.groups, "instances": info["records"],
            "paradigm": family.paradigm.paradigm_id, "version": family.version,
            **({"fields": dict(entry.fields)} if entry.fields else {}),
            **({"splits": splits.counts} if entry.splits else {}),
        }
        total += info["records"]
    if progress:
        progress("checking for duplicate content", 0)
    _refuse_duplicate_content(seen_content, [folder / name for name in files], families)
    checked = release_checks.results()
    release_checks.refuse_failures(checked)
    data_hashes = {name: info["sha256"] for name, info in files.items()}
    root = hashlib.sha256(sums_text(data_hashes).encode("utf-8")).hexdigest()
    counts = {"instances": total, "groups": sum(e.groups for e in release.families),
              "families": family_counts}
    inputs = input_hashes(project, release, families, renderer, templates)
    if rendered_inputs is not None:
        inputs = _with_rendered_inputs(inputs, rendered_inputs, project)
    if committed is not None:
        audit = dict(committed.get("audit", {"failures": []}))
    else:
        if progress:
            progress("auditing (memoryless adversaries, leaks, balance)", 0)
        audit = _audit(catalog, release, folder, files,
                       {"seed": release.seed, "counts": counts, "inputs": inputs}, layout,
                       refuse_audit_failures)
    if progress:
        progress("writing the charts and the card", 0)
    charts = stats.charts() if layout >= 2 else {}
    if charts:
        (folder / PLOTS_DIR).mkdir()
    for chart_name, svg in charts.items():
        files[f"{PLOTS_DIR}/{chart_name}"] = _write_file(folder / PLOTS_DIR / chart_name,
                                                         svg.encode("utf-8"))
    descriptions = {f.family_id: f.description for f in families}
    configs = []
    if exports:
        data_files = {name: files[name] for name in data_hashes}
        files.update(exports.files)
        configs = exports.configs(project.display(release.path))
        document = exports.croissant(root, data_files, descriptions)
        files[CROISSANT_FILE] = _write_file(folder / CROISSANT_FILE,
                                            dump_pretty_bytes(document))
    card = render_card(release, counts, root, descriptions,
                       project.display(release.path), audit["failures"], layout=layout,
                       audit_summary=audit.get("summary", ()),
                       audit_unavailable=audit.get("unavailable", ()),
                       audit_exempt=audit.get("exempt", {}),
                       audit_unattacked=audit.get("unattacked", {}),
                       charts=[f"{PLOTS_DIR}/{name}" for name in charts], configs=configs,
                       checks=card_lines(checked), draft=draft)
    files[CARD_FILE] = _write_file(folder / CARD_FILE, card.encode("utf-8"))
    return {
        "manifest_version": layout,
        "release": release.name,
        "version": release.version,
        "seed": release.seed,
        "root_sha256": root,
        "files": dict(sorted(files.items())),
        "counts": counts,
        "inputs": inputs,
        "environment": environment(),
        **({"audit": audit} if layout >= 2 or audit["failures"] else {}),
        **({"draft": True} if draft else {}),
    }


def _refuse_duplicate_content(index: ContentIndex, data_files: list[Path],
                              families: list[FamilySpec]) -> None:
    """Refuse a release in which two instances have the same phases and answer."""
    found = index.first_duplicate(records_from_files(data_files, content_key))
    if found is not None:
        instance, earlier = found
        file = next(f.file for f in families if f.family_id == instance["family"])
        raise CheckFailed.single(f"duplicate content: {instance['id']} has the same phases "
                                 f"and answer as {earlier['id']} (two groups drew the same "
                                 "values: are the family's pools large enough for the groups "
                                 "the release asks of it?)", file)


def _write_file(path: Path, data: bytes) -> dict[str, Any]:
    path.write_bytes(data)
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def _audit(catalog: Catalog, release: ReleaseSpec, folder: Path,
           files: Mapping[str, Any], manifest: Mapping[str, Any], layout: int,
           refuse_failures: bool) -> dict[str, Any]:
    """Audit the data files just written, streamed from disk a family at a time; what the
    manifest records of the outcome."""
    with CommandBudget("the audit of the release", catalog.project.display(release.path)):
        report = audit_families(family_sources(folder, files), catalog=catalog,
                                manifest=manifest)
    failures = report.failures()
    if failures and refuse_failures:
        raise CheckFailed([Problem(
            f"{describe_failure(f)}; a system without memory could pass. Fix the family, "
            "or freeze with --allow-audit-failures to publish it with the failure recorded",
            catalog.project.display(release.path)) for f in failures])
    return {"failures": failures, **({"summary": report.summary()} if layout >= 2 else {}),
            # Recorded only when some adversary could not run, so that the card says so.
            **({"unavailable": report.unavailable} if report.unavailable else {}),
            # And the families no adversary covers that say why, so that the card lists them.
            **({"exempt": report.exempt} if report.exempt else {}),
            # And the items no adversary could attack (judge-scored), with why.
            **({"unattacked": report.unattacked} if report.unattacked else {})}


def _refuse_field_clash(release: ReleaseSpec, index: int, family: FamilySpec) -> None:
    entry = release.families[index]
    added = [*entry.fields, *(["split"] if entry.splits else [])]
    clash = [name for name in added if name in family.fields]
    if clash:
        raise release.located.error(
            f"the release sets field {clash[0]!r}, which family {family.family_id} sets too",
            ("families", index))


class _SplitContent:
    """Counts a family's instances per split and refuses overlap between splits: a message of
    a ``disjoint`` phase (the task, say) may occur in no other split, in any phase (compared
    by SHA-256 of the content)."""

    def __init__(self, entry: ReleaseFamily, family: FamilySpec) -> None:
        self.entry = entry
        self.family = family
        self.counts: dict[str, int] = {name: 0 for name in entry.splits}
        self.anywhere: dict[str, dict[str, str]] = {}  # content hash -> split -> instance id
        self.guarded: dict[str, dict[str, str]] = {}  # the same, for disjoint phases only

    def add(self, instance: dict[str, Any]) -> None:
        split = instance["fields"].get("split")
        if split not in self.counts:
            return
        self.counts[split] += 1
        if not self.entry.disjoint:
            return
        for phase in instance["phases"]:
            guarded = phase["phase"] in self.entry.disjoint
            for message in phase["messages"]:
                digest = hashlib.sha256(message["content"].encode("utf-8")).hexdigest()
                clashes = {**self.guarded.get(digest, {}),
                           **(self.anywhere.get(digest, {}) if guarded else {})}
                clashes.pop(split, None)
                if clashes:
                    other_split, other_id = sorted(clashes.items())[0]
                    raise CheckFailed.single(
                        f"split overlap: a {phase['phase']} message of {instance['id']} "
                        f"({split}) also occurs in {other_id} ({other_split})",
                        self.family.file)
                self.anywhere.setdefault(digest, {}).setdefault(split, instance["id"])
                if guarded:
                    self.guarded.setdefault(digest, {}).setdefault(split, instance["id"])


def input_hashes(project: Project, release: ReleaseSpec, families: list[FamilySpec],
                  renderer: Renderer, rendered: Mapping[str, str] | None = None
                  ) -> dict[str, str]:
    """SHA-256 of every file a release was made from, by its path in the project: the release
    spec, its families, their paradigms and pools, and the templates ``renderer`` read or the
    groups fetched in whichever process rendered them (``rendered``: display name to the
    digest of the bytes that process read, as ``add_fetched`` gathers them). A file of
    memspec's library is named ``memspec:`` and its path in the library, so a release made
    with library items records which, by hash."""
    root = project.root
    paths = {release.path}
    for family in families:
        paths.add(family.path)
        paths.add(family.paradigm.path)
        paths.update(project.path_of(pool.file) for pool in family.pools.values())
    paths.update(renderer.loaded_files())
    elsewhere = {project.path_of(name).resolve(): digest
                 for name, digest in (rendered or {}).items()}
    paths.update(elsewhere)
    hashes = {}
    for path in paths:
        display = project.display(path.resolve())
        if not display.startswith(LIBRARY_PREFIX):
            try:
                display = path.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                raise SpecError.single("a release must live inside the project it is built "
                                       f"from ({root})", str(path)) from None
        # The bytes that were parsed and rendered, read once, here or in the process that
        # rendered with them (a worker's include); both, they must be the same bytes.
        here, there = read_digest(path), elsewhere.get(path.resolve())
        if here and there and here != there:
            raise SpecError.single("changed while the release was rendered: this process "
                                   "and a worker read different bytes of it (render again)",
                                   display)
        hashes[display] = here or there or sha256_file(path)
    return dict(sorted(hashes.items()))


def _write_seal(folder: Path, manifest_data: bytes) -> None:
    """Write manifest.json and SHA256SUMS over every other file of ``folder``."""
    (folder / MANIFEST_FILE).write_bytes(manifest_data)
    hashes = {
        path.relative_to(folder).as_posix(): sha256_file(path)
        for path in folder.rglob("*") if path.is_file() and path.name != SUMS_FILE
    }
    (folder / SUMS_FILE).write_bytes(sums_text(hashes).encode("utf-8"))


def _fsync_tree(folder: Path) -> None:
    for path in [*folder.rglob("*"), folder]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextmanager
def _staging(out: Path, full_name: str) -> Iterator[Path]:
    """A hidden build folder inside ``out``, removed afterwards whatever happens; an ``out``
    created here is removed too if the build fails, so a refused freeze writes nothing."""
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    lock = os.open(out, os.O_RDONLY)
    try:
        try:
            # One freeze per output folder at a time: the folder itself is the lock.
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SpecError.single(f"another memspec freeze is writing to {out}; try again "
                                   "when it is done") from None
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
        os.close(lock)


def _fsync_dir(folder: Path) -> None:
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


def _move_into_place(staged: Path, final: Path, *, sync: bool = True) -> None:
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
        _fsync_dir(final.parent)


def _process_gone(pid: int) -> bool:
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
        if pid.isdigit() and int(pid) != os.getpid() and _process_gone(int(pid)):
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
        _fsync_dir(path.parent)
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write_bytes(path: Path, data: bytes, *,
                       just_before: Callable[[], None] | None = None) -> None:
    """Write a file by writing a temporary sibling and renaming it over the target (see
    ``atomic_writer``)."""
    with atomic_writer(path, just_before=just_before) as handle:
        handle.write(data)


def committed_manifest_path(catalog: Catalog, release: ReleaseSpec) -> Path:
    return catalog.project.manifests / f"{release.full_name}.json"


def freeze(catalog: Catalog, release: ReleaseSpec, out: Path, *, write_manifest: bool,
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

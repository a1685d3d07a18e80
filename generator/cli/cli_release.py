"""The commands that render and release: generate, freeze, merge, verify and build."""


from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.errors import (
    EXIT_BAD_INPUT,
    EXIT_CHECK_FAILED,
    MemspecError,
    SpecError,
    printable,
)
from .cli_common import (
    Engine,
    Scheduler,
    Workers,
    _check_seed,
    _complete_families,
    _complete_releases,
    _output,
    _print_problems,
    _print_table,
    _progress,
    _project,
    _run,
    _state,
    _status,
    app,
    err,
    out,
)

if TYPE_CHECKING:
    from rich.table import Table

    from ..release.freezing import BuiltRelease


@app.command(short_help="Instances of one family as JSONL.")
def generate(
    family: Annotated[str, typer.Argument(help="Family id (or path to its YAML file).",
                                          autocompletion=_complete_families)],
    seed: Annotated[int, typer.Option(help="Seed (a release's seed gives its exact bytes).")] = 0,
    groups: Annotated[int, typer.Option(min=1, help="Number of groups.")] = 4,
    start: Annotated[int, typer.Option(min=0, help="First group index.")] = 0,
    out_file: Annotated[str, typer.Option("--out", help="Output file, or - for stdout.")] = "-",
    workers: Workers = 1,
    engine: Engine = "local",
    scheduler: Scheduler = None,
    shard: Annotated[str | None, typer.Option(
        help="Only shard I/N of the groups (a contiguous run; the shards' outputs, "
             "concatenated in order, are the whole output).")] = None,
) -> None:
    """Generate instances of one family as JSONL, streamed as they are rendered."""
    from ..engine.generate import FamilyGenerator
    from ..engine.parallel import (
        chunk_jobs,
        executor_for,
        fingerprint_for,
        parse_shard,
        shard_groups,
    )
    from ..engine.render import Renderer
    from ..spec.catalog import Catalog

    def action() -> None:
        _check_seed(seed)
        project = _project()
        catalog = Catalog.load(project, keep_documents=False)  # one family is loaded
        spec = catalog.family(family)
        part = None if shard is None else parse_shard(shard)
        first, count = (start, groups) if part is None else shard_groups(start, groups, part)
        whole = part is None or part[1] == 1  # shard 0/1 is every group
        local = FamilyGenerator(spec, Renderer(project), seed)
        checks = local.checks
        executor = executor_for(workers, engine, scheduler, catalog, local.renderer)
        fingerprint = fingerprint_for(executor, project.root)
        jobs = chunk_jobs(project.root, spec, seed, first, count,
                          fingerprint=fingerprint, workers=executor.workers)
        try:
            with _output(out_file) as sink, _progress(count, "generating") as advance:
                for job, chunk in zip(jobs, executor.map(jobs, local), strict=True):
                    sink.write(chunk.data)
                    checks.add_tallies(chunk.tallies)
                    advance(spec.family_id, job.count)
                if whole:
                    checks.finish()
        finally:
            executor.close()
        if not whole and any(c["kind"] == "balanced" for c, _, _ in checks.checks):
            err.print("note: family-scope checks (balanced) need every group; they were not "
                      "run on one shard", markup=False)

    _run(action)


def _release_table(rows: list[tuple[str, str, str, str]]) -> "Table":
    # Imported on use, like the progress bar: start-up counts.
    from ..report.report_format import PlainTable

    table = PlainTable("release", "instances", "root sha256", "status")
    for row in rows:
        table.add_row(*row)
    return table


@app.command("freeze", short_help="Build a release (or a --draft) and pin it.")
def freeze_cmd(
    release: Annotated[str, typer.Argument(help="Release YAML file (or <name>-<version>).",
                                           autocompletion=_complete_releases)],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Output folder (default dist/).")]
    = None,
    allow_audit_failures: Annotated[bool, typer.Option(
        help="Publish even if a memoryless adversary beats chance; the failures are recorded "
             "in the manifest and the card.")] = False,
    draft: Annotated[bool, typer.Option(
        help="Freeze an unpublished draft: built, audited and sealed into the output folder, "
             "marked as a draft, with no manifest written to or checked against "
             "manifests/. Freeze again without --draft to publish.")] = False,
    workers: Workers = 1,
    engine: Engine = "local",
    scheduler: Scheduler = None,
    shard: Annotated[str | None, typer.Option(
        help="Render only shard I/N of every family into DIR/<name>-<version>.shard-I-of-N/; "
             "`memspec merge` assembles the N shards into the release.")] = None,
) -> None:
    """Build DIR/<name>-<version>/ and write manifests/<name>-<version>.json.

    The release is audited first (see `memspec audit`): one a system without memory could
    pass is refused unless --allow-audit-failures. If the committed manifest exists with
    different content, refuse and write nothing. With --draft, nothing is written to or
    checked against manifests/: an unpublished version to read, audit and score, frozen again
    after every change."""
    from ..engine.parallel import executor_for, parse_shard
    from ..release.freezing import committed_manifest_path, find_release, freeze
    from ..release.shards import freeze_shard
    from ..spec.catalog import Catalog

    def action() -> None:
        project = _project()
        catalog = Catalog.load(project)
        spec = find_release(catalog, release)
        target = out_dir or project.default_dist
        if shard is not None and draft:
            raise SpecError.single("--draft freezes a whole release: a draft is not rendered "
                                   "in shards")
        if shard is not None:
            executor = executor_for(workers, engine, scheduler, catalog)
            try:
                path = freeze_shard(catalog, spec, parse_shard(shard), target, executor)
            finally:
                executor.close()
            out.print(f"shard {shard} of {spec.full_name} in {path}; `memspec merge` the "
                      "shards into the release", markup=False)
            return
        if draft or not committed_manifest_path(catalog, spec).exists():
            _announce_missing_adversaries()
        total = sum(f.groups for f in spec.families)
        with _progress(total, "freezing") as advance:
            built = freeze(catalog, spec, target, write_manifest=True,
                           progress=advance, allow_audit_failures=allow_audit_failures,
                           workers=workers, engine=engine, scheduler=scheduler, draft=draft)
        _report_frozen(built)

    _run(action)


@app.command(short_help="Assemble a release from its shards.")
def merge(
    shards: Annotated[list[Path], typer.Argument(
        help="The folders of every shard of one release (from freeze --shard I/N).")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Output folder (default dist/).")]
    = None,
    allow_audit_failures: Annotated[bool, typer.Option(
        help="As for freeze: publish with the audit's failures recorded.")] = False,
) -> None:
    """Assemble a release from all its shards: the release, manifest and checks that freeze
    would have made in one run."""
    from ..release.shards import merge_shards

    def action() -> None:
        from ..spec.catalog import Catalog

        project = _project()
        with _status(f"merging {len(shards)} shards"):
            built = merge_shards(Catalog.load(project), shards,
                                 out_dir or project.default_dist,
                                 allow_audit_failures=allow_audit_failures)
        _report_frozen(built)

    _run(action)


def _announce_missing_adversaries() -> None:
    """Before a freeze that audits and records its audit for good: the adversaries this
    installation cannot run, and how to install them, while there is still time to."""
    from ..audit.run import unavailable_adversaries

    for adversary in unavailable_adversaries():
        err.print(f"note: this freeze's audit will not run {adversary}; the manifest and "
                  "card will record that it did not (stop now to install it)", markup=False)


def _report_frozen(built: "BuiltRelease") -> None:
    """What freeze and merge say about the release they wrote."""
    from ..audit.run import describe_failure
    for note in built.notes:
        err.print(f"note: {note}", markup=False)
    for failure in built.manifest.get("audit", {}).get("failures", []):
        err.print("warning: audit failure recorded: "
                  + describe_failure(failure).removeprefix("audit: "), markup=False)
    out.print(f"froze {built.release.full_name}: {built.manifest['counts']['instances']} "
              f"instances in {built.path}; root sha256 {built.manifest['root_sha256']}",
              markup=False)


@app.command(short_help="Check a built release byte for byte.")
def verify(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    regenerate: Annotated[bool, typer.Option(
        help="Also rebuild from the specs in a temporary folder and compare bytes.")] = False,
    manifest: Annotated[Path | None, typer.Option(
        help="A trusted manifest to compare with (default: the project's committed one).")]
    = None,
    allow_draft: Annotated[bool, typer.Option(
        help="Accept an unpublished draft (freeze --draft), checked against itself; without "
             "it a draft is refused.")] = False,
) -> None:
    """Check a built release against its SHA256SUMS and the committed manifest."""

    def action() -> None:
        from ..formats.manifest import MANIFEST_FILE
        from ..release.verify import check_trusted_manifest, verify_release
        from ..spec.catalog import Catalog

        try:
            # Only a rebuild needs the specs read; a check against the committed manifest
            # needs no more than where the project is.
            project = _project()
            catalog: Catalog | None = Catalog.load(project) if regenerate else Catalog(project)
        except MemspecError:
            if regenerate or _state["root"] is not None:
                raise
            catalog = None  # a release can still be checked against its own sums
        if release_dir.is_file():
            holder = next((folder for folder in release_dir.resolve().parents
                           if (folder / MANIFEST_FILE).is_file()), None)
            raise SpecError.single("is a file; verify takes a release folder"
                                   + (f": {holder}, which holds it" if holder else ""),
                                   str(release_dir))
        if not release_dir.is_dir():
            raise SpecError.single("release folder not found", str(release_dir))
        if manifest is not None:
            check_trusted_manifest(manifest)
        with _status(f"verifying {printable(str(release_dir))}"
                     + (" (and rebuilding it)" if regenerate else "")):
            report = verify_release(release_dir, catalog, regenerate=regenerate,
                                    trusted=manifest, accept_draft=allow_draft)
        if report.ok and not report.anchored and not report.draft:
            err.print("warning: no project and no --manifest: the release is whole, but it was "
                      "not compared with a committed manifest", markup=False)
        for note in report.notes:
            err.print(f"note: {note}", markup=False)
        _print_problems(report.problems)
        if not report.ok:
            err.print(f"{printable(str(release_dir))}: {len(report.problems)} problem(s)",
                      markup=False)
            # A seal that cannot be read is bad input; one that disagrees, a failed check.
            raise typer.Exit(EXIT_BAD_INPUT if report.unreadable else EXIT_CHECK_FAILED)
        draft_note = "an unpublished draft, " if report.draft else ""
        out.print(f"ok: {printable(str(release_dir))} ({draft_note}{report.checked_files} files"
                  f"{', byte-identical to a rebuild' if regenerate else ''})", markup=False)

    _run(action)


@app.command(short_help="Freeze and verify the project's releases.")
def build(
    releases: Annotated[list[str] | None, typer.Argument(
        help="Releases to build (<name>-<version> or file, any version); default: the newest "
             "version of each release of the project.", autocompletion=_complete_releases)]
    = None,
    every_version: Annotated[bool, typer.Option(
        "--all", help="Build every version of every release, not only the newest.")] = False,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Output folder (default dist/).")]
    = None,
    workers: Workers = 1,
    engine: Engine = "local",
    scheduler: Scheduler = None,
    bundled: Annotated[bool, typer.Option(
        help="Build the releases that ship with memspec (from its library, against its "
             "manifests) instead of the project's.")] = False,
) -> None:
    """Freeze and verify the newest version of every release of the project (--all: every
    version; or those named) against its committed manifest.

    Writes only under the output folder, never into manifests/."""
    from ..release.freezing import find_release, freeze
    from ..release.verify import verify_release
    from ..spec.project import library_project
    from ..spec.release_of import newest_versions

    def action() -> None:
        if bundled:
            if out_dir is None:
                raise SpecError.single("--bundled needs --out: the folder to build into")
            project = library_project()
        else:
            project = _project()
        from ..spec.catalog import Catalog
        catalog = Catalog.load(project)
        target = out_dir or project.default_dist
        rows, failed = [], False
        if releases and every_version:
            raise SpecError.single("--all builds every release: name releases, or give --all")
        if releases:
            specs = [find_release(catalog, name) for name in releases]
        else:
            specs = [catalog.release(path) for path in catalog.release_paths()]
            if not every_version:
                # Later versions of a release are what a user of it reads; the earlier ones
                # stay pinned by their manifests and are rebuilt by --all.
                specs = newest_versions(specs)
        if not specs:
            raise SpecError.single("no releases under specs/releases/")
        for spec in specs:
            try:
                with _progress(sum(f.groups for f in spec.families), spec.full_name) as adv:
                    built = freeze(catalog, spec, target, write_manifest=False, progress=adv,
                                   workers=workers, engine=engine, scheduler=scheduler)
            except MemspecError as exc:
                for line in exc.render().splitlines():
                    err.print(f"error: {line}", markup=False)
                rows.append((spec.full_name, "-", "-", "FAILED"))
                failed = True
                continue
            with _status(f"verifying {spec.full_name}"):
                report = verify_release(built.path, catalog)
            for note in dict.fromkeys([*built.notes, *report.notes]):
                err.print(f"note: {spec.full_name}: {note}", markup=False)
            _print_problems(report.problems)
            failed |= not report.ok
            rows.append((spec.full_name, str(built.manifest["counts"]["instances"]),
                         built.manifest["root_sha256"][:16], "verified" if report.ok else
                         "FAILED"))
        _print_table(_release_table(rows))
        if failed:
            raise typer.Exit(EXIT_CHECK_FAILED)

    _run(action)

"""The ``memspec`` command line. Exit status: 0 ok, 1 a check failed, 2 bad input."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, Literal, TypeVar

import typer
from rich.console import Console

from .catalog import Catalog
from .cli_metavars import NamedMetavarsGroup
from .errors import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_CHECK_FAILED,
    EXIT_OK,
    CheckFailed,
    MemspecError,
    Problem,
    SpecError,
    elide,
    printable,
    summarised,
    unknown_name,
)
from .limits import CommandBudget
from .manifest import MANIFEST_FILE
from .policies import POLICIES
from .project import Project, find_project
from .verify import check_trusted_manifest, verify_release

# The modules only some commands need are imported by those commands, when they run: a command
# starts in a fraction of the time it took to load them all (``memspec verify`` among them).

#: Columns a table may take when standard output is not a terminal.
PIPE_WIDTH = 1000

app = typer.Typer(
    name="memspec",
    help="Declarative, deterministic evaluation data for the memory of LLM agents.",
    no_args_is_help=True,
    # Completion for bash, zsh, fish and PowerShell: `memspec --install-completion`.
    add_completion=True,
    pretty_exceptions_enable=False,
    # Every value an option or argument takes is named in one table (cli_metavars).
    cls=NamedMetavarsGroup,
    # Plain help, wrapped to the terminal's width: rich's panels cut long flag names short
    # at 80 columns.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
err = Console(stderr=True, highlight=False, soft_wrap=True)
#: Into a file or a pipe, tables are drawn at their own width: rich would otherwise fit them
#: into 80 columns, cutting the names that tell their rows apart.
out = Console(highlight=False, soft_wrap=True,
              width=None if sys.stdout.isatty() else PIPE_WIDTH)
_state: dict[str, Any] = {"root": None, "marker_read": False}
T = TypeVar("T")

if TYPE_CHECKING:
    from rich.table import Table

    from .generate import FamilyGenerator
    from .release import BuiltRelease
    from .writeback import StreamedFile


def _print_version(asked: bool) -> None:
    if asked:
        from .new_project import memspec_version

        out.print(f"memspec {memspec_version()}", markup=False)
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    root: Annotated[Path | None, typer.Option(
        help="Project folder (default: $MEMSPEC_ROOT, else the nearest folder upward from "
             "the working directory holding memspec.yaml).")] = None,
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print the version of memspec and exit.")] = False,
) -> None:
    _state["root"] = root


def _project() -> Project:
    """The project this command works on; its cache of compiled code is kept inside it."""
    from .code_cache import use_project
    from .new_project import memspec_version
    from .project import newer_marker_warning

    project = find_project(_state["root"])
    use_project(project.root)
    if not _state.get("marker_read"):  # said once, however often a command asks
        _state["marker_read"] = True
        warning = newer_marker_warning(project, memspec_version())
        if warning:
            print(warning, file=sys.stderr)
    return project


def _complete_releases(incomplete: str) -> list[str]:
    """Shell completion of a release name: the project's release files, by <name>-<version>."""
    try:
        paths = Catalog(_project()).release_paths()
    except MemspecError:  # no project here: nothing to offer
        return []
    return [p.stem for p in paths if p.stem.startswith(incomplete)]


def _complete_families(incomplete: str) -> list[str]:
    """Shell completion of a family id: those of the project's family files."""
    try:
        ids = Catalog.load(_project()).family_paths
    except MemspecError:
        return []
    return sorted(i for i in ids if i.startswith(incomplete))


def _run(action: Callable[[], T]) -> T:
    """Run ``action``; report a MemspecError as located messages and exit with its status."""
    try:
        return action()
    except MemspecError as exc:
        for line in exc.render().splitlines():
            err.print(f"error: {line}", markup=False)
        raise typer.Exit(exc.exit_code) from None
    except RecursionError:
        err.print("error: input nested too deeply to process", markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except BrokenPipeError:
        # The reader went away (`memspec generate … | head`): stop quietly, as a pipe expects,
        # and keep Python from failing again when it flushes standard output at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(EXIT_BROKEN_PIPE) from None
    except OSError as exc:
        err.print(f"error: {Problem(str(exc.strerror or exc), str(exc.filename or ''))}",
                  markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except ValueError as exc:
        if "null byte" not in str(exc):
            raise
        # A path with a NUL in it names no file any system can open.
        err.print("error: a path given holds a NUL character, which no file name can",
                  markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None


def _print_problems(problems: list[Problem]) -> None:
    """Print ``problems`` as ``error:`` lines, as ``_run`` prints an error's: each printable
    and short, and a flood of one kind summarised (``summarised``)."""
    for problem in summarised(problems):
        err.print(f"error: {problem}", markup=False)


@contextmanager
def _progress(total: int, label: str) -> Iterator[Callable[[str, int], None]]:
    """A progress bar on a terminal; nothing at all when stderr is not one. Told ``(name,
    n)``, it advances by ``n`` and names ``name``; ``n`` 0 names a phase after the bar."""
    if not sys.stderr.isatty():
        yield lambda _name, _n: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    # Redrawn by hand, at most ten times a second, rather than by rich's refresh thread: with
    # no second thread running, `--workers N` can fork its workers with the project already
    # loaded (see parallel.Processes) instead of starting them from a fork server.
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True, auto_refresh=False) as bar:
        task = bar.add_task(label, total=total)
        drawn = 0.0

        def advance(name: str, n: int) -> None:
            nonlocal drawn
            bar.update(task, advance=n, description=f"{label}: {name}" if n == 0 else
                       f"{label} {name}")
            now = time.monotonic()  # when to redraw, nothing more: no output depends on it
            if n == 0 or now - drawn >= 0.1:
                bar.refresh()
                drawn = now

        yield advance


@contextmanager
def _status(text: str) -> Iterator[Callable[[str], None]]:
    """A one-line status on a terminal's stderr, ``text`` and then what the function it
    yields is told, cleared at the end; nothing at all when stderr is not a terminal. Drawn
    by hand, as the progress bar is: no thread runs beside the work."""
    if not sys.stderr.isatty():
        yield lambda _phase: None
        return
    width = max(err.width - 1, 10)

    def say(phase: str) -> None:
        line = printable(f"{text}: {phase}" if phase else text)
        sys.stderr.write("\r\x1b[2K" + (line if len(line) <= width else line[:width - 1] + "…"))
        sys.stderr.flush()

    say("")
    try:
        yield say
    finally:
        sys.stderr.write("\r\x1b[2K")
        sys.stderr.flush()


@app.command(short_help="Make a folder a memspec project.")
def init(
    folder: Annotated[Path, typer.Argument(help="Folder to make a project (default: here).")]
    = Path("."),
) -> None:
    """Start a project: specs/ (families, paradigms, pools, releases, exports), templates/,
    manifests/, the memspec.yaml marker, a .gitignore for dist/ and a README. Refuses a folder
    that holds files and is not a project; never overwrites."""
    from .new_project import init_project

    def action() -> None:
        written = init_project(folder)
        for path in written:
            out.print(f"wrote {path}", markup=False)
        out.print(f"ok: {folder} is a memspec project"
                  + ("" if written else " (it was already; nothing written)")
                  + "; next: `memspec new <project>.<area>.<name> --paradigm memspec:<id>`",
                  markup=False)

    _run(action)


@app.command(short_help="Check specs and render every family.")
def validate(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Spec files or folders (default: all of specs/).")] = None,
    workers: Annotated[int | None, typer.Option(
        help="Processes that validate files side by side (default: one per core).",
        min=1)] = None,
) -> None:
    """Load and validate specs, and render groups of every family until each design has
    rendered and each pool item has been drawn (notes name the items it did not reach)."""
    from .validate import validate as validate_specs

    def action() -> int:
        report = validate_specs(Catalog.load(_project()), paths or None, workers)
        for note in report.notes:
            err.print(f"note: {note}", markup=False)
        _print_problems(sorted(report.problems, key=lambda p: p.sort_key()))
        summary = (f"{report.families} families ({report.instances} instances rendered), "
                   f"{report.paradigms} paradigms, {report.pools} pools, "
                   f"{report.releases} releases, {report.exports} exports"
                   + (f", {report.scaffolds} scaffolds" if report.scaffolds else ""))
        if report.problems:
            err.print(f"{len(report.problems)} problem(s); checked {summary}", markup=False)
        else:
            out.print(f"ok: {summary}", markup=False)
        return report.exit_code

    code = _run(action)
    if code:
        raise typer.Exit(code)


@app.command(short_help="Scaffold a new family.")
def new(
    family_id: Annotated[str, typer.Argument(help="Id of the new family, e.g. mybench.area.name")],
    paradigm: Annotated[str, typer.Option(help="Paradigm the family follows.")],
) -> None:
    """Scaffold a family (its spec, with templates and pools where the paradigm has them) that
    validates, generates and freezes as it is."""
    from .scaffold import chosen_scaffold, scaffold_family
    from .scaffold_files import scaffold_for
    from .validate import validate as validate_specs

    def action() -> None:
        import re

        if not re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+", family_id):
            raise SpecError.single(f"family id {family_id!r} must be dotted lowercase words, "
                                   "e.g. mybench.procedural.my_rule")
        project = _project()
        catalog = Catalog.load(project)
        if family_id in catalog.family_paths:
            raise SpecError.single(f"family {family_id!r} already exists")
        usable = catalog.usable_paradigms()
        spec = usable.get(paradigm)
        if spec is None:
            raise SpecError.single(unknown_name("paradigm", paradigm, sorted(usable)))
        newer = scaffold_for(project, paradigm)
        written = scaffold_family(project, family_id, spec, paradigm, newer)
        report = validate_specs(Catalog.load(project), [written[0]])
        for path in written:
            out.print(f"wrote {project.display(path)}", markup=False)
        if report.problems:
            _print_problems(report.problems)
            err.print("the scaffold does not validate for this paradigm; edit the files above "
                      "(or give the paradigm a scaffold: section or a scaffold file)",
                      markup=False)
            raise typer.Exit(EXIT_CHECK_FAILED)
        out.print(f"ok: {family_id} validates; try `memspec show {family_id}`", markup=False)
        groups = chosen_scaffold(spec, newer)[0].get("groups")
        if groups:
            out.print(f"note: this paradigm's balance checks hold over {groups} groups: "
                      f"generate and release a multiple of {groups}", markup=False)

    _run(action)


def _generator(family: str, seed: int) -> FamilyGenerator:
    from .generate import FamilyGenerator
    from .render import Renderer
    project = _project()
    spec = Catalog.load(project).family(family)
    return FamilyGenerator(spec, Renderer(project), seed)


def _check_seed(seed: int) -> None:
    if not 0 <= seed < 2**63:
        raise SpecError.single(f"--seed must be in [0, 2**63), got {seed}")


#: Options of every command that renders groups.
Workers = Annotated[int, typer.Option(
    help="Worker processes; the output is the same bytes for any number.")]
EngineName = Literal["local", "dask"]
Engine = Annotated[EngineName, typer.Option(
    help="Where groups are rendered: local (this machine's processes) or dask (a Dask "
         "cluster; a local one of --workers processes without --scheduler).")]
#: The choices of `score` and `audit`, listed in their help and checked by the parser (the
#: corrections and scopes are those of stats.CORRECTIONS and score.SCOPES).
ScoreFormat = Literal["table", "json", "csv"]
AuditFormat = Literal["table", "json"]
Normalisation = Literal["minmax", "z"]
Correction = Literal["holm", "bonferroni", "none"]
CorrectionScope = Literal["report", "row"]
Scheduler = Annotated[str | None, typer.Option(
    help="Address of a Dask scheduler (tcp://host:8786) for --engine dask.")]


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
    from .generate import FamilyGenerator
    from .parallel import chunk_jobs, executor_for, fingerprint_for, parse_shard, shard_groups
    from .render import Renderer

    def action() -> None:
        _check_seed(seed)
        project = _project()
        catalog = Catalog.load(project)
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


@app.command(short_help="One group of a family, for a person to read.")
def show(
    family: Annotated[str, typer.Argument(help="Family id (or path to its YAML file).",
                                          autocompletion=_complete_families)],
    seed: Annotated[int | None, typer.Option(
        help="Seed (default: that of the release holding the family, else 0).")] = None,
    group: Annotated[int, typer.Option(min=0, help="Group index.")] = 0,
) -> None:
    """Render one group for a person to read: every variant, phase by phase."""
    from .show import format_group

    def action() -> None:
        generator = _shown_generator(family, seed)
        out.print(format_group(generator.group(group)), markup=False)

    _run(action)


def _shown_generator(family: str, seed: int | None) -> FamilyGenerator:
    """A generator of ``family`` for a person to look at: under ``seed``, else the seed of
    the release that holds the family (said on stderr), so that it shows released items."""
    from .generate import FamilyGenerator
    from .release_of import release_seed
    from .render import Renderer

    project = _project()
    catalog = Catalog.load(project)
    spec = catalog.family(family)
    if seed is None:
        chosen = release_seed(catalog, spec.family_id)
        err.print(f"showing {spec.family_id} under {chosen.describe()}", markup=False)
        seed = chosen.seed
    _check_seed(seed)
    return FamilyGenerator(spec, Renderer(project), seed)


@app.command("check-answer", short_help="What a response scores on one instance, and why.")
def check_answer(
    family: Annotated[str, typer.Argument(help="Family id (or path to its YAML file).",
                                          autocompletion=_complete_families)],
    response: Annotated[str, typer.Argument(help="The response to score.")],
    group: Annotated[int, typer.Option(min=0, help="Group index.")] = 0,
    variant: Annotated[str | None, typer.Option(
        help="Variant name, as in the instance's `variant` (needed when there are several).")]
    = None,
    seed: Annotated[int | None, typer.Option(
        help="Seed (default: that of the release holding the family, else 0).")] = None,
) -> None:
    """Score one response on one instance, first attempt only: what the scorer took of it,
    the verdict and why. Exit 0 when it scores as correct (or only a judge can say), 1 when
    not."""
    from .answer_tests import explain

    def action() -> int:
        generator = _shown_generator(family, seed)
        instances = generator.group(group)
        names = [i["variant"] for i in instances]
        if variant is None and len(names) > 1:
            raise SpecError.single(f"--variant is needed: group {group} has {len(names)} "
                                   f"variants ({', '.join(names)})")
        chosen = variant or names[0]
        if chosen not in names:
            raise SpecError.single(f"--variant {chosen!r} is not a variant of group {group} "
                                   f"({', '.join(names)})")
        instance = instances[names.index(chosen)]
        answer = instance["answer"]
        out.print(f"instance: {instance['id']}", markup=False)
        if "gold" in answer:
            out.print(f"gold: {answer['gold']!r}", markup=False)
        verdict = explain(answer, response)
        for line in verdict.lines():
            out.print(line, markup=False)
        return EXIT_OK if verdict.verdict in ("correct", "judged") else EXIT_CHECK_FAILED

    raise typer.Exit(_run(action))


def _print_table(table: Table) -> None:
    """Print ``table`` on standard output, in blocks a row where it is too wide to show whole
    (on a terminal: into a pipe, tables are drawn at their own width)."""
    from .report_format import fitted

    out.print(fitted(table, out), soft_wrap=False)


def _release_table(rows: list[tuple[str, str, str, str]]) -> Table:
    # Imported on use, like the progress bar: start-up counts.
    from .report_format import PlainTable

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
    from .parallel import executor_for, parse_shard
    from .release import committed_manifest_path, find_release, freeze
    from .shards import freeze_shard

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
    from .shards import merge_shards

    def action() -> None:
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
    from .audit import unavailable_adversaries

    for adversary in unavailable_adversaries():
        err.print(f"note: this freeze's audit will not run {adversary}; the manifest and "
                  "card will record that it did not (stop now to install it)", markup=False)


def _report_frozen(built: BuiltRelease) -> None:
    """What freeze and merge say about the release they wrote."""
    from .audit import describe_failure
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
            raise typer.Exit(EXIT_CHECK_FAILED)
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
    from .project import library_project
    from .release import find_release, freeze
    from .release_of import newest_versions

    def action() -> None:
        if bundled:
            if out_dir is None:
                raise SpecError.single("--bundled needs --out: the folder to build into")
            project = library_project()
        else:
            project = _project()
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


@app.command(short_help="A curated pool file from a Faker provider.")
def pool(
    provider: Annotated[str, typer.Argument(help="Faker provider, e.g. first_name, city.")],
    count: Annotated[int, typer.Option(min=1, max=100000, help="Number of distinct items.")],
    out_file: Annotated[Path, typer.Option("--out", help="Pool file to write.")],
    locale: Annotated[str, typer.Option(help="Faker locale.")] = "en_US",
    seed: Annotated[int, typer.Option(help="Faker seed.")] = 0,
    force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Materialise a Faker provider into a curated pool file (Faker version recorded)."""
    from .release import atomic_write_bytes

    def action() -> None:
        from .faker_pool import pool_document, pool_id_for

        if out_file.exists() and not force:
            raise SpecError.single(f"{out_file} exists; pass --force to overwrite")
        project = _project()
        text = pool_document(pool_id_for(out_file, project.specs), provider, count, locale, seed)
        out_file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(out_file, text.encode("utf-8"))
        out.print(f"wrote {count} items to {out_file}", markup=False)

    _run(action)


@app.command(short_help="Responses of a reference policy.")
def respond(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    policy: Annotated[str, typer.Option(help="Reference policy: " + ", ".join(POLICIES)
                                        + ", or one the release's families declare")],
    seed: Annotated[int, typer.Option(help="Seed of the random policy.")] = 0,
    out_file: Annotated[str, typer.Option("--out", help="Output file, or - for stdout.")] = "-",
) -> None:
    """Responses of a reference policy to every instance of a release, as JSONL: a built-in
    one, or one the families declare (``audit.policies``; instances of a family that does not
    declare it get the memoryless policy's response)."""
    from .canonical import dump_bytes
    from .release_data import load_release_instances

    def action() -> None:
        _check_seed(seed)
        _, instances = load_release_instances(release_dir, _catalog_if_any())
        declared = sorted({name for i in instances for name in i["answer"].get("policies", {})})
        if policy not in POLICIES and policy not in declared:
            raise SpecError.single(unknown_name("policy", policy, [*POLICIES, *declared],
                                                "policies"))
        act = POLICIES.get(policy)

        def response(instance: Any) -> str:
            if act is not None:
                return act(instance, seed)
            own = instance["answer"].get("policies", {})
            return own[policy] if policy in own else POLICIES["memoryless"](instance, seed)

        data = b"".join(dump_bytes({"id": i["id"], "response": response(i)})
                        for i in instances)
        _write_output(out_file, data)

    _run(action)


def _split_keys(value: str | None) -> list[str]:
    return [k.strip() for k in value.split(",") if k.strip()] if value else []


@app.command(short_help="Score responses: metrics, intervals, tests.")
def score(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    responses_file: Annotated[Path, typer.Argument(help="JSONL of {id, response}.")],
    by: Annotated[str | None, typer.Option(
        help="Group by these keys (comma-separated): family, paradigm, design, variant, "
             "group, any axis or field.")] = None,
    cluster: Annotated[str | None, typer.Option(
        help="Resample clusters of groups sharing this key in the bootstrap.")] = None,
    output_format: Annotated[ScoreFormat, typer.Option(
        "--format", help="table (for a terminal), json or csv.")] = "table",
    judgments: Annotated[Path | None, typer.Option(help="Judge scores (JSONL).")] = None,
    unblind: Annotated[Path | None, typer.Option(
        help="Unblinding map written by judge-requests.")] = None,
    normalize: Annotated[Normalisation | None, typer.Option(
        help="Normalise judge scores within each dataset: minmax or z.")] = None,
    dataset_key: Annotated[str, typer.Option(
        help="Key that names a dataset for normalisation.")] = "family",
    normalize_within_run: Annotated[bool, typer.Option(
        help="Normalise against this run's scores of each dataset even where the release "
             "declares reference statistics for it.")] = False,
    allow_missing: Annotated[bool, typer.Option(
        help="Score instances without a response as unanswered, and judge requests without "
             "a judgment as unjudged, instead of refusing.")] = False,
    abstain_pattern: Annotated[list[str] | None, typer.Option(
        help="Extra regular expression marking an abstention (repeatable).")] = None,
    resamples: Annotated[int, typer.Option(min=100, max=100_000, help="Bootstrap resamples "
                                           "(each holds a draw of every value in memory).")
                         ] = 2000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    correction: Annotated[Correction, typer.Option(
        help="Correction for multiple tests: holm, bonferroni or none. With holm or "
             "bonferroni the Δmem intervals of every row are simultaneous too.")] = "holm",
    correction_scope: Annotated[CorrectionScope, typer.Option(
        help="Which tests are corrected together: report (every test of this run) or row "
             "(each row's tests alone).")] = "report",
    analysis_file: Annotated[Path | None, typer.Option(
        "--analysis", help="YAML of contrasts and factorials to estimate, beside those the "
                           "families declare (e.g. for a release already frozen).")] = None,
) -> None:
    """Metrics with bootstrap intervals over groups: coverage, accuracy on answered items,
    reliance, Δmem; tests of the group means, corrected together across the report."""
    from .contrasts import load_analysis_file
    from .judge import load_judgments
    from .judge_panel import load_panel_judgments, panel_report
    from .panel_format import as_panel_table
    from .release_data import load_release_instances
    from .report_format import (
        as_contrasts_table,
        as_csv,
        as_json,
        as_summaries_table,
        as_table,
        as_tests_table,
    )
    from .responses import load_responses
    from .safe_regex import PatternTooSlow, searched_pattern_problem
    from .score import ScoreOptions, attach_judgments, outcome, score_outcomes

    def action() -> None:
        if (judgments is None) != (unblind is None):
            raise SpecError.single("--judgments and --unblind go together")
        for pattern in abstain_pattern or []:
            problem = searched_pattern_problem(pattern)
            if problem is not None:
                raise SpecError.single(f"--abstain-pattern {elide(repr(pattern), 120)} "
                                       f"{problem}")
        _check_seed(seed)
        declarations = (load_analysis_file(analysis_file),) if analysis_file else ()
        _, instances = load_release_instances(release_dir, _catalog_if_any())
        responses = load_responses(responses_file, (i["id"] for i in instances))
        missing = [i["id"] for i in instances if i["id"] not in responses]
        if missing and not allow_missing:
            raise SpecError.single(
                f"{len(missing)} of {len(instances)} instances have no response (first: "
                f"{', '.join(missing[:3])}); pass --allow-missing to score them as unanswered",
                str(responses_file))
        if missing:
            err.print(f"warning: {len(missing)} instances have no response; scored as "
                      "unanswered", markup=False)
        with CommandBudget("score", str(responses_file)) as budget, \
                _status(f"scoring {printable(str(responses_file))}") as say:
            outcomes = []
            for instance in instances:
                budget.on(f"instance {instance['id']}")
                try:
                    outcomes.append(outcome(instance, responses.get(instance["id"]),
                                            abstain_pattern or ()))
                except PatternTooSlow as exc:
                    raise SpecError.single(f"the response to {instance['id']}: {exc}",
                                           str(responses_file),
                                           _line_naming(responses_file, instance["id"]),
                                           1) from None
            if judgments is not None and unblind is not None:
                budget.on("judgments")
                scales = {i["id"]: i.get("analysis", {}).get("judge_scale") for i in instances}
                scores = load_judgments(judgments, unblind, scales, allow_missing=allow_missing)
                panel = panel_report(instances, load_panel_judgments(
                    judgments, unblind, scales, allow_missing=allow_missing), _split_keys(by))
                outcomes, references = attach_judgments(outcomes, scores, normalize,
                                                        dataset_key, normalize_within_run)
            else:
                references, panel = {}, []
            budget.on("statistics")
            say("bootstrap intervals and tests")
            report = score_outcomes(outcomes, _split_keys(by),
                                    ScoreOptions(cluster, resamples, seed, correction,
                                                 correction_scope, analysis=declarations))
        if panel:
            report["judge_panel"] = panel
        if references:
            report["normalisation"] = {"method": normalize, "dataset_key": dataset_key,
                                       "reference": references}
        if output_format == "json":
            sys.stdout.write(as_json(report) + "\n")
        elif output_format == "csv":
            sys.stdout.write(as_csv(report))
        else:
            _print_table(as_table(report))
            for extra in (as_tests_table(report), as_contrasts_table(report),
                          as_summaries_table(report), as_panel_table(report)):
                if extra is not None:
                    _print_table(extra)

    _run(action)


@app.command(short_help="Can a system without memory pass the release?")
def audit(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    output_format: Annotated[AuditFormat, typer.Option("--format", help="table or json.")] \
        = "table",
    seed: Annotated[int, typer.Option(help="Seed of the one-instance-per-group draw.")] = 0,
) -> None:
    """Audit a release (exit 1 on any failure): memoryless adversaries must not beat chance;
    gold positions, cells and declared balance must hold exactly; no probe, control arm or
    duplicate may leak; every counterfeit must match its original's length (±5%) and share
    none of its named entities. The spec audits need the project the release was built
    from."""
    from .audit import FROZEN_AUDIT_NOTE, audit_families, describe_failure
    from .release_data import release_sources
    from .report_format import audit_table, findings_table

    def action() -> None:
        _check_seed(seed)
        catalog = _catalog_if_any()
        manifest, sources = release_sources(release_dir, catalog)
        with CommandBudget("audit", str(release_dir)), \
                _status(f"auditing {printable(str(release_dir))}"):
            report = audit_families(sources, seed, catalog=catalog, manifest=manifest)
        if output_format == "json":
            sys.stdout.write(json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
        else:
            _print_table(audit_table(report))
            _print_table(findings_table(report))
            if report.specs_skipped:
                err.print(f"note: spec audits skipped: {report.specs_skipped}", markup=False)
            for adversary in report.unavailable:
                err.print(f"note: adversary not run: {adversary}", markup=False)
            for family, why in sorted(report.unattacked.items()):
                err.print(f"note: not attacked on {family}: {why}", markup=False)
            for difference in report.frozen_differences:
                err.print(f"note: {difference}", markup=False)
            if report.frozen_differences:
                err.print(f"note: {FROZEN_AUDIT_NOTE}", markup=False)
        if not report.ok:
            raise CheckFailed([Problem(describe_failure(f), str(release_dir))
                               for f in report.failures()])

    _run(action)


@app.command(short_help="An HTML report of a release.")
def report(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    out_file: Annotated[Path, typer.Option("--out", help="HTML file to write.")],
    seed: Annotated[int, typer.Option(help="Seed of the audit's one-instance-per-group draw.")]
    = 0,
) -> None:
    """One self-contained HTML page: a table of contents, counts, balance and length charts
    (and each family's lengths), the audit table (the strongest adversaries first, near
    misses flagged) and an example group per family. Loads nothing from the network."""
    from .audit import audit_instances
    from .release import atomic_write_bytes
    from .release_data import load_release_instances
    from .release_folders import refuse_writing_inside_release
    from .report import render_report

    def action() -> None:
        _check_seed(seed)
        refuse_writing_inside_release(out_file)
        catalog = _catalog_if_any()
        with _status(f"report of {printable(str(release_dir))}") as say:
            say("reading and verifying the release")
            manifest, instances = load_release_instances(release_dir, catalog)
            with CommandBudget("report", str(release_dir)) as budget:
                budget.on("the audit")
                say("auditing")
                audited = audit_instances(instances, seed, catalog=catalog, manifest=manifest)
                budget.on("the page")
                say("drawing the page")
                page = render_report(manifest, instances, audited).encode()
        atomic_write_bytes(out_file, page)
        out.print(f"wrote {out_file}: {len(instances)} instances, audit "
                  f"{'passed' if audited.ok else 'FAILED'}", markup=False)

    _run(action)


@app.command(short_help="An HTML page of a family's first groups.")
def preview(
    family: Annotated[str, typer.Argument(help="Family id (or path to its YAML file).",
                                          autocompletion=_complete_families)],
    out_file: Annotated[Path, typer.Option("--out", help="HTML file to write.")],
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
    groups: Annotated[int, typer.Option(min=1, max=50, help="Number of groups.")] = 3,
) -> None:
    """A family's first groups as an HTML page, variants side by side with what differs from
    the first variant marked; failing checks are listed, not fatal."""
    from .preview import render_preview
    from .release import atomic_write_bytes
    from .render import Renderer

    def action() -> None:
        _check_seed(seed)
        project = _project()
        spec = Catalog.load(project).family(family)
        # Each group renders within a group's budget, as it does for generate.
        with CommandBudget("preview", project.display(spec.path)):
            html = render_preview(spec, Renderer(project), seed, groups)
        atomic_write_bytes(out_file, html.encode("utf-8"))
        out.print(f"wrote {out_file}: {groups} groups of {spec.family_id}", markup=False)

    _run(action)


@app.command("judge-requests", short_help="Blinded requests for a judge model.")
def judge_requests(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    responses_file: Annotated[Path, typer.Argument(help="JSONL of {id, response}.")],
    out_file: Annotated[Path, typer.Option("--out", help="Requests JSONL to write.")],
    seed: Annotated[int, typer.Option(help="Seed of the A/B order.")] = 0,
) -> None:
    """One judge request per pair of paired judge items (blinded A/B), one per item otherwise;
    for a family with a judge panel, one per judge for each item beside its group's anchor.

    The unblinding map goes beside the requests, as <out>.unblind.json."""
    from .canonical import dump_bytes, dump_pretty_bytes
    from .export import write_all
    from .judge import build_requests
    from .release_data import load_release_instances
    from .responses import load_responses

    def action() -> None:
        _check_seed(seed)
        _, instances = load_release_instances(release_dir, _catalog_if_any())
        responses = load_responses(responses_file, (i["id"] for i in instances))
        with CommandBudget("judge-requests", str(responses_file)):
            requests, unblind_map = build_requests(instances, responses, seed)
        unblind_path = out_file.with_name(out_file.name + ".unblind.json")
        # The requests are useless without their unblinding map and the map names requests
        # that must be there: the pair is written all or none, as an export's files are.
        write_all(out_file.parent, {
            out_file.name: b"".join(dump_bytes(r) for r in requests),
            unblind_path.name: dump_pretty_bytes(unblind_map)})
        out.print(f"wrote {len(requests)} requests to {out_file} and the unblinding map to "
                  f"{unblind_path}", markup=False)

    _run(action)


@app.command("rho-star", short_help="The first level where memory hurts (ρ*).")
def rho_star_cmd(
    runs: Annotated[list[str], typer.Argument(
        help="LEVEL=SCORES.json, in level order (score --format json outputs).")],
    where: Annotated[str | None, typer.Option(
        help="The group of each run whose Δmem to read, as KEY=VALUE[,KEY=VALUE], e.g. "
             "condition=stale.")] = None,
    contrast: Annotated[str | None, typer.Option(
        help="The contrast of each run to read instead (its name in the report's "
             "contrasts).")] = None,
) -> None:
    """ρ*: the first level whose Δmem (in the chosen group), or the chosen contrast, is below
    0 by its exact sign-flip test, Holm-corrected across all the levels given."""
    from .stats import rho_star

    def action() -> None:
        if (where is None) == (contrast is None):
            raise SpecError.single("give one of --where (a group's Δmem) or --contrast")
        wanted: dict[str, str] = {}
        if where is not None:
            parts = _split_keys(where)
            if not parts or not all("=" in part for part in parts):
                raise SpecError.single(f"--where {where!r} is not KEY=VALUE[,KEY=VALUE]")
            wanted = dict(part.split("=", 1) for part in parts)
        levels: list[tuple[str, float | None, float | None]] = []
        for run in runs:
            level, sep, path = run.partition("=")
            if not sep or not level:
                raise SpecError.single(f"{run!r} is not LEVEL=SCORES.json")
            if any(level == seen for seen, _, _ in levels):
                raise SpecError.single(f"level {level!r} is given twice")
            levels.append((level, *(_stale_group(path, wanted) if contrast is None
                                    else _contrast_estimate(path, contrast))))
        found = rho_star(levels)
        out.print(found if found is not None else "none", markup=False)

    _run(action)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _contrast_estimate(path: str, name: str) -> tuple[float, float]:
    """The named contrast of a `score --format json` file: its estimate and p-value, for ρ*;
    refused with the reason where the file has no such contrast or it has no value."""
    report = _read_scores(path)
    contrasts = report.get("contrasts") if isinstance(report, dict) else None
    if not isinstance(contrasts, list):
        raise SpecError.single("the scores have no contrasts section (written by an older "
                               "memspec score?)", path)
    entry = next((c for c in contrasts if isinstance(c, dict) and c.get("name") == name), None)
    if entry is None:
        known = ", ".join(repr(c.get("name")) for c in contrasts if isinstance(c, dict))
        raise SpecError.single(f"no contrast {name!r} in the scores (there are: "
                               f"{known or 'none'})", path)
    if not (_is_number(entry.get("estimate")) and _is_number(entry.get("p_value"))):
        raise SpecError.single(f"cannot compute ρ*: contrast {name!r} has no estimate and "
                               f"p-value (it has {entry.get('groups', 0)} groups with a "
                               "value in both arms)", path)
    return float(entry["estimate"]), float(entry["p_value"])


def _read_scores(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError.single(f"cannot read scores: {exc}", path) from None


def _stale_group(path: str, wanted: dict[str, str]) -> tuple[float, float]:
    """The Δmem and its p-value of the group keyed ``wanted`` in a `score --format json`
    file, whose Δmem interval must be two numbers: a group without one (no baseline
    declared, no group answered on both sides) is refused with the reason, since ρ* cannot
    be computed."""
    report = _read_scores(path)
    groups = report.get("groups") if isinstance(report, dict) else None
    if not isinstance(groups, list) or not all(
            isinstance(g, dict) and isinstance(g.get("metrics"), dict) for g in groups):
        raise SpecError.single("not the output of `memspec score --format json` (no list of "
                               "groups with metrics)", path)
    metrics = next((g["metrics"] for g in groups if g.get("key") == wanted), None)
    if metrics is None:
        raise SpecError.single(f"no group {wanted} in the scores", path)
    interval = metrics.get("delta_mem_ci")
    if interval is not None and not (
            isinstance(interval, list) and len(interval) == 2 and all(
                v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                for v in interval)):
        raise SpecError.single(f"delta_mem_ci of group {wanted} is not two numbers: "
                               f"{interval!r}", path)
    if interval is None or None in interval:
        # Saying "none" here would read as "memory never hurt", when it was not measured.
        reason = ("its rows declare no baseline to measure Δmem against"
                  if "delta_mem" not in metrics else
                  f"it has {metrics.get('delta_mem_pairs', 0)} groups answered in both the "
                  "condition and the baseline")
        raise SpecError.single(f"cannot compute ρ*: group {wanted} has no Δmem interval: "
                               f"{reason}", path)
    if not (_is_number(metrics.get("delta_mem")) and _is_number(metrics.get("delta_mem_p_value"))):
        raise SpecError.single(f"cannot compute ρ*: group {wanted} has no Δmem p-value "
                               "(written by an older memspec score?)", path)
    return float(metrics["delta_mem"]), float(metrics["delta_mem_p_value"])


@app.command(short_help="A release in another tool's layout.")
def export(
    release: Annotated[str, typer.Argument(
        help="A built release folder, or <name>-<version> to read from dist/.")],
    export_format: Annotated[str, typer.Option("--format", help="`inspect` (an inspect_ai "
                                               "dataset and task), or an export under "
                                               "specs/exports/ (its `export:` name).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write into.")],
) -> None:
    """Write a built release in another tool's layout: `inspect`, or one declared in
    specs/exports/."""
    from .release_data import load_release_instances
    from .release_folders import refuse_writing_inside_release

    def action() -> None:
        # A release folder and the built-in format need no project: a downloaded release
        # is exported where it lies.
        folder = Path(release)
        catalog = _catalog_if_any()
        if not folder.is_dir() and catalog is not None:
            folder = catalog.project.default_dist / release
        if not folder.is_dir():
            raise SpecError.single(f"no built release at {release}"
                                   + (f" or {folder}" if folder != Path(release) else "")
                                   + "; run `memspec build` first, or give a release folder")
        refuse_writing_inside_release(out_dir)
        with CommandBudget("export", str(folder)), \
                _status(f"exporting {printable(str(folder))} as {export_format}"):
            written = _export(folder, catalog)
        out.print(f"wrote {len(written)} files under {out_dir}", markup=False)

    def _export(folder: Path, catalog: Catalog | None) -> list[Any]:
        from .export import BUILT_IN_FORMAT, export_release, find_export
        from .export_inspect import write_inspect

        if export_format == BUILT_IN_FORMAT:
            written = write_inspect(*load_release_instances(folder, catalog), out_dir)
        else:
            # A declared format lives in a project's specs/exports/: without one, say so.
            catalog = catalog or Catalog.load(_project())
            manifest, instances = load_release_instances(folder, catalog)
            written = export_release(catalog.project, find_export(catalog.project,
                                                                  export_format),
                                     manifest, instances, out_dir)
        return written

    _run(action)


def _line_naming(path: Path, instance_id: str) -> int:
    """The first line of the JSONL file at ``path`` that names ``instance_id`` (1 where none
    does): where an error about its record points. Read again only when there is an error."""
    needle = json.dumps(instance_id, ensure_ascii=False)
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if needle in line:
                return number
    return 1


def _catalog_if_any() -> Catalog | None:
    """The project's catalog, or None when there is no project (a downloaded release)."""
    try:
        return Catalog.load(_project())
    except MemspecError:
        if _state["root"] is not None:
            raise
        return None


@contextmanager
def _output(out_file: str) -> Iterator[BinaryIO | StreamedFile]:
    """Where output is streamed: stdout, or a file that appears whole or not at all."""
    from .release import atomic_writer
    if out_file == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    with atomic_writer(Path(out_file)) as handle:
        yield handle


def _write_output(out_file: str, data: bytes) -> None:
    from .release import atomic_write_bytes
    if out_file == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        atomic_write_bytes(Path(out_file), data)


def main() -> Any:
    """Entry point of the ``memspec`` console script."""
    # Text goes out as UTF-8 whatever the locale says (LC_ALL=C would make it ASCII, and
    # instances are not); child processes started later are told the same.
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8")
    # Named as installed, also under `python -m generator.cli`: usage lines and the shell
    # completion scripts speak of `memspec`.
    return app(prog_name="memspec")


if __name__ == "__main__":
    main()

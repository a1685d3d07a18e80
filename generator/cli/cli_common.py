"""What every command of the ``memspec`` command line shares: the typer app and its root
options, the consoles, the project a command works on, how an error is reported and its exit
status, progress and status lines, the options of the commands that render groups, and where
output goes. The commands themselves live in the other ``cli_*`` modules, one per group."""


import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, Literal, TypeVar

import typer
from rich.console import Console

from ..core.errors import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_OK,
    MemspecError,
    Problem,
    SpecError,
    printable,
    summarised,
)
from ..spec.project import Project, find_project
from .cli_metavars import NamedMetavarsGroup

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

    from ..core.writeback import StreamedFile
    from ..engine.generate import FamilyGenerator
    from ..spec.catalog import Catalog


def _print_version(asked: bool) -> None:
    if asked:
        from ..spec.new_project import memspec_version

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
    from ..core.code_cache import use_project
    from ..spec.new_project import memspec_version
    from ..spec.project import newer_marker_warning

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
        from ..spec.catalog import Catalog
        paths = Catalog(_project()).release_paths()
    except MemspecError:  # no project here: nothing to offer
        return []
    return [p.stem for p in paths if p.stem.startswith(incomplete)]


def _complete_families(incomplete: str) -> list[str]:
    """Shell completion of a family id: those of the project's family files."""
    try:
        from ..spec.catalog import Catalog
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


def _generator(family: str, seed: int) -> "FamilyGenerator":
    from ..engine.generate import FamilyGenerator
    from ..engine.render import Renderer
    project = _project()
    from ..spec.catalog import Catalog
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
ScoreFormat = Literal["table", "json", "csv", "html"]
AuditFormat = Literal["table", "json"]
Normalisation = Literal["minmax", "z"]
Correction = Literal["holm", "bonferroni", "none"]
CorrectionScope = Literal["report", "row"]
Scheduler = Annotated[str | None, typer.Option(
    help="Address of a Dask scheduler (tcp://host:8786) for --engine dask.")]


def _shown_generator(family: str, seed: int | None) -> "FamilyGenerator":
    """A generator of ``family`` for a person to look at: under ``seed``, else the seed of
    the release that holds the family (said on stderr), so that it shows released items."""
    from ..engine.generate import FamilyGenerator
    from ..engine.render import Renderer
    from ..spec.release_of import release_seed

    project = _project()
    from ..spec.catalog import Catalog
    catalog = Catalog.load(project)
    spec = catalog.family(family)
    if seed is None:
        chosen = release_seed(catalog, spec.family_id)
        err.print(f"showing {spec.family_id} under {chosen.describe()}", markup=False)
        seed = chosen.seed
    _check_seed(seed)
    return FamilyGenerator(spec, Renderer(project), seed)


def _print_table(table: "Table") -> None:
    """Print ``table`` on standard output, in blocks a row where it is too wide to show whole
    (on a terminal: into a pipe, tables are drawn at their own width)."""
    from ..report.report_format import fitted

    out.print(fitted(table, out), soft_wrap=False)


def _catalog_if_any() -> "Catalog | None":
    """The project's catalog, or None when there is no project (a downloaded release)."""
    try:
        from ..spec.catalog import Catalog
        return Catalog.load(_project())
    except MemspecError:
        if _state["root"] is not None:
            raise
        return None


def _pins_if_any() -> "Catalog | None":
    """The project's catalog with no spec read, or None when there is no project: all that
    reading a built release asks of the project is its committed manifests, to verify the
    release against its pin (indexing every family file besides took `score` a fifth of a
    second)."""
    try:
        from ..spec.catalog import Catalog
        return Catalog(_project())
    except MemspecError:
        if _state["root"] is not None:
            raise
        return None


@contextmanager
def _output(out_file: str) -> "Iterator[BinaryIO | StreamedFile]":
    """Where output is streamed: stdout, or a file that appears whole or not at all."""
    from ..release.release_atomic import atomic_writer
    if out_file == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    with atomic_writer(Path(out_file)) as handle:
        yield handle


def _write_output(out_file: str, data: bytes) -> None:
    from ..release.release_atomic import atomic_write_bytes
    if out_file == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        atomic_write_bytes(Path(out_file), data)

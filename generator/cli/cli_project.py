"""The commands that make and read a project's specs: init, validate, new, show, preview
and pool."""


from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.errors import (
    EXIT_BAD_INPUT,
    Problem,
    SpecError,
    unknown_name,
)

if TYPE_CHECKING:
    from ..spec.project import Project

from .cli_common import (
    _check_seed,
    _complete_families,
    _print_problems,
    _project,
    _run,
    _shown_generator,
    app,
    err,
    out,
)


@app.command(short_help="Make a folder a memspec project.")
def init(
    folder: Annotated[Path, typer.Argument(help="Folder to make a project (default: here).")]
    = Path("."),
) -> None:
    """Start a project: specs/ (families, paradigms, pools, releases, exports), templates/,
    manifests/, the memspec.yaml marker, a .gitignore for dist/ and a README. Refuses a folder
    that holds files and is not a project; never overwrites."""
    from ..spec.new_project import init_project

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
        from ..spec.catalog import Catalog
        # Files named: only theirs are loaded, so the others' parses are not kept.
        report = validate_specs(Catalog.load(_project(), keep_documents=not paths),
                                paths or None, workers)
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
    from ..spec.scaffold import chosen_scaffold, scaffold_family
    from ..spec.scaffold_files import scaffold_for
    from .validate import validate as validate_specs

    def action() -> None:
        import re

        if not re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+", family_id):
            raise SpecError.single(f"family id {family_id!r} must be dotted lowercase words, "
                                   "e.g. mybench.procedural.my_rule")
        project = _project()
        from ..spec.catalog import Catalog
        catalog = Catalog.load(project)
        if family_id in catalog.family_paths:
            raise SpecError.single(f"family {family_id!r} already exists")
        usable = catalog.usable_paradigms()
        spec = usable.get(paradigm)
        if spec is None and paradigm in catalog.broken_paradigms:
            broken = catalog.broken_paradigms[paradigm]
            raise SpecError([Problem(f"paradigm {paradigm!r} is declared in {broken}, which "
                                     "has errors; fix them first"),
                             *(p for p in catalog.problems if p.file == broken)])
        if spec is None:
            raise SpecError.single(unknown_name("paradigm", paradigm, sorted(usable)))
        newer = scaffold_for(project, paradigm)
        folders = _folders(project)
        written = scaffold_family(project, family_id, spec, paradigm, newer)
        report = validate_specs(Catalog.load(project), [written[0]])
        if report.problems:
            # Files that fail validation would only be in the way: none is left behind.
            _remove(written, folders)
            _print_problems(report.problems)
            err.print(f"nothing written: a scaffold for paradigm {paradigm} does not validate "
                      "as generated; give the paradigm a scaffold: section (or a scaffold "
                      "file under specs/scaffolds/) that does, or write the family by hand "
                      "(docs/authoring.md)", markup=False)
            raise typer.Exit(EXIT_BAD_INPUT)
        for path in written:
            out.print(f"wrote {project.display(path)}", markup=False)
        out.print(f"ok: {family_id} validates; try `memspec show {family_id}`", markup=False)
        groups = chosen_scaffold(spec, newer)[0].get("groups")
        if groups:
            out.print(f"note: this paradigm's balance checks hold over {groups} groups: "
                      f"generate and release a multiple of {groups}", markup=False)

    _run(action)


def _folders(project: "Project") -> set[Path]:
    """The folders of a project's specs/ and templates/ as they are now."""
    return {p for base in (project.specs, project.templates) if base.is_dir()
            for p in (base, *base.rglob("*")) if p.is_dir()}


def _remove(written: list[Path], folders: set[Path]) -> None:
    """Remove ``written`` and every folder made for them (not in ``folders``)."""
    for path in written:
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent not in folders and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


@app.command(short_help="One group of a family, or groups of every family of a release, "
                        "for a person to read.")
def show(
    family: Annotated[str, typer.Argument(
        help="Family id (or path to its YAML file), or a built release folder.",
        autocompletion=_complete_families)],
    seed: Annotated[int | None, typer.Option(
        help="Seed (default: that of the release holding the family, else 0).")] = None,
    group: Annotated[int, typer.Option(min=0, help="Group index.")] = 0,
    per_family: Annotated[int | None, typer.Option(
        help="With a release folder: groups shown of every family (default 1), spread "
             "evenly over its groups.")] = None,
    only: Annotated[list[str] | None, typer.Option(
        "--family", help="With a release folder: show only this family (repeatable).")] = None,
    whole: Annotated[bool, typer.Option(
        help="Print every variant whole (default for a release folder: the first variant "
             "whole, the others only where they differ from it).")] = False,
) -> None:
    """Render one group for a person to read: every variant, phase by phase. Given a built
    release folder, the reading check: N groups (--per-family) of every family of the release (the
    groups at evenly spread positions, the same every time), every variant of each, after
    verifying the release."""
    from .show import format_group

    def action() -> None:
        folder = Path(family)
        if folder.is_dir():
            _show_release(folder, 1 if per_family is None else per_family, only or [], whole)
            return
        if per_family is not None or only:
            raise SpecError.single("--per-family and --family read a built release folder; "
                                   f"{family!r} is not a folder")
        generator = _shown_generator(family, seed)
        out.print(format_group(generator.group(group), differences=False), markup=False)

    _run(action)


def _show_release(folder: Path, per_family: int, families: list[str], whole: bool) -> None:
    """Print the reading check of the release in ``folder``: a heading per family naming
    the groups shown, then each group's variants."""
    from ..core.limits import CommandBudget
    from ..report.reading_check import reading_sample
    from .cli_common import _catalog_if_any
    from .show import format_group

    with CommandBudget("show", str(folder)):
        samples = reading_sample(folder, per_family, _catalog_if_any(), families)
    for sample in samples:
        groups = ", ".join(str(g) for g in sample.chosen)
        variants = sum(len(v) for v in sample.chosen.values())
        out.print(f"### {sample.family}: group{'s' if len(sample.chosen) > 1 else ''} "
                  f"{groups} of {sample.groups} ({variants} instances)", markup=False)
        for instances in sample.chosen.values():
            out.print(format_group(instances, differences=not whole), markup=False)


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
    from ..core.limits import CommandBudget
    from ..engine.render import Renderer
    from ..release.release_atomic import atomic_write_bytes
    from ..report.preview import render_preview

    def action() -> None:
        _check_seed(seed)
        project = _project()
        from ..spec.catalog import Catalog
        spec = Catalog.load(project).family(family)
        # Each group renders within a group's budget, as it does for generate.
        with CommandBudget("preview", project.display(spec.path)):
            html = render_preview(spec, Renderer(project), seed, groups)
        atomic_write_bytes(out_file, html.encode("utf-8"))
        out.print(f"wrote {out_file}: {groups} groups of {spec.family_id}", markup=False)

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
    from ..release.release_atomic import atomic_write_bytes

    def action() -> None:
        from ..spec.faker_pool import pool_document, pool_id_for

        if out_file.exists() and not force:
            raise SpecError.single(f"{out_file} exists; pass --force to overwrite")
        project = _project()
        text = pool_document(pool_id_for(out_file, project.specs), provider, count, locale, seed)
        out_file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(out_file, text.encode("utf-8"))
        out.print(f"wrote {count} items to {out_file}", markup=False)

    _run(action)

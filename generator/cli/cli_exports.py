"""The commands that write a built release out for other readers: report (an HTML page)
and export (another tool's layout)."""


from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..core.errors import (
    SpecError,
    printable,
)
from .cli_common import (
    _catalog_if_any,
    _check_seed,
    _run,
    _status,
    app,
    out,
)

if TYPE_CHECKING:
    from ..spec.catalog import Catalog


@app.command(short_help="An HTML report of a release.")
def report(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    out_file: Annotated[Path, typer.Option("--out", help="HTML file to write.")],
    seed: Annotated[int, typer.Option(help="Seed of the audit's one-instance-per-group draw.")]
    = 0,
) -> None:
    """One self-contained HTML page: a contents list that stays in view (a link per family
    too), then sections that fold (the summary open): counts, balance and length charts (and
    each family's lengths), the audit table (the strongest adversaries first, near misses
    flagged) and an example group per family. Loads nothing from the network."""
    from ..audit.audit_family_part import data_digests
    from ..audit.run import audit_instances
    from ..core.limits import CommandBudget
    from ..formats.release_folders import refuse_writing_inside_release
    from ..release.release_atomic import atomic_write_bytes
    from ..release.release_data import load_release_instances
    from ..report.report import render_report

    def action() -> None:
        _check_seed(seed)
        refuse_writing_inside_release(out_file)
        catalog = _catalog_if_any()
        with _status(f"report of {printable(str(release_dir))}") as say:
            say("reading and verifying the release")
            manifest, instances = load_release_instances(release_dir, catalog, held=True)
            with CommandBudget("report", str(release_dir)) as budget:
                budget.on("the audit")
                say("auditing")
                # The release verified: its manifest's sums are its files' (the cache's key).
                audited = audit_instances(instances, seed, catalog=catalog, manifest=manifest,
                                          digests=data_digests(manifest.get("files", {})))
                budget.on("the page")
                say("drawing the page")
                page = render_report(manifest, instances, audited).encode()
        atomic_write_bytes(out_file, page)
        out.print(f"wrote {out_file}: {len(instances)} instances, audit "
                  f"{'passed' if audited.ok else 'FAILED'}", markup=False)

    _run(action)


@app.command(short_help="A release in another tool's layout.")
def export(
    release: Annotated[str, typer.Argument(
        help="A built release folder, or <name>-<version> to read from dist/.")],
    export_format: Annotated[str, typer.Option("--format", help=(
        "`inspect` (an inspect_ai dataset and task), or a declared export's `export:` name: "
        "the project's own under specs/exports/ first, else the one that ships with memspec "
        "(`memspec:NAME` always that one)."))],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write into.")],
) -> None:
    """Write a built release in another tool's layout: `inspect`, or one declared in
    specs/exports/ (the project's own, else memspec's). Any release folder, in a project or
    not."""
    from ..core.limits import CommandBudget
    from ..formats.release_folders import refuse_writing_inside_release
    from ..release.release_data import load_release_instances

    def action() -> None:
        # No format needs a project: a downloaded release is exported where it lies.
        catalog = _catalog_if_any()
        folder = _release_folder(release, catalog)
        refuse_writing_inside_release(out_dir)
        with CommandBudget("export", str(folder)), \
                _status(f"exporting {printable(str(folder))} as {export_format}"):
            written = _export(folder, catalog)
        out.print(f"wrote {len(written)} files under {out_dir}", markup=False)

    def _export(folder: Path, catalog: "Catalog | None") -> list[Any]:
        from ..exports.export import BUILT_IN_FORMAT, export_release, find_export
        from ..exports.export_inspect import write_inspect

        if export_format == BUILT_IN_FORMAT:
            return write_inspect(*load_release_instances(folder, catalog, held=True), out_dir)
        # The format first: a misspelt name is said before the release is read.
        fmt, owner = find_export(catalog.project if catalog is not None else None,
                                 export_format)
        return export_release(owner, fmt, *load_release_instances(folder, catalog, held=True),
                              out_dir)

    _run(action)


def _release_folder(release: str, catalog: "Catalog | None") -> Path:
    """The folder ``memspec export`` reads: ``release`` itself, or, a bare
    ``<name>-<version>`` in a project, the project's dist/ folder of that name. Missing, the
    error says where it looked and what is built there."""
    folder = Path(release)
    if folder.is_dir():
        return folder
    looked, built = [release], ""
    if catalog is not None:
        project = catalog.project
        dist = project.default_dist
        # Only a bare name is looked for in dist/: "dist/x" there would be dist/dist/x.
        if len(folder.parts) == 1:
            if (dist / release).is_dir():
                return dist / release
            looked.append(project.display(dist / release))
        names = sorted(p.name for p in dist.iterdir() if (p / "manifest.json").is_file()) \
            if dist.is_dir() else []
        if names:
            built = f"built in {project.display(dist)}/: {', '.join(names)}; "
    raise SpecError.single(
        f"no built release at {' or '.join(looked)}; {built}run `memspec build` first "
        "(`memspec build --bundled --out DIR` for the releases that ship with memspec), or "
        "give the path of a release folder")

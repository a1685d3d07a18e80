"""``memspec validate``: load every spec and render a full group of every family."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .catalog import Catalog, yaml_files
from .errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_OK, CheckFailed, MemspecError, Problem
from .export import check_export_file
from .generate import FamilyGenerator
from .release import load_release_families
from .render import Renderer
from .spec import load_paradigm, load_release
from .yamlsafe import load_yaml_file

#: Seed used to render the proof groups of each family.
VALIDATION_SEED = 0
#: Most groups rendered to see every design of a family at least once.
VALIDATION_MAX_GROUPS = 8


@dataclass
class ValidationReport:
    families: int = 0
    paradigms: int = 0
    pools: int = 0
    releases: int = 0
    exports: int = 0
    instances: int = 0
    problems: list[Problem] = field(default_factory=list)
    exit_code: int = EXIT_OK

    def add(self, err: MemspecError) -> None:
        self.problems.extend(err.problems)
        code = EXIT_CHECK_FAILED if isinstance(err, CheckFailed) else EXIT_BAD_INPUT
        self.exit_code = max(self.exit_code, code)


def _kind(path: Path, catalog: Catalog) -> str | None:
    """What a YAML file is: by its folder under specs/, else by its top-level keys."""
    specs = catalog.project.specs.resolve()
    try:
        top = path.resolve().relative_to(specs).parts[0]
    except (ValueError, IndexError):
        top = ""
    by_folder = {"families": "family", "paradigms": "paradigm", "pools": "pool",
                 "releases": "release", "exports": "export"}
    if top in by_folder:
        return by_folder[top]
    data = load_yaml_file(path, catalog.project.display(path)).data
    if isinstance(data, dict):
        for key in ("family", "paradigm", "pool", "export"):
            if key in data:
                return key
        if "families" in data:
            return "release"
    return None


def _expand(paths: list[Path], catalog: Catalog, problems: list[Problem]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += yaml_files(path, problems, catalog.project.display)
        else:
            files.append(path)
    return files


def validate(catalog: Catalog, paths: list[Path] | None = None) -> ValidationReport:
    """Validate the given files and folders (default: all of specs/); every error is kept.

    Families are rendered (one full group each); releases are checked after them, loading
    only the families that were not already validated, so no problem is reported twice."""
    report = ValidationReport()
    project = catalog.project
    whole = not paths
    if whole:
        report.problems += catalog.problems
        report.problems += catalog.duplicate_family_problems()
        paths = [project.specs]
    loader = catalog.loader(explain=not whole)  # the whole tree reports paradigm problems
    renderer = Renderer(project)
    validated_families: set[Path] = set()
    releases = []
    for path in _expand(paths, catalog, report.problems):
        if not path.exists():
            report.problems.append(Problem("no such file or folder", str(path)))
            continue
        try:
            kind = _kind(path, catalog)
            if kind == "family":
                validated_families.add(path.resolve())
                family = loader.load(path)
                generator = FamilyGenerator(family, renderer, VALIDATION_SEED)
                designs = {d.name for d in family.designs}
                seen: set[str] = set()
                # At least one full group; more (up to a few) until every design has rendered,
                # since a design with `when` may skip the first group.
                for index in range(VALIDATION_MAX_GROUPS):
                    group = generator.group(index)
                    report.instances += len(group)
                    seen.update(i["design"] for i in group)
                    if seen >= designs:
                        break
                generator.checks.finish()
                report.families += 1
            elif kind == "paradigm":
                load_paradigm(path, project)
                report.paradigms += 1
            elif kind == "pool":
                loader.pool_file(path)
                report.pools += 1
            elif kind == "release":
                releases.append(path)
            elif kind == "export":
                check_export_file(path, project, renderer)
                report.exports += 1
            else:
                report.problems.append(Problem("not a family, paradigm, pool or release spec",
                                               project.display(path), 1, 1))
        except MemspecError as err:
            report.add(err)
    seen_releases: dict[str, str] = {}
    for path in releases:
        try:
            release = load_release(path, project)
            if release.full_name in seen_releases:
                report.problems.append(Problem(
                    f"release {release.full_name} is also declared in "
                    f"{seen_releases[release.full_name]}", release.located.file, 1, 1))
            seen_releases.setdefault(release.full_name, release.located.file)
            checked = frozenset(
                f.family_id for f in release.families
                if len(catalog.family_paths.get(f.family_id, [])) == 1
                and catalog.family_paths[f.family_id][0].resolve() in validated_families)
            load_release_families(catalog, release, skip=checked)
            report.releases += 1
        except MemspecError as err:
            report.add(err)
    if report.problems and report.exit_code == EXIT_OK:
        report.exit_code = EXIT_BAD_INPUT
    return report

"""Scaffold files (``specs/scaffolds/``): newer versions of what ``memspec new`` writes for a
paradigm. A paradigm's own ``scaffold:`` section is part of its file, which a frozen release
pins by hash; a scaffold that needs mending gets a new file here instead, and the highest
version of a paradigm's scaffold files takes the place of the section."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import Problem, SpecError, unknown_name
from .catalog import Catalog, yaml_files
from .project import LIBRARY_PREFIX, Project, library_root
from .schemas import schema_problems
from .spec_family import ParadigmUnusable
from .yamlsafe import Located, load_yaml_file

SCAFFOLDS_DIR = "scaffolds"


@dataclass(frozen=True)
class ScaffoldFile:
    """One version of a paradigm's scaffold."""

    paradigm_id: str
    version: int
    scaffold: Mapping[str, Any]
    located: Located


def load_scaffold_file(path: Path, project: Project) -> ScaffoldFile:
    """Load and check one scaffold file (its schema; the body is the paradigm schema's
    ``scaffold`` section)."""
    located = load_yaml_file(path, project.display(path))
    if located.data is None:
        raise located.error("file is empty")
    problems = schema_problems("scaffold", located)
    if problems:
        raise SpecError(problems)
    data = located.data
    return ScaffoldFile(data["scaffold_of"], data["version"], data["scaffold"], located)


def check_scaffold_file(path: Path, catalog: Catalog) -> None:
    """Refuse a scaffold file that does not load or names a paradigm the project cannot
    use (what ``validate`` runs on each)."""
    found = load_scaffold_file(path, catalog.project)
    usable = catalog.usable_paradigms()
    broken = catalog.broken_paradigms.get(found.paradigm_id)
    if broken is not None:
        # The paradigm's file has errors of its own: they are the one cause, told once.
        line, column = found.located.where(("scaffold_of",))
        raise ParadigmUnusable([Problem(
            f"paradigm {found.paradigm_id!r} is declared in {broken}, which has errors; this "
            "scaffold is checked once they are fixed", found.located.file, line, column,
            ("scaffold_of",))], found.paradigm_id, broken)
    if found.paradigm_id not in usable:
        raise found.located.error(unknown_name("paradigm", found.paradigm_id, sorted(usable)),
                                  ("scaffold_of",))


def newest_scaffolds(specs: Path, project: Project) -> dict[str, ScaffoldFile]:
    """The highest version of each paradigm's scaffold files under ``specs``; two files of
    one paradigm at one version are refused, each located."""
    problems: list[Problem] = []
    newest: dict[str, ScaffoldFile] = {}
    for path in yaml_files(specs / SCAFFOLDS_DIR, problems, project.display):
        found = load_scaffold_file(path, project)
        before = newest.get(found.paradigm_id)
        if before is not None and before.version == found.version:
            line, column = found.located.where(("version",))
            problems.append(Problem(
                f"scaffold version {found.version} of paradigm {found.paradigm_id!r} is also "
                f"in {before.located.file}", found.located.file, line, column, ("version",)))
        if before is None or found.version > before.version:
            newest[found.paradigm_id] = found
    if problems:
        raise SpecError(problems)
    return newest


def scaffold_for(project: Project, reference: str) -> ScaffoldFile | None:
    """The newest scaffold file for the paradigm a family names (``memspec:<id>``: the
    library's), or None where there is none."""
    if reference.startswith(LIBRARY_PREFIX) and project.uses_library:
        library = library_root()
        if library is None:
            return None
        return newest_scaffolds(library / "specs", project).get(
            reference.removeprefix(LIBRARY_PREFIX))
    return newest_scaffolds(project.specs, project).get(reference.removeprefix(LIBRARY_PREFIX))

"""Everything a project's specs/ folder declares: paradigms, families, pools and releases."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MemspecError, Problem, SpecError
from .project import Project
from .spec import FamilyLoader, FamilySpec, ParadigmSpec, ReleaseSpec, load_paradigm, load_release
from .yamlsafe import load_yaml_file


def yaml_files(folder: Path, problems: list[Problem], display: Callable[[Path], str]
               ) -> list[Path]:
    """The YAML files under ``folder``, sorted; a file (or symlink) resolving outside the
    folder is refused with a problem, so a spec tree cannot pull in files from elsewhere."""
    if not folder.is_dir():
        return []
    base = folder.resolve()
    found = []
    for path in sorted(folder.rglob("*.yaml"), key=lambda p: p.relative_to(folder).as_posix()):
        if not path.resolve().is_relative_to(base):
            problems.append(Problem(f"resolves outside {display(folder)}/ (a symlink?); spec "
                                    "files must live inside the tree", display(path), 1, 1))
        elif path.is_file():
            found.append(path)
    return found


class UnknownFamily(SpecError):
    """A family id that no readable family file declares."""


@dataclass
class Catalog:
    """Index of a project's specs. Families are found by id; problems are kept, not thrown,
    until someone asks for the broken thing (or validates everything)."""

    project: Project
    paradigms: dict[str, ParadigmSpec] = field(default_factory=dict)
    family_paths: dict[str, list[Path]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: Family files that could not be read far enough to learn their id, with why.
    unreadable: dict[Path, list[Problem]] = field(default_factory=dict)

    @classmethod
    def load(cls, project: Project) -> Catalog:
        catalog = cls(project)
        for path in catalog._files("paradigms"):
            try:
                paradigm = load_paradigm(path, project)
            except MemspecError as err:
                catalog.problems.extend(err.problems)
                continue
            if paradigm.paradigm_id in catalog.paradigms:
                other = catalog.paradigms[paradigm.paradigm_id].located.file
                catalog.problems.append(Problem(
                    f"paradigm {paradigm.paradigm_id!r} is also declared in {other}",
                    paradigm.located.file, 1, 1))
                continue
            catalog.paradigms[paradigm.paradigm_id] = paradigm
        for path in catalog._files("families"):
            try:
                data = load_yaml_file(path, project.display(path)).data
            except MemspecError as err:
                catalog.unreadable[path] = err.problems
                continue
            family_id = data.get("family") if isinstance(data, dict) else None
            if isinstance(family_id, str):
                catalog.family_paths.setdefault(family_id, []).append(path)
            else:
                catalog.unreadable[path] = [Problem("family file has no 'family' id",
                                                    project.display(path), 1, 1)]
        return catalog

    def _files(self, kind: str) -> list[Path]:
        return yaml_files(self.project.specs / kind, self.problems, self.project.display)

    def loader(self) -> FamilyLoader:
        return FamilyLoader(self.project, self.paradigms)

    def family_path(self, family: str) -> Path:
        """The file of a family given its id, or a path to a family file."""
        paths = self.family_paths.get(family)
        if paths and len(paths) > 1:
            raise SpecError.single(
                f"family id {family!r} is declared by several files: "
                + ", ".join(self.project.display(p) for p in paths))
        if paths:
            return paths[0]
        candidate = Path(family)
        if candidate.suffix == ".yaml" and candidate.is_file():
            return candidate.resolve()
        known = ", ".join(sorted(self.family_paths)) or "none"
        problems = [Problem(f"unknown family {family!r}; known families: {known}")]
        for unreadable in self.unreadable.values():
            # The family may be declared in a file too broken to read: say why each one failed.
            problems += [Problem(f"{p.message} (this family file could not be read)", p.file,
                                 p.line, p.column, p.json_path) for p in unreadable]
        raise UnknownFamily(problems)

    def family(self, family: str, loader: FamilyLoader | None = None) -> FamilySpec:
        """Load one family by id or path, with its paradigm and pools."""
        return (loader or self.loader()).load(self.family_path(family))

    def release_paths(self) -> list[Path]:
        return self._files("releases")

    def release(self, path: Path) -> ReleaseSpec:
        return load_release(path, self.project)

    def duplicate_family_problems(self) -> list[Problem]:
        problems = []
        for family_id, paths in sorted(self.family_paths.items()):
            for path in paths[1:]:
                problems.append(Problem(
                    f"family id {family_id!r} is also declared in "
                    f"{self.project.display(paths[0])}", self.project.display(path), 1, 1))
        return problems

    def pool_paths(self) -> list[Path]:
        return self._files("pools")

"""Everything a project's specs/ folder declares: paradigms, families, pools and releases."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.code_cache import cached_data
from ..core.errors import MemspecError, Problem, SpecError, lookalike_note, unknown_name
from .project import LIBRARY_PREFIX, Project, library_root
from .schemas import matches, schema_document
from .spec import FamilyLoader, FamilySpec, ParadigmSpec, ReleaseSpec, load_paradigm, load_release
from .yamlsafe import Located, load_yaml_file, load_yaml_text, parser_fingerprint, read_text


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
    #: The paradigms of memspec's library, by their names ``memspec:<id>``.
    library_paradigms: dict[str, ParadigmSpec] = field(default_factory=dict)
    family_paths: dict[str, list[Path]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: Family files that could not be read far enough to learn their id, with why.
    unreadable: dict[Path, list[Problem]] = field(default_factory=dict)
    #: Where each family file states its id (line, column).
    family_where: dict[Path, tuple[int, int]] = field(default_factory=dict)
    #: Problems of paradigm files: why a paradigm a family names may be missing.
    paradigm_problems: list[Problem] = field(default_factory=list)
    #: Every readable family file as parsed here, handed to loaders so none is parsed twice.
    family_documents: dict[Path, Located] = field(default_factory=dict)
    #: Paradigms declared in files that cannot be used (errors, or the id declared twice),
    #: by id, with the file: a family naming one reports that file, not an unknown paradigm.
    broken_paradigms: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, project: Project, keep_documents: bool = True) -> Catalog:
        """Index the project's paradigms and family files. With ``keep_documents`` every
        family file's parse is kept for the loaders (a command that loads every family parses
        none twice); without it only the index is kept, and a loader parses the few files it
        loads again (a command on one family: holding every parse doubled `generate`'s peak
        memory)."""
        catalog = cls(project)
        catalog._load_paradigms()
        start = len(catalog.problems)
        family_files = catalog._files("families")
        for problem in catalog.problems[start:]:  # files refused from the tree (symlinks)
            catalog.unreadable[project.root / (problem.file or "")] = [problem]
        pattern = schema_document("family")["$defs"]["dotted_id"]["pattern"]
        for path in family_files:
            display = project.display(path)
            try:
                if keep_documents:
                    located = load_yaml_file(path, display)
                    catalog.family_documents[path] = located
                    family_id, line, column = _family_id(located)
                else:
                    family_id, line, column = _indexed_family_id(path, display)
            except MemspecError as err:
                catalog.unreadable[path] = err.problems
                continue
            if not isinstance(family_id, str):
                catalog.unreadable[path] = [Problem("family file has no 'family' id",
                                                    display, line, column)]
            elif not matches(pattern, family_id):
                # Not an id at all (a look-alike letter, a zero-width space): listing it among
                # the known families would only show a name that looks like the one asked for.
                catalog.unreadable[path] = [Problem(
                    f"family id {family_id!r} is not a valid id{lookalike_note(family_id)}",
                    display, line, column, ("family",))]
            else:
                catalog.family_paths.setdefault(family_id, []).append(path)
                catalog.family_where[path] = (line, column)
        return catalog

    def _load_paradigms(self) -> None:
        """Index the paradigm files. An id declared twice is ambiguous: it names neither."""
        start = len(self.problems)
        declared: dict[str, list[ParadigmSpec]] = {}
        for path in self._files("paradigms"):
            try:
                paradigm = load_paradigm(path, self.project)
            except MemspecError as err:
                self.problems.extend(err.problems)
                self._note_broken(path, "")
                continue
            declared.setdefault(paradigm.paradigm_id, []).append(paradigm)
        for paradigm_id, paradigms in declared.items():
            first = paradigms[0]
            if len(paradigms) == 1:
                self.paradigms[paradigm_id] = first
            for other in paradigms[1:]:
                self.broken_paradigms.setdefault(paradigm_id, other.located.file)
                line, column = other.located.where(("paradigm",))
                self.problems.append(Problem(
                    f"paradigm {paradigm_id!r} is also declared in {first.located.file}",
                    other.located.file, line, column, ("paradigm",)))
        self.paradigm_problems = self.problems[start:]
        self._add_library_paradigms()

    def _add_library_paradigms(self) -> None:
        """The library's paradigms, each under ``memspec:<id>`` (where the project is the
        library itself, these name its own paradigms)."""
        if not self.project.uses_library:
            self.library_paradigms = {LIBRARY_PREFIX + paradigm_id: paradigm
                                      for paradigm_id, paradigm in self.paradigms.items()}
            return
        library = library_root()
        if library is None:
            return
        problems: list[Problem] = []
        for path in yaml_files(library / "specs" / "paradigms", problems, self.project.display):
            try:
                paradigm = load_paradigm(path, self.project)
            except MemspecError as err:
                problems.extend(err.problems)
                self._note_broken(path, LIBRARY_PREFIX)
                continue
            self.library_paradigms.setdefault(LIBRARY_PREFIX + paradigm.paradigm_id, paradigm)
        # A broken library is this copy of memspec's fault, but say so where it shows.
        self.paradigm_problems = [*self.paradigm_problems, *problems]

    def _note_broken(self, path: Path, prefix: str) -> None:
        """Remember the paradigm id a file that cannot be used declares, if it can be read."""
        try:
            data = load_yaml_file(path, self.project.display(path)).data
        except MemspecError:
            return
        if isinstance(data, dict) and isinstance(data.get("paradigm"), str):
            self.broken_paradigms.setdefault(prefix + data["paradigm"],
                                             self.project.display(path))

    def _files(self, kind: str) -> list[Path]:
        return yaml_files(self.project.specs / kind, self.problems, self.project.display)

    def usable_paradigms(self) -> dict[str, ParadigmSpec]:
        """Every paradigm a family of the project may name: its own, and the library's."""
        return {**self.paradigms, **self.library_paradigms}

    def loader(self, explain: bool = True, probe_patterns: bool = False) -> FamilyLoader:
        """A family loader over this catalog's paradigms. With ``explain``, a family naming a
        paradigm that is missing is also told what is wrong with the paradigm files (leave it
        off where those problems are reported anyway); with ``probe_patterns``, a family's
        declared outcome and signal patterns are probed for runaway matching (validate and
        freeze do)."""
        return FamilyLoader(self.project, self.usable_paradigms(),
                            self.paradigm_problems if explain else (), self.family_documents,
                            probe_patterns, self.broken_paradigms)

    def family_path(self, family: str) -> Path:
        """The file of a family given its id, or a path to a family file."""
        paths = self.family_paths.get(family)
        if paths and len(paths) > 1:
            names = ", ".join(self.project.display(p) for p in paths)
            raise SpecError([Problem(f"family id {family!r} is declared by several files: "
                                     f"{names}", self.project.display(p),
                                     *self.family_where.get(p, (1, 1)), ("family",))
                             for p in paths])
        if paths:
            return paths[0]
        candidate = Path(family)
        if candidate.suffix == ".yaml" and candidate.is_file():
            return candidate.resolve()
        problems = [Problem(unknown_name("family", family, sorted(self.family_paths), "families"))]
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
                    f"{self.project.display(paths[0])}", self.project.display(path),
                    *self.family_where.get(path, (1, 1)), ("family",)))
        return problems


def _family_id(located: Located) -> tuple[str | None, int, int]:
    """The ``family`` id a parsed family file declares (None where it declares no string),
    with where it is written."""
    data = located.data
    family_id = data.get("family") if isinstance(data, dict) else None
    line, column = located.where(("family",))
    return (family_id if isinstance(family_id, str) else None), line, column


def _indexed_family_id(path: Path, display: str) -> tuple[str | None, int, int]:
    """``_family_id`` of a family file, kept between runs by its text alone: indexing the
    project for a command on one family reads three numbers a file, not every file's whole
    parse (two fifths of `validate` of one family file)."""
    text = read_text(path, display)
    family_id, line, column = cached_data(
        "family-id", (parser_fingerprint(), text),
        lambda: _family_id(load_yaml_text(text, display)))
    return family_id, line, column

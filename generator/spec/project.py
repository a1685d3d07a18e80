"""Where a project's specs, templates and manifests live, and keeping every path inside them.

A project is the folder holding the marker file ``memspec.yaml`` (``memspec init`` writes
one). Beside the project's own files, the specs, templates and manifests that ship with memspec
(the library) are addressed by names that begin with ``memspec:``: a pool
``memspec:pools/<...>.yaml``, a template ``memspec:<...>.j2``, a paradigm
``memspec:<paradigm id>``. Only that prefix reaches the library, so a project's own file
never stands in for a library one (or the other way round) by accident.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path, PurePosixPath

from ..core.errors import SpecError

ROOT_ENV = "MEMSPEC_ROOT"
#: The file that makes a folder a memspec project.
MARKER = "memspec.yaml"
#: How a project names an item of the library that ships with memspec.
LIBRARY_PREFIX = "memspec:"
#: Where an installed copy keeps the library (package data beside the code).
_PACKAGED_LIBRARY = Path(__file__).resolve().parents[1] / "library"  # the package root's


class NoProject(SpecError):
    """A command that needs a project was run outside of one."""


@cache
def library_root() -> Path | None:
    """The folder of the library: the package data of an installed copy, or the checkout
    this code runs from (which is a project itself); None when neither has one."""
    if (_PACKAGED_LIBRARY / "specs").is_dir():
        return _PACKAGED_LIBRARY
    checkout = _PACKAGED_LIBRARY.parent.parent
    if (checkout / MARKER).is_file() and (checkout / "specs").is_dir() \
            and (checkout / "templates").is_dir():
        return checkout
    return None


def library_project() -> Project:
    """The library as a project of its own (to build the bundled releases from)."""
    root = library_root()
    if root is None:
        raise SpecError.single("this copy of memspec has no bundled specs (a wheel built "
                               "without its package data?)")
    return Project(root)


@dataclass(frozen=True)
class Project:
    """A memspec project: a folder holding ``specs/``, ``templates/`` and ``manifests/``."""

    root: Path

    @property
    def specs(self) -> Path:
        return self.root / "specs"

    @property
    def templates(self) -> Path:
        return self.root / "templates"

    @property
    def manifests(self) -> Path:
        """The committed manifests (``own_folder``: never a symlink leaving the project)."""
        return self.own_folder("manifests")

    @property
    def default_dist(self) -> Path:
        """Where releases are built unless told otherwise (``own_folder``)."""
        return self.own_folder("dist")

    def own_folder(self, name: str) -> Path:
        """The project's folder ``name``, refused where it is a symlink (or lies under one)
        leading out of the project: what memspec reads as trusted there, or writes there,
        must be the project's, as every spec, template and pool must."""
        folder = self.root / name
        if (folder.is_symlink() or folder.exists()) and \
                not folder.resolve().is_relative_to(self.root.resolve()):
            raise SpecError.single(f"{name}/ resolves outside the project (a symlink?); it "
                                   "must be a folder of the project", str(folder))
        return folder

    @cached_property
    def is_library(self) -> bool:
        """Whether this project is memspec's library itself: the library folder of the
        running copy, or a project whose marker says ``library: true`` (the memspec
        repository, wherever it lies). There ``memspec:`` names are the project's own files,
        so what a release records among its inputs does not depend on which copy of memspec
        builds it."""
        library = library_root()
        if library is not None and library == self.root.resolve():
            return True
        return marker_declares_library(self.root)

    @cached_property
    def _other_library(self) -> Path | None:
        """The library's folder where it is another folder than this project (a user's
        project); None in the library itself. Worked out once: ``display`` runs often."""
        return None if self.is_library else library_root()

    @property
    def uses_library(self) -> bool:
        """Whether the library is another folder than this project (a user's project)."""
        return self._other_library is not None

    def display(self, path: Path) -> str:
        """A path as shown in messages and manifests: relative to the root, with ``/``; a file
        of the library as ``memspec:`` and its path in the library."""
        library = self._other_library
        if library is not None and path.is_relative_to(library):
            return LIBRARY_PREFIX + path.relative_to(library).as_posix()
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def path_of(self, name: str) -> Path:
        """The file a display name (``display``) stands for."""
        if name.startswith(LIBRARY_PREFIX):
            return self._library_base(self.root) / name[len(LIBRARY_PREFIX):]
        return self.root / name

    def _library_base(self, base: Path) -> Path:
        """The library's counterpart of ``base`` (the root, specs/ or templates/): ``base``
        itself in the library."""
        if self.is_library:
            return base
        library = library_root()
        if library is None:
            raise SpecError.single("this copy of memspec has no bundled library to take "
                                   f"{LIBRARY_PREFIX} names from")
        return library / base.relative_to(self.root)

    def resolve_inside(self, base: Path, relative: str, what: str, *, origin: str | None = None,
                       line: int | None = None, column: int | None = None) -> Path:
        """Resolve ``relative`` under ``base``; refuse anything that leaves ``base``.

        Absolute paths, ``..`` segments and symlinks pointing outside are all refused, so a
        spec from a stranger cannot read files elsewhere on the machine. A ``memspec:`` name
        is resolved the same way under the library's counterpart of ``base``.
        """
        if relative.startswith(LIBRARY_PREFIX):
            base = self._library_base(base)
            relative = relative[len(LIBRARY_PREFIX):]
        pure = PurePosixPath(relative)
        if pure.is_absolute() or "\\" in relative or any(p == ".." for p in pure.parts):
            raise SpecError.single(
                f"{what} path {relative!r} must stay inside {self.display(base)}/",
                origin, line, column,
            )
        candidate = base / pure
        try:
            real = candidate.resolve(strict=True)
        except (FileNotFoundError, NotADirectoryError):
            raise SpecError.single(
                f"{what} {relative!r} not found in {self.display(base)}/", origin, line, column
            ) from None
        except (OSError, RuntimeError) as exc:
            raise SpecError.single(f"{what} {relative!r} cannot be opened: {exc}", origin, line,
                                   column) from None
        if not real.is_relative_to(base.resolve()):
            raise SpecError.single(
                f"{what} {relative!r} resolves outside {self.display(base)}/ (symlink?)",
                origin, line, column,
            )
        if not real.is_file():
            raise SpecError.single(f"{what} {relative!r} is not a file", origin, line, column)
        return candidate


def marker_declares_library(root: Path) -> bool:
    """Whether the marker of the project at ``root`` says ``library: true``. A marker whose
    ``library`` is not true or false is refused, located; a missing or unreadable marker
    declares nothing (``newer_marker_warning`` reports a malformed one)."""
    from .yamlsafe import load_yaml_file

    path = root / MARKER
    if not path.is_file():
        return False
    located = load_yaml_file(path, MARKER)
    if not isinstance(located.data, dict):
        return False
    declared = located.data.get("library", False)
    if not isinstance(declared, bool):
        raise located.error("library must be true or false (true only in memspec's own "
                            "repository: its memspec: names are its own files)", ("library",))
    return declared


def newer_marker_warning(project: Project, installed: str) -> str | None:
    """A warning when the project's marker says it was made with a newer memspec than the
    ``installed`` one (its specs may use what this version does not know), else None. A
    marker that is not a mapping of strings is refused, located."""
    from .yamlsafe import load_yaml_file

    path = project.root / MARKER
    if not path.is_file():
        return None  # a root named with --root may have no marker
    located = load_yaml_file(path, project.display(path))
    if not isinstance(located.data, dict):
        raise located.error(f"{MARKER} must be a mapping (project, memspec_version)")
    made_with = located.data.get("memspec_version")
    if made_with is None:
        return None
    if not isinstance(made_with, str) or not made_with[:1].isdigit():
        raise located.error("memspec_version must be a version such as '0.1.0'",
                            ("memspec_version",))
    if installed[:1].isdigit() and _version_key(made_with) > _version_key(installed):
        return (f"warning: this project was made with memspec {made_with}, newer than the "
                f"memspec {installed} running it; upgrade memspec if a spec is refused")
    return None


def _version_key(version: str) -> tuple[int, ...]:
    """The leading numbers of a version, trailing zeros dropped ('0.10.2rc1' -> (0, 10, 2))."""
    numbers = []
    for part in version.split("."):
        digits = len(part) - len(part.lstrip("0123456789"))
        if not digits:
            break
        numbers.append(int(part[:digits]))
        if digits < len(part):
            break
    while numbers and numbers[-1] == 0:  # 1.0 is 1.0.0
        numbers.pop()
    return tuple(numbers)


def _looks_like_project(path: Path) -> bool:
    return (path / "specs").is_dir() and (path / "templates").is_dir()


def is_project(path: Path) -> bool:
    """Whether ``path`` is a memspec project: it holds the marker file."""
    return (path / MARKER).is_file()


def find_project(explicit: Path | None = None) -> Project:
    """The project to work on: ``--root``, else $MEMSPEC_ROOT, else the nearest folder upward
    from the working directory holding the marker file. Never the installed copy: outside a
    project, this says so (and how to start one).

    A root named explicitly may also be a folder with specs/ and templates/ but no marker: it
    was named, so it is no accident."""
    if explicit is not None:
        root = explicit.resolve()
        if not is_project(root) and not _looks_like_project(root):
            raise NoProject.single(f"{explicit} is not a memspec project (it has no {MARKER}, "
                                   f"nor specs/ and templates/); `memspec init {explicit}` "
                                   "makes one")
        return Project(root)
    env = os.environ.get(ROOT_ENV)
    if env:
        return find_project(Path(env))
    here = Path.cwd().resolve()
    for candidate in (here, *here.parents):
        if is_project(candidate):
            return Project(candidate)
    raise NoProject.single(
        f"no memspec project here or in any folder above (none holds {MARKER}): run "
        "`memspec init` to start one here, or pass --root"
    )

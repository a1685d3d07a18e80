"""Where a project's specs, templates and manifests live, and keeping every path inside them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .errors import SpecError

ROOT_ENV = "MEMSPEC_ROOT"


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

    def display(self, path: Path) -> str:
        """A path as shown in messages and manifests: relative to the root, with ``/``."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def resolve_inside(self, base: Path, relative: str, what: str, *, origin: str | None = None,
                       line: int | None = None, column: int | None = None) -> Path:
        """Resolve ``relative`` under ``base``; refuse anything that leaves ``base``.

        Absolute paths, ``..`` segments and symlinks pointing outside are all refused, so a
        spec from a stranger cannot read files elsewhere on the machine.
        """
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


def _looks_like_project(path: Path) -> bool:
    return (path / "specs").is_dir() and (path / "templates").is_dir()


def find_project(explicit: Path | None = None) -> Project:
    """The project to work on: ``--root``, else $MEMSPEC_ROOT, else the nearest folder upward
    from the working directory holding specs/ and templates/, else the checkout memspec was
    installed from (an editable install)."""
    if explicit is not None:
        root = explicit.resolve()
        if not _looks_like_project(root):
            raise SpecError.single(f"{explicit} has no specs/ and templates/ folders")
        return Project(root)
    env = os.environ.get(ROOT_ENV)
    if env:
        return find_project(Path(env))
    here = Path.cwd().resolve()
    for candidate in (here, *here.parents):
        if _looks_like_project(candidate):
            return Project(candidate)
    checkout = Path(__file__).resolve().parent.parent
    if _looks_like_project(checkout):
        return Project(checkout)
    raise SpecError.single(
        "no memspec project found: run inside a folder with specs/ and templates/, or pass --root"
    )

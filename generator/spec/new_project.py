"""``memspec init``: make a folder a memspec project (its folders, marker, README and ignores).

The project starts empty: its families may follow its own paradigms or those of memspec's
library (``memspec:<paradigm id>``), and draw on the library's pools and templates by their
``memspec:`` names (see ``project``). Nothing that exists is ever overwritten.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..core.errors import SpecError
from ..core.version import memspec_version
from .project import MARKER, is_project
from .yamlsafe import dump_yaml

#: The folders of a project; each holds a .gitkeep so that an empty one is committed too.
PROJECT_FOLDERS = ("specs/families", "specs/paradigms", "specs/pools", "specs/releases",
                   "specs/exports", "templates", "manifests")


def project_name(folder: Path) -> str:
    """A project name from a folder's name: lowercase words joined by ``_``."""
    words = re.findall(r"[a-z0-9]+", folder.name.lower())
    name = "_".join(words)
    return name if name[:1].isalpha() else f"project_{name}" if name else "project"


def _library_paradigms() -> list[str]:
    """The ids of the paradigms memspec's library ships, sorted (read from their files)."""
    from .catalog import Catalog
    from .project import LIBRARY_PREFIX, library_project

    try:
        catalog = Catalog.load(library_project())
    except SpecError:
        return []
    return sorted(LIBRARY_PREFIX + p for p in catalog.paradigms)


def _readme(name: str, paradigms: list[str]) -> str:
    example = paradigms[0] if paradigms else "PARADIGM"
    listed = "".join(f"- `{p}`\n" for p in paradigms) or "- (none in this copy of memspec)\n"
    return f"""# {name}

A benchmark made with memspec: families in `specs/families/`, their templates in
`templates/`, releases in `specs/releases/`, and the committed manifests of frozen releases
in `manifests/`. Paradigms of its own go in `specs/paradigms/`; those that ship with memspec,
and its pools and templates, are used by their `memspec:` names:

{listed}
Start a family, check it, and look at a group:

```
memspec new {name}.area.first_family --paradigm {example}
memspec validate
memspec show {name}.area.first_family
```

Freeze a release (a file under `specs/releases/` naming families, group counts and a seed),
then commit its manifest; anyone can rebuild it and check every byte:

```
memspec freeze specs/releases/{name}-v1.yaml
memspec build
memspec verify dist/{name}-v1
```
"""


def project_files(folder: Path) -> dict[Path, str]:
    """Every file ``init`` writes into ``folder``, with its text."""
    name = project_name(folder)
    marker = ("# This folder is a memspec project: commands run here (or below) use its specs/,\n"
              "# templates/ and manifests/.\n"
              + dump_yaml({"project": name, "memspec_version": memspec_version()}, MARKER))
    files = {folder / MARKER: marker,
             folder / ".gitignore": "# Built releases: rebuilt byte for byte from the specs "
                                    "and manifests/.\n/dist/\n"
                                    "# Compiled templates kept between runs (safe to delete).\n"
                                    "/.memspec_cache/\n",
             folder / "README.md": _readme(name, _library_paradigms())}
    for sub in PROJECT_FOLDERS:
        files[folder / sub / ".gitkeep"] = ""
    return files


def init_project(folder: Path) -> list[Path]:
    """Make ``folder`` (created if missing) a memspec project; returns the files written:
    none where it is a project already. A folder that holds files and is not a project is
    refused; an existing file is never overwritten."""
    if folder.exists() and not folder.is_dir():
        raise SpecError.single(f"{folder} is a file, not a folder")
    if is_project(folder):
        return []
    if folder.is_dir() and any(folder.iterdir()):
        raise SpecError.single(f"{folder} is not empty and is not a memspec project (it has "
                               f"no {MARKER}); choose an empty or new folder")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for path, text in project_files(folder).items():
        if path.exists() or path.is_symlink():
            continue
        existing = next(a for a in (path.parent, *path.parent.parents) if a.exists())
        if not existing.resolve().is_relative_to(folder.resolve()):
            raise SpecError.single(f"{existing} leads outside {folder} (a symlink?); "
                                   "nothing more written")
        path.parent.mkdir(parents=True, exist_ok=True)
        # "x": a file that appears meanwhile is not overwritten either.
        with path.open("x", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        written.append(path)
    return written

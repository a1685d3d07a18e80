"""The Jinja loader of a project's templates/: a path that leaves it is refused, and every
file it reads is remembered (for the manifest's inputs and error messages)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from ..core.errors import SpecError
from ..spec.project import Project
from ..spec.yamlsafe import read_text
from .jinja_output import _RESERVED


class _TreeLoader(jinja2.BaseLoader):
    """Loads templates by path relative to templates/, refusing paths that leave it."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.loaded: set[Path] = set()
        self.names: set[str] = set()  # display names, as template code objects carry them

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:
        path = self.project.resolve_inside(self.project.templates, template, "template")
        text = read_text(path, self.project.display(path))
        if any(c in text for c in _RESERVED):
            raise SpecError.single("template contains reserved control characters",
                                   self.project.display(path), 1, 1)
        self.loaded.add(path)
        self.names.add(self.project.display(path))
        return text, self.project.display(path), lambda: True

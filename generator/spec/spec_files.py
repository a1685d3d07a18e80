"""Reading one spec file: parsed, checked against its schema, repeated names refused, and
problems reported at a path of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import Problem, ProblemCollector, SpecError
from .project import Project
from .schemas import schema_problems
from .yamlsafe import Located, load_yaml_file


def load_checked(path: Path, project: Project, schema: str,
                  parsed: Located | None = None) -> Located:
    located = parsed or load_yaml_file(path, project.display(path))
    if located.data is None:
        raise located.error("file is empty")
    problems = schema_problems(schema, located)
    if problems:
        raise SpecError(problems)
    return located


def refuse_repeats(located: Located, key: str, names: list[str], what: str) -> None:
    """Raise if a name occurs twice in the list at ``key``, pointing at each repeat."""
    problems = []
    for index, name in enumerate(names):
        first = names.index(name)
        if first != index:
            line, col = located.where((key, index))
            problems.append(Problem(f"{what} {name!r} is listed twice (first at entry {first})",
                                    located.file, line, col, (key, index)))
    if problems:
        raise SpecError(problems)


def problem_in(located: Located, out: ProblemCollector) -> Any:
    """What reports a problem at a path of ``located``'s file."""
    def problem(message: str, where: tuple) -> None:
        line, col = located.where(where)
        out.add(Problem(message, located.file, line, col, where))
    return problem

"""Loading one paradigm file: its phases, axes, scorers, shared slots and checks."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import Problem, SpecError
from . import audit_declarations
from .project import Project
from .spec_family_checks import bad_patterns, check_reading
from .spec_files import load_checked, refuse_repeats
from .spec_types import ParadigmSpec


def load_paradigm(path: Path, project: Project) -> ParadigmSpec:
    """Load one paradigm file."""
    located = load_checked(path, project, "paradigm")
    data = located.data
    names = [p["name"] for p in data["phases"]]
    refuse_repeats(located, "phases", names, "phase")
    problems: list[Problem] = []

    def problem(message: str, where: tuple) -> None:
        line, col = located.where(where)
        problems.append(Problem(message, located.file, line, col, where))

    for index, why in bad_patterns(data.get("abstain", []), probed=True):
        problem(f"abstain pattern {why}", ("abstain", index))
    if "reading" in data:
        check_reading(data["reading"], ("reading",), problem)
    for name, slot in data.get("slots", {}).items():
        if "override" in slot:
            problem("'override' is for a family's slot that replaces a paradigm's",
                    ("slots", name, "override"))
    audit_declarations.check(data.get("audit", {}), tuple(names), None, problem)
    if problems:
        raise SpecError(problems)
    return ParadigmSpec(
        paradigm_id=data["paradigm"],
        version=data["version"],
        description=data["description"],
        phases=tuple(names),
        optional_phases=frozenset(p["name"] for p in data["phases"] if p.get("optional")),
        axes={k: tuple(v) for k, v in data.get("axes", {}).items()},
        scorers=tuple(data.get("scorers", ("exact", "regex", "canonical", "choice", "judge"))),
        checks=tuple(data.get("checks", ())),
        scaffold=data.get("scaffold"),
        located=located,
        path=path,
        slots=data.get("slots", {}),
    )

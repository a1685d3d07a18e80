"""``memspec new``: write a family (spec, templates, pools) that validates as it is.

A paradigm may carry a ``scaffold:`` section (a family body, templates and pools, with the
tokens FAMILY_ID and FAMILY_DIR substituted). Without one, a generic family is written: one
message per phase and a trivially checkable answer. Either way the family is a placeholder that
freezes and passes the audit as it is, for as many groups as its placeholder pools have items.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import SpecError
from .project import LIBRARY_PREFIX, Project
from .scaffold_files import ScaffoldFile
from .spec import ParadigmSpec
from .yamlsafe import Located, dump_yaml


def _substitute(value: Any, tokens: dict[str, str]) -> Any:
    if isinstance(value, str):
        for token, replacement in tokens.items():
            value = value.replace(token, replacement)
        return value
    if isinstance(value, dict):
        return {k: _substitute(v, tokens) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, tokens) for v in value]
    return value


#: The placeholder pool: as many groups as it has items freeze without a repeat.
PLACEHOLDER_SUBJECTS = ["a brass compass", "a paper map", "a spare key", "a tide table"]


def _phase_template(phase: str, asks: bool) -> str:
    """A placeholder phase. The phase that ``asks`` (the last, for a choice) lists the options
    without naming the right one, so that only memory of the earlier phases can tell."""
    if asks:
        return ('{% message "user" %}\n'
                f"({phase}) Write the question here, without naming the right option. Answer "
                "with the letter of one option.\n"
                "{% for option in options %}\n{{ loop.index0 | letter }}) {{ option }}\n"
                "{% endfor %}\n{% endmessage %}\n")
    return ('{% message "user" %}\n'
            f"({phase}) Write this phase of the family. Slot values are available, e.g. "
            "{{ subject }}.\n{% endmessage %}\n")


def _generic_scaffold(paradigm: ParadigmSpec) -> dict[str, Any]:
    """A family any paradigm accepts, which freezes and passes the audit as it is (for as
    many groups as the placeholder pool has items): each group draws a subject the others do
    not, and a choice has a wrong option beside it, in every position by rotation."""
    scorer = paradigm.scorers[0]
    choice = scorer == "choice"
    last = paradigm.phases[-1]
    templates = {f"{phase}.j2": _phase_template(phase, choice and phase == last)
                 for phase in paradigm.phases}
    answer: dict[str, Any] = {"scorer": scorer}
    slots: dict[str, Any] = {"subject": {"from": "pools/FAMILY_DIR/subjects.yaml",
                                         "balanced": True}}
    family: dict[str, Any] = {"description": "TODO: say what this family measures."}
    if scorer == "judge":
        answer["rubric"] = "Rate from 1 to 10 how well the response handles {{ subject }}."
    elif choice:
        slots["decoy"] = {"from": "pools/FAMILY_DIR/subjects.yaml", "distinct_from": ["subject"]}
        slots["options"] = {"expr": "[subject, decoy]"}
        family["designs"] = {"main": {"axes": {"rotation": {
            "values": ["r0", "r1"],
            "transform": {"name": "rotate", "args": {"slot": "options"}}}}}}
        answer.update(options="options", gold="{{ subject }}")
    elif scorer == "regex":
        answer["gold"] = "{{ subject | re_escape }}"
        answer["example"] = "{{ subject }}"
    else:
        answer["gold"] = "{{ subject }}"
    family.update(slots=slots, phases={phase: f"FAMILY_DIR/{phase}.j2"
                                       for phase in paradigm.phases}, answer=answer)
    return {
        "family": family,
        "templates": templates,
        "pools": {
            "subjects": {
                "pool": "FAMILY_ID.subjects",
                "description": "Placeholder subjects; replace them with curated values.",
                "items": PLACEHOLDER_SUBJECTS,
            }
        },
    }


def _to_library(relative: str, own: set[str]) -> str:
    return relative if relative in own or relative.startswith(LIBRARY_PREFIX) \
        else LIBRARY_PREFIX + relative


def _phase_in_library(phase: Any, own_templates: set[str]) -> Any:
    """A phase (a template name, a ``template:`` or ``phrasings:`` each of either) with the
    templates it names that the scaffold does not write named by their ``memspec:`` names."""
    if isinstance(phase, str):
        return _to_library(phase, own_templates)
    if isinstance(phase, dict) and isinstance(phase.get("template"), str):
        return {**phase, "template": _to_library(phase["template"], own_templates)}
    if isinstance(phase, dict) and isinstance(phase.get("phrasings"), list):
        return {**phase, "phrasings": [_phase_in_library(p, own_templates)
                                       for p in phase["phrasings"]]}
    return phase


def library_references(family: dict[str, Any], own_pools: set[str], own_templates: set[str]
                       ) -> dict[str, Any]:
    """A library paradigm's scaffold family as a project other than the library uses it: the
    pools and templates it names that the scaffold does not write itself (``own_*``) are the
    library's, written in the library's tree, so they are named by their ``memspec:`` names
    (a project's file of the same path never stands in for them)."""
    family = dict(family)
    slots = {}
    for name, slot in family.get("slots", {}).items():
        slot = dict(slot)
        if isinstance(slot.get("from"), str):
            slot["from"] = _to_library(slot["from"], own_pools)
        table = slot.get("table")
        if isinstance(table, dict) and isinstance(table.get("columns"), dict):
            columns = {column: ({**spec, "from": _to_library(spec["from"], own_pools)}
                                if isinstance(spec, dict) and isinstance(spec.get("from"), str)
                                else spec)
                       for column, spec in table["columns"].items()}
            slot["table"] = {**table, "columns": columns}
        slots[name] = slot
    if slots:
        family["slots"] = slots
    phases = {name: _phase_in_library(phase, own_templates)
              for name, phase in family.get("phases", {}).items()}
    if phases:
        family["phases"] = phases
    return family


def chosen_scaffold(paradigm: ParadigmSpec, newer: ScaffoldFile | None
                    ) -> tuple[Mapping[str, Any], Located]:
    """What ``memspec new`` writes for ``paradigm``, and the file that declares it: the
    newest scaffold file for it, else the paradigm's own section, else a generic family."""
    if newer is not None:
        return newer.scaffold, newer.located
    return paradigm.scaffold or _generic_scaffold(paradigm), paradigm.located


def scaffold_family(project: Project, family_id: str, paradigm: ParadigmSpec,
                    reference: str | None = None, newer: ScaffoldFile | None = None
                    ) -> list[Path]:
    """Write the files of a new family of ``paradigm`` (named ``reference`` in the family:
    ``memspec:<id>`` for one of the library), from ``newer`` where the paradigm's scaffold has
    a newer version; refuse to overwrite anything. Returns the paths."""
    family_dir = family_id.replace(".", "/")
    tokens = {"FAMILY_ID": family_id, "FAMILY_DIR": family_dir}
    body, declared_in = chosen_scaffold(paradigm, newer)
    scaffold = _substitute(dict(body), tokens)
    reference = reference or paradigm.paradigm_id
    family = scaffold["family"]
    if reference.startswith(LIBRARY_PREFIX) and project.uses_library:
        family = library_references(
            family, {f"pools/{family_dir}/{name}.yaml" for name in scaffold.get("pools", {})},
            {f"{family_dir}/{name}" for name in scaffold.get("templates", {})})
    body = {"family": family_id, "version": 1, "paradigm": reference, **family}
    files: dict[Path, str] = {
        project.specs / "families" / f"{family_dir}.yaml":
            dump_yaml(body, f"scaffold of {paradigm.paradigm_id}"),
    }
    #: Where the paradigm names each file (its JSON path), for errors.
    named: dict[Path, tuple[str, ...]] = {}
    for name, text in scaffold.get("templates", {}).items():
        files[project.templates / family_dir / name] = text
        named[project.templates / family_dir / name] = ("scaffold", "templates", name)
    for name, pool in scaffold.get("pools", {}).items():
        files[project.specs / "pools" / family_dir / f"{name}.yaml"] = dump_yaml(
            pool, f"scaffold of {paradigm.paradigm_id}")
        named[project.specs / "pools" / family_dir / f"{name}.yaml"] = ("scaffold", "pools", name)
    for path in files:
        if not path.resolve().is_relative_to(project.root.resolve()) or \
                ".." in path.relative_to(project.root).parts:
            where = named.get(path, ("scaffold",))
            raise declared_in.error(
                f"the scaffold of paradigm {paradigm.paradigm_id!r} would write {where[-1]!r} "
                "outside the project", where)
    existing = [project.display(p) for p in files if p.exists()]
    if existing:
        raise SpecError.single("refusing to overwrite existing files: " + ", ".join(existing))
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)

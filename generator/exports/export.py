"""``memspec export``: lay a built release out the way another tool expects.

An export format is YAML under ``specs/exports/``: for each paradigm, the path of each
family's file and the shape of its records and of the file, every leaf a Jinja expression.
Nothing about any particular tool is written in Python.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.errors import Problem, SpecError
from ..core.limits import working_on
from ..engine.render import Renderer, TemplateOrigin
from ..spec.catalog import yaml_files
from ..spec.instances import phase_messages
from ..spec.project import LIBRARY_PREFIX, Project, library_project, library_root
from ..spec.schemas import schema_problems
from ..spec.yamlsafe import Located, load_yaml_file
from .export_swap import write_export


@dataclass(frozen=True)
class ExportFormat:
    name: str
    layouts: Mapping[str, Mapping[str, Any]]
    located: Located
    extra: tuple[Mapping[str, Any], ...] = ()  # files written once for the whole export
    #: Named plain values (a table a format needs in several places, declared once), seen by
    #: every expression as ``constants``.
    constants: Mapping[str, Any] = field(default_factory=dict)


#: The format memspec writes itself (an inspect_ai dataset and task), besides the declared ones.
BUILT_IN_FORMAT = "inspect"


def find_export(project: Project | None, name: str) -> tuple[ExportFormat, Project]:
    """The export format ``name`` and the project whose renderer draws it.

    One rule, whatever folder the command runs in: ``memspec:NAME`` is the format that ships
    with memspec (under the library's specs/exports/); a plain ``NAME`` is the project's own
    format of that name where it declares one, and otherwise the library's. Without a project
    (a downloaded release) the library's formats are the only ones."""
    problems: list[Problem] = []
    known: list[str] = []
    library_name = name.startswith(LIBRARY_PREFIX)
    # (folder, the project that reads it, how an error lists its names): the project's own
    # first, then the library's.
    sources: list[tuple[Path, Project, str]] = []
    if project is not None and not library_name:
        sources.append((project.specs / "exports", project, ""))
    library = library_root()
    if library is not None and (project is None or not project.is_library or library_name):
        shown = LIBRARY_PREFIX if project is not None and project.uses_library else ""
        sources.append((library / "specs" / "exports", project or library_project(), shown))
    wanted = name.removeprefix(LIBRARY_PREFIX)
    for folder, owner, shown in sources:
        for path in yaml_files(folder, problems, owner.display):
            located = load_yaml_file(path, owner.display(path))
            if not isinstance(located.data, dict):
                continue
            declared = str(located.data.get("export"))
            known.append(shown + declared)
            if declared == wanted:
                found = schema_problems("export", located)
                if found:
                    raise SpecError(found)
                return ExportFormat(name, layouts_of(located), located,
                                    tuple(located.data.get("files", ())),
                                    located.data.get("constants", {})), owner
    raise SpecError(problems or [Problem(
        f"unknown export format {name!r}; known: "
        f"{', '.join(sorted(dict.fromkeys([*known, BUILT_IN_FORMAT])))} (a plain name is the "
        f"project's own format, else the library's; {LIBRARY_PREFIX}NAME always the library's)")])


def layout_homes(located: Located) -> dict[str, str]:
    """For each paradigm of an export file, the paradigm whose layout is written out for it:
    its own, or the one its ``same_as`` names (declared in the same file and not itself
    borrowed; an error at the ``same_as`` otherwise)."""
    declared = located.data["paradigms"]
    homes: dict[str, str] = {}
    for paradigm, layout in declared.items():
        named = layout.get("same_as", paradigm)
        target = declared.get(named)
        if target is None or "same_as" in target:
            raise located.error(
                f"paradigm {paradigm!r} borrows the layout of {named!r}, which "
                f"{'is not declared here' if target is None else 'borrows one itself'}",
                ("paradigms", paradigm, "same_as"))
        homes[paradigm] = named
    return homes


def layouts_of(located: Located) -> dict[str, Mapping[str, Any]]:
    """Each paradigm's layout (a borrowed one being the layout it names)."""
    return {paradigm: located.data["paradigms"][home]
            for paradigm, home in layout_homes(located).items()}


def check_export_file(path: Path, project: Project, renderer: Renderer) -> None:
    """Schema-check an export file and compile every expression and path template in it."""
    located = load_yaml_file(path, project.display(path))
    problems = schema_problems("export", located)
    if problems:
        raise SpecError(problems)
    shaper = _Shaper(renderer, located)
    homes = layout_homes(located)  # a borrowed layout is checked where it is written
    for paradigm in sorted(set(homes.values())):
        layout = located.data["paradigms"][paradigm]
        where = ("paradigms", paradigm)
        shaper.compile(layout["record"], (*where, "record"))
        shaper.compile(layout["file"], (*where, "file"))
        line, col = located.text_start((*where, "path"))
        renderer.inline(layout["path"], located.file, line, col, "export path")
    for index, extra in enumerate(located.data.get("files", ())):
        where = ("files", index)
        for key in ("path", "text"):
            if key in extra:
                line, col = located.text_start((*where, key))
                renderer.inline(extra[key], located.file, line, col, f"export {key}")
        if "json" in extra:
            shaper.compile(extra["json"], (*where, "json"))


class _Shaper:
    """Evaluates a shape (nested mappings and lists whose leaves are expressions)."""

    def __init__(self, renderer: Renderer, located: Located) -> None:
        self.renderer = renderer
        self.located = located

    def build(self, shape: Any, context: Mapping[str, Any], where: tuple) -> Any:
        if isinstance(shape, dict) and "for_each" in shape:
            return self._each(shape, context, where)
        if isinstance(shape, dict):
            return {k: self.build(v, context, (*where, k)) for k, v in shape.items()}
        if isinstance(shape, list):
            return [self.build(v, context, (*where, i)) for i, v in enumerate(shape)]
        line, col = self.located.text_start(where)
        origin = TemplateOrigin(self.located.file, line - 1, col, "export expression")
        return _plain(self.renderer.expression(shape, origin)(context))

    def _each(self, shape: Mapping[str, Any], context: Mapping[str, Any], where: tuple) -> Any:
        """``for_each``: the shape built once per item of a list (seen as ``as``), as a list,
        or as a mapping from each item's ``key``."""
        items = self.build(shape["for_each"], context, (*where, "for_each"))
        if not isinstance(items, list):
            raise self.located.error(f"for_each gives {type(items).__name__}, not a list",
                                     (*where, "for_each"))
        built = []
        for item in items:
            inner = {**context, shape["as"]: item}
            key = self.build(shape["key"], inner, (*where, "key")) if "key" in shape else None
            built.append((key, self.build(shape["shape"], inner, (*where, "shape"))))
        if "key" not in shape:
            return [value for _, value in built]
        keyed: dict[str, Any] = {}
        for key, value in built:
            if str(key) in keyed:
                raise self.located.error(f"for_each gives the key {key!r} twice",
                                         (*where, "key"))
            keyed[str(key)] = value
        return keyed

    def compile(self, shape: Any, where: tuple) -> None:
        """Compile every expression of a shape (syntax errors surface here, located)."""
        if isinstance(shape, dict) and "for_each" in shape:
            for key in ("for_each", "key"):
                if key in shape:
                    self.compile(shape[key], (*where, key))
            self.compile(shape["shape"], (*where, "shape"))
        elif isinstance(shape, dict):
            for key, value in shape.items():
                self.compile(value, (*where, key))
        elif isinstance(shape, list):
            for index, value in enumerate(shape):
                self.compile(value, (*where, index))
        else:
            line, col = self.located.text_start(where)
            self.renderer.expression(shape, TemplateOrigin(self.located.file, line - 1, col,
                                                           "export expression"))

    def text(self, template: str, context: Mapping[str, Any], where: tuple) -> str:
        line, col = self.located.text_start(where)
        return self.renderer.inline(template, self.located.file, line, col,
                                    "export path").render_text(context)


def plain_messages(instance: Mapping[str, Any], phase: str) -> list[dict[str, str]]:
    """The messages of a phase as bare ``{role, content}`` pairs (a tool's name dropped)."""
    return [{"role": m["role"], "content": m["content"]} for m in phase_messages(instance, phase)]


def relabel_roles(messages: Any, roles: Mapping[str, str]) -> list[dict[str, Any]]:
    """The messages with each role that ``roles`` names replaced (e.g. a tool's outcome shown
    as a system message, for a tool whose format has no tool role)."""
    return [{**message, "role": roles.get(message["role"], message["role"])}
            for message in messages]


def project_records(rows: Any, mapping: Mapping[str, str]) -> list[dict[str, Any]]:
    """Each record of ``rows`` reshaped to ``{new_key: row[old_key]}`` (keys renamed, the rest
    dropped): the one reshaping a per-record expression cannot do by itself."""
    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, Mapping) for r in rows):
        raise TypeError(f"project needs a list of records, not {rows!r}")
    return [{new: row[old] for new, old in mapping.items()} for row in rows]


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def export_release(project: Project, fmt: ExportFormat, manifest: Mapping[str, Any],
                   instances: list[dict[str, Any]], out: Path) -> list[Path]:
    """Write the export of a release under ``out``; returns the files written."""
    renderer = Renderer(project)
    renderer.add_globals({"phase": phase_messages, "messages": plain_messages,
                          "project": project_records, "json": json_text,
                          "relabel": relabel_roles})
    shaper = _Shaper(renderer, fmt.located)
    by_family: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for inst in instances:
        by_family[inst["family"]].append(inst)
    files: dict[str, bytes] = {}
    families: list[dict[str, Any]] = []
    for family, members in by_family.items():
        paradigm = members[0]["paradigm"]
        layout = fmt.layouts.get(paradigm)
        if layout is None:
            raise SpecError.single(f"export {fmt.name!r} has no layout for paradigm "
                                   f"{paradigm!r} (family {family})", fmt.located.file)
        where = ("paradigms", layout_homes(fmt.located)[paradigm])
        base = {"family": family, "paradigm": paradigm, "seed": manifest["seed"],
                "release": manifest["release"], "version": manifest["version"],
                "constants": fmt.constants}
        # The path is rendered per record, so one family may fill several files (one per
        # split, say); the records of each file are numbered from 0.
        by_path: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for family_index, unit in enumerate(_units(members, layout.get("pair"))):
            working_on(_unit_item(unit))
            unit["family_index"] = family_index
            relative = shaper.text(layout["path"], {**base, **unit}, (*where, "path")).strip()
            by_path[relative].append(unit)
        shown = {"name": family, "paradigm": paradigm, "records": [], "instances": members,
                 "paths": []}
        families.append(shown)
        for rendered, units in by_path.items():
            relative = _checked_path(rendered, files, fmt, (*where, "path"))
            records = []
            for i, unit in enumerate(units):
                working_on(_unit_item(unit))
                records.append(shaper.build(layout["record"], {**base, **unit, "index": i},
                                            (*where, "record")))
            shown["records"] += records
            shown["paths"].append(relative)
            in_file = [inst for unit in units
                       for inst in (unit["pair"].values() if "pair" in unit
                                    else [unit["instance"]])]
            document = shaper.build(layout["file"], {**base, "records": records,
                                                     "instances": in_file}, (*where, "file"))
            files[relative] = _json_bytes(document)
    whole = {"families": families, "records": [r for f in families for r in f["records"]],
             "seed": manifest["seed"], "release": manifest["release"],
             "version": manifest["version"], "constants": fmt.constants}
    for index, extra in enumerate(fmt.extra):
        where = ("files", index)
        rendered = shaper.text(extra["path"], whole, (*where, "path")).strip()
        relative = _checked_path(rendered, files, fmt, (*where, "path"))
        if "json" in extra:
            files[relative] = _json_bytes(shaper.build(extra["json"], whole, (*where, "json")))
        else:
            files[relative] = shaper.text(extra["text"], whole, (*where, "text")).encode("utf-8")
    return write_export(out, files)


def _unit_item(unit: Mapping[str, Any]) -> str:
    """The instance (or the pair of them) an export record is made of, as an error names it."""
    if "pair" in unit:
        return "instances " + " and ".join(i["id"] for i in unit["pair"].values())
    return f"instance {unit['instance']['id']}"


def json_text(value: Any) -> str:
    """``value`` as compact JSON text with sorted keys (for a tool that stores nested columns
    as strings)."""
    return json.dumps(_plain(value), ensure_ascii=False, sort_keys=True, allow_nan=False)


def _json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
            + "\n").encode("utf-8")


def _checked_path(rendered: str, files: Mapping[str, bytes], fmt: ExportFormat,
                  where: tuple) -> str:
    """A rendered export path in one spelling, refused (located) where it would leave the
    output folder or clash with a path already taken."""
    pure = PurePosixPath(rendered)
    if pure.is_absolute() or ".." in pure.parts or "\\" in rendered or not pure.parts:
        raise fmt.located.error(f"export path {rendered!r} must stay inside the "
                                "output folder", where)
    relative = pure.as_posix()  # one spelling: "a//b" and "a/./b" are "a/b"
    clash = _clash(relative, files)
    if clash:
        raise fmt.located.error(f"export path {relative!r} {clash}", where)
    return relative


def _clash(relative: str, files: Mapping[str, bytes]) -> str | None:
    """Why ``relative`` cannot be written beside ``files`` (paths already taken), or None:
    the same path, the same but for case (one file on many systems), or a file where the
    other needs a folder."""
    for other in files:
        if other.casefold() == relative.casefold():
            return f"is also where another family exports ({other!r})"
        if other.startswith(relative + "/") or relative.startswith(other + "/"):
            return f"and {other!r} need one path as both a file and a folder"
    return None


def _units(members: list[dict[str, Any]], pair: Mapping[str, Any] | None
           ) -> list[dict[str, Any]]:
    """The record contexts: one per instance, or one per group with ``pair.<value>``."""
    if pair is None:
        return [{"instance": inst} for inst in members]
    groups: dict[tuple, dict[str, dict[str, Any]]] = defaultdict(dict)
    order: list[tuple] = []
    for inst in members:
        value = inst["axes"].get(pair["axis"])
        if value not in pair["values"]:
            continue
        rest = tuple(sorted((k, v) for k, v in inst["axes"].items() if k != pair["axis"]))
        key = (inst["group"], inst["design"], rest)
        if key not in groups:
            order.append(key)
        groups[key][value] = inst
    units = []
    for key in order:
        missing = [v for v in pair["values"] if v not in groups[key]]
        if missing:
            raise SpecError.single(f"group {key[0]} has no {pair['axis']}={missing[0]} "
                                   "instance to pair")
        units.append({"pair": groups[key], "instance": groups[key][pair["values"][0]]})
    return units

"""Typed, validated specs: families, paradigms and releases, loaded from a project's specs/."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import audit_declarations
from .errors import Problem, ProblemCollector, SpecError, unknown_name
from .pools import Pool, load_pool
from .project import Project
from .schemas import schema_problems
from .transforms import get_transform, transform_names
from .yamlsafe import Located, load_yaml_file

SLOT_SOURCES = ("from", "of", "value", "expr", "range", "choice", "balanced", "crossed", "table")
#: Most combinations a crossed slot may have (one balanced block takes every one of them).
MAX_CROSSED_CELLS = 100_000
#: Sources whose value is random, so that sharing it across groups means something.
RANDOM_SOURCES = ("from", "of", "range", "choice", "table")
#: Names templates receive besides the slots; a slot may not take one of them.
RESERVED_NAMES = frozenset({"variant", "design", "group", "family", "instance",
                            "range", "loop", "namespace", "dict", "self"})
DEFAULT_VARIANT = "base"


@dataclass(frozen=True)
class TransformRef:
    name: str
    args: Mapping[str, Any]
    shared_by: tuple[str, ...] | None = None  # key its random stream by these slots, not the group


@dataclass(frozen=True)
class Axis:
    """A dimension a group is rendered along, with the transforms its values apply."""

    name: str
    values: tuple[str, ...]
    transform: TransformRef | None = None
    value_transforms: Mapping[str, TransformRef] = field(default_factory=dict)


@dataclass(frozen=True)
class Variant:
    """One way of rendering a group: a design and one value on each of its axes."""

    design: str
    name: str
    axes: Mapping[str, str]
    indices: Mapping[str, int]


@dataclass(frozen=True)
class Design:
    name: str
    axes: tuple[Axis, ...]
    when: str | None = None  # expression over the slots: render this design only where true

    def variants(self, prefix: bool) -> Iterator[Variant]:
        """Every combination of axis values, in declaration order."""
        if not self.axes:
            yield Variant(self.name, self.name if prefix else DEFAULT_VARIANT, {}, {})
            return
        for combo in itertools.product(*(list(enumerate(a.values)) for a in self.axes)):
            values = [v for _, v in combo]
            name = ".".join(values)
            yield Variant(
                self.name,
                f"{self.name}.{name}" if prefix else name,
                {a.name: v for a, (_, v) in zip(self.axes, combo, strict=True)},
                {a.name: i for a, (i, _) in zip(self.axes, combo, strict=True)},
            )


@dataclass(frozen=True)
class ParadigmSpec:
    paradigm_id: str
    version: int
    description: str
    phases: tuple[str, ...]
    optional_phases: frozenset[str]
    axes: Mapping[str, tuple[str, ...]]
    scorers: tuple[str, ...]
    checks: tuple[Mapping[str, Any], ...]
    scaffold: Mapping[str, Any] | None
    located: Located
    path: Path
    #: Slots every family of the paradigm has, before its own (a family may override one).
    slots: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class FamilySpec:
    """A validated family, with its paradigm and pools resolved."""

    family_id: str
    version: int
    description: str
    paradigm: ParadigmSpec
    slots: Mapping[str, Mapping[str, Any]]
    designs: tuple[Design, ...]
    phases: Mapping[str, Any]
    answer: Mapping[str, Any]
    fields: Mapping[str, str]
    feedback: str | None
    checks: tuple[tuple[Mapping[str, Any], Located, tuple], ...]
    pools: Mapping[str, Pool]
    located: Located
    path: Path
    #: The file each slot the family takes from its paradigm is written in (by slot name).
    slot_origins: Mapping[str, Located] = field(default_factory=dict)

    @property
    def raw(self) -> Mapping[str, Any]:
        """The family's YAML data as written."""
        return self.located.data

    @property
    def file(self) -> str:
        return self.located.file

    def located_at(self, where: tuple) -> Located:
        """The file that holds the value at ``where``: the paradigm's for a slot the family
        takes from it, else the family's."""
        if len(where) >= 2 and where[0] == "slots" and where[1] in self.slot_origins:
            return self.slot_origins[where[1]]
        return self.located

    @property
    def audit(self) -> dict[str, Any]:
        """What the family and its paradigm declare for the audit (the family's block laid
        over the paradigm's)."""
        return audit_declarations.merged(self.paradigm.located.data, self.raw)

    def variants(self) -> list[Variant]:
        """Every variant of a group, in a fixed order (designs, then axis products)."""
        prefix = len(self.designs) > 1
        return [v for d in self.designs for v in d.variants(prefix)]


@dataclass(frozen=True)
class ReleaseFamily:
    family_id: str
    groups: int
    splits: Mapping[str, int] = field(default_factory=dict)  # name -> groups, in order
    disjoint: tuple[str, ...] = ()  # phases no message of which may occur in two splits
    fields: Mapping[str, str] = field(default_factory=dict)  # added to every instance

    def split_of(self, group: int) -> str | None:
        """The split a group belongs to (splits take consecutive runs of groups, in order)."""
        end = 0
        for name, count in self.splits.items():
            end += count
            if group < end:
                return name
        return None

    def release_fields(self, group: int) -> dict[str, str]:
        """The fields the release adds to every instance of ``group``."""
        split = self.split_of(group)
        return {**self.fields, **({"split": split} if split else {})}


@dataclass(frozen=True)
class PublishedDesign:
    """A published design a release follows, as its card cites it."""

    key: str
    title: str
    authors: tuple[str, ...]
    year: int | None
    how: str
    url: str | None = None
    venue: str | None = None


@dataclass(frozen=True)
class ReleaseSpec:
    name: str
    version: str
    seed: int
    description: str
    license: str
    families: tuple[ReleaseFamily, ...]
    located: Located
    path: Path
    published: str | None = None
    language: tuple[str, ...] = ()
    task_categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    subsets: tuple[str, ...] = ()  # instance fields whose values get a loader config each
    designs: tuple[PublishedDesign, ...] = ()
    checks: tuple[Mapping[str, Any], ...] = ()  # over the whole release, run at freeze

    @property
    def full_name(self) -> str:
        return f"{self.name}-{self.version}"


# ------------------------------------------------------------------ loading helpers

def _load_checked(path: Path, project: Project, schema: str,
                  parsed: Located | None = None) -> Located:
    located = parsed or load_yaml_file(path, project.display(path))
    if located.data is None:
        raise located.error("file is empty")
    problems = schema_problems(schema, located)
    if problems:
        raise SpecError(problems)
    return located


def _bad_patterns(patterns: list[str], probed: bool = False) -> list[tuple[int, str]]:
    """(index, reason) of each pattern that does not compile in the engine that matches it;
    ``probed`` (abstain patterns, searched in every response's first line), also of each
    that takes too long on the probes it is tried on (``searched_pattern_problem``).
    Declared outcomes and signals are long patterns of the bundled families, which probing
    would add a tenth of a second to every load of them to; at score time they are matched
    under the same time limit."""
    from .safe_regex import pattern_error, searched_pattern_problem
    if probed:
        return [(index, why) for index, pattern in enumerate(patterns)
                if (why := searched_pattern_problem(pattern)) is not None]
    return [(index, f"is not a valid regular expression: {why}")
            for index, pattern in enumerate(patterns) if (why := pattern_error(pattern))]


def _refuse_repeats(located: Located, key: str, names: list[str], what: str) -> None:
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


def load_paradigm(path: Path, project: Project) -> ParadigmSpec:
    """Load one paradigm file."""
    located = _load_checked(path, project, "paradigm")
    data = located.data
    names = [p["name"] for p in data["phases"]]
    _refuse_repeats(located, "phases", names, "phase")
    problems: list[Problem] = []

    def problem(message: str, where: tuple) -> None:
        line, col = located.where(where)
        problems.append(Problem(message, located.file, line, col, where))

    for index, why in _bad_patterns(data.get("abstain", []), probed=True):
        problem(f"abstain pattern {why}", ("abstain", index))
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


def _transform_ref(raw: Mapping[str, Any]) -> TransformRef:
    shared = raw.get("shared_by")
    return TransformRef(raw["name"], raw.get("args", {}),
                        tuple(shared) if shared is not None else None)


def _parse_axis(name: str, raw: Any) -> Axis:
    if isinstance(raw, list):
        return Axis(name, tuple(raw))
    transform = raw.get("transform")
    return Axis(
        name,
        tuple(raw["values"]),
        _transform_ref(transform) if transform else None,
        {v: _transform_ref(t) for v, t in raw.get("transforms", {}).items()},
    )


class FamilyLoader:
    """Loads families, resolving paradigms and pools; every problem is collected."""

    def __init__(self, project: Project, paradigms: Mapping[str, ParadigmSpec],
                 paradigm_problems: Sequence[Problem] = (),
                 parsed: Mapping[Path, Located] | None = None) -> None:
        self.project = project
        self.paradigms = paradigms
        #: Why paradigm files could not be used, told to a family whose paradigm is missing.
        self.paradigm_problems = tuple(paradigm_problems)
        #: Family files already parsed (by the catalog, which reads them all to learn their
        #: ids), so that loading one does not parse it again.
        self._parsed = parsed or {}
        self._pools: dict[Path, Pool] = {}

    def pool(self, relative: str, located: Located, path: tuple) -> Pool:
        line, col = located.where(path)
        pool_path = self.project.resolve_inside(self.project.specs, relative, "pool",
                                                origin=located.file, line=line, column=col)
        return self.pool_file(pool_path)

    def pool_file(self, pool_path: Path) -> Pool:
        """The pool in a file, loaded once however many families (or checks) use it."""
        key = pool_path.resolve()
        if key not in self._pools:
            self._pools[key] = load_pool(pool_path, self.project.display(pool_path))
        return self._pools[key]

    def load(self, path: Path) -> FamilySpec:
        located = _load_checked(path, self.project, "family", self._parsed.get(path))
        data = located.data
        out = ProblemCollector()

        def problem(message: str, where: tuple) -> None:
            line, col = located.where(where)
            out.add(Problem(message, located.file, line, col, where))

        paradigm = self.paradigms.get(data["paradigm"])
        if paradigm is None:
            problem(unknown_name("paradigm", data["paradigm"], sorted(self.paradigms)),
                    ("paradigm",))
            for unusable in self.paradigm_problems:  # the paradigm may be in a broken file
                out.add(Problem(f"{unusable.message} (this paradigm file could not be used)",
                                unusable.file, unusable.line, unusable.column,
                                unusable.json_path))

        slots, origins = _merged_slots(paradigm, data.get("slots", {}), located, problem)
        pools: dict[str, Pool] = {}
        for index, (name, slot) in enumerate(slots.items()):
            origin = origins.get(name, located)
            self._check_slot(name, slot, dict(list(slots.items())[:index]), origin,
                             _problem_in(origin, out))
            sources = [(name, slot, ("slots", name))] + [
                (f"{name}.{column}", spec, ("slots", name, "table", "columns", column))
                for column, spec in slot.get("table", {}).get("columns", {}).items()] + [
                (f"{name}.{factor}", spec, ("slots", name, "crossed", factor))
                for factor, spec in slot.get("crossed", {}).items() if isinstance(spec, dict)]
            for key, spec, where in sources:
                if "from" in spec:
                    try:
                        pools[key] = self.pool(spec["from"], origin, (*where, "from"))
                    except SpecError as err:
                        out.extend(err)
        slot_names = list(slots)

        designs = self._designs(data, paradigm, slot_names, problem)
        if paradigm is not None:
            declared = list(data["phases"])
            for phase in paradigm.phases:
                if phase not in declared:
                    problem(f"phase {phase!r} of paradigm {paradigm.paradigm_id!r} is missing",
                            ("phases",))
            for phase in declared:
                if phase not in paradigm.phases:
                    problem(f"phase {phase!r} is not a phase of paradigm "
                            f"{paradigm.paradigm_id!r} ({', '.join(paradigm.phases)})",
                            ("phases", phase))
            if data["answer"]["scorer"] not in paradigm.scorers:
                problem(f"scorer {data['answer']['scorer']!r} is not allowed by paradigm "
                        f"{paradigm.paradigm_id!r} ({', '.join(paradigm.scorers)})",
                        ("answer", "scorer"))
        _check_phrasings(data["phases"], problem)
        self._check_answer(data["answer"], slot_names, problem)
        self._check_analysis(data.get("analysis", {}), designs, problem)
        if paradigm is not None:
            axes: dict[str, set[str]] = {}
            for design in designs:
                for axis in design.axes:
                    axes.setdefault(axis.name, set()).update(axis.values)
            audit_declarations.check(data.get("audit", {}), paradigm.phases, axes, problem)
            # Arms a paradigm declares must be axes of each of its families.
            inherited = paradigm.located.data.get("audit", {}).get("arms")
            if inherited is not None and "arms" not in data.get("audit", {}):
                audit_declarations.check({"arms": inherited}, paradigm.phases, axes,
                                         lambda message, _: problem(
                                             f"{message} (declared by paradigm "
                                             f"{paradigm.paradigm_id!r})", ("paradigm",)))
        if "split" in data.get("fields", {}):
            problem("field 'split' is reserved: a release cuts a family's groups into splits "
                    "(its entry's 'splits')", ("fields", "split"))

        checks: list[tuple[Mapping[str, Any], Located, tuple]] = []
        if paradigm is not None:
            checks += [(c, paradigm.located, ("checks", i)) for i, c in enumerate(paradigm.checks)]
        checks += [(c, located, ("checks", i)) for i, c in enumerate(data.get("checks", []))]
        phase_names = set(paradigm.phases) if paradigm else set(data["phases"])
        axis_values: dict[str, set[str]] = {}
        for design in designs:
            for axis in design.axes:
                axis_values.setdefault(axis.name, set()).update(axis.values)
        for where, text in _answer_example_problems(data["answer"], axis_values):
            problem(text, where)
        for check, origin, where in checks:
            for problem_text in _check_refs(check, phase_names, axis_values):
                line, col = origin.where(where)
                out.add(Problem(f"{problem_text} (required by {located.file})"
                                if origin is not located else problem_text,
                                origin.file, line, col, where))
        out.raise_if_any()
        assert paradigm is not None
        return FamilySpec(
            family_id=data["family"],
            version=data["version"],
            description=data["description"],
            paradigm=paradigm,
            slots=slots,
            designs=designs,
            phases=data["phases"],
            answer=data["answer"],
            fields=data.get("fields", {}),
            feedback=data.get("feedback"),
            checks=tuple(checks),
            pools=pools,
            located=located,
            path=path,
            slot_origins=origins,
        )

    @staticmethod
    def _check_slot(name: str, slot: Mapping[str, Any], earlier: Mapping[str, Mapping[str, Any]],
                    located: Located, problem: Any) -> None:
        where = ("slots", name)
        if name in RESERVED_NAMES:
            problem(f"slot name {name!r} is reserved (templates receive it from memspec)", where)
        if any(c in text for text in _strings(slot) for c in "\x02\x03\x1f"):
            problem("slot values may not contain control characters", where)
        _check_source(slot, where, list(earlier), problem, table_allowed=True)
        for column, spec in slot.get("table", {}).get("columns", {}).items():
            col_where = (*where, "table", "columns", column)
            if column in ("row", "index"):
                problem(f"column name {column!r} is reserved (column expressions receive it)",
                        col_where)
            _check_source(spec, col_where, list(earlier), problem, table_allowed=False)
        if "shared_by" in slot:
            _check_shared(name, slot, earlier, problem)
        if "crossed" in slot:
            _check_crossed(slot["crossed"], where, problem)

    def _designs(self, data: Mapping[str, Any], paradigm: ParadigmSpec | None,
                 slot_names: list[str], problem: Any) -> tuple[Design, ...]:
        raw = data.get("designs")
        required = dict(paradigm.axes) if paradigm else {}
        if raw is None:
            axes = tuple(Axis(n, v) for n, v in required.items())
            return (Design("main", axes),)
        designs = []
        for dname, design in raw.items():
            axes = tuple(_parse_axis(n, a) for n, a in design["axes"].items())
            by_name = {a.name: a for a in axes}
            for axis_name, values in required.items():
                if axis_name not in by_name:
                    problem(f"design {dname!r} lacks axis {axis_name!r} required by the "
                            "paradigm", ("designs", dname, "axes"))
                elif by_name[axis_name].values != values:
                    problem(f"axis {axis_name!r} must have values {list(values)} "
                            "(required by the paradigm)", ("designs", dname, "axes", axis_name))
            for axis in axes:
                where = ("designs", dname, "axes", axis.name)
                refs = ([(axis.transform, (*where, "transform"))] if axis.transform else []) + [
                    (ref, (*where, "transforms", value)) for value, ref in
                    axis.value_transforms.items()]
                for value in axis.value_transforms:
                    if value not in axis.values:
                        problem(f"transforms names {value!r}, not a value of axis "
                                f"{axis.name!r}", (*where, "transforms", value))
                for ref, ref_where in refs:
                    assert ref is not None
                    transform = get_transform(ref.name)
                    if transform is None:
                        problem(f"unknown transform {ref.name!r}; known transforms: "
                                f"{', '.join(transform_names())}", (*ref_where, "name"))
                        continue
                    for text in transform.check_args(ref.args, slot_names):
                        problem(f"transform {ref.name!r}: {text}", (*ref_where, "args"))
                    for key in ref.shared_by or ():
                        if key not in slot_names:
                            problem(f"transform {ref.name!r}: shared_by names unknown slot "
                                    f"{key!r}", (*ref_where, "shared_by"))
            designs.append(Design(dname, axes, design.get("when")))
        return tuple(designs)

    @staticmethod
    def _check_analysis(analysis: Mapping[str, Any], designs: tuple[Design, ...],
                        problem: Any) -> None:
        values: dict[str, set[str]] = {}
        for design in designs:
            for axis in design.axes:
                values.setdefault(axis.name, set()).update(axis.values)
        refs = []
        if "baseline" in analysis:
            refs.append((("analysis", "baseline"), analysis["baseline"]["axis"],
                         [analysis["baseline"]["value"]]))
        for index, pair in enumerate(analysis.get("paired", [])):
            refs.append((("analysis", "paired", index), pair["axis"], [pair["a"], pair["b"]]))
        if "judge_pairs" in analysis:
            pairs = analysis["judge_pairs"]
            refs.append((("analysis", "judge_pairs"), pairs["axis"],
                         [pairs["treatment"], pairs["control"]]))
        if "judge_panel" in analysis:
            anchor = analysis["judge_panel"]["anchor"]
            refs.append((("analysis", "judge_panel", "anchor"), anchor["axis"],
                         [anchor["value"]]))
        for index, contrast in enumerate(analysis.get("contrasts", [])):
            for side in ("a", "b"):
                for key, value in contrast[side].items():
                    if key in values:  # other keys name a design or a field
                        refs.append((("analysis", "contrasts", index, side, key), key, [value]))
        for index, factorial in enumerate(analysis.get("factorials", [])):
            for position, axis in enumerate(factorial["axes"]):
                where = ("analysis", "factorials", index, "axes", position)
                if axis not in values:
                    problem(f"factorial names unknown axis {axis!r}", where)
                elif len(values[axis]) != 2:
                    problem(f"factorial axis {axis!r} has {len(values[axis])} values; a "
                            "factor has two", where)
        if "signal" in analysis:
            for axis, value in analysis["signal"]["act"].items():
                refs.append((("analysis", "signal", "act", axis), axis, [value]))
            for _, why in _bad_patterns([analysis["signal"]["performed"]]):
                problem(f"signal 'performed' {why}",
                        ("analysis", "signal", "performed"))
        for name, pattern in analysis.get("outcomes", {}).items():
            for _, why in _bad_patterns([pattern]):
                problem(f"outcome {name!r} {why}",
                        ("analysis", "outcomes", name))
        for where, axis, wanted in refs:
            if axis not in values:
                problem(f"analysis names unknown axis {axis!r}", where)
                continue
            for value in wanted:
                if value not in values[axis]:
                    problem(f"analysis names {value!r}, not a value of axis {axis!r}", where)
        scale = analysis.get("judge_scale")
        if scale and scale[0] >= scale[1]:
            problem("judge_scale must be [lowest, highest]", ("analysis", "judge_scale"))

    @staticmethod
    def _check_answer(answer: Mapping[str, Any], slot_names: list[str], problem: Any) -> None:
        scorer = answer["scorer"]
        where = ("answer",)
        for index, why in _bad_patterns(answer.get("abstain", []), probed=True):
            problem(f"abstain pattern {why}", (*where, "abstain", index))
        if scorer in ("exact", "regex", "canonical", "choice") and "gold" not in answer:
            problem(f"a {scorer} answer needs 'gold'", where)
        if scorer == "choice" and "options" not in answer:
            problem("a choice answer needs 'options' (the name of a list slot)", where)
        if "options" in answer and answer["options"] not in slot_names:
            problem(f"options names unknown slot {answer['options']!r}", (*where, "options"))
        if scorer == "judge" and "rubric" not in answer:
            problem("a judge answer needs 'rubric'", where)
        if "unordered_args" in answer and scorer != "canonical":
            problem("'unordered_args' only applies to the canonical scorer",
                    (*where, "unordered_args"))


def _problem_in(located: Located, out: ProblemCollector) -> Any:
    """What reports a problem at a path of ``located``'s file."""
    def problem(message: str, where: tuple) -> None:
        line, col = located.where(where)
        out.add(Problem(message, located.file, line, col, where))
    return problem


def _merged_slots(paradigm: ParadigmSpec | None, own: Mapping[str, Mapping[str, Any]],
                  located: Located, problem: Any
                  ) -> tuple[dict[str, Mapping[str, Any]], dict[str, Located]]:
    """A family's slots: its paradigm's first, in their order, then its own. A family slot of
    a paradigm slot's name replaces it, in the paradigm's place, only if it says
    ``override: true`` (so that nobody shadows a shared slot by accident); ``override`` on a
    slot the paradigm lacks is refused too. With them, the paradigm's file for each slot
    taken from it."""
    shared = paradigm.slots if paradigm is not None else {}
    slots: dict[str, Mapping[str, Any]] = {}
    origins: dict[str, Located] = {}
    for name, slot in shared.items():
        if name in own:
            if not own[name].get("override"):
                assert paradigm is not None
                line, _ = paradigm.located.where(("slots", name))
                problem(f"slot {name!r} is declared by paradigm {paradigm.paradigm_id!r} "
                        f"({paradigm.located.file}:{line}); say 'override: true' to replace "
                        "it for this family", ("slots", name))
            slots[name] = own[name]
        else:
            slots[name] = slot
            assert paradigm is not None
            origins[name] = paradigm.located
    for name, slot in own.items():
        if name in shared:
            continue
        if slot.get("override"):
            problem(f"slot {name!r} says 'override: true', but paradigm "
                    f"{paradigm.paradigm_id if paradigm else '?'!r} declares no slot of that "
                    "name", ("slots", name, "override"))
        slots[name] = slot
    return slots, origins


def _check_source(spec: Mapping[str, Any], where: tuple, earlier: list[str], problem: Any,
                  table_allowed: bool) -> None:
    """One slot's (or table column's) source: exactly one, and its modifiers fit it."""
    what = "slot" if table_allowed else "column"
    sources = [k for k in SLOT_SOURCES if k in spec]
    if not table_allowed and "table" in sources:
        problem("a table column cannot itself be a table", (*where, "table"))
    if len(sources) == 2 and "balanced" in sources and sources[0] in ("from", "of", "range"):
        if spec["balanced"] is not True:
            problem(f"with {sources[0]!r}, 'balanced' must be true (balance over its values)",
                    where)
        for key in ("count", "distinct", "distinct_from"):
            if key in spec:
                problem(f"{key!r} cannot be combined with a balanced draw", (*where, key))
    elif len(sources) != 1:
        problem(f"{what} {where[-1]!r} needs exactly one of "
                f"{', '.join(k for k in SLOT_SOURCES if table_allowed or k != 'table')}"
                + (f" (it has {', '.join(sources)})" if sources else ""), where)
    elif sources[0] == "balanced" and spec["balanced"] is True:
        problem("'balanced: true' needs 'from' (a pool), 'of' or 'range'; otherwise list the "
                "values", where)
    if "from" not in spec and "of" not in spec:
        for key in ("count", "distinct", "distinct_from"):
            if key in spec:
                problem(f"{key!r} only applies to {what}s drawn 'from' a pool or 'of' a list",
                        (*where, key))
    if "of" in spec and spec["of"] not in earlier:
        problem(f"'of' names {spec['of']!r}, which is not an earlier slot", (*where, "of"))
    for other in spec.get("distinct_from", []):
        if other not in earlier:
            problem(f"distinct_from names {other!r}, which is not an earlier slot",
                    (*where, "distinct_from"))
    if "range" in spec and spec["range"][0] > spec["range"][1]:
        problem("range must be [low, high] with low <= high", (*where, "range"))


def _check_crossed(factors: Mapping[str, Any], where: tuple, problem: Any) -> None:
    """Every factor of a crossed slot has values, and their combinations are not too many to
    take each once per block (a pool's size is known only once it is loaded: not counted)."""
    cells = 1
    for factor, spec in factors.items():
        if isinstance(spec, list):
            count = len(spec)
            if len({repr(v) for v in spec}) != count:
                problem(f"factor {factor!r} lists a value twice: it would be drawn twice as "
                        "often as the others", (*where, "crossed", factor))
        elif "range" in spec:
            low, high = spec["range"]
            count = high - low + 1
            if count < 1:
                problem("range must be [low, high] with low <= high",
                        (*where, "crossed", factor, "range"))
        else:
            continue
        cells *= max(count, 1)
    if cells > MAX_CROSSED_CELLS:
        problem(f"crossed slot has {cells} combinations, more than {MAX_CROSSED_CELLS}",
                (*where, "crossed"))


def _check_shared(name: str, slot: Mapping[str, Any], earlier: Mapping[str, Mapping[str, Any]],
                  problem: Any) -> None:
    """A shared slot must be random, keyed by earlier slots, and depend only on slots that are
    the same wherever its keys are: otherwise "shared" would be a promise it cannot keep."""
    where = ("slots", name, "shared_by")
    keys = list(slot["shared_by"])
    for key in keys:
        if key not in earlier:
            problem(f"shared_by names {key!r}, which is not an earlier slot", where)
    if not any(k in slot for k in RANDOM_SOURCES) or slot.get("balanced") is not None:
        problem("shared_by only applies to a random draw (from, of, range, choice or table); "
                "a balanced slot is assigned per group by definition", where)
    specs = [slot, *slot.get("table", {}).get("columns", {}).values()]
    depends = [d for spec in specs for d in [spec.get("of"), *spec.get("distinct_from", [])]
               if d is not None]
    for other in depends:
        source = earlier.get(other, {})
        is_random = any(k in source for k in (*RANDOM_SOURCES, "balanced", "crossed"))
        shared_alike = set(source.get("shared_by", [None])) <= set(keys)
        if other not in keys and is_random and not shared_alike:
            problem(f"slot {name!r} is shared but depends on {other!r}, which is drawn per "
                    f"group; share {other!r} by a subset of {keys} too", where)


def phrasings_of(phase: Any) -> list[tuple[Any, tuple]]:
    """The ways a phase is written, each with its path below the phase: one for a phase given
    as a template or messages, several for ``{phrasings: [...]}``."""
    if isinstance(phase, dict) and "phrasings" in phase:
        return [(item, ("phrasings", index)) for index, item in enumerate(phase["phrasings"])]
    return [(phase, ())]


def _check_phrasings(phases: Mapping[str, Any], problem: Any) -> None:
    """A phrasing written twice would be drawn twice as often as the others: refused."""
    for name, phase in phases.items():
        if isinstance(phase, dict) and len(phase.get("phrasings", ())) == 1:
            problem(f"phase {name!r} has one phrasing: write it as the phase itself, or give "
                    "two or more", ("phases", name, "phrasings"))
        seen: dict[str, int] = {}
        for item, where in phrasings_of(phase):
            key = item if isinstance(item, str) else item.get("template")
            if not isinstance(key, str):  # inline messages: compared as written
                key = repr(item)
            if key in seen:
                problem(f"phrasing {where[-1]} of phase {name!r} repeats phrasing {seen[key]}",
                        ("phases", name, *where))
            seen.setdefault(key, where[-1] if where else 0)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


#: Checks that hold nothing without one of these keys.
_CHECK_BOUNDS = {"message_count": ("equals", "min", "max"), "token_count": ("min", "max")}


def _check_refs(check: Mapping[str, Any], phases: set[str],
                axes: Mapping[str, set[str]]) -> list[str]:
    """Every phase, axis and axis value a check names must exist, and a check must bound
    something: a typo must not silently switch a check off."""
    kind = check["kind"]
    named = [check["phase"]] if "phase" in check else list(check.get("phases", []))
    problems = [f"check {kind!r} names unknown phase {p!r}" for p in named if p not in phases]
    bounds = _CHECK_BOUNDS.get(kind, ())
    if bounds and not any(bound in check for bound in bounds):
        problems.append(f"check {kind!r} asserts nothing: give it {' or '.join(bounds)}")
    if kind == "balanced":
        problems += _balanced_problems(check)
    if "axis" in check and check["axis"] not in axes:
        problems.append(f"check {kind!r} names unknown axis {check['axis']!r}")
    if "reference" in check and check.get("axis") in axes and \
            check["reference"] not in axes[check["axis"]]:
        problems.append(f"check {kind!r}: reference {check['reference']!r} is not a value of "
                        f"axis {check['axis']!r}")
    for axis, wanted in check.get("when", {}).items():
        if axis not in axes:
            problems.append(f"check {kind!r}: 'when' names unknown axis {axis!r}")
            continue
        for value in wanted if isinstance(wanted, list) else [wanted]:
            if value not in axes[axis]:
                problems.append(f"check {kind!r}: 'when' names {value!r}, not a value of axis "
                                f"{axis!r}")
    return problems


def answer_examples(answer: Mapping[str, Any]) -> list[tuple[str, int, str, Any]]:
    """Each example response of an answer: (``accepts`` or ``rejects``, its index, its text,
    its ``when`` or None)."""
    return [(key, index, item if isinstance(item, str) else item["response"],
             None if isinstance(item, str) else item.get("when"))
            for key in ("accepts", "rejects") for index, item in enumerate(answer.get(key, ()))]


def _answer_example_problems(answer: Mapping[str, Any], axes: Mapping[str, set[str]]
                             ) -> list[tuple[tuple, str]]:
    """Example responses a judge answer cannot hold, and ``when`` axes or values that do not
    exist (an example that applies to nothing would test nothing)."""
    problems = []
    for key, index, _, when in answer_examples(answer):
        where = ("answer", key, index)
        if answer["scorer"] == "judge":
            problems.append((where, f"a judge answer cannot test '{key}': only a judge scores "
                             "its responses"))
        for axis, wanted in (when or {}).items():
            if axis not in axes:
                problems.append(((*where, "when", axis), f"'when' names unknown axis {axis!r}"))
                continue
            for value in wanted if isinstance(wanted, list) else [wanted]:
                if value not in axes[axis]:
                    problems.append(((*where, "when", axis),
                                     f"'when' names {value!r}, not a value of axis {axis!r}"))
    return problems


def _balanced_problems(check: Mapping[str, Any]) -> list[str]:
    """A balanced check counts one expression (``of``, values a list) or the combinations of
    several (``cross``, values by name): exactly one, and values of its form."""
    if ("of" in check) == ("cross" in check):
        return ["check 'balanced' needs exactly one of 'of' (one expression) and 'cross' "
                "(several, named, whose combinations are counted)"]
    values = check.get("values")
    if "of" in check and isinstance(values, dict):
        return ["check 'balanced': with 'of', 'values' is a list"]
    if "cross" in check and values is not None:
        if not isinstance(values, dict):
            return ["check 'balanced': with 'cross', 'values' gives a list for each name"]
        unknown = [name for name in values if name not in check["cross"]]
        if unknown:
            return [f"check 'balanced': 'values' names {unknown[0]!r}, which 'cross' does "
                    f"not ({', '.join(check['cross'])})"]
    return []


def load_release(path: Path, project: Project,
                 problems: ProblemCollector | None = None) -> ReleaseSpec:
    """Load one release file. A file that fits the schema but whose entries disagree (splits
    that do not add up, say) is refused, or, given ``problems``, loaded with its problems
    added there, so that a caller checking more of it can report everything at once."""
    located = _load_checked(path, project, "release")
    data = located.data
    _refuse_repeats(located, "families", [f["family"] for f in data["families"]], "family")
    _refuse_repeats(located, "designs", [d["key"] for d in data.get("designs", ())],
                    "design key")
    out = ProblemCollector() if problems is None else problems
    if "split" in data.get("subsets", ()):
        line, col = located.where(("subsets", data["subsets"].index("split")))
        out.add(Problem("'split' needs no subset: every split is a split of each config",
                        located.file, line, col))
    for index, entry in enumerate(data["families"]):
        where = ("families", index)
        if "splits" in entry and sum(entry["splits"].values()) != entry["groups"]:
            line, col = located.where((*where, "splits"))
            out.add(Problem(f"splits add up to {sum(entry['splits'].values())} groups, not the "
                            f"{entry['groups']} the entry has", located.file, line, col))
        if "disjoint" in entry and "splits" not in entry:
            line, col = located.where((*where, "disjoint"))
            out.add(Problem("'disjoint' needs 'splits'", located.file, line, col))
        if "split" in entry.get("fields", {}):
            line, col = located.where((*where, "fields", "split"))
            out.add(Problem("field 'split' is reserved: it is set from the entry's 'splits'",
                            located.file, line, col))
    if problems is None:
        out.raise_if_any()
    return ReleaseSpec(
        name=data["name"],
        version=data["version"],
        seed=data["seed"],
        description=data["description"],
        license=data.get("license", "CC-BY-4.0"),
        families=tuple(ReleaseFamily(f["family"], f["groups"], dict(f.get("splits", {})),
                                     tuple(f.get("disjoint", ())), dict(f.get("fields", {})))
                       for f in data["families"]),
        located=located,
        path=path,
        published=data.get("published"),
        language=tuple(data.get("language", ())),
        task_categories=tuple(data.get("task_categories", ())),
        tags=tuple(data.get("tags", ())),
        subsets=tuple(data.get("subsets", ())),
        designs=tuple(PublishedDesign(d["key"], d["title"], tuple(d["authors"]), d.get("year"),
                                      d["how"], d.get("url"), d.get("venue"))
                      for d in data.get("designs", ())),
        checks=tuple(data.get("checks", ())),
    )

"""Loading families: each resolved against its paradigm and pools, its designs built, and every
problem in it collected before one error is raised."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import Problem, ProblemCollector, SpecError, unknown_name
from ..core.transforms import get_transform, transform_names
from . import audit_declarations
from .pools import Pool, load_pool
from .project import Project
from .spec_family_checks import (
    answer_example_problems,
    check_analysis,
    check_answer,
    check_phrasings,
    check_refs,
)
from .spec_files import load_checked, problem_in
from .spec_slots import check_slot, merged_slots
from .spec_types import Axis, Design, FamilySpec, ParadigmSpec, TransformRef
from .yamlsafe import Located


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


class ParadigmUnusable(SpecError):
    """A family names a paradigm whose file has errors of its own: the family's problem
    follows from them (a report over every file counts such families, not repeats them)."""

    def __init__(self, problems: list[Problem], paradigm: str, file: str) -> None:
        super().__init__(problems)
        self.paradigm = paradigm
        self.file = file  # the paradigm's file, whose errors are the cause

    def __reduce__(self) -> tuple:
        return (ParadigmUnusable, (list(self.problems), self.paradigm, self.file))


class FamilyLoader:
    """Loads families, resolving paradigms and pools; every problem is collected."""

    def __init__(self, project: Project, paradigms: Mapping[str, ParadigmSpec],
                 paradigm_problems: Sequence[Problem] = (),
                 parsed: Mapping[Path, Located] | None = None,
                 probe_patterns: bool = False,
                 broken_paradigms: Mapping[str, str] | None = None) -> None:
        self.project = project
        #: Whether the declared outcome and signal patterns of each family are probed for
        #: runaway matching (``check_analysis``): where families are validated or frozen.
        self.probe_patterns = probe_patterns
        self.paradigms = paradigms
        #: Why paradigm files could not be used, told to a family whose paradigm is missing.
        self.paradigm_problems = tuple(paradigm_problems)
        #: Family files already parsed (by the catalog, which reads them all to learn their
        #: ids), so that loading one does not parse it again.
        self._parsed = parsed or {}
        self._pools: dict[Path, Pool] = {}
        #: Paradigms whose files cannot be used, by id, with the file (``Catalog``).
        self.broken_paradigms = broken_paradigms or {}

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

    def _no_paradigm(self, name: str, located: Located) -> None:
        """Raise where the paradigm a family names is declared in a file that cannot be used:
        that file's errors are the one cause (told once, by whoever reports paradigm files,
        or here when ``paradigm_problems`` are to be explained), not this family."""
        broken = self.broken_paradigms.get(name)
        if broken is None:
            return
        line, col = located.where(("paradigm",))
        problems = [Problem(f"paradigm {name!r} is declared in {broken}, which has errors; "
                            "this family is checked once they are fixed", located.file, line,
                            col, ("paradigm",))]
        problems += [p for p in self.paradigm_problems if p.file == broken]
        raise ParadigmUnusable(problems, name, broken)

    def load(self, path: Path) -> FamilySpec:
        located = load_checked(path, self.project, "family", self._parsed.get(path))
        data = located.data
        out = ProblemCollector()

        def problem(message: str, where: tuple) -> None:
            line, col = located.where(where)
            out.add(Problem(message, located.file, line, col, where))

        paradigm = self.paradigms.get(data["paradigm"])
        root = out
        if paradigm is None:
            self._no_paradigm(data["paradigm"], located)
            problem(unknown_name("paradigm", data["paradigm"], sorted(self.paradigms)),
                    ("paradigm",))
            for unusable in self.paradigm_problems:  # the paradigm may be in a broken file
                out.add(Problem(f"{unusable.message} (this paradigm file could not be used)",
                                unusable.file, unusable.line, unusable.column,
                                unusable.json_path))
            # Whatever else is wrong with the family would be checked against a paradigm it
            # does not have (its phases, axes, analysis): counted, not shown, until it has.
            out = ProblemCollector()

        slots, origins = merged_slots(paradigm, data.get("slots", {}), located, problem)
        pools: dict[str, Pool] = {}
        for index, (name, slot) in enumerate(slots.items()):
            origin = origins.get(name, located)
            check_slot(name, slot, dict(list(slots.items())[:index]), origin,
                             problem_in(origin, out))
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
        check_phrasings(data["phases"], problem)
        check_answer(data["answer"], slot_names, problem)
        check_analysis(data.get("analysis", {}), designs, problem, self.probe_patterns)
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
        for where, text in answer_example_problems(data["answer"], axis_values):
            problem(text, where)
        for check, origin, where in checks:
            for problem_text in check_refs(check, phase_names, axis_values):
                line, col = origin.where(where)
                out.add(Problem(f"{problem_text} (required by {located.file})"
                                if origin is not located else problem_text,
                                origin.file, line, col, where))
        if out is not root:
            if out.problems or out.left_out:
                root.add(Problem(f"and {len(out.problems) + out.left_out:,} more problem(s) of "
                                 "this family left out: they may follow from its unknown "
                                 "paradigm", located.file, None, None, (), True))
            out = root
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
            streams=data.get("streams", ""),
        )


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

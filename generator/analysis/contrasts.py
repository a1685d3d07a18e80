"""Contrasts and factorial effects, estimated and tested on the group.

A contrast is ``a - b`` paired by group: each group's mean of a metric (accuracy or reliance,
on answered items, every rotation averaged) over the instances ``a`` selects, less its mean
over those ``b`` selects. A factorial names crossed two-level axes; each main effect and
interaction is, per group, the mean over the cells whose product of codes is +1 less the mean
over those where it is -1 (the first level of an axis, in the order the instances give them,
is coded +1). Every estimate gets a bootstrap interval over groups and an exact sign-flip
test of the groups' values against 0.

Declarations come from families' ``analysis`` blocks, from a file (``score --analysis``, for
a release already frozen), and from the data: in each design, two or more crossed two-level
axes are a factorial, and a single two-level axis a contrast of its two levels. An axis that
only reorders the options (a counterbalancing rotation) is no factor.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cell_plans import CellPlan, plan_cells

#: Interaction order estimated where a factorial does not say.
DEFAULT_ORDER = 2


@dataclass(frozen=True)
class Contrast:
    """One estimate: ``a`` and ``b`` are lists of selectors (the cells coded +1 and -1)."""

    name: str
    kind: str  # "pairwise", "main_effect" or "interaction"
    metric: str
    a: tuple[Mapping[str, str], ...]
    b: tuple[Mapping[str, str], ...]
    source: str  # "declared" or "derived"
    where: Mapping[str, str] | None = None
    #: The factors of a main effect or interaction (none for a pairwise contrast).
    axes: tuple[str, ...] = ()


def estimand(contrast: Contrast, members: Sequence[Sequence[int]]) -> tuple[Any, ...]:
    """What a contrast estimates, whatever its name: its metric and, for each cell on each
    side, the instances the cell selects (``members``, as ``cell_members`` finds them). A
    derived contrast with the estimand of a declared one is the same estimate twice, and
    would only weaken the report's correction. (Cells are compared by what they select, not
    by how they are written: a derived effect scoped to the one design the instances have is
    the declared effect that names no design.)"""
    a, b = members[:len(contrast.a)], members[len(contrast.a):]
    return (contrast.metric, tuple(sorted(map(tuple, a))), tuple(sorted(map(tuple, b))))


def _default_metric(instances: Sequence[Mapping[str, Any]]) -> str:
    """Reliance where the instances declare a distractor to rely on, else accuracy."""
    return "reliance" if any(i["answer"].get("distractors") for i in instances) \
        else "accuracy"


def _levels(instances: Sequence[Mapping[str, Any]], axis: str) -> list[str]:
    """The values of ``axis``, in the order the instances first give them."""
    return list(dict.fromkeys(i["axes"][axis] for i in instances if axis in i["axes"]))


def _shown_options(instances: Sequence[Mapping[str, Any]]
                   ) -> list[tuple[Mapping[str, str], tuple[Any, int], tuple[str, ...],
                                   tuple[str, ...]]]:
    """(axes, group, options in order, options sorted) of each instance that shows options,
    read once for every axis ``_reorders_options`` asks about."""
    return [(i["axes"], (i["family"], i["group"]), tuple(i["answer"]["options"]),
             tuple(sorted(i["answer"]["options"])))
            for i in instances if i["answer"].get("options")]


def _reorders_options(shown: Sequence[tuple[Mapping[str, str], tuple[Any, int],
                                            tuple[str, ...], tuple[str, ...]]],
                      axis: str) -> bool:
    """Whether ``axis`` changes the order of the options within a group, and only their order
    (a rotation that counterbalances positions, not a factor of the design): a factor whose
    levels show other options, e.g. a framing that words them otherwise, is no rotation.
    ``shown`` is what ``_shown_options`` reads of the instances."""
    orders: dict[tuple[Any, str], set[tuple[str, ...]]] = defaultdict(set)
    contents: dict[tuple[Any, str], set[tuple[str, ...]]] = defaultdict(set)
    for axes, unit, order, content in shown:
        if axis in axes:
            cell = (unit, axes[axis])
            orders[cell].add(order)
            contents[cell].add(content)
    per_group: dict[Any, list[tuple[set[tuple[str, ...]], set[tuple[str, ...]]]]] = \
        defaultdict(list)
    for cell, seen in orders.items():
        per_group[cell[0]].append((seen, contents[cell]))
    return any(any(o != levels[0][0] for o, _ in levels)
               and all(c == levels[0][1] for _, c in levels)
               for levels in per_group.values())


def _factorial(name: str, axes: Sequence[str], levels: Mapping[str, list[str]], metric: str,
               order: int, source: str, where: Mapping[str, str] | None) -> list[Contrast]:
    effects = []
    for size in range(1, min(order, len(axes)) + 1):
        for subset in itertools.combinations(axes, size):
            plus, minus = [], []
            for cell in itertools.product(*(levels[a] for a in axes)):
                codes = {a: 1 if value == levels[a][0] else -1
                         for a, value in zip(axes, cell, strict=True)}
                selector = dict(zip(axes, cell, strict=True))
                (plus if math.prod(codes[a] for a in subset) > 0 else minus).append(selector)
            label = " x ".join(f"{a} ({levels[a][0]} - {levels[a][1]})" for a in subset)
            effects.append(Contrast(f"{name}: {label}",
                                    "main_effect" if size == 1 else "interaction", metric,
                                    tuple(plus), tuple(minus), source, where,
                                    tuple(subset)))
    return effects


def _selects(instance: Mapping[str, Any], selector: Mapping[str, str],
             key_value: Callable[[Mapping[str, Any], str], str]) -> bool:
    return all(key_value(instance, k) == v for k, v in selector.items())


def declared(instances: Sequence[Mapping[str, Any]], declarations: Sequence[Mapping[str, Any]],
             key_value: Callable[[Mapping[str, Any], str], str]) -> list[Contrast]:
    """The contrasts of analysis blocks (each instance's, then ``declarations``), once each."""
    blocks: dict[str, Mapping[str, Any]] = {}
    # Instances read from a release share their family's block: each is read once.
    distinct = {id(block): block for block in
                [*(i.get("analysis", {}) for i in instances), *declarations]}
    for block in distinct.values():
        for entry in [*block.get("contrasts", []), *block.get("factorials", [])]:
            blocks.setdefault(repr(sorted(entry.items())), entry)
    contrasts: list[Contrast] = []
    for entry in blocks.values():
        if "axes" in entry:
            where = entry.get("where")
            chosen = [i for i in instances if not where or _selects(i, where, key_value)]
            chosen = [i for i in chosen if all(a in i["axes"] for a in entry["axes"])]
            if not chosen:
                # None of its cells is among the instances scored (a slice of a release):
                # nothing to estimate, which is no error in the declaration.
                continue
            levels = {a: _levels(chosen, a) for a in entry["axes"]}
            bad = [a for a, values in levels.items() if len(values) != 2]
            if bad:
                raise ValueError(f"factorial {entry['name']!r}: axis {bad[0]!r} has "
                                 f"{len(levels[bad[0]])} levels in the data, not 2")
            contrasts += _factorial(entry["name"], entry["axes"], levels,
                                    entry.get("metric") or _default_metric(chosen),
                                    entry.get("order", DEFAULT_ORDER), "declared", where)
        else:
            metric = entry.get("metric") or _default_metric(
                [i for i in instances if _selects(i, entry["a"], key_value)
                 or _selects(i, entry["b"], key_value)])
            contrasts.append(Contrast(entry["name"], "pairwise", metric,
                                      (entry["a"],), (entry["b"],), "declared"))
    return contrasts


def derived(instances: Sequence[Mapping[str, Any]]) -> list[Contrast]:
    """The contrasts a design's own axes imply: per design (pooled over the families that
    share it), its two-level axes that are no rotation and are crossed in every group."""
    by_design: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for i in instances:
        by_design[i["design"]].append(i)
    contrasts: list[Contrast] = []
    for design in sorted(by_design):
        members = by_design[design]
        axes = sorted({a for i in members for a in i["axes"]})
        levels = {a: _levels(members, a) for a in axes}
        shown = _shown_options(members)
        factors = [a for a in axes if len(levels[a]) == 2
                   and all(a in i["axes"] for i in members)
                   and not _reorders_options(shown, a)]
        if not factors or not _crossed(members, factors):
            continue
        where = {"design": design}
        metric = _default_metric(members)
        if len(factors) == 1:
            (axis,) = factors
            first, second = levels[axis]
            contrasts.append(Contrast(f"{design}: {axis} ({first} - {second})", "pairwise",
                                      metric, ({**where, axis: first},),
                                      ({**where, axis: second},), "derived"))
        else:
            contrasts += _factorial(design, factors, levels, metric, DEFAULT_ORDER, "derived",
                                    where)
    return contrasts


def _crossed(members: Sequence[Mapping[str, Any]], factors: Sequence[str]) -> bool:
    """Whether every group has every combination of the factors' levels."""
    cells: dict[tuple[str, int], set[tuple[str, ...]]] = defaultdict(set)
    for i in members:
        cells[(i["family"], i["group"])].add(tuple(i["axes"][a] for a in factors))
    return all(len(c) == 2 ** len(factors) for c in cells.values())


def cell_members(contrast: Contrast, instances: Sequence[Mapping[str, Any]],
                 key_value: Callable[[Mapping[str, Any], str], str],
                 columns: dict[str, list[str]] | None = None,
                 combinations: dict[Any, dict[tuple[str, ...], list[int]]] | None = None
                 ) -> list[list[int]]:
    """The indices of ``instances`` in each cell of ``contrast`` (its ``a`` cells, then its
    ``b`` cells), within its ``where``. ``columns`` keeps each key's value per instance
    between calls (a report plans dozens of effects on the same keys), and ``combinations``
    the instances of each combination of the values of the keys a contrast names within its
    ``where`` (the effects of one factorial name the same keys)."""
    columns = {} if columns is None else columns
    combinations = {} if combinations is None else combinations

    def column(key: str) -> list[str]:
        if key not in columns:
            columns[key] = [key_value(instance, key) for instance in instances]
        return columns[key]

    # Each key is read once per instance, not once per cell that names it: a factorial's
    # effect names 2**k cells, and a report estimates dozens of effects.
    keys = sorted({k for cells in (contrast.a, contrast.b) for selector in cells
                   for k in selector})
    wanted = [tuple(selector.get(k) for k in keys) for selector in (*contrast.a, *contrast.b)]
    members: list[list[int]] = [[] for _ in wanted]
    scope = (tuple(keys), tuple(sorted((contrast.where or {}).items())))
    if scope not in combinations:
        combinations[scope] = _combinations(keys, scope[1], column, len(instances))
    for seen, indices in combinations[scope].items():
        for cell, selector in enumerate(wanted):
            if all(w is None or w == v for w, v in zip(selector, seen, strict=True)):
                members[cell].extend(indices)
    for cell in members:
        cell.sort()  # several combinations may fill one cell: each cell in instance order
    return members


def _combinations(keys: Sequence[str], where: Sequence[tuple[str, str]],
                  column: Callable[[str], list[str]], count: int
                  ) -> dict[tuple[str, ...], list[int]]:
    """The indices of the instances (of ``count``) within ``where`` of each combination of
    the ``keys``' values, in order: the cells are matched once per combination, not once per
    instance (a release holds tens of thousands)."""
    inside: Sequence[int] = range(count)
    for k, v in where:
        values = column(k)
        inside = [index for index in inside if values[index] == v]
    combinations: dict[tuple[str, ...], list[int]] = defaultdict(list)
    if not keys:
        combinations[()] = list(inside)
        return combinations
    key_columns = [column(k) for k in keys]
    held = key_columns if isinstance(inside, range) else \
        [[col[index] for index in inside] for col in key_columns]
    for index, seen in zip(inside, zip(*held, strict=True), strict=True):
        combinations[seen].append(index)
    return combinations


def plan_contrast(contrast: Contrast, instances: Sequence[Mapping[str, Any]],
                  members: Sequence[Sequence[int]]) -> CellPlan:
    """The cells of ``contrast`` among ``instances`` (``members``, as ``cell_members`` finds
    them), as a plan that ``cell_differences`` runs on any vector of item values."""
    return plan_cells(instances, members[:len(contrast.a)], members[len(contrast.a):])


def load_analysis_file(path: Path) -> Mapping[str, Any]:
    """A file of analysis declarations (``contrasts``, ``factorials``), checked against the
    analysis schema: every error with its file, line and column."""
    from ..core.errors import SpecError
    from ..spec.schemas import schema_problems
    from ..spec.yamlsafe import load_yaml_file

    located = load_yaml_file(path, str(path))
    problems = schema_problems("analysis", located)
    if problems:
        raise SpecError(problems)
    names = [e["name"] for key in ("contrasts", "factorials") for e in located.data.get(key, [])]
    for key in ("contrasts", "factorials"):
        for index, entry in enumerate(located.data.get(key, [])):
            if names.count(entry["name"]) > 1:
                raise located.error(f"{entry['name']!r} names two declarations",
                                    (key, index, "name"))
    return located.data

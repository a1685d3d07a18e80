"""The contrasts of a score report: which are estimated (declared, then derived), over
which cells of which rows, and each one's estimate, interval and p-value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.errors import SpecError
from .cell_plans import CellPlan, restrict
from .contrasts import Contrast, cell_members, estimand, plan_contrast
from .contrasts import declared as declared_contrasts
from .contrasts import derived as derived_contrasts
from .score_grouping import key_value
from .score_intervals import mean_and_ci, sign_flip
from .score_options import ScoreOptions


class _Cells:
    """Each contrast's cells among the instances (``cell_members``), found once for its
    estimand and its plan, with each key's value per instance read once for all of them."""

    def __init__(self, instances: Sequence[Mapping[str, Any]]) -> None:
        self.instances = instances
        self.columns: dict[str, list[str]] = {}
        self._combinations: dict[Any, dict[tuple[str, ...], list[int]]] = {}
        self._found: dict[str, list[list[int]]] = {}

    def of(self, contrast: Contrast) -> list[list[int]]:
        """The indices of the instances in each cell of ``contrast`` (``a``'s, then ``b``'s)."""
        # What a contrast selects is set by its cells and scope alone (not its name).
        key = repr((contrast.a, contrast.b, contrast.where))
        if key not in self._found:
            self._found[key] = cell_members(contrast, self.instances, key_value, self.columns,
                                            self._combinations)
        return self._found[key]


def report_contrasts(instances: Sequence[Mapping[str, Any]],
                     analysis: Sequence[Mapping[str, Any]] = (),
                     cells: _Cells | None = None) -> list[Contrast]:
    """The contrasts a report estimates: the declared ones (the instances' analysis blocks,
    then ``analysis``), then the derived ones that estimate something new. ``cells`` keeps
    each contrast's cells, found once for every estimand and plan."""
    try:
        chosen = declared_contrasts(instances, analysis, key_value)
    except ValueError as exc:
        raise SpecError.single(str(exc)) from None
    names = {c.name for c in chosen}
    cells = _Cells(instances) if cells is None else cells
    estimated = {estimand(c, cells.of(c)) for c in chosen}
    return chosen + [c for c in derived_contrasts(instances) if c.name not in names
                     and estimand(c, cells.of(c)) not in estimated]


def contrast_plans(instances: Sequence[Mapping[str, Any]],
                   rows: Sequence[tuple[Mapping[str, str], Sequence[int]]],
                   analysis: Sequence[Mapping[str, Any]] = ()
                   ) -> list[tuple[int, Contrast, CellPlan]]:
    """(row, contrast, plan) for every declared and derived contrast: over the whole run
    (row 0, the first of ``rows``), then within each later row that holds part of its
    items but not all (a row holding all of them would repeat the run's estimate), over the
    cells the row holds: a factorial effect only where the row holds both levels of each of
    its factors (a simple effect where the row fixes another factor)."""
    cells = _Cells(instances)
    whole = [(contrast, plan_contrast(contrast, instances, cells.of(contrast)))
             for contrast in report_contrasts(instances, analysis, cells)]
    columns = cells.columns
    planned = [(0, contrast, plan) for contrast, plan in whole]
    for row, (_, indices) in enumerate(rows[1:], 1):
        within = np.zeros(len(instances), dtype=bool)
        within[list(indices)] = True
        for contrast, plan in whole:
            part = restrict(plan, within)
            if part is None or part.items.size == plan.items.size:
                continue
            if all(len({columns[axis][i] for i in part.items}) == 2 for axis in contrast.axes):
                planned.append((row, contrast, part))
    return planned


def contrast_result(contrast: Contrast, units: Mapping[tuple[str, int], float],
                    clusters: Mapping[tuple[str, int], str], options: ScoreOptions,
                    level: float) -> dict[str, Any]:
    """One contrast's entry in a report: its estimate over the groups' differences, its
    interval at ``level`` (expanded, as it is tested against 0) and its sign-flip p-value."""
    estimate, interval = mean_and_ci(units, clusters, options, level, expand=True)
    entry: dict[str, Any] = {
        "name": contrast.name, "kind": contrast.kind, "metric": contrast.metric,
        "source": contrast.source, "estimate": estimate, "ci": interval,
        "groups": len(units),
        "p_value": sign_flip(units, clusters, options),
    }
    if contrast.kind == "pairwise":
        entry.update(a=dict(contrast.a[0]), b=dict(contrast.b[0]))
    return entry

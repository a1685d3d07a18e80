"""The contrasts of a score report: which are estimated (declared, then derived), over
which cells of which rows, and each one's estimate, interval and p-value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.errors import SpecError
from .cell_plans import CellPlan, restrict
from .contrasts import Contrast, estimand, plan_contrast
from .contrasts import declared as declared_contrasts
from .contrasts import derived as derived_contrasts
from .score_grouping import key_value
from .score_intervals import mean_and_ci, sign_flip
from .score_options import ScoreOptions


def report_contrasts(instances: Sequence[Mapping[str, Any]],
                     analysis: Sequence[Mapping[str, Any]] = (),
                     columns: dict[str, list[str]] | None = None) -> list[Contrast]:
    """The contrasts a report estimates: the declared ones (the instances' analysis blocks,
    then ``analysis``), then the derived ones that estimate something new. ``columns``
    keeps each key's value per instance, read once for every estimand and plan."""
    try:
        chosen = declared_contrasts(instances, analysis, key_value)
    except ValueError as exc:
        raise SpecError.single(str(exc)) from None
    names = {c.name for c in chosen}
    columns = {} if columns is None else columns
    estimated = {estimand(c, instances, key_value, columns) for c in chosen}
    return chosen + [c for c in derived_contrasts(instances) if c.name not in names
                     and estimand(c, instances, key_value, columns) not in estimated]


def contrast_plans(instances: Sequence[Mapping[str, Any]],
                   rows: Sequence[tuple[Mapping[str, str], Sequence[int]]],
                   analysis: Sequence[Mapping[str, Any]] = ()
                   ) -> list[tuple[int, Contrast, CellPlan]]:
    """(row, contrast, plan) for every declared and derived contrast: over the whole run
    (row 0, the first of ``rows``), then within each later row that holds part of its
    items but not all (a row holding all of them would repeat the run's estimate), over the
    cells the row holds: a factorial effect only where the row holds both levels of each of
    its factors (a simple effect where the row fixes another factor)."""
    columns: dict[str, list[str]] = {}
    whole = [(contrast, plan_contrast(contrast, instances, key_value, columns))
             for contrast in report_contrasts(instances, analysis, columns)]
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

"""Per-group differences between cells of items, planned once from the instances and then run
on arrays of item values, so that a report and a simulation of many runs share one code.

A contrast, a factorial effect and Δmem are all one shape: per group, the mean over the ``a``
cells of each cell's mean of a value (correctness or reliance on answered items) less the same
over the ``b`` cells. A plan records which items fall in which cell of which group; running it
on a vector of values (NaN where an item does not count, e.g. unanswered) gives each group's
difference, for the groups with a value in every cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np


@dataclass(frozen=True)
class CellPlan:
    """Which items fall in which cell of which group: ``slots[k]`` is the group code times
    the number of cells plus the cell of membership ``k``, whose item is ``items[k]``; the
    first ``a_cells`` cells are side ``a``, the rest side ``b``."""

    units: tuple[tuple[str, int], ...]  # (family, group) of each group code
    items: np.ndarray
    slots: np.ndarray
    a_cells: int
    b_cells: int


def plan_cells(instances: Sequence[Mapping[str, Any]], a: Sequence[Sequence[int]],
               b: Sequence[Sequence[int]]) -> CellPlan:
    """The plan of cells ``a`` and ``b``, each a list of indices into ``instances`` (an item
    may sit in several cells)."""
    cells = [*a, *b]
    items = np.array([i for members in cells for i in members], dtype=int)
    cell_of = np.repeat(np.arange(len(cells), dtype=int), [len(m) for m in cells])
    # Each item's group as a number, then the groups coded in the order they first appear
    # across the cells (the order of ``units``), in array operations: a release's plans hold
    # tens of thousands of items each.
    numbered: dict[tuple[str, int], int] = {}
    unit_of = np.array([numbered.setdefault((instances[i]["family"], instances[i]["group"]),
                                            len(numbered)) for i in items.tolist()],
                       dtype=int)
    units = list(numbered)  # numbered in first appearance already: its codes are the codes
    slots = unit_of * len(cells) + cell_of
    return CellPlan(tuple(units), items, slots, len(a), len(b))


def cell_differences(plan: CellPlan, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group codes, differences): each group's mean over its ``a`` cells of the cells' means
    of ``values`` (one float per instance, NaN where the item does not count) less the same
    over its ``b`` cells, for the groups with a value in every cell, in code order."""
    cells = plan.a_cells + plan.b_cells
    picked = values[plan.items]
    keep = ~np.isnan(picked)
    size = len(plan.units) * cells
    counts = np.bincount(plan.slots[keep], minlength=size).reshape(-1, cells)
    sums = np.bincount(plan.slots[keep], weights=picked[keep], minlength=size).reshape(-1, cells)
    full = np.flatnonzero((counts > 0).all(axis=1))
    means = sums[full] / counts[full]
    # Each side's cells weigh alike, whatever their number of items.
    side_a = means[:, :plan.a_cells].sum(axis=1) / plan.a_cells
    side_b = means[:, plan.a_cells:].sum(axis=1) / plan.b_cells
    return full, side_a - side_b


def unit_differences(plan: CellPlan, values: Sequence[float | None] | np.ndarray
                     ) -> dict[tuple[str, int], float]:
    """``cell_differences`` keyed by (family, group), sorted; None (or NaN) counts as no
    value."""
    codes, diffs = cell_differences(plan, values if isinstance(values, np.ndarray)
                                    else as_values(values))
    return dict(sorted((plan.units[c], float(d)) for c, d in zip(codes, diffs, strict=True)))


def restrict(plan: CellPlan, within: np.ndarray) -> CellPlan | None:
    """``plan`` over the items ``within`` marks (a boolean per instance) only: the same
    contrast in one row of a report, over the cells the row holds (a main effect within a
    row that fixes another factor is its simple effect there); None where the row holds no
    cell of a side."""
    keep = within[plan.items]
    items, slots = plan.items[keep], plan.slots[keep]
    cells = plan.a_cells + plan.b_cells
    held = np.unique(slots % cells)
    a_cells = int((held < plan.a_cells).sum())
    if a_cells == 0 or a_cells == held.size:
        return None
    renumber = np.full(cells, -1)
    renumber[held] = np.arange(held.size)
    return replace(plan, items=items,
                   slots=(slots // cells) * held.size + renumber[slots % cells],
                   a_cells=a_cells, b_cells=int(held.size) - a_cells)


def as_values(values: Sequence[float | None]) -> np.ndarray:
    """Item values as ``cell_differences`` reads them: NaN for None (the item does not
    count)."""
    return np.array([np.nan if v is None else float(v) for v in values], dtype=float)

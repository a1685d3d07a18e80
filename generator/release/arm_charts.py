"""The paired arms of a release, side by side: for each family that declares two arms to
compare (``analysis.paired``, ``analysis.judge_pairs``), each phase's length in either arm at
each level of the family's other axes, with the group as the unit, and in how many groups the
two arms say the same text there (the arms of a paired design should differ only where the
manipulation is)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.checks import messages_tokens
from .charts import paired_bars


@dataclass(frozen=True)
class ArmRow:
    """One phase at one level of the other axes: the mean over groups of each group's mean
    tokens in either arm, how many groups hold both arms, and in how many of them the phase
    is the same text in both."""

    level: str
    phase: str
    means: tuple[float, float]
    groups: int
    same: int


@dataclass(frozen=True)
class ArmComparison:
    """The two arms of one declared pair of one family, row by row."""

    family: str
    axis: str
    arms: tuple[str, str]
    rows: tuple[ArmRow, ...]


def declared_pairs(instance: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The pairs of arms ``instance``'s analysis declares, as (axis, first arm, second arm):
    the judged treatment before its control, each paired ``a`` before its ``b``."""
    analysis = instance.get("analysis", {})
    pairs = [(p["axis"], p["a"], p["b"]) for p in analysis.get("paired", [])]
    judged = analysis.get("judge_pairs")
    if judged:
        pairs.append((judged["axis"], judged["treatment"], judged["control"]))
    return list(dict.fromkeys(pairs))


def _level(axes: Mapping[str, str], paired_axis: str) -> str:
    other = [f"{name}={value}" for name, value in sorted(axes.items()) if name != paired_axis]
    return ", ".join(other) or "all"


def compare_arms(instances: Sequence[Mapping[str, Any]]) -> list[ArmComparison]:
    """Every declared pair of arms of every family among ``instances``, in family order."""
    # (family, pair) -> (level, phase, group, arm) -> the phase's texts and tokens.
    cells: dict[tuple[str, tuple[str, str, str]],
                dict[tuple[str, str, int, str], list[tuple[str, int]]]] = defaultdict(
        lambda: defaultdict(list))
    for instance in instances:
        for pair in declared_pairs(instance):
            axis, first, second = pair
            arm = instance["axes"].get(axis)
            if arm not in (first, second):
                continue
            level = _level(instance["axes"], axis)
            for phase in instance["phases"]:
                text = "\n".join(m["content"] for m in phase["messages"])
                cells[instance["family"], pair][level, phase["phase"], instance["group"],
                                                arm].append(
                    (text, messages_tokens(phase["messages"])))
    comparisons = []
    for (family, (axis, first, second)), by_cell in sorted(cells.items()):
        keys = sorted({(level, phase) for level, phase, _, _ in by_cell})
        rows = []
        for level, phase in keys:
            groups = sorted({g for lv, ph, g, _ in by_cell if (lv, ph) == (level, phase)})
            both = [g for g in groups if (level, phase, g, first) in by_cell
                    and (level, phase, g, second) in by_cell]
            if not both:
                continue
            means = []
            for arm in (first, second):
                # The group is the unit: its variants in the arm are averaged first.
                per_group = [sum(t for _, t in by_cell[level, phase, g, arm])
                             / len(by_cell[level, phase, g, arm]) for g in both]
                means.append(sum(per_group) / len(per_group))
            same = sum(sorted(x for x, _ in by_cell[level, phase, g, first])
                       == sorted(x for x, _ in by_cell[level, phase, g, second]) for g in both)
            rows.append(ArmRow(level, phase, (means[0], means[1]), len(both), same))
        if rows:
            comparisons.append(ArmComparison(family, axis, (first, second), tuple(rows)))
    return comparisons


def arm_chart(comparison: ArmComparison) -> str:
    """One chart of a family's two arms: a pair of bars per phase and level."""
    several = len({row.level for row in comparison.rows}) > 1
    rows = [(f"{row.level}: {row.phase}" if several else row.phase, row.means,
             f"same text in {row.same}/{row.groups} groups")
            for row in comparison.rows]
    first, second = comparison.arms
    title = f"{comparison.family}: {comparison.axis} = {first} vs {second}"
    return paired_bars(title, rows, comparison.arms, unit=" tokens")

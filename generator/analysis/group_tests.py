"""Hypothesis tests on the design's unit, the group: planned once from the instances, then
run on arrays of outcomes, so that a report and a simulation of many runs share one code.

A plan says which items each test reads and which group each item belongs to; running it
takes, for every item, whether it was answered and whether it was correct. A group's value is
its mean over its answered items in the test's arm (every option rotation or variant it has
there, never one of them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .stats import chance_test, mcnemar_exact


@dataclass(frozen=True)
class ChanceTest:
    """The group means of one arm against the chance rate (exact sign-flip test)."""

    arm: dict[str, str] | None
    chance: float
    items: np.ndarray  # indices into the outcome arrays
    units: np.ndarray  # the group of each item, as a code
    cluster_of: np.ndarray | None = None  # the cluster of each group code, if clustered
    controls_apart: tuple[str, ...] = ()  # positive controls of the row left out of it


@dataclass(frozen=True)
class PairedTest:
    """Per group, arm ``a``'s mean against arm ``b``'s (exact sign test on the groups where
    they differ: McNemar's test when each group has one item per arm)."""

    axis: str
    a: str
    b: str
    items_a: np.ndarray
    units_a: np.ndarray
    items_b: np.ndarray
    units_b: np.ndarray
    cluster_of: np.ndarray | None = None


TestPlan = ChanceTest | PairedTest


def _unit_code(instance: Mapping[str, Any], codes: dict[tuple[str, int], int]) -> int:
    return codes.setdefault((instance["family"], instance["group"]), len(codes))


def _chance_of(instance: Mapping[str, Any]) -> float | None:
    declared = instance.get("analysis", {}).get("chance")
    options = instance["answer"].get("options")
    return declared if declared else (1 / len(options) if options else None)


def is_positive_control(instance: Mapping[str, Any]) -> bool:
    """Whether the instance's family declares itself a positive control (``audit.chance``
    of 1): a memoryless system that reasons is meant to pass it, so beating chance there
    says nothing of memory."""
    return instance.get("analysis", {}).get("audit", {}).get("chance") == 1


def _chance_members(instances: Sequence[Mapping[str, Any]], members: list[int]
                    ) -> tuple[list[int], tuple[str, ...]]:
    """The items a chance test reads, and the positive-control families it leaves apart:
    where an arm pools positive controls with other families, the controls are left out
    (their memoryless rate is 1, not chance, so pooling them would make a memoryless
    policy beat chance by their share); an arm of positive controls alone is tested, since
    beating chance there is what a positive control is for."""
    controls = [i for i in members if is_positive_control(instances[i])]
    if not controls or len(controls) == len(members):
        return members, ()
    apart = tuple(sorted({instances[i]["family"] for i in controls}))
    return [i for i in members if not is_positive_control(instances[i])], apart


def plan_tests(instances: Sequence[Mapping[str, Any]], indices: Sequence[int],
               cluster: Callable[[Mapping[str, Any]], str] | None = None) -> list[TestPlan]:
    """The tests of one row (the instances at ``indices``): a chance test per arm of the
    declared paired axis when the row spans several of its values (else one for the row),
    where every programmatic item of the arm has one chance rate; a paired test per declared
    pair whose two arms the row holds. Judge-scored items take part in none. With
    ``cluster`` (the cluster of an instance's group), the unit of every test is the cluster:
    the mean of its groups' means."""
    codes: dict[tuple[str, int], int] = {}
    scored = [i for i in indices if instances[i]["answer"]["scorer"] != "judge"]
    # An act/don't-act design (one that declares a signal) is read by signal detection,
    # not by a paired test of accuracy, which there would measure a response bias.
    declared = sorted({(p["axis"], p["a"], p["b"]) for i in indices
                       if not instances[i].get("analysis", {}).get("signal")
                       for p in instances[i].get("analysis", {}).get("paired", [])})
    axes = {axis for axis, _, _ in declared}
    arms: list[tuple[dict[str, str] | None, list[int]]] = [(None, scored)]
    if len(axes) == 1:
        axis = next(iter(axes))
        values = sorted({instances[i]["axes"][axis] for i in scored
                         if axis in instances[i]["axes"]})
        if len(values) > 1:
            arms = [({axis: v}, [i for i in scored if instances[i]["axes"].get(axis) == v])
                    for v in values]
    plans: list[TestPlan] = []
    for arm, pooled in arms:
        members, apart = _chance_members(instances, pooled)
        chances = {_chance_of(instances[i]) for i in members}
        if members and len(chances) == 1 and (chance := chances.pop()) is not None:
            plans.append(ChanceTest(arm, chance, np.array(members),
                                    np.array([_unit_code(instances[i], codes)
                                              for i in members]),
                                    controls_apart=apart))
    for axis, a, b in declared:
        side = {value: [i for i in scored if instances[i]["axes"].get(axis) == value]
                for value in (a, b)}
        if not side[a] or not side[b]:
            continue  # the row holds one arm of the pair: nothing to compare in it
        plans.append(PairedTest(
            axis, a, b,
            np.array(side[a], dtype=int),
            np.array([_unit_code(instances[i], codes) for i in side[a]], dtype=int),
            np.array(side[b], dtype=int),
            np.array([_unit_code(instances[i], codes) for i in side[b]], dtype=int)))
    if cluster is None:
        return plans
    first = {}
    for i in indices:
        key = (instances[i]["family"], instances[i]["group"])
        if key in codes:
            first.setdefault(codes[key], instances[i])
    labels = sorted({cluster(instance) for instance in first.values()})
    cluster_of = np.array([labels.index(cluster(first[c])) for c in range(len(codes))],
                          dtype=int)
    return [replace(plan, cluster_of=cluster_of) for plan in plans]


def _by_cluster(units: np.ndarray, means: np.ndarray, cluster_of: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray]:
    """(units, means) of the groups, or of their clusters: each the mean of its groups'."""
    if cluster_of is None:
        return units, means
    labels = cluster_of[units]
    sizes = np.bincount(labels)
    sums = np.bincount(labels, weights=means)
    present = np.flatnonzero(sizes)
    return present, sums[present] / sizes[present]


def group_means(items: np.ndarray, units: np.ndarray, answered: np.ndarray,
                correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit codes, means): each group's mean correctness over its answered items, for the
    groups with at least one."""
    keep = answered[items]
    sizes = np.bincount(units[keep], minlength=units.max() + 1 if units.size else 0)
    hits = np.bincount(units[keep], weights=correct[items][keep].astype(float),
                       minlength=sizes.size)
    present = np.flatnonzero(sizes)
    return present, hits[present] / sizes[present]


def run_test(plan: TestPlan, answered: np.ndarray, correct: np.ndarray) -> dict[str, Any]:
    """The result of one planned test on outcome arrays (``answered`` and ``correct``, one
    boolean per instance)."""
    clustered = {} if plan.cluster_of is None else {"unit": "cluster"}
    if isinstance(plan, ChanceTest):
        units, means = group_means(plan.items, plan.units, answered, correct)
        groups = int(means.size)
        # Each group's answered items, for the test of independent guessing (groups, not
        # clusters: a cluster's mean is a mean of means, which that test does not model).
        sizes = None if plan.cluster_of is not None else \
            np.bincount(plan.units[answered[plan.items]])[units].tolist()
        units, means = _by_cluster(units, means, plan.cluster_of)
        mean = float(means.mean()) if means.size else None
        return {"test": "sign_flip_vs_chance", **({"arm": plan.arm} if plan.arm else {}),
                "chance": plan.chance, "groups": groups,
                **({"controls_apart": list(plan.controls_apart)}
                   if plan.controls_apart else {}),
                **({**clustered, "clusters": int(means.size)} if clustered else {}),
                "items": int(answered[plan.items].sum()), "mean": mean,
                "p_value": chance_test([float(m) for m in means], plan.chance, sizes)}
    units_a, means_a = group_means(plan.items_a, plan.units_a, answered, correct)
    units_b, means_b = group_means(plan.items_b, plan.units_b, answered, correct)
    _, in_a, in_b = np.intersect1d(units_a, units_b, return_indices=True)
    # Only groups with both arms, so that a cluster compares the same groups in each.
    units, means_a, means_b = units_a[in_a], means_a[in_a], means_b[in_b]
    _, means_a = _by_cluster(units, means_a, plan.cluster_of)
    _, means_b = _by_cluster(units, means_b, plan.cluster_of)
    only_a = int((means_a > means_b).sum())
    only_b = int((means_b > means_a).sum())
    return {"test": "mcnemar_exact", "axis": plan.axis, "a": plan.a, "b": plan.b,
            "pairs": int(means_a.size), **clustered, "only_a": only_a, "only_b": only_b,
            "p_value": mcnemar_exact(only_a, only_b) if means_a.size else None}

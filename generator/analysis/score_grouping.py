"""The rows of a score report: the value of a grouping key for an instance, the check of the
keys asked for, and the instances of each row."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import SpecError
from ..formats.parquet_export import split_of
from .score_outcome import Outcome

#: The value of a grouping key an instance does not have.
MISSING = "(none)"


def key_value(instance: Mapping[str, Any], key: str) -> str:
    """The value of a grouping key: a top-level field, an axis, or an instance field."""
    if key in ("family", "paradigm", "design", "variant", "id"):
        return str(instance[key])
    if key == "group":
        return f"{instance['family']}#{instance['group']}"
    if key == "split":  # as the Parquet files and the card have it, for a family not split
        return split_of(instance)
    if key in instance.get("axes", {}):
        return instance["axes"][key]
    if key in instance.get("fields", {}):
        return instance["fields"][key]
    return MISSING


def check_keys(outcomes: Sequence[Outcome], by: Sequence[str], cluster: str | None) -> None:
    """Refuse a grouping key no instance has, and a cluster key that is missing, varies within
    a group (a group must sit in one cluster) or names a single cluster."""
    for key in [*by, *([cluster] if cluster else [])]:
        if outcomes and all(key_value(o.instance, key) == MISSING for o in outcomes):
            raise SpecError.single(f"no instance has a key {key!r} (keys are family, paradigm, "
                                   "design, variant, group, the axes and the fields)")
    if cluster:
        labels: dict[tuple[str, int], set[str]] = defaultdict(set)
        for o in outcomes:
            labels[o.unit].add(key_value(o.instance, cluster))
        varying = [unit for unit, values in labels.items() if len(values) > 1]
        if varying:
            raise SpecError.single(f"--cluster {cluster!r} varies within group {varying[0][1]} "
                                   f"of {varying[0][0]}; clusters must hold whole groups")
        if len({v for values in labels.values() for v in values}) < 2:
            raise SpecError.single(f"--cluster {cluster!r} puts every group in one cluster; "
                                   "a cluster bootstrap needs at least two")


#: The analysis role of a family never pooled into the overall row (see ``overall_indices``).
POSITIVE_CONTROL = "positive_control"


def kept_out_of_overall(instance: Mapping[str, Any]) -> bool:
    """Whether ``instance``'s family declares the analysis role of a positive control
    (``analysis.role``), which keeps it out of the overall row. (The chance tests of a row
    already set apart every family declaring ``audit.chance: 1``, frozen ones included, see
    ``group_tests``; the overall row's metrics need the role, a new declaration, so that
    frozen releases keep their scores.)"""
    analysis = instance.get("analysis")
    return isinstance(analysis, Mapping) and analysis.get("role") == POSITIVE_CONTROL


def overall_indices(instances: Sequence[Mapping[str, Any]]) -> list[int]:
    """The indices of the instances the overall row pools: all but those of positive
    controls, which a memoryless system is meant to pass and which would lift every system's
    pooled score by the same amount; all of them where nothing else is scored (a report of
    the control alone). Only families that declare the role are left out: releases frozen
    before the role existed score as they did."""
    kept = [i for i, instance in enumerate(instances) if not kept_out_of_overall(instance)]
    return kept or list(range(len(instances)))


def report_rows(instances: Sequence[Mapping[str, Any]], by: Sequence[str]
                ) -> list[tuple[dict[str, str], list[int]]]:
    """The rows of a report: the overall row first (``{}`` and ``overall_indices``), then
    one per combination of the ``by`` keys' values, in sorted order, with the indices of its
    instances (positive controls included: ``--by family`` shows them in rows of their
    own)."""
    rows: list[tuple[dict[str, str], list[int]]] = [({}, overall_indices(instances))]
    if by:
        buckets: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for index, instance in enumerate(instances):
            buckets[tuple(key_value(instance, k) for k in by)].append(index)
        rows += [(dict(zip(by, values, strict=True)), buckets[values])
                 for values in sorted(buckets)]
    return rows

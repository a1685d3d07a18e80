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


def report_rows(instances: Sequence[Mapping[str, Any]], by: Sequence[str]
                ) -> list[tuple[dict[str, str], list[int]]]:
    """The rows of a report: ``({}, every index)`` first, then one per combination of the
    ``by`` keys' values, in sorted order, with the indices of its instances."""
    rows: list[tuple[dict[str, str], list[int]]] = [({}, list(range(len(instances))))]
    if by:
        buckets: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for index, instance in enumerate(instances):
            buckets[tuple(key_value(instance, k) for k in by)].append(index)
        rows += [(dict(zip(by, values, strict=True)), buckets[values])
                 for values in sorted(buckets)]
    return rows

"""Layout 9: the analysis block described in croissant.json to every depth Croissant can read.

Up to layout 8 an analysis object's scalars were fields one level down only (``audit.chance``)
and a list inside an object was left to the JSONL (``audit.memory_phases``, ``audit.arms.act``,
``judge_panel.judges``), as were the objects inside objects (``audit.policies.<name>.expected``)
and the lists inside the items of a list of objects (a factorial's ``axes``). mlcroissant reads
all of these: a JSON path to any depth gives a scalar field, a path to a list of scalars a
repeated field, and inside a repeated field (an entry that is a list of objects) a list of
scalars is a repeated sub-field, one list per item. What it cannot read is a list of objects
inside a list of objects (each inner object comes back one record per outer item), and the
family schema admits none (a list of objects only as an entry of the block:
tests/test_croissant_analysis.py walks the schema and fails if that changes).

Paths are tuples of keys, each quoted in the JSON path, so that a key holding a dot
(``metrics: {lab.priming: ...}``) or named like a word of the path language reads as
the key; a field's name joins the keys with ``_`` (a dot in a key becomes ``_``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

#: (path of keys, Croissant type, repeated): one typed leaf of an analysis object.
Leaf = tuple[tuple[str, ...], str, bool]


def typed_leaves(value: Mapping[str, Any], scalar_type: Callable[[Any], str | None],
                 prefix: tuple[str, ...] = ()) -> set[Leaf]:
    """Every leaf of an object Croissant can type, at any depth: a scalar, or a list of
    scalars of one type (repeated). A list of objects is not a leaf (the caller describes a
    top-level one as a repeated field of its own); an empty list says nothing of its type."""
    leaves: set[Leaf] = set()
    for key, item in value.items():
        path = (*prefix, key)
        if isinstance(item, Mapping):
            leaves |= typed_leaves(item, scalar_type, path)
        elif isinstance(item, list):
            kinds = {scalar_type(element) for element in item}
            if len(kinds) == 1 and None not in kinds:
                leaves.add((path, kinds.pop(), True))
        elif kind := scalar_type(item):
            leaves.add((path, kind, False))
    return leaves


def list_entry_leaves(analysis: Mapping[str, Any], scalar_type: Callable[[Any], str | None]
                      ) -> set[tuple[str, Leaf]]:
    """For each top-level entry that is a list of objects, the typed leaves of its objects
    (their lists of scalars too, a repeated sub-field each)."""
    found: set[tuple[str, Leaf]] = set()
    for key, value in analysis.items():
        if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for item in value:
                found.update((key, leaf) for leaf in typed_leaves(item, scalar_type))
    return found


def json_path(path: tuple[str, ...]) -> str:
    """A path of keys as a JSON path, each key quoted."""
    return ".".join(json.dumps(key) for key in path)


def field_name(path: tuple[str, ...]) -> str:
    """The name of a leaf's field: its keys joined with ``_``."""
    return "_".join(key.replace(".", "_") for key in path)


def one_field_per_name(leaves: set[Leaf]) -> list[Leaf]:
    """The leaves seen with one type and one shape only, at most one per field name (the
    first in sorted order: ``a.b`` and a key ``a_b`` would share an @id), sorted."""
    shapes: dict[tuple[str, ...], set[tuple[str, bool]]] = {}
    for path, kind, repeated in leaves:
        shapes.setdefault(path, set()).add((kind, repeated))
    chosen, names = [], set()
    for path, found in sorted(shapes.items()):
        if len(found) == 1 and field_name(path) not in names:
            names.add(field_name(path))
            chosen.append((path, *next(iter(found))))
    return chosen


def analysis_fields(family: str, file: str, leaves: set[Leaf],
                    entry_leaves: set[tuple[str, Leaf]],
                    make_field: Callable[..., dict[str, Any]],
                    make_group: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    """The group ``analysis`` (every leaf of the block outside its lists of objects) and a
    repeated group ``analysis_<entry>`` per list of objects, in the shapes ``make_field`` and
    ``make_group`` (croissant's ``_field`` and ``_group``) give."""
    fields = []
    chosen = one_field_per_name(leaves)
    if chosen:
        fields.append(make_group(family, "analysis", [
            make_field(family, f"analysis/{field_name(path)}", kind, file, "analysis",
                       json_path(path), repeated=repeated)
            for path, kind, repeated in chosen],
            "the family's analysis block, every leaf to any depth (a list of scalars is "
            "repeated; an entry that is a list of objects is a repeated field "
            "analysis_<entry>)"))
    by_entry: dict[str, set[Leaf]] = {}
    for key, leaf in entry_leaves:
        by_entry.setdefault(key, set()).add(leaf)
    for key, entry in sorted(by_entry.items()):
        sub_fields = [make_field(family, f"analysis_{key}/{field_name(path)}", kind, file,
                                 "analysis", (json.dumps(key), json_path(path)),
                                 repeated=repeated)
                      for path, kind, repeated in one_field_per_name(entry)]
        fields.append(make_group(family, f"analysis_{key}", sub_fields,
                                 f"the analysis entry {key}, one record per item (a list of "
                                 "scalars inside an item is repeated)", repeated=True))
    return fields

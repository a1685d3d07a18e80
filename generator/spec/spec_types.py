"""The typed specs a project's files load into (families, paradigms, releases, their designs
and variants), and the names a slot may take or be drawn from."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import audit_declarations
from .pools import Pool
from .yamlsafe import Located

SLOT_SOURCES = ("from", "of", "value", "expr", "range", "choice", "balanced", "crossed", "table")
#: Most combinations a crossed slot may have (one balanced block takes every one of them).
MAX_CROSSED_CELLS = 100_000
#: Sources whose value is random, so that sharing it across groups means something.
RANDOM_SOURCES = ("from", "of", "range", "choice", "table")
#: Names templates receive besides the slots; a slot may not take one of them.
RESERVED_NAMES = frozenset({"variant", "design", "group", "family", "instance",
                            "range", "loop", "namespace", "dict", "self"})
DEFAULT_VARIANT = "base"


@dataclass(frozen=True)
class TransformRef:
    name: str
    args: Mapping[str, Any]
    shared_by: tuple[str, ...] | None = None  # key its random stream by these slots, not the group


@dataclass(frozen=True)
class Axis:
    """A dimension a group is rendered along, with the transforms its values apply."""

    name: str
    values: tuple[str, ...]
    transform: TransformRef | None = None
    value_transforms: Mapping[str, TransformRef] = field(default_factory=dict)


@dataclass(frozen=True)
class Variant:
    """One way of rendering a group: a design and one value on each of its axes."""

    design: str
    name: str
    axes: Mapping[str, str]
    indices: Mapping[str, int]


@dataclass(frozen=True)
class Design:
    name: str
    axes: tuple[Axis, ...]
    when: str | None = None  # expression over the slots: render this design only where true

    def variants(self, prefix: bool) -> Iterator[Variant]:
        """Every combination of axis values, in declaration order."""
        if not self.axes:
            yield Variant(self.name, self.name if prefix else DEFAULT_VARIANT, {}, {})
            return
        for combo in itertools.product(*(list(enumerate(a.values)) for a in self.axes)):
            values = [v for _, v in combo]
            name = ".".join(values)
            yield Variant(
                self.name,
                f"{self.name}.{name}" if prefix else name,
                {a.name: v for a, (_, v) in zip(self.axes, combo, strict=True)},
                {a.name: i for a, (i, _) in zip(self.axes, combo, strict=True)},
            )


@dataclass(frozen=True)
class ParadigmSpec:
    paradigm_id: str
    version: int
    description: str
    phases: tuple[str, ...]
    optional_phases: frozenset[str]
    axes: Mapping[str, tuple[str, ...]]
    scorers: tuple[str, ...]
    checks: tuple[Mapping[str, Any], ...]
    scaffold: Mapping[str, Any] | None
    located: Located
    path: Path
    #: Slots every family of the paradigm has, before its own (a family may override one).
    slots: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class FamilySpec:
    """A validated family, with its paradigm and pools resolved."""

    family_id: str
    version: int
    description: str
    paradigm: ParadigmSpec
    slots: Mapping[str, Mapping[str, Any]]
    designs: tuple[Design, ...]
    phases: Mapping[str, Any]
    answer: Mapping[str, Any]
    fields: Mapping[str, str]
    feedback: str | None
    checks: tuple[tuple[Mapping[str, Any], Located, tuple], ...]
    pools: Mapping[str, Pool]
    located: Located
    path: Path
    #: The file each slot the family takes from its paradigm is written in (by slot name).
    slot_origins: Mapping[str, Located] = field(default_factory=dict)

    @property
    def raw(self) -> Mapping[str, Any]:
        """The family's YAML data as written."""
        return self.located.data

    @property
    def file(self) -> str:
        return self.located.file

    @property
    def draw_key(self) -> str:
        """What the family's random streams are keyed by: its id, or the id its ``draws_as``
        names, so that a new version of a family (a new id) draws what the old one drew."""
        return str(self.raw.get("draws_as", self.family_id))

    def located_at(self, where: tuple) -> Located:
        """The file that holds the value at ``where``: the paradigm's for a slot the family
        takes from it, else the family's."""
        if len(where) >= 2 and where[0] == "slots" and where[1] in self.slot_origins:
            return self.slot_origins[where[1]]
        return self.located

    @property
    def audit(self) -> dict[str, Any]:
        """What the family and its paradigm declare for the audit (the family's block laid
        over the paradigm's)."""
        return audit_declarations.merged(self.paradigm.located.data, self.raw)

    def variants(self) -> list[Variant]:
        """Every variant of a group, in a fixed order (designs, then axis products)."""
        prefix = len(self.designs) > 1
        return [v for d in self.designs for v in d.variants(prefix)]


@dataclass(frozen=True)
class ReleaseFamily:
    family_id: str
    groups: int
    splits: Mapping[str, int] = field(default_factory=dict)  # name -> groups, in order
    disjoint: tuple[str, ...] = ()  # phases no message of which may occur in two splits
    fields: Mapping[str, str] = field(default_factory=dict)  # added to every instance

    def split_of(self, group: int) -> str | None:
        """The split a group belongs to (splits take consecutive runs of groups, in order)."""
        end = 0
        for name, count in self.splits.items():
            end += count
            if group < end:
                return name
        return None

    def release_fields(self, group: int) -> dict[str, str]:
        """The fields the release adds to every instance of ``group``."""
        split = self.split_of(group)
        return {**self.fields, **({"split": split} if split else {})}


@dataclass(frozen=True)
class PublishedDesign:
    """A published design a release follows, as its card cites it."""

    key: str
    title: str
    authors: tuple[str, ...]
    year: int | None
    how: str
    url: str | None = None
    venue: str | None = None


@dataclass(frozen=True)
class ReleaseSpec:
    name: str
    version: str
    seed: int
    description: str
    license: str
    families: tuple[ReleaseFamily, ...]
    located: Located
    path: Path
    published: str | None = None
    language: tuple[str, ...] = ()
    task_categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    subsets: tuple[str, ...] = ()  # instance fields whose values get a loader config each
    designs: tuple[PublishedDesign, ...] = ()
    checks: tuple[Mapping[str, Any], ...] = ()  # over the whole release, run at freeze

    @property
    def full_name(self) -> str:
        return f"{self.name}-{self.version}"

"""The loader configs of a release's dataset card: which Parquet files make up each config
and split (the ``configs`` a dataset loader reads from the card's YAML header)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..core.errors import SpecError

#: The config holding every file of the release; the loader's default.
ALL_CONFIG = "all"


@dataclass(frozen=True)
class ParquetPart:
    """One Parquet file of a release and what it holds."""

    path: str
    family: str
    paradigm: str
    split: str
    subsets: tuple[tuple[str, str], ...] = ()  # (field, value) pairs


@dataclass
class Config:
    """A named selection of files, by split (splits in release order)."""

    name: str
    splits: dict[str, list[str]] = field(default_factory=dict)

    def add(self, part: ParquetPart) -> None:
        self.splits.setdefault(part.split, []).append(part.path)


def loader_configs(parts: Iterable[ParquetPart], split_order: Sequence[str],
                   where: str) -> list[Config]:
    """Configs: ``all`` (the default), one per paradigm, one per family, and one per value of
    each subset field (``<field>-<value>``). A name claimed twice raises, naming ``where``."""
    ordered = sorted(parts, key=lambda p: (split_order.index(p.split), p.path))
    configs: dict[str, Config] = {ALL_CONFIG: Config(ALL_CONFIG)}
    kinds: dict[str, str] = {ALL_CONFIG: "the whole release"}
    for part in ordered:
        names = [(ALL_CONFIG, "the whole release"), (part.paradigm, "a paradigm"),
                 (part.family, "a family"),
                 *((f"{name}-{value}", f"subset field {name}") for name, value in part.subsets)]
        for name, kind in names:
            if kinds.setdefault(name, kind) != kind:
                raise SpecError.single(
                    f"loader config {name!r} would be both {kinds[name]} and {kind}; rename "
                    "one of them", where)
            configs.setdefault(name, Config(name)).add(part)
    by_kind = sorted(configs.values(), key=lambda c: (_rank(kinds[c.name]), c.name))
    for config in by_kind:
        config.splits = {s: config.splits[s] for s in split_order if s in config.splits}
    return by_kind


def _rank(kind: str) -> int:
    return {"the whole release": 0, "a paradigm": 1, "a family": 3}.get(kind, 2)


def split_order(declared: Iterable[Mapping[str, int]], default: str) -> list[str]:
    """Splits in the order releases declare them, then the default split."""
    order: list[str] = []
    for splits in declared:
        order += [name for name in splits if name not in order]
    return order if default in order else [*order, default]


def size_category(instances: int) -> str:
    """The card's size category for a number of rows (n<1K, 1K<n<10K, ...)."""
    bounds = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
              (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"),
              (100_000_000, "10M<n<100M"))
    for bound, label in bounds:
        if instances < bound:
            return label
    return "n>100M"

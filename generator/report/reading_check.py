"""The reading check: a few groups of every family of a built release, chosen the same way
every time, for a person to read before a release is published."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import SpecError
from ..core.limits_commands import working_on

if TYPE_CHECKING:
    from ..spec.catalog import Catalog

#: The most groups per family the check shows: a person reads them, and more than this is a
#: listing, not a reading.
MOST_PER_FAMILY = 50


@dataclass(frozen=True)
class FamilySample:
    """The groups of one family chosen for reading, each with every one of its variants."""

    family: str
    #: How many groups the family holds in the release.
    groups: int
    #: The chosen groups' instances, by group index, in group order.
    chosen: dict[int, list[dict[str, Any]]]


def spread(count: int, wanted: int) -> list[int]:
    """``wanted`` positions among ``count``, spread evenly from the first: ``k * count //
    wanted``. Spread rather than the first few, because groups are often laid out in blocks
    (a corpus, a suite, a balanced cell) that the first groups alone would never leave."""
    wanted = min(wanted, count)
    return [k * count // wanted for k in range(wanted)]


def reading_sample(folder: Path, per_family: int, catalog: Catalog | None = None,
                   families: list[str] | None = None) -> list[FamilySample]:
    """``per_family`` groups of every family of the built release in ``folder`` (or of
    ``families`` among them), every variant of each: the groups at evenly spread positions
    of the family's groups in index order. The release is verified first, as ``score`` does,
    so that what a person reads is what the manifest pins."""
    from ..formats.release_folders import release_identity
    from ..release.release_data import release_sources

    if not 1 <= per_family <= MOST_PER_FAMILY:
        raise SpecError.single(f"--per-family must be between 1 and {MOST_PER_FAMILY}, "
                               f"not {per_family}")
    if release_identity(folder) is None:
        raise SpecError.single("not a built release: no manifest.json naming its release and "
                               "version, listed in a SHA256SUMS (build one with `memspec "
                               "build`)", str(folder))
    _, sources = release_sources(folder, catalog)
    if families:
        unknown = [f for f in families if f not in sources]
        if unknown:
            raise SpecError.single(f"no family {unknown[0]!r} in the release; its families: "
                                   + ", ".join(sources), str(folder))
        sources = {f: sources[f] for f in families}
    return [_sample(family, read, per_family) for family, read in sources.items()]


def _sample(family: str, read: Callable[[], Iterator[dict[str, Any]]],
            per_family: int) -> FamilySample:
    """The chosen groups of one family's data file: read once for its group indices, once
    more to keep only the chosen groups' instances (a family's file can be large)."""
    indices = sorted({instance["group"] for instance in read()})
    chosen_indices = [indices[p] for p in spread(len(indices), per_family)]
    chosen: dict[int, list[dict[str, Any]]] = {g: [] for g in chosen_indices}
    for instance in read():
        working_on(f"instance {instance['id']}")
        if instance["group"] in chosen:
            chosen[instance["group"]].append(instance)
    return FamilySample(family, len(indices), chosen)

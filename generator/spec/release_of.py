"""Which release of a project holds a family (its seed is the one that shows the released
items, so commands that render a family for a person default to it), and which version of a
release is the newest."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..core.errors import MemspecError
from .catalog import Catalog
from .spec import ReleaseSpec


@dataclass(frozen=True)
class ReleaseSeed:
    """The seed a family is shown with, and where it comes from."""

    seed: int
    release: str | None  # <name>-<version>, or None when no release holds the family
    groups: int | None = None  # how many groups that release asks of the family

    def describe(self) -> str:
        if self.release is None:
            return f"seed {self.seed} (no release holds this family)"
        return f"seed {self.seed}, of release {self.release}"


def version_key(version: str) -> tuple[int, ...]:
    """A release version (``v3``, ``v4.1``) as numbers that sort as versions do: v10 after
    v9, v4.1 after v4."""
    return tuple(int(part) for part in version.removeprefix("v").split("."))


def newest_versions(releases: Iterable[ReleaseSpec]) -> list[ReleaseSpec]:
    """The newest version of each release name among ``releases``, by name."""
    newest: dict[str, ReleaseSpec] = {}
    for release in releases:
        held = newest.get(release.name)
        if held is None or version_key(release.version) > version_key(held.version):
            newest[release.name] = release
    return [newest[name] for name in sorted(newest)]


def release_seeds(catalog: Catalog) -> dict[str, ReleaseSeed]:
    """For every family some release holds: the seed and group count of the newest version
    of the first such release by name. A release file that does not load is passed over:
    `memspec validate` is where it is reported."""
    releases = []
    for path in catalog.release_paths():
        try:
            releases.append(catalog.release(path))
        except MemspecError:
            continue
    # Later versions first within a name, names in order: the first release met wins.
    releases.sort(key=lambda r: version_key(r.version), reverse=True)
    releases.sort(key=lambda r: r.name)
    seeds: dict[str, ReleaseSeed] = {}
    for release in releases:
        for entry in release.families:
            seeds.setdefault(entry.family_id,
                             ReleaseSeed(release.seed, release.full_name, entry.groups))
    return seeds


def release_seed(catalog: Catalog, family_id: str, default: int = 0) -> ReleaseSeed:
    """The seed ``family_id`` is shown with: that of ``release_seeds``, or ``default``."""
    return release_seeds(catalog).get(family_id, ReleaseSeed(default, None))

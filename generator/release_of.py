"""Which release of a project holds a family: its seed is the one that shows the released
items, so commands that render a family for a person default to it."""

from __future__ import annotations

from dataclasses import dataclass

from .catalog import Catalog
from .errors import MemspecError


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


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.removeprefix("v").split("."))


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
    releases.sort(key=lambda r: _version_key(r.version), reverse=True)
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

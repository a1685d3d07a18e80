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

    def describe(self) -> str:
        if self.release is None:
            return f"seed {self.seed} (no release holds this family)"
        return f"seed {self.seed}, of release {self.release}"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.removeprefix("v").split("."))


def release_seed(catalog: Catalog, family_id: str, default: int = 0) -> ReleaseSeed:
    """The seed of the newest version of the first release (by name) that holds
    ``family_id``, or ``default``. A release file that does not load is passed over:
    `memspec validate` is where it is reported."""
    found = []
    for path in catalog.release_paths():
        try:
            release = catalog.release(path)
        except MemspecError:
            continue
        if any(entry.family_id == family_id for entry in release.families):
            found.append((release.name, _version_key(release.version), release))
    if not found:
        return ReleaseSeed(default, None)
    name = min(item[0] for item in found)
    newest = max((item for item in found if item[0] == name), key=lambda item: item[1])[2]
    return ReleaseSeed(newest.seed, newest.full_name)

"""The families of a release: loaded with every problem reported at once, checked against the
release's entries (subset fields every family gives, fields the release and a family both set),
and a family's splits kept apart while its instances are written."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from typing import Any

from ..core.errors import CheckFailed, MemspecError, Problem, ProblemCollector
from ..formats.release_checks import release_check_problems
from ..spec.catalog import Catalog, UnknownFamily
from ..spec.spec import FamilySpec, ReleaseFamily, ReleaseSpec


def load_release_families(catalog: Catalog, release: ReleaseSpec,
                          skip: frozenset[str] = frozenset(),
                          fields_of: Mapping[str, Collection[str]] | None = None
                          ) -> list[FamilySpec]:
    """Every family a release names (but those in ``skip``), loaded as a freeze loads them
    (their outcome and signal patterns probed); all problems at once. ``fields_of`` gives the
    field names of families in ``skip`` that were loaded elsewhere, so that the release's
    subsets are checked against them too."""
    loader = catalog.loader(probe_patterns=True)
    families, out = [], ProblemCollector()
    fields = dict(fields_of or {})
    for index, entry in enumerate(release.families):
        if entry.family_id in skip:
            continue
        try:
            families.append(catalog.family(entry.family_id, loader))
            fields[entry.family_id] = tuple(families[-1].fields)
        except UnknownFamily as err:
            line, col = release.located.where(("families", index, "family"))
            first, *rest = err.problems
            out.add(Problem(first.message, release.located.file, line, col,
                            ("families", index, "family")))
            for problem in rest:
                out.add(problem)
        except MemspecError as err:
            out.extend(err)
    for problem in subset_problems(release, fields) + release_check_problems(release, families):
        out.add(problem)
    out.raise_if_any()
    return families


def subset_problems(release: ReleaseSpec, fields_of: Mapping[str, Collection[str]]
                    ) -> list[Problem]:
    """A subset field that some family of the release (of those in ``fields_of``) gives no
    value, neither in its own fields nor in its entry's: every instance needs one."""
    problems = []
    for index, name in enumerate(release.subsets):
        lacking = [entry.family_id for entry in release.families
                   if entry.family_id in fields_of and name not in fields_of[entry.family_id]
                   and name not in entry.fields]
        if lacking:
            line, col = release.located.where(("subsets", index))
            problems.append(Problem(
                f"subset field {name!r} is not a field of {', '.join(lacking)} (neither in "
                "the family's 'fields' nor in its entry's here): every instance needs a value",
                release.located.file, line, col, ("subsets", index)))
    return problems



def refuse_field_clash(release: ReleaseSpec, index: int, family: FamilySpec) -> None:
    entry = release.families[index]
    added = [*entry.fields, *(["split"] if entry.splits else [])]
    clash = [name for name in added if name in family.fields]
    if clash:
        raise release.located.error(
            f"the release sets field {clash[0]!r}, which family {family.family_id} sets too",
            ("families", index))


class SplitContent:
    """Counts a family's instances per split and refuses overlap between splits: a message of
    a ``disjoint`` phase (the task, say) may occur in no other split, in any phase (compared
    by SHA-256 of the content)."""

    def __init__(self, entry: ReleaseFamily, family: FamilySpec) -> None:
        self.entry = entry
        self.family = family
        self.counts: dict[str, int] = {name: 0 for name in entry.splits}
        self.anywhere: dict[str, dict[str, str]] = {}  # content hash -> split -> instance id
        self.guarded: dict[str, dict[str, str]] = {}  # the same, for disjoint phases only

    def add(self, instance: dict[str, Any]) -> None:
        split = instance["fields"].get("split")
        if split not in self.counts:
            return
        self.counts[split] += 1
        if not self.entry.disjoint:
            return
        for phase in instance["phases"]:
            guarded = phase["phase"] in self.entry.disjoint
            for message in phase["messages"]:
                digest = hashlib.sha256(message["content"].encode("utf-8")).hexdigest()
                clashes = {**self.guarded.get(digest, {}),
                           **(self.anywhere.get(digest, {}) if guarded else {})}
                clashes.pop(split, None)
                if clashes:
                    other_split, other_id = sorted(clashes.items())[0]
                    raise CheckFailed.single(
                        f"split overlap: a {phase['phase']} message of {instance['id']} "
                        f"({split}) also occurs in {other_id} ({other_split})",
                        self.family.file)
                self.anywhere.setdefault(digest, {}).setdefault(split, instance["id"])
                if guarded:
                    self.guarded.setdefault(digest, {}).setdefault(split, instance["id"])


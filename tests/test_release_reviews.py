"""Every newest bundled release (those `memspec build` builds by default) has a page,
docs/releases/<release>.md, whose `## Family review` section reviews every family of the
release: a `### <family id>` heading followed by three paragraphs, **Asks.**, **Without
memory.** and **Disputes.**, each saying something."""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from memspec.spec.catalog import Catalog
from memspec.spec.project import Project
from memspec.spec.release_of import newest_versions

#: The three paragraphs of a family's review, in order (docs/authoring.md, the reading check).
PARAGRAPHS = ("**Asks.**", "**Without memory.**", "**Disputes.**")
#: Shorter than this, a paragraph is a placeholder, not a review.
SHORTEST = 80


def _newest() -> dict[str, list[str]]:
    """The family ids of each release `memspec build` builds by default, by release name."""
    catalog = Catalog.load(Project(REPO))
    specs = newest_versions(catalog.release(path) for path in catalog.release_paths())
    return {f"{spec.name}-{spec.version}": [entry.family_id for entry in spec.families]
            for spec in specs}


NEWEST = _newest()


def _reviews(text: str) -> dict[str, list[str]]:
    """The paragraphs under each `### ` heading of the page's `## Family review` section."""
    section = re.search(r"^## Family review\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if section is None:
        return {}
    parts = re.split(r"^### (.+?)\s*$", section[1], flags=re.M)
    return {heading.strip("` "): [p.strip() for p in re.split(r"\n\s*\n", body) if p.strip()]
            for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_the_newest_set_is_what_build_builds() -> None:
    # One release per bundled name, the highest version of each.
    names = {p.stem.rpartition("-v")[0] for p in (REPO / "specs" / "releases").glob("*.yaml")}
    assert sorted(r.rpartition("-v")[0] for r in NEWEST) == sorted(names)


@pytest.mark.parametrize("release", sorted(NEWEST))
def test_every_family_of_the_newest_release_is_reviewed(release: str) -> None:
    page = REPO / "docs" / "releases" / f"{release}.md"
    assert page.is_file(), f"{page.relative_to(REPO)} is missing"
    reviews = _reviews(page.read_text(encoding="utf-8"))
    assert reviews, f"{page.name} has no '## Family review' section with '### <family>' entries"
    missing = [f for f in NEWEST[release] if f not in reviews]
    assert not missing, f"{page.name} reviews no family {missing}"
    unknown = sorted(set(reviews) - set(NEWEST[release]))
    assert not unknown, f"{page.name} reviews families the release does not hold: {unknown}"
    for family in NEWEST[release]:
        paragraphs = reviews[family]
        starts = [next((p for p in PARAGRAPHS if para.startswith(p)), None)
                  for para in paragraphs]
        assert [s for s in starts if s] == list(PARAGRAPHS), \
            f"{family}: paragraphs must begin {PARAGRAPHS} in order, found {starts}"
        for para in paragraphs:
            assert len(para) >= SHORTEST, f"{family}: too short to be a review: {para!r}"

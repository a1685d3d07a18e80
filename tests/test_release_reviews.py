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


#: A family review's account of the audit's adversaries, as the trustgap pages write it.
PLAYED = re.compile(r"played (\d+) such shortcuts on the items it drew; the best, ([\w:]+), was "
                    r"right on (\d+) of the (\d+) it tried")
#: The audit summary's adversaries cell: "13 on 6 items; best position_prior 4/6 (...)".
CELL = re.compile(r"(\d+) on (\d+) items; best ([\w:]+) (\d+)/(\d+) \(")


@pytest.mark.parametrize("page", sorted((REPO / "docs" / "releases").glob("*.md")),
                         ids=lambda p: p.stem)
def test_audit_figures_a_review_quotes_are_its_own_manifests(page) -> None:
    """What a page says of each family's audit (how many shortcuts, the best, its hits and
    tries) is what the committed manifest of that very release records, and every summary
    cell it quotes is one of that manifest's."""
    import json

    text = page.read_text(encoding="utf-8")
    reviews = _reviews(text)
    quoted = [(family, PLAYED.search(" ".join(" ".join(reviews[family]).split())))
              for family in reviews]
    quoted_cells = re.findall(r'"(\d+ on \d+ items; best [^"]+)"', " ".join(text.split()))
    if not any(found for _, found in quoted) and not quoted_cells:
        pytest.skip(f"{page.name} quotes no audit figures")
    manifest = json.loads((REPO / "manifests" / f"{page.stem}.json").read_text())
    cells = {row["family"]: row["adversaries"] for row in manifest["audit"]["summary"]}
    for family, found in quoted:
        assert found, f"{page.name}: {family}'s review does not say what the audit played"
        played, best, hits, tried = found.groups()
        recorded = CELL.match(cells[family])
        assert recorded, cells[family]
        count, items, name, right, out_of = recorded.groups()
        assert (played, best, hits, tried) == (count, name, right, out_of), \
            f"{page.name}: {family}: the review says {found[0]!r}, the manifest {cells[family]!r}"
        assert items == tried
    for cell in quoted_cells:
        assert any(value.startswith(cell) for value in cells.values()), \
            f"{page.name} quotes {cell!r}, not in its manifest"

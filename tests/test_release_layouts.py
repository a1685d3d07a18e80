"""The release layout table: what each layout turns on, as docs/releases.md lists it, and that
nothing in generator/ compares layout numbers instead of asking the table."""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO
from memspec.formats.release_layouts import (
    LATEST_LAYOUT,
    LAYOUTS,
    first_layout_with,
    release_layout,
)

#: What each layout turns on beyond the one before it: frozen releases of layouts 1 to 4 are
#: pinned by these, so a row never changes; a new layout is a new row.
ADDED = {
    1: (),
    2: ("audit_summary", "charts"),
    3: ("loader_exports",),
    4: ("typed_parquet", "escapes_markdown", "croissant_full_records"),
    5: ("croissant_nested_analysis",),
    6: ("croissant_every_field",),
    7: ("parquet_answer_reading",),
    8: ("croissant_messages",),
    9: ("croissant_analysis_depth",),
    10: ("croissant_whole_answer",),
}


def test_each_layout_turns_on_what_the_one_before_does_and_its_own_features() -> None:
    assert sorted(LAYOUTS) == sorted(ADDED) and LATEST_LAYOUT == 10
    on: set[str] = set()
    for number, added in ADDED.items():
        on |= set(added)
        assert set(release_layout(number).features()) == on, number
        for feature in added:
            assert first_layout_with(feature) == number


def test_the_docs_table_lists_the_features_each_layout_adds() -> None:
    text = (REPO / "docs" / "releases.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (\d+) \| (.*) \|$", text, re.MULTILINE))
    listed = {int(number): tuple(name for name in re.findall(r"`(\w+)`", row)
                                 if name in {f for fs in ADDED.values() for f in fs})
              for number, row in rows.items()}
    assert listed == ADDED


def test_the_manifest_schema_admits_exactly_the_known_layouts() -> None:
    schema = json.loads((REPO / "generator" / "schemas" / "manifest.schema.json").read_text())
    assert schema["properties"]["manifest_version"]["enum"] == sorted(LAYOUTS)
    with pytest.raises(ValueError, match="no release layout 11"):
        release_layout(11)


def test_no_module_compares_layout_numbers() -> None:
    """What differs between layouts is asked of the table by name, in one place."""
    comparing = re.compile(r"\blayout\s*(?:[<>]=?|==)\s*\w")
    offenders = [f"{path.name}:{number}"
                 for path in sorted((REPO / "generator").rglob("*.py"))
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if comparing.search(line)]
    assert offenders == []

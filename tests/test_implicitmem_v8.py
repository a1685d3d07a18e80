"""implicitmem-v8 groups version 7's priming pairs by theme, as the source design's priming
files do: one family a theme, the probe form varying within it. Asserted on the session's
build of versions 7 and 8: each priming family holds one theme in every probe form, its
items are version 7's pairs regrouped, the procedural and conditioning items are version 7's
own, the ImplicitMemBench export writes one file a theme naming that theme alone, and the
audit's memoryless shortcuts and planted leaks fail or are caught as on version 7."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import REPO, bundled_releases, release_instances, run_cli
from memspec.audit.run import audit_instances, describe_failure

RELEASE = "implicitmem-v8"
SPEC = yaml.safe_load((REPO / "specs/releases/implicitmem-v8.yaml").read_text())
V7 = yaml.safe_load((REPO / "specs/releases/implicitmem-v7.yaml").read_text())
PRIMING = sorted(f["family"] for f in SPEC["families"] if ".priming8." in f["family"])
FORMS = {"poem", "slogan", "story_opening", "naming", "diary_entry"}
PASSAGES = yaml.safe_load(
    (REPO / "specs/pools/implicitmem/v6/priming/passages.yaml").read_text())["items"]


@pytest.fixture(scope="module")
def dist(built_dist: Path) -> Path:
    """The session build's folder, holding versions 7 and 8."""
    return bundled_releases(built_dist, "implicitmem-v7", RELEASE)


@pytest.fixture(scope="module")
def v8(dist: Path) -> list[dict]:
    return release_instances(dist / RELEASE)


@pytest.fixture(scope="module")
def v7(dist: Path) -> list[dict]:
    return release_instances(dist / "implicitmem-v7")


def _of(items: list[dict], family: str) -> list[dict]:
    return [i for i in items if i["family"] == family]


def _content(item: dict) -> str:
    """An item less what names its place (id, family, group)."""
    return json.dumps({k: v for k, v in item.items() if k not in ("id", "family", "group")},
                      sort_keys=True)


def _pairs(items: list[dict]) -> set[tuple[str, ...]]:
    """Each group's arms, as the contents of its items in arm order."""
    groups: dict[tuple[str, int], list[dict]] = {}
    for item in items:
        groups.setdefault((item["family"], item["group"]), []).append(item)
    return {tuple(_content(i) for i in sorted(arms, key=lambda i: i["axes"]["arm"]))
            for arms in groups.values()}


@pytest.mark.parametrize("family", PRIMING)
def test_each_priming_family_is_one_theme_in_every_probe_form(v8: list[dict],
                                                              family: str) -> None:
    items = _of(v8, family)
    assert len(items) == 40
    theme = {i["fields"]["theme"] for i in items}
    assert len(theme) == 1, theme
    # The theme's four passages, each with each of the five probe forms once.
    experimental = [i for i in items if i["axes"]["arm"] == "experimental"]
    shown = Counter()
    for item in experimental:
        text = " ".join(item["phases"][0]["messages"][0]["content"].split())
        [passage] = [p for p in PASSAGES if text.endswith(" ".join(p["scene"].split()))]
        assert passage["theme"] in theme and family.endswith("." + passage["key"][:-2])
        shown[passage["key"], item["fields"]["probe_category"]] += 1
    keys = [p["key"] for p in PASSAGES if p["theme"] in theme]
    assert shown == Counter({(k, form): 1 for k in keys for form in FORMS})


def test_the_priming_pairs_are_version_7s_regrouped(v8: list[dict], v7: list[dict]) -> None:
    """Every pair (both arms of a group) of version 8 is a pair of version 7, and every pair
    of version 7 is in version 8, item for item but for id, family and group."""
    new = [i for i in v8 if i["family"] in PRIMING]
    old = [i for i in v7 if ".priming6." in i["family"]]
    assert len(new) == len(old) == 200
    assert _pairs(new) == _pairs(old)
    # Version 7 cut the same pairs by probe form: each family held all five themes.
    assert all(len({i["fields"]["theme"] for i in _of(old, f)}) == 5
               for f in {i["family"] for i in old})


def test_procedural_and_conditioning_items_are_version_7s() -> None:
    """Version 8 lists version 7's own procedural and conditioning families under version 7's
    seed, so their data files are version 7's byte for byte (as both manifests record)."""
    kept = [f["family"] for f in SPEC["families"] if f["family"] not in PRIMING]
    assert kept == [f["family"] for f in V7["families"] if ".priming6." not in f["family"]]
    assert SPEC["seed"] == V7["seed"]
    new, old = ({k: v["sha256"] for k, v in json.loads(
        (REPO / "manifests" / f"{name}.json").read_text())["files"].items()
        if k.startswith("data/")} for name in (RELEASE, "implicitmem-v7"))
    for family in kept:
        assert new[f"data/{family}.jsonl"] == old[f"data/{family}.jsonl"], family


def test_the_papers_structure_eighteen_families_a_hundred_groups_a_paradigm() -> None:
    by_paradigm: dict[str, list[int]] = {}
    for entry in SPEC["families"]:
        by_paradigm.setdefault(entry["family"].split(".")[1].rstrip("0123456789"),
                               []).append(entry["groups"])
    assert {p: (len(g), sum(g)) for p, g in by_paradigm.items()} == {
        "procedural": (5, 100), "conditioning": (8, 100), "priming": (5, 100)}
    page = (REPO / "docs/releases/implicitmem-v8.md").read_text()
    for entry in SPEC["families"]:
        assert f"`{entry['family']}`" in page, entry["family"]


def test_the_export_writes_one_file_a_theme_naming_that_theme(dist: Path,
                                                              tmp_path: Path) -> None:
    from upstream_checks import implicitmembench_problems

    out = tmp_path / "imb"
    result = run_cli("export", str(dist / RELEASE), "--format", "implicitmembench",
                     "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert implicitmembench_problems(out) == []
    files = sorted((out / "dataset" / "priming").glob("*.json"))
    assert [p.stem for p in files] == sorted(f.rsplit(".", 1)[1] for f in PRIMING)
    themes = set()
    for path in files:
        data = json.loads(path.read_text())
        assert set(data) == {"instances", "task_count", "task_seed", "source_theme"}
        # One theme, the one every pair of the file names (version 7 joined five by commas).
        assert "," not in data["source_theme"]
        assert {i["selected_source_theme"] for i in data["instances"]} == \
            {data["source_theme"]}
        assert Counter(i["selected_probe_id"] for i in data["instances"]) == \
            Counter({form: 4 for form in FORMS})
        assert data["task_count"] == 20 and data["task_seed"] == SPEC["seed"]
        themes.add(data["source_theme"])
    assert themes == {p["theme"] for p in PASSAGES}


def test_no_memoryless_shortcut_passes_and_the_audit_is_recorded() -> None:
    """The manifest's audit: no failure and every family passed; every procedural and
    conditioning family was attacked by the memoryless shortcuts (none beat chance, or the
    family would not pass), the judged priming families had their control arms compared."""
    audit = json.loads((REPO / "manifests" / f"{RELEASE}.json").read_text())["audit"]
    assert audit["failures"] == []
    rows = {row["family"]: row for row in audit["summary"]}
    assert sorted(rows) == sorted(f["family"] for f in SPEC["families"])
    for family, row in rows.items():
        assert row["passed"] and row["leakage"] == "ok", row
        if family in PRIMING:
            assert row["adversaries"].startswith("none apply: judge-scored"), row
        else:
            assert re.match(r"\d+ on \d+ items; best ", row["adversaries"]), row


@pytest.mark.parametrize("family", PRIMING)
def test_a_memoryless_reply_is_the_same_in_both_arms(v8: list[dict], family: str) -> None:
    """What a system without memory of the priming sees (the exchange and the probe) is the
    same in both arms of every group, so its reply is too and its influence score is 0."""
    seen: dict[int, set[str]] = {}
    for item in _of(v8, family):
        later = [p for p in item["phases"] if p["phase"] != "priming"]
        seen.setdefault(item["group"], set()).add(json.dumps(later, sort_keys=True))
    assert len(seen) == 20 and all(len(views) == 1 for views in seen.values())


def test_a_control_note_that_carries_its_theme_is_caught(v8: list[dict]) -> None:
    items = [json.loads(json.dumps(i)) for i in _of(v8, PRIMING[0])]
    assert not audit_instances(items).failures()
    word = next(p for p in PASSAGES if p["theme"] == items[0]["fields"]["theme"])["lexicon"][0]
    for item in items:
        if item["axes"]["arm"] == "control":
            item["phases"][0]["messages"][0]["content"] += f" The {word} was mentioned twice."
    failures = [describe_failure(f) for f in audit_instances(items).failures()]
    assert any("control arm" in f for f in failures), failures

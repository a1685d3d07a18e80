"""trustgap-v6: trustgap-v5's items under new ids, read with reading version 4, so that a
decision after a neutral "either X or Y" is read and the pair alone abstains. trustgap-v5,
frozen with reading version 2, reads both as abstentions and keeps doing so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import bundled_releases, release_instances
from memspec.analysis.score import outcome


@pytest.fixture(scope="module")
def built(built_dist: Path) -> Path:
    """trustgap-v5 and -v6, built and verified against their committed manifests: the
    session's one build of every bundled release, not built a second time here (read only)."""
    return bundled_releases(built_dist, "trustgap-v5", "trustgap-v6")


@pytest.fixture(scope="module")
def twins(built: Path) -> tuple[list[dict], list[dict]]:
    return (release_instances(built / "trustgap-v5"), release_instances(built / "trustgap-v6"))


def test_v6_items_are_v5_items_under_new_ids(twins: tuple[list[dict], list[dict]]) -> None:
    """Every item holds its version 5 twin's phases, answer, fields, design and axes; only
    the answer's reading block differs: version 4 where version 5 has version 2."""
    def content(instance: dict) -> str:
        answer = {k: v for k, v in instance["answer"].items() if k != "reading"}
        return json.dumps([instance["phases"], answer, instance["fields"], instance["design"],
                           instance["axes"], instance["variant"]], sort_keys=True)

    v5, v6 = twins
    old = {i["id"].replace("trustgap.memory_trust5.", ""): content(i) for i in v5}
    new = {i["id"].replace("trustgap.memory_trust6.", ""): content(i) for i in v6}
    assert new == old and len(new) == 14400
    assert len({i["family"] for i in v6}) == 33
    assert {json.dumps(i["answer"]["reading"]) for i in v5} == {json.dumps({"version": 2})}
    assert {json.dumps(i["answer"]["reading"]) for i in v6} == {json.dumps({"version": 4})}
    assert {i["paradigm"] for i in v6} == {"trustgap.memory_trust6"}


def test_either_is_read_by_what_follows_it_on_v6_only(
        twins: tuple[list[dict], list[dict]]) -> None:
    """On every twin pair of a sample spread over the families: a decision after a neutral
    pair is read as that decision by version 6 and abstains on version 5 as frozen; a bare
    pair abstains on both."""
    v5, v6 = twins
    by_id = {i["id"].replace("trustgap.memory_trust5.", ""): i for i in v5}
    sample = v6[::97]
    assert len({i["family"] for i in sample}) == 33
    for new in sample:
        old = by_id[new["id"].replace("trustgap.memory_trust6.", "")]
        answer = new["answer"]
        current, stale = answer["gold"], answer["distractors"]["stale"]
        decided = f"You could book either {stale} or {current}, but I'd go with {current}."
        misled = f"Either {current} or {stale} would do; I'd go with {stale}."
        letters = "ABC"
        bare = (f"It's either {letters[answer['options'].index(current)]} or "
                f"{letters[answer['options'].index(stale)]}.")
        assert outcome(new, decided).correct and outcome(new, decided).answered
        assert outcome(new, misled).answered and not outcome(new, misled).correct
        assert not outcome(old, decided).answered and not outcome(old, misled).answered
        for instance in (old, new):
            assert not outcome(instance, bare).answered
            assert not outcome(instance, bare).correct

"""Layout 10: the whole answer in croissant.json. A release frozen at the newest layout from
families that declare a reading of every kind (a signature, kept lists, kept openers, kept
rejections, asking as an answer) and a made-up family whose answer has candidates is read
through mlcroissant, and every key of every instance's answer is the JSONL's value; a layout-9
description of the same answers is unchanged, and ``unordered_args`` reads back too."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    REPO,
    described_fields,
    made_once,
    mlcroissant_records,
    release_instances,
    run_cli,
)

ANSWERS_MIX = """\
name: answers
version: v1
seed: 5
published: "2026-12-07"
description: answers of every kind, in the newest layout
license: CC-BY-4.0
subsets: [domain]
families:
  - {family: example.procedural5.reversed_copy, groups: 3, fields: {domain: none}}
  - {family: example.choice5.meeting_room, groups: 3, fields: {domain: none}}
  - family: feedback.v7.procedural.prose_steps
    groups: 4
    splits: {train: 3, test: 1}
    disjoint: [task]
    fields: {domain: open_domain}
  - family: feedback.v7.procedural.summary_line
    groups: 4
    splits: {train: 3, test: 1}
    disjoint: [task]
    fields: {domain: academic_knowledge}
  - family: feedback.v7.procedural.quote_first
    groups: 4
    splits: {train: 3, test: 1}
    disjoint: [task]
    fields: {domain: legal}
  - {family: implicitmem.conditioning7.schedule, groups: 2, fields: {domain: none}}
"""

#: The made-up part: the meeting-room family shows its rooms as candidates with features (the
#: third with none, an empty list in the JSONL).
CANDIDATES = """\
audit:
  candidates: >-
    [{'value': rooms[0], 'features': ['current', 'booked']},
     {'value': rooms[1], 'features': ['stale']}, {'value': rooms[2], 'features': []}]
"""


def _freeze(base: Path) -> str:
    project = base / "project"
    for name in ("specs", "templates", "manifests"):
        shutil.copytree(REPO / name, project / name)
    shutil.copy2(REPO / "memspec.yaml", project / "memspec.yaml")
    family = project / "specs/families/example/v5/meeting_room.yaml"
    family.write_text(family.read_text() + CANDIDATES)
    (project / "specs" / "releases" / "answers-v1.yaml").write_text(ANSWERS_MIX)
    result = run_cli("freeze", "answers-v1", "--out", str(base / "out"),
                     "--allow-audit-failures", root=project, timeout=1200)
    assert result.returncode == 0, result.stderr
    return "ok"


@pytest.fixture(scope="module")
def answers_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return made_once(tmp_path_factory, "whole-answer", _freeze) / "out" / "answers-v1"


def _present(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if v is not None}


def test_every_key_of_every_answer_reads_through_mlcroissant_as_the_jsonl_has_it(
        answers_release: Path) -> None:
    manifest = json.loads((answers_release / "manifest.json").read_text())
    assert manifest["manifest_version"] == 10
    validate = subprocess.run(["mlcroissant", "validate", "--jsonld", "croissant.json"],
                              cwd=answers_release, capture_output=True, text=True,
                              timeout=600, stdin=subprocess.DEVNULL)
    assert validate.returncode == 0, validate.stderr[-3000:]
    records = mlcroissant_records(answers_release, "_messages")
    seen: dict[str, set[str]] = {"reading keys": set(), "candidates": set()}
    for instance in release_instances(answers_release):
        record = next(r for r in records[instance["family"]] if r["id"] == instance["id"])
        answer = instance["answer"]
        reading = answer.get("reading")
        if reading is not None:
            assert _present(record["answer_reading"]) == reading, instance["id"]
            seen["reading keys"] |= set(reading)
        if "candidates" in answer:
            assert record["answer_candidates"] == answer["candidates"], instance["id"]
            seen["candidates"].add(instance["family"])
        else:
            assert "answer_candidates" not in record
        # The rest of the answer as layouts 4 to 9 described it, now with nothing left out.
        typed = _present(record["answer"])
        assert typed == {k: v for k, v in answer.items()
                         if k not in ("reading", "candidates", "distractors", "policies")}, \
            instance["id"]
    assert {"version", "signature", "keep_lists", "keep_openers", "keep_rejected",
            "questions"} <= seen["reading keys"], seen
    assert seen["candidates"] == {"example.choice5.meeting_room"}


def test_layout_9_describes_the_same_answers_as_it_always_did() -> None:
    """The whole answer is layout 10's alone: a layout-9 shape of the same answer gives the
    record set it gave before, and layout 10 adds the reading, unordered_args and the
    candidates (read back through mlcroissant in the test above, unordered_args below)."""
    answer = {"scorer": "canonical", "gold": "f(a=1)", "unordered_args": True,
              "reading": {"version": 5, "signatures": ["f(a)"], "keep_lists": True},
              "candidates": [{"value": "a", "features": []}]}
    instance = {"id": "x", "axes": {}, "fields": {}, "answer": answer}
    described = described_fields(instance, (9, 10), "answer")
    assert described[9] == {"answer": ["gold", "scorer"]}
    assert described[10] == {"answer": ["gold", "scorer", "unordered_args"],
                             "answer_reading": ["version", "keep_lists", "signatures"],
                             "answer_candidates": ["value", "features"]}


def test_unordered_args_reads_back_through_mlcroissant(tmp_path: Path) -> None:
    """No bundled family scores canonically with unordered arguments: a made-up family's
    lines, described as a freeze describes them, read back as written."""
    from memspec.core.canonical import dump_bytes
    from memspec.formats.croissant import CONTEXT, FamilyShape, _record_set

    answers = [{"scorer": "canonical", "gold": "book(room='B12', day='friday')",
                "unordered_args": True, "reading": {"version": 5, "openers": ["Okay[,:]"],
                                                    "abstain": [], "unplaced": "judge"}},
               {"scorer": "canonical", "gold": "book(room='C3', day='monday')",
                "unordered_args": False, "reading": {"version": 5, "abstain": ["no idea"]}}]
    shape = FamilyShape(10)
    lines = []
    for index, answer in enumerate(answers):
        instance = {"id": f"fam-0000{index}-main", "family": "fam", "family_version": 1,
                    "paradigm": "p", "group": index, "design": "main", "variant": "main",
                    "axes": {}, "fields": {}, "answer": answer,
                    "phases": [{"phase": "task", "messages": [
                        {"role": "user", "content": "Book the room."}]}]}
        shape.observe(instance)
        lines.append(dump_bytes(instance))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "fam.jsonl").write_bytes(b"".join(lines))
    sha256 = hashlib.sha256(b"".join(lines)).hexdigest()
    document = {"@context": CONTEXT, "@type": "sc:Dataset", "name": "made-up",
                "description": "a made-up family", "conformsTo":
                "http://mlcommons.org/croissant/1.0", "license": "https://spdx.org/licenses/"
                "CC-BY-4.0.html", "url": "https://example.org", "version": "1.0.0",
                "distribution": [{"@type": "cr:FileObject", "@id": "data/fam.jsonl",
                                  "name": "data/fam.jsonl", "contentUrl": "data/fam.jsonl",
                                  "encodingFormat": "application/jsonlines",
                                  "sha256": sha256}],
                "recordSet": [_record_set("fam", "data/fam.jsonl", shape, "d", 10)]}
    (tmp_path / "croissant.json").write_text(json.dumps(document))
    records = mlcroissant_records(tmp_path)["fam"]
    assert [_present(r["answer"]) for r in records] == [
        {k: v for k, v in a.items() if k != "reading"} for a in answers]
    assert [_present(r["answer_reading"]) for r in records] == [a["reading"] for a in answers]


#: A key in a JSON path: quoted (any characters, a dot too) or bare.
_PATH_STEP = re.compile(r'"(?:[^"\\]|\\.)*"|[^."]+')


def _described_paths(document: dict[str, Any]) -> set[tuple[str, ...]]:
    """The JSONL paths the family record sets of a Croissant document read: each field's
    column, then the keys of its JSON path steps (a step into a list of objects reads each
    item, so list hops do not show in a path)."""
    paths: set[tuple[str, ...]] = set()

    def walk(field: dict[str, Any]) -> None:
        for sub in field.get("subField", ()):
            walk(sub)
        source = field.get("source")
        if source and "column" in source.get("extract", {}):
            steps = source.get("transform", [])
            steps = steps if isinstance(steps, list) else [steps]
            keys = [json.loads(token) if token.startswith('"') else token
                    for step in steps for token in _PATH_STEP.findall(step["jsonPath"])]
            paths.add((source["extract"]["column"], *keys))

    for record_set in document["recordSet"]:
        if not record_set["name"].endswith("_messages"):
            for field in record_set["field"]:
                walk(field)
    return paths


def _leaf_paths(value: Any, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every leaf of a JSONL line by its keys: a scalar, or a list of scalars (a list of
    objects is walked into, item by item; an empty list has nothing to read)."""
    if isinstance(value, dict):
        return {p for key, item in value.items() for p in _leaf_paths(item, (*path, key))}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return {p for item in value for p in _leaf_paths(item, path)}
    if isinstance(value, list) and not value:
        return set()
    return {path}


def test_every_field_of_every_jsonl_line_is_described(answers_release: Path) -> None:
    """Nothing of a line is left to the JSONL: every leaf is read by some field of the
    family's record set (the messages by ``<family>_messages``, above and in
    tests/test_typed_tables.py)."""
    document = json.loads((answers_release / "croissant.json").read_text())
    described = _described_paths(document)
    # The walk reads dotted keys as the keys they are, and the paths it expects are there.
    assert ("answer", "reading", "signature") in described
    assert ("analysis", "baseline", "axis") in described
    left = sorted({path for instance in release_instances(answers_release)
                   for path in _leaf_paths(instance)
                   if path[:2] != ("phases", "messages") and path not in described})
    assert left == []


def test_the_answer_tables_are_the_instance_schemas() -> None:
    """The Croissant types of the reading's and a candidate's keys are the instance schema's
    (a key the schema gains must get a type here, or its field would be missing)."""
    from memspec.formats.croissant_answer import CANDIDATE_TYPES, READING_TYPES

    answer = json.loads((REPO / "generator/schemas/instance.schema.json").read_text()
                        )["properties"]["answer"]["properties"]

    def croissant_type(node: dict[str, Any]) -> tuple[str, bool]:
        if node.get("type") == "array":
            return croissant_type(node["items"])[0], True
        kinds = {type(v).__name__ for v in node.get("enum", ())} or {node["type"]}
        return {frozenset({"int"}): "sc:Integer", frozenset({"boolean"}): "sc:Boolean",
                frozenset({"str"}): "sc:Text", frozenset({"string"}): "sc:Text"
                }[frozenset(kinds)], False

    for table, node in ((READING_TYPES, answer["reading"]),
                        (CANDIDATE_TYPES, answer["candidates"]["items"])):
        assert table == {key: croissant_type(sub) for key, sub in node["properties"].items()}

"""Layout 9: the analysis block in croissant.json to every depth, read back through mlcroissant
value for value against the JSONL (lists inside objects such as ``audit.memory_phases``,
objects inside objects, lists inside the items of a list of objects, keys holding a dot), while
a layout-8 description of the same families stays as it was."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    REPO,
    analysis_leaves,
    described_fields,
    made_once,
    mlcroissant_records,
    release_instances,
    run_cli,
)

#: Families whose analysis blocks hold every shape: lists and objects inside objects
#: (feedback's audit.memory_phases and audit.policies, implicitmem's audit.arms.act, the judge
#: panel's judges), lists inside the items of a list (trustgap's factorials' axes) and a key
#: holding a dot (implicitmem's summaries' metrics).
DEPTH_MIX = """\
name: depth
version: v1
seed: 11
published: "2026-12-07"
description: analysis blocks of every shape, in the newest layout
license: CC-BY-4.0
subsets: [domain]
families:
  - family: feedback.v6.declarative.clause_notes
    groups: 4
    splits: {train: 3, test: 1}
    disjoint: [task]
    fields: {domain: legal}
  - {family: implicitmem.conditioning6.cleanup, groups: 2, fields: {domain: none}}
  - {family: implicitmem.priming6.poem, groups: 2, fields: {domain: none}}
  - {family: memorychecks.v6.counterfeit.open_input, groups: 2, fields: {domain: none}}
  - {family: trustgap.memory_trust6.airline, groups: 12, fields: {domain: none}}
"""

def _freeze(base: Path) -> str:
    project = base / "project"
    for name in ("specs", "templates", "manifests"):
        shutil.copytree(REPO / name, project / name)
    shutil.copy2(REPO / "memspec.yaml", project / "memspec.yaml")
    (project / "specs" / "releases" / "depth-v1.yaml").write_text(DEPTH_MIX)
    result = run_cli("freeze", "depth-v1", "--out", str(base / "out"), "--allow-audit-failures",
                     root=project, timeout=1200)
    assert result.returncode == 0, result.stderr
    return "ok"


@pytest.fixture(scope="module")
def depth_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return made_once(tmp_path_factory, "analysis-depth", _freeze) / "out" / "depth-v1"


def _same(read: Any, written: Any) -> bool:
    # mlcroissant's float may differ in the last bit (0.0294 comes back 0.029400000000000003).
    if isinstance(written, float):
        return read == pytest.approx(written, rel=1e-12)
    return read == written


def test_every_analysis_leaf_reads_through_mlcroissant_as_the_jsonl_has_it(
        depth_release: Path) -> None:
    manifest = json.loads((depth_release / "manifest.json").read_text())
    assert manifest["manifest_version"] >= 9  # layout 9 or later: the newest
    validate = subprocess.run(["mlcroissant", "validate", "--jsonld", "croissant.json"],
                              cwd=depth_release, capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL)
    assert validate.returncode == 0, validate.stderr[-3000:]
    records = mlcroissant_records(depth_release, "_messages")
    seen = {"list in an object": set(), "object in an object": set(),
            "list in a list's items": set(), "key with a dot": set()}
    for instance in release_instances(depth_release):
        record = next(r for r in records[instance["family"]] if r["id"] == instance["id"])
        analysis = instance["analysis"]
        leaves = analysis_leaves({k: v for k, v in analysis.items()
                          if not (isinstance(v, list) and any(isinstance(i, dict) for i in v))})
        for name, value in leaves.items():
            assert _same(record["analysis"][name], value), (instance["id"], name)
        for key, value in analysis.items():
            if not isinstance(value, dict):
                continue
            inner = analysis_leaves(value, f"{key}_")
            seen["list in an object"] |= {n for n, v in inner.items() if isinstance(v, list)}
            for sub, item in value.items():
                if isinstance(item, dict) and any(isinstance(v, dict) for v in item.values()):
                    seen["object in an object"].add(f"{key}.{sub}")
        for key, value in analysis.items():
            if not (isinstance(value, list) and value and isinstance(value[0], dict)):
                continue
            read = [{k: v for k, v in item.items() if v is not None}
                    for item in record[f"analysis_{key}"]]
            expected = [analysis_leaves(item) for item in value]
            assert len(read) == len(expected), (instance["id"], key)
            for got, want in zip(read, expected, strict=True):
                assert set(got) == set(want), (instance["id"], key, got, want)
                assert all(_same(got[k], v) for k, v in want.items()), (instance["id"], key)
                seen["list in a list's items"] |= {f"{key}.{k}" for k, v in want.items()
                                                   if isinstance(v, list)}
                seen["key with a dot"] |= {f"{key}.{k}" for k in want
                                           if "implicitmem_priming" in k}
    assert all(seen.values()), seen
    assert {"audit_memory_phases", "audit_arms_act", "judge_panel_judges"} <= \
        seen["list in an object"]
    assert "factorials.axes" in seen["list in a list's items"]


def test_layout_8_describes_the_same_analysis_as_it_always_did() -> None:
    """The deeper description is layout 9's alone: a layout-8 shape of the same block gives
    the record set it gave before (no list inside an object, keys joined unquoted)."""
    analysis = {"audit": {"chance": 0.5, "memory_phases": ["history"],
                          "policies": {"other": {"expected": 0.0}}},
                "judge_scale": [1, 10],
                "factorials": [{"name": "f", "axes": ["a", "b"], "order": 2}]}
    instance = {"id": "x", "axes": {}, "fields": {}, "answer": {"gold": "g"},
                "analysis": analysis}
    names = described_fields(instance, (8, 9), "analysis")
    assert names[8] == {"analysis": ["audit_chance", "judge_scale"],
                        "analysis_factorials": ["name", "order"]}
    assert names[9] == {"analysis": ["audit_chance", "audit_memory_phases",
                                     "audit_policies_other_expected", "judge_scale"],
                        "analysis_factorials": ["axes", "name", "order"]}


def _schema_file(name: str) -> dict[str, Any]:
    return json.loads((REPO / "generator" / "schemas" / f"{name}.schema.json").read_text())


def _object_list_paths(node: Any, home: str, path: tuple[str, ...], in_list: bool,
                       found: set[tuple[tuple[str, ...], bool]], seen: frozenset[str]) -> None:
    """Every place in a schema node where an array's items may be objects: (the path of
    property names to it, whether it sits inside the items of another such array). ``$ref``
    is followed across memspec's schemas (each once per path: a schema may refer back)."""
    if not isinstance(node, dict):
        return
    if "$ref" in node:
        target, _, pointer = node["$ref"].partition("#")
        other = target.removeprefix("urn:memspec:schema:") or home
        key = f"{other}#{pointer}"
        if key not in seen:
            resolved: Any = _schema_file(other)
            for step in pointer.strip("/").split("/"):
                resolved = resolved[step]
            _object_list_paths(resolved, other, path, in_list, found, seen | {key})
    for combined in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(combined, ()):
            _object_list_paths(sub, home, path, in_list, found, seen)
    items = node.get("items")
    if node.get("type") == "array" and isinstance(items, dict):
        _object_list_paths(items, home, path, True, found, seen)
        if _may_be_object(items, home):
            found.add((path, in_list))
    for key, sub in node.get("properties", {}).items():
        _object_list_paths(sub, home, (*path, key), in_list, found, seen)
    if isinstance(node.get("additionalProperties"), dict):
        _object_list_paths(node["additionalProperties"], home, (*path, "*"), in_list, found,
                           seen)


def _may_be_object(node: dict[str, Any], home: str) -> bool:
    if "$ref" in node:
        target, _, pointer = node["$ref"].partition("#")
        resolved: Any = _schema_file(target.removeprefix("urn:memspec:schema:") or home)
        for step in pointer.strip("/").split("/"):
            resolved = resolved[step]
        return _may_be_object(resolved, home)
    return node.get("type") == "object" or "properties" in node


def _analysis_object_lists() -> set[tuple[tuple[str, ...], bool]]:
    """The lists of objects an instance's analysis block may hold, as the family schema
    admits them: the family's ``analysis`` block plus its ``audit`` block, which every
    instance carries as ``analysis.audit``."""
    family = _schema_file("family")
    found: set[tuple[tuple[str, ...], bool]] = set()
    _object_list_paths(family["$defs"]["analysis"], "family", (), False, found, frozenset())
    _object_list_paths(family["$defs"]["audit"], "family", ("audit",), False, found,
                       frozenset())
    return found


def test_every_list_of_objects_an_analysis_block_may_hold_is_one_croissant_reads() -> None:
    """mlcroissant reads a list of objects that is an entry of the analysis block (a repeated
    field ``analysis_<entry>``) but not one inside an object or inside another list's items
    (each inner object would come back one record per outer item). The family schema admits
    neither: should it come to, this fails, and croissant_analysis must describe the new
    shape (a flattened record set keyed by instance and index) before it ships."""
    # The walk sees a list inside a list's items where there is one ...
    made_up = {"type": "object", "properties": {"factorials": {"type": "array", "items": {
        "type": "object", "properties": {"cells": {"type": "array", "items": {
            "type": "object"}}}}}}}
    nested: set[tuple[tuple[str, ...], bool]] = set()
    _object_list_paths(made_up, "family", (), False, nested, frozenset())
    assert nested == {(("factorials",), False), (("factorials", "cells"), True)}
    # ... and the lists that are there (so that an empty result cannot pass).
    found = _analysis_object_lists()
    assert {path for path, _ in found} >= {("paired",), ("contrasts",), ("factorials",),
                                           ("summaries",)}
    unreadable = sorted(path for path, inside_list in found
                        if inside_list or len(path) != 1)
    assert not unreadable, unreadable


def test_a_family_declaring_a_list_of_objects_inside_a_list_is_refused(
        project_copy: Path) -> None:
    """A made-up family whose factorial holds a list of objects (``cells``): the shape
    Croissant could not read is refused where it is written, so no release holds one."""
    family = project_copy / "specs/families/example/v5/meeting_room.yaml"
    text = family.read_text()
    block = "analysis:\n  baseline: {axis: condition, value: no_memory}\n"
    assert block in text
    family.write_text(text.replace(block, block + (
        "  factorials:\n    - name: rooms\n      axes: [condition, rotation]\n"
        "      cells: [{condition: clean, weight: 1}]\n")))
    result = run_cli("validate", str(family), root=project_copy)
    assert result.returncode == 2, result.stderr
    assert ("meeting_room.yaml:40:7: unknown key 'cells'" in result.stderr
            and "$.analysis.factorials[0].cells" in result.stderr), result.stderr

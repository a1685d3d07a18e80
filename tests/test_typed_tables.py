"""Releases of layout 4 and later in the common loaders: Parquet columns typed with one schema
for every family (axes, fields, distractors and policies as ``{name, value}`` lists, the answer a
struct, ``gold_index`` a nullable integer, feedback a list of rounds), every value equal to the
JSONL line whichever loader reads it (``datasets``, pandas, polars, duckdb, as the card shows
them), and a Croissant description of the distractors, the feedback and the analysis (from
layout 5 also its entries that are lists of objects, one repeated field each)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from consumer_check import as_instance

from conftest import analysis_leaves, mlcroissant_records, release_instances


def _named(pairs: list[dict[str, str]] | None) -> dict[str, str]:
    return {pair["name"]: pair["value"] for pair in pairs or []}


def _same_as_jsonl(rows: list[dict[str, Any]], release: Path) -> None:
    instances = {i["id"]: i for i in release_instances(release)}
    assert sorted(row["id"] for row in rows) == sorted(instances)
    for row in rows:
        instance = instances[row["id"]]
        assert as_instance(row) == instance, row["id"]
        assert row["split"] == instance["fields"].get("split", "test")


def test_parquet_is_typed_with_one_schema_and_loses_nothing(typed_release: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted((typed_release / "parquet").rglob("*.parquet"))
    schemas = {str(pq.read_schema(path)) for path in files}
    assert len(schemas) == 1
    schema = pq.read_schema(files[0])
    assert schema.field("answer").type.field("gold_index").type == pa.int64()
    assert schema.field("axes").type == pa.list_(pa.struct([("name", pa.string()),
                                                           ("value", pa.string())]))
    rows = [row for path in files for row in pq.read_table(path).to_pylist()]
    _same_as_jsonl(rows, typed_release)
    choice = [r for r in rows if r["answer"]["scorer"] == "choice"]
    assert choice and all(isinstance(r["answer"]["gold_index"], int) for r in choice)
    # Where the release declares splits, the split is also where the JSONL has it.
    split = [r for r in rows if r["family"].startswith("feedback.")]
    assert split and all(_named(r["fields"])["split"] == r["split"] for r in split)


def _card_loading_code(release: Path) -> str:
    text = (release / "README.md").read_text()
    found = re.search(r"## Loading\n.*?```python\n(.*?)```", text, re.S)
    assert found is not None
    return found.group(1)


def test_the_cards_loading_lines_give_the_whole_data(typed_release: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    code = _card_loading_code(typed_release)
    for loader in ("load_dataset", "pd.read_parquet", "pl.read_parquet", "duckdb.sql"):
        assert loader in code
    monkeypatch.chdir(typed_release.parent)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scope: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 (the card's own lines)
    dataset = scope["ds"]
    _same_as_jsonl([row for split in dataset.values() for row in split], typed_release)
    _same_as_jsonl(scope["df"].to_dict("records"), typed_release)
    _same_as_jsonl(scope["pf"].to_dicts(), typed_release)
    import duckdb

    relation = duckdb.sql(f"SELECT * FROM '{typed_release.name}/parquet/**/*.parquet'")
    assert [tuple(r.values()) for r in _dicts(relation)] == scope["rows"]
    _same_as_jsonl(_dicts(relation), typed_release)
    # Every config of the card loads.
    header = (typed_release / "README.md").read_text().split("---")[1]
    configs = re.findall(r'config_name: "([^"]+)"', header)
    from datasets import load_dataset

    for config in configs:
        loaded = load_dataset(typed_release.name, config)
        assert sum(len(split) for split in loaded.values()) > 0


def _dicts(relation: Any) -> list[dict[str, Any]]:
    names = relation.columns
    return [dict(zip(names, row, strict=True)) for row in relation.fetchall()]


@pytest.fixture(scope="module")
def croissant_records(typed_release: Path) -> dict[str, list[dict[str, Any]]]:
    """Every record of every record set of the typed release, as mlcroissant reads them (in a
    process of its own), read once for the tests below."""
    return mlcroissant_records(typed_release)


def test_croissant_describes_distractors_feedback_and_analysis(
        typed_release: Path, croissant_records: dict[str, list[dict[str, Any]]]) -> None:
    validate = subprocess.run(["mlcroissant", "validate", "--jsonld", "croissant.json"],
                              cwd=typed_release, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
    assert validate.returncode == 0, validate.stderr[-3000:]
    assert not [line for line in validate.stderr.splitlines()
                if "error" in line.lower() or "warning" in line.lower()]
    records = croissant_records
    layout = json.loads((typed_release / "manifest.json").read_text())["manifest_version"]
    seen = {"distractors": 0, "feedback": 0, "analysis": 0, "analysis lists": 0,
            "feedback sessions": 0, "policies": 0}
    for instance in release_instances(typed_release):
        record = next(r for r in records[instance["family"]] if r["id"] == instance["id"])
        distractors = instance["answer"].get("distractors")
        if distractors:
            assert record["distractors"] == distractors
            seen["distractors"] += 1
        if "feedback" in instance:
            # Every key of every round (layout 6: the session too), as the JSONL has it.
            assert [_present(r) for r in record["feedback"]] == instance["feedback"]
            seen["feedback"] += 1
            seen["feedback sessions"] += all("session" in r for r in record["feedback"])
        policies = instance["answer"].get("policies")
        if policies:
            assert _present(record["answer_policies"]) == policies
            seen["policies"] += 1
        for key, value in instance.get("analysis", {}).items():
            if isinstance(value, dict):
                # The scalars of an object (a list or object inside it stays in the JSONL).
                for sub, item in value.items():
                    if isinstance(item, (list, dict)):
                        continue
                    # (mlcroissant's float may differ in the last bit: 0.0294 comes back
                    # 0.029400000000000003.)
                    assert record["analysis"][f"{key}_{sub}"] == (
                        pytest.approx(item, rel=1e-12) if isinstance(item, float) else item)
                    seen["analysis"] += 1
            elif isinstance(value, list) and not any(isinstance(v, dict) for v in value):
                assert record["analysis"][key] == value
                seen["analysis"] += 1
            elif isinstance(value, list):  # layout 5: a repeated field, one record per item
                read = [{k: v for k, v in r.items() if v is not None}
                        for r in record[f"analysis_{key}"]]
                # Layout 9 also reads each item's lists and its objects' objects.
                flat = analysis_leaves if layout >= 9 else _flat_scalars
                assert read == [flat(item) for item in value]
                seen["analysis lists"] += len(value)
    assert all(seen.values()), seen


def test_croissant_reads_every_message_as_the_jsonl_has_it(
        typed_release: Path, croissant_records: dict[str, list[dict[str, Any]]]) -> None:
    """Layout 8: mlcroissant's records of each family's ``<family>_messages`` record set are
    the JSONL's messages, value for value and in conversation order, each placed by its
    instance id, phase index and name, and its index in the phase; nothing more."""
    manifest = json.loads((typed_release / "manifest.json").read_text())
    assert manifest["manifest_version"] >= 8
    records = croissant_records
    expected: dict[str, list[dict[str, Any]]] = {}
    for instance in release_instances(typed_release):
        for phase_index, phase in enumerate(instance["phases"]):
            for index, message in enumerate(phase["messages"]):
                expected.setdefault(f"{instance['family']}_messages", []).append(
                    {"id": instance["id"], "phase_index": phase_index, "phase": phase["phase"],
                     "index": index, **message})
    read = {name: [_present(record) for record in rows]
            for name, rows in records.items() if name.endswith("_messages")}
    assert read == expected
    # Every kind of message is there: tool results (with their name), users, assistants.
    roles = {m["role"] for rows in read.values() for m in rows}
    assert {"user", "assistant", "tool"} <= roles, roles
    assert any("name" in m for rows in read.values() for m in rows)
    # The flattened files are pinned by the manifest as the data files are.
    assert {f"messages/{name.removesuffix('_messages')}.jsonl" for name in read} <= \
        set(manifest["files"])


def _present(record: dict[str, Any]) -> dict[str, Any]:
    """A Croissant record without the keys it reads as empty (a key the JSONL object lacks)."""
    return {k: v for k, v in record.items() if v is not None}


def _flat_scalars(item: dict[str, Any]) -> dict[str, Any]:
    """An analysis object as Croissant's sub-fields read it: its scalars, and the scalars of
    its objects as ``<key>_<inner key>``."""
    flat = {}
    for key, value in item.items():
        if isinstance(value, dict):
            flat.update({f"{key}_{inner}": v for inner, v in value.items()
                         if v is not None and not isinstance(v, (dict, list))})
        elif value is not None and not isinstance(value, list):
            flat[key] = value
    return flat


def test_croissant_analysis_lists_quote_keys_and_keep_names_unique() -> None:
    """Layout 5 reads a key that is a word of the JSON path language (``where``) as a key, and
    gives one sub-field per name where a nested path and a key flatten alike; layout 4 leaves
    lists of objects out, as its frozen files have them."""
    from memspec.formats.croissant import FamilyShape, _record_set

    shape = FamilyShape(5)
    shape.observe({"axes": {}, "fields": {}, "answer": {"scorer": "exact"},
                   "analysis": {"contrasts": [{"where": {"design": "main"}, "a_b": 1,
                                               "a": {"b": "x"}, "order": 2},
                                              {"where": {"design": "factorial"}, "a_b": 2,
                                               "a": {"b": "y"}, "order": 2.5}]}})
    fields = {f["name"]: f for f in _record_set("fam", "data/fam.jsonl", shape, "d",
                                                layout=5)["field"]}
    subs = fields["analysis_contrasts"]["subField"]
    assert fields["analysis_contrasts"]["repeated"] is True
    assert [s["name"] for s in subs] == ["a_b", "where_design"]  # order: int and float
    assert subs[0]["source"]["transform"] == [{"jsonPath": '"contrasts"'}, {"jsonPath": '"a"."b"'}]
    assert subs[1]["source"]["transform"] == [{"jsonPath": '"contrasts"'},
                                              {"jsonPath": '"where"."design"'}]
    assert len({s["@id"] for s in subs}) == len(subs)
    four = _record_set("fam", "data/fam.jsonl", shape, "d", layout=4)["field"]
    assert not [f for f in four if f["name"].startswith("analysis_")]


def _shape_of(layout: int, analyses: list[dict[str, Any]]) -> Any:
    """A family shape of ``layout`` that observed one instance per analysis block."""
    from memspec.formats.croissant import FamilyShape

    shape = FamilyShape(layout)
    for analysis in analyses:
        shape.observe({"axes": {"order": "a"}, "fields": {}, "feedback": [],
                       "answer": {"scorer": "exact", "distractors": {"stale": "x"}},
                       "analysis": analysis})
    return shape


def test_croissant_shape_reads_only_what_its_layout_writes() -> None:
    """A layout-3 shape gathers no distractors, feedback or analysis (its Croissant file has
    none) and a layout-4 one no lists of objects (it leaves them to the JSONL), while the
    record sets they write are those of a shape that gathered everything."""
    from memspec.formats.croissant import _record_set

    analyses = [{"chance": 0.5, "contrasts": [{"a": {"order": "x"}, "name": "n"}]}]
    full = _shape_of(5, analyses)
    assert full.distractors == {"stale"} and full.feedback
    assert full.analysis == {("chance", "sc:Float", False)}
    assert full.analysis_lists == {("contrasts", "a.order", "sc:Text"),
                                   ("contrasts", "name", "sc:Text")}
    four, three = _shape_of(4, analyses), _shape_of(3, analyses)
    assert four.analysis == full.analysis and not four.analysis_lists
    assert not (three.distractors or three.feedback or three.analysis)
    for layout, shape in ((3, three), (4, four)):
        assert _record_set("fam", "data/fam.jsonl", shape, "d", layout) == \
            _record_set("fam", "data/fam.jsonl", full, "d", layout)


def test_croissant_shape_tells_equal_numbers_of_other_types_apart() -> None:
    """Blocks that compare equal but hold an integer, a float or a boolean (1 == 1.0 ==
    True) are each read: a path seen with two types gets no field, as when read one by one."""
    from memspec.formats.croissant import _record_set

    blocks = [{"k": 1, "items": [{"v": 1}]}, {"k": 1.0, "items": [{"v": 1.0}]},
              {"k": True, "items": [{"v": True}]}]
    assert blocks[0] == blocks[1] == blocks[2]
    shape = _shape_of(5, blocks)
    assert shape.analysis == {("k", kind, False)
                              for kind in ("sc:Integer", "sc:Float", "sc:Boolean")}
    assert {kind for _, _, kind in shape.analysis_lists} == {
        "sc:Integer", "sc:Float", "sc:Boolean"}
    names = {f["name"] for f in _record_set("fam", "data/fam.jsonl", shape, "d", 5)["field"]}
    assert not {"analysis", "analysis_items"} & names
    same = _shape_of(5, [{"k": 2}, {"k": 2}, {"k": 3}])
    assert same.analysis == {("k", "sc:Integer", False)}


@pytest.mark.parametrize("layout", [3, 4])
def test_parquet_row_hash_is_the_hash_of_the_rows_read_back(tmp_path: Path,
                                                            layout: int) -> None:
    """The ``content_sha256`` a shard records while it writes equals the one computed from
    the rows pyarrow reads back, for rows whose text needs care: an analysis block whose
    JSON text is not NFC (an escaped newline then a combining tilde reads as ``n`` + U+0303),
    a message without a name, and an analysis block repeated from instance to instance."""
    import unicodedata

    from memspec.core.canonical import dumps
    from memspec.formats.parquet_export import ParquetShards, content_sha256

    analysis = {"note": "a\n\u0303b", "weights": [1, 2]}
    assert not unicodedata.is_normalized("NFC", dumps(analysis))
    shards = ParquetShards(tmp_path, "fam", (), "fam.yaml", layout)
    for group in range(3):
        shards.add({
            "id": f"fam-{group:05d}-v", "family": "fam", "family_version": 1,
            "paradigm": "p", "group": group, "design": "main", "variant": "v",
            "axes": {"arm": "x"}, "fields": {"split": "test"},
            "phases": [{"phase": "probe", "messages": [
                {"role": "user", "content": f"q{group} caf\u00e9"},
                {"role": "assistant", "name": "helper", "content": "a"}]}],
            "answer": {"scorer": "exact", "gold": "a", "distractors": {"stale": "b"}},
            "feedback": [{"round": 1, "action": "like", "terminated": True}],
            "analysis": dict(analysis)})
    (name, info), = shards.close().items()
    assert info["rows"] == 3
    assert content_sha256(tmp_path / name) == (3, info["content_sha256"])

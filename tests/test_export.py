"""memspec export: a declared layout applied to a built release."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli

FLAT = textwrap.dedent("""\
    export: flat
    version: 1
    description: one JSON file per family, pairs side by side
    paradigms:
      example.procedural:
        path: "{{ paradigm }}/{{ family.split('.')[-1] }}.json"
        record:
          id: "instance.id"
          probe: "phase(instance, 'probe')[0].content"
          turns: "phase(instance, 'interference') | length"
          gold: "instance.answer.gold"
        file:
          items: "records"
          count: "records | length"
          seed: "seed"
      example.choice:
        path: "{{ paradigm }}/{{ family.split('.')[-1] }}.json"
        record: {id: "instance.id", options: "instance.answer.options"}
        file: {items: "records"}
      example.paired:
        path: "{{ paradigm }}/{{ family.split('.')[-1] }}.json"
        pair: {axis: arm, values: [experimental, control]}
        record:
          pair: "index"
          experimental: "phase(pair.experimental, 'priming')[0].content"
          control: "phase(pair.control, 'priming')[0].content"
          same_probe: "pair.experimental.phases[-1] == pair.control.phases[-1]"
        file: {pairs: "records", release: "release ~ '-' ~ version"}
    """)


def test_export_writes_the_declared_layout(built_example: Path, project_copy: Path,
                                           tmp_path: Path) -> None:
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    (project_copy / "specs" / "exports" / "flat.yaml").write_text(FLAT)
    assert run_cli("validate", str(project_copy / "specs/exports/flat.yaml"),
                   root=project_copy).returncode == 0
    out = tmp_path / "export"
    result = run_cli("export", str(built_example), "--format", "flat", "--out", str(out),
                     root=project_copy)
    assert result.returncode == 0, result.stderr
    procedural = json.loads((out / "example.procedural" / "reversed_copy.json").read_text())
    assert procedural["count"] == 12 and procedural["seed"] == 20261201
    assert all(item["turns"] == 30 for item in procedural["items"])
    assert procedural["items"][0]["id"] == "example.procedural.reversed_copy-00000-base"
    paired = json.loads((out / "example.paired" / "harbour_fog.json").read_text())
    assert len(paired["pairs"]) == 12 and paired["release"] == "example-v1"
    assert all(p["same_probe"] and p["experimental"] != p["control"] for p in paired["pairs"])
    choice = json.loads((out / "example.choice" / "meeting_room.json").read_text())
    assert len(choice["items"]) == 108
    again = tmp_path / "again"
    run_cli("export", str(built_example), "--format", "flat", "--out", str(again),
            root=project_copy)
    for path in out.rglob("*.json"):
        assert (again / path.relative_to(out)).read_bytes() == path.read_bytes()


def test_export_paths_stay_inside_the_output(built_example: Path, project_copy: Path,
                                             tmp_path: Path) -> None:
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    (project_copy / "specs" / "exports" / "flat.yaml").write_text(
        FLAT.replace('path: "{{ paradigm }}/{{ family', 'path: "../{{ paradigm }}/{{ family', 1))
    result = run_cli("export", str(built_example), "--format", "flat", "--out",
                     str(tmp_path / "x"), root=project_copy)
    assert result.returncode == 2 and "must stay inside" in result.stderr
    assert not (tmp_path / "example.procedural").exists()


def test_unknown_export_format(built_example: Path) -> None:
    result = run_cli("export", str(built_example), "--format", "nope", "--out", "/tmp/x-none")
    assert result.returncode == 2 and "unknown export format 'nope'; known: " in result.stderr
    assert "inspect" in result.stderr.rsplit("known: ", 1)[1]


def test_export_refuses_a_symlink_out_of_the_folder(built_example: Path, project_copy: Path,
                                                    tmp_path: Path) -> None:
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    (project_copy / "specs" / "exports" / "flat.yaml").write_text(FLAT)
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "example.choice").symlink_to(outside)
    result = run_cli("export", str(built_example), "--format", "flat", "--out", str(out),
                     root=project_copy)
    assert result.returncode == 2 and "outside" in result.stderr
    assert list(outside.iterdir()) == []


def _paths(choice: str, paired: str, procedural: str) -> str:
    """FLAT with each paradigm's path replaced."""
    text = FLAT
    for paradigm, path in (("example.procedural", procedural), ("example.choice", choice),
                           ("example.paired", paired)):
        head, _, tail = text.partition(f"  {paradigm}:\n")
        line, _, rest = tail.partition("\n")
        assert line.strip().startswith("path:")
        text = f"{head}  {paradigm}:\n    path: \"{path}\"\n{rest}"
    return text


@pytest.mark.parametrize(("paths", "message"), [
    # Spelled differently, one file: the second family would overwrite the first.
    (("out/a.json", "out//shared.json", "out/./shared.json"),
     "export path 'out/shared.json' is also where another family exports"),
    (("out/a.json", "out/Shared.json", "out/shared.json"), "is also where another family"),
    (("a.json", "b.json", "a.json/c.json"), "need one path as both a file and a folder"),
])
def test_export_paths_that_collide_are_refused_before_anything_is_written(
        built_example: Path, project_copy: Path, tmp_path: Path, paths: tuple[str, str, str],
        message: str) -> None:
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    (project_copy / "specs" / "exports" / "flat.yaml").write_text(_paths(*paths))
    out = tmp_path / "out"
    result = run_cli("export", str(built_example), "--format", "flat", "--out", str(out),
                     root=project_copy)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "specs/exports/flat.yaml:" in result.stderr
    assert not out.exists()


def test_export_through_a_symlink_makes_no_folder_and_writes_nothing(
        built_example: Path, project_copy: Path, tmp_path: Path) -> None:
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    (project_copy / "specs" / "exports" / "flat.yaml").write_text(
        _paths("a.json", "b.json", "link/new/c.json"))
    outside, out = tmp_path / "outside", tmp_path / "out"
    outside.mkdir()
    out.mkdir()
    (out / "link").symlink_to(outside)
    result = run_cli("export", str(built_example), "--format", "flat", "--out", str(out),
                     root=project_copy)
    assert result.returncode == 2 and "link/new/c.json would be written outside" in result.stderr
    assert list(outside.iterdir()) == [] and sorted(p.name for p in out.iterdir()) == ["link"]


EACH = (FLAT + textwrap.dedent("""\
    files:
      - path: "registry/{{ release }}.json"
        json:
          for_each: "families"
          as: entry
          key: "entry.name"
          shape:
            paradigm: "entry.paradigm"
            records: "entry.records | length"
            paths: "entry.paths"
      - path: "CARD.md"
        text: |
          {% for entry in families %}
          - {{ entry.name }}: {{ entry.instances | length }}
          {% endfor %}
    """)).replace('      gold: "instance.answer.gold"\n', textwrap.indent(textwrap.dedent("""\
    gold: "instance.answer.gold"
    numbered: "family_index"
    turns_seen:
      for_each: "relabel(phase(instance, 'interference')[:2], {'assistant': 'model'})"
      as: turn
      shape: {who: "turn.role", text: "json(turn.content)"}
    """), "      "))


def test_export_files_for_the_whole_export_and_lists_built_for_each_item(
        built_example: Path, project_copy: Path, tmp_path: Path) -> None:
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    (project_copy / "specs" / "exports" / "flat.yaml").write_text(EACH)
    out = tmp_path / "export"
    result = run_cli("export", str(built_example), "--format", "flat", "--out", str(out),
                     root=project_copy)
    assert result.returncode == 0, result.stderr
    registry = json.loads((out / "registry" / "example.json").read_text())
    procedural = json.loads((out / "example.procedural" / "reversed_copy.json").read_text())
    entry = registry["example.procedural.reversed_copy"]
    assert entry == {"paradigm": "example.procedural", "records": 12,
                     "paths": ["example.procedural/reversed_copy.json"]}
    assert [i["numbered"] for i in procedural["items"]] == list(range(12))
    turns = procedural["items"][0]["turns_seen"]
    assert [t["who"] for t in turns] == ["user", "model"]
    assert all(json.loads(t["text"]) for t in turns)
    card = (out / "CARD.md").read_text()
    assert "- example.procedural.reversed_copy: 12" in card


def test_for_each_over_something_not_a_list_is_a_located_error(
        built_example: Path, project_copy: Path, tmp_path: Path) -> None:
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    (project_copy / "specs" / "exports" / "flat.yaml").write_text(
        EACH.replace('for_each: "families"', 'for_each: "seed"'))
    out = tmp_path / "export"
    result = run_cli("export", str(built_example), "--format", "flat", "--out", str(out),
                     root=project_copy)
    assert result.returncode == 2
    assert "flat.yaml:" in result.stderr and "for_each gives int, not a list" in result.stderr
    assert not out.exists()


def test_a_whole_export_file_with_both_json_and_text_is_refused(project_copy: Path) -> None:
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    path = project_copy / "specs" / "exports" / "flat.yaml"
    both = EACH.replace('    json:\n      for_each: "families"',
                        '    text: "x"\n    json:\n      for_each: "families"')
    assert both != EACH
    path.write_text(both)
    result = run_cli("validate", str(path), root=project_copy)
    assert result.returncode == 2 and "specs/exports/flat.yaml:" in result.stderr
    assert "files" in result.stderr


def test_a_key_given_twice_by_for_each_is_a_located_error(
        built_example: Path, project_copy: Path, tmp_path: Path) -> None:
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    (project_copy / "specs" / "exports" / "flat.yaml").write_text(
        EACH.replace('key: "entry.name"', 'key: "entry.paradigm[:7]"'))
    out = tmp_path / "export"
    result = run_cli("export", str(built_example), "--format", "flat", "--out", str(out),
                     root=project_copy)
    assert result.returncode == 2, result.stderr
    assert "for_each gives the key 'example' twice" in result.stderr
    assert "flat.yaml:" in result.stderr and not out.exists()


#: One layout written out, every other paradigm of the example release borrowing it.
SHARED = textwrap.dedent("""\
    export: shared
    version: 1
    description: one JSON file per family, every paradigm in one layout
    paradigms:
      example.procedural:
        path: "{{ family }}.json"
        record: {id: "instance.id", paradigm: "paradigm"}
        file: {items: "records"}
      example.choice: {same_as: example.procedural}
      example.paired: {same_as: example.procedural}
    """)


def test_a_paradigm_borrows_another_paradigms_layout(built_example: Path, project_copy: Path,
                                                     tmp_path: Path) -> None:
    # A new version of a paradigm whose instances have the same shape names the layout it
    # shares (same_as) instead of writing it again.
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    shared = project_copy / "specs" / "exports" / "shared.yaml"
    shared.write_text(SHARED)
    assert run_cli("validate", str(shared), root=project_copy).returncode == 0
    out = tmp_path / "export"
    result = run_cli("export", str(built_example), "--format", "shared", "--out", str(out),
                     root=project_copy)
    assert result.returncode == 0, result.stderr
    written = {path.name: json.loads(path.read_text())["items"] for path in out.glob("*.json")}
    assert len(written["example.choice.meeting_room.json"]) == 108
    assert {item["paradigm"] for item in written["example.priming.harbour_fog.json"]} == \
        {"example.paired"}


@pytest.mark.parametrize(("borrowing", "says"), [
    ("  example.choice: {same_as: example.nowhere}", "which is not declared here"),
    ("  example.paired: {same_as: example.choice}", "which borrows one itself"),
])
def test_a_borrowed_layout_must_be_written_out_in_the_file(project_copy: Path, borrowing: str,
                                                           says: str) -> None:
    name = borrowing.split(":")[0]
    lines = [borrowing if line.startswith(name + ":") else line
             for line in SHARED.splitlines()]
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    shared = project_copy / "specs" / "exports" / "shared.yaml"
    shared.write_text("\n".join(lines) + "\n")
    result = run_cli("validate", str(shared), root=project_copy)
    assert result.returncode == 2, result.stderr
    assert f"shared.yaml:{lines.index(borrowing) + 1}:" in result.stderr, result.stderr
    assert says in result.stderr, result.stderr

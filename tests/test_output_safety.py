"""Values from specs and responses never act as markup, formulas or terminal commands; errors
stay short, printable and few; writes are all or none; a manifest pins the bytes used."""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
import os
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from conftest import REPO, run_cli
from memspec.analysis.judge import MAX_JUDGE_SCORE, load_judgments
from memspec.analysis.responses import RESPONSES_BYTES_VARIABLE, jsonl_lines
from memspec.core.errors import (
    MAX_LINE,
    Problem,
    ProblemCollector,
    SpecError,
    printable,
)
from memspec.exports import file_group
from memspec.formats.card import markdown_text
from memspec.release import freezing as release
from memspec.release import release_writing
from memspec.report.report_format import PlainTable, as_csv

HOSTILE_TEXT = ["# Title", "1. first", "- item", "zk_ + *em* __strong__", "<script>x</script>",
                "[link](https://example.com) ![img](x.png)", "a | b | c", "`code` ~~gone~~",
                "&amp; &lt;", "back\\slash \\*", "+ plus", "12) twelve"]


@pytest.mark.parametrize("text", HOSTILE_TEXT)
def test_a_description_shows_in_markdown_as_written(text: str) -> None:
    # markdown-it-py, CommonMark's reference implementation in Python, renders the card.
    rendered = MarkdownIt("commonmark").enable("table").enable("strikethrough").render(
        markdown_text(text))
    assert rendered.startswith("<p>") and rendered.endswith("</p>\n"), rendered
    assert html.unescape(rendered[3:-5]) == text


def test_table_cells_are_text_not_markup() -> None:
    table = PlainTable("group", "n")
    table.add_row("[red]x[/red] [link=https://e.com]y[/link]", "\x1b[2Jz")
    console = Console(file=io.StringIO(), width=200, color_system=None, force_terminal=False)
    console.print(table)
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "[red]x[/red] [link=https://e.com]y[/link]" in shown
    assert "\x1b" not in shown and "\\x1b[2Jz" in shown


def test_csv_cells_that_start_a_formula_are_neutralised() -> None:
    report = {"overall": {"n": 2},
              "groups": [{"key": {"condition": value}, "metrics": {"n": 1, "delta_mem": -0.5}}
                         for value in ("=HYPERLINK(\"http://e\")", "+1", "-2", "@SUM(A1)",
                                       "plain")]}
    rows = list(csv.DictReader(io.StringIO(as_csv(report))))
    cells = [row["condition"] for row in rows[1:]]
    assert cells == ["'=HYPERLINK(\"http://e\")", "'+1", "'-2", "'@SUM(A1)", "plain"]
    assert rows[1]["delta_mem"] == "-0.5"  # numbers are numbers


def test_error_lines_are_printable_and_short() -> None:
    line = str(Problem("unknown id 'x\nok: all good\x1b[2K\u202e'" + "y" * 5000, "a\nb.jsonl",
                       3, 1))
    assert "\n" not in line and "\x1b" not in line and "\u202e" not in line
    assert len("error: " + line) <= MAX_LINE
    assert line.startswith("a\\nb.jsonl:3:1: unknown id 'x\\nok: all good\\x1b[2K\\u202e")
    assert line.endswith("y" * 50) and "characters left out" in line
    assert printable("plain text: café") == "plain text: café"


def test_a_flood_of_problems_is_counted_with_bounded_memory() -> None:
    collector = ProblemCollector()
    for number in range(1, 300_001):
        collector.add(Problem(f"unknown instance id 'id-{number}'", "r.jsonl", number, 1))
        collector.add(Problem("not valid JSON: Expecting value", "r.jsonl", number, 7))
    assert len(collector.problems) == 40  # twenty of each kind kept, the rest counted
    with pytest.raises(SpecError) as raised:
        collector.raise_if_any()
    lines = raised.value.render().splitlines()
    assert len(lines) == 42
    assert lines[-2:] == ["r.jsonl: and 299,980 more like this (not valid JSON: Expecting "
                          "value)", "r.jsonl: and 299,980 more like this (unknown instance "
                          "id …)"]


def test_responses_are_streamed_under_their_own_limit(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "responses.jsonl"
    line = json.dumps({"id": "a", "response": "x" * 1000}) + "\n"
    path.write_text(line * 5000)  # 5 MB: over the 4 MiB cap of a spec file
    assert sum(1 for _ in jsonl_lines(path, "r.jsonl")) == 5000
    monkeypatch.setenv(RESPONSES_BYTES_VARIABLE, "1000000")
    with pytest.raises(SpecError, match=r"over the 1,000,000-byte limit \(\$MEMSPEC_RESP"):
        list(jsonl_lines(path, "r.jsonl"))
    monkeypatch.setenv(RESPONSES_BYTES_VARIABLE, "lots")
    with pytest.raises(SpecError, match="must be a whole number of bytes"):
        list(jsonl_lines(path, "r.jsonl"))


@pytest.mark.parametrize("score", ["1e300", "-1e13", "123456789012345"])
def test_a_judge_score_too_large_to_compute_with_is_refused(tmp_path: Path, score: str) -> None:
    unblind = tmp_path / "unblind.json"
    unblind.write_text(json.dumps({"r1": {"response": "i1"}}))
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(f'{{"request_id": "r1", "score": {score}}}\n')
    with pytest.raises(SpecError) as raised:
        load_judgments(judgments, unblind, {"i1": None})
    problem = raised.value.problems[0]
    assert f"at most {MAX_JUDGE_SCORE:g} either way" in problem.message
    assert (problem.file, problem.line) == (str(judgments), 1)


def test_an_export_that_fails_midway_leaves_the_previous_one(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    out = tmp_path / "export"
    first = {"a.txt": b"old a\n", "b/c.txt": b"old c\n", "d.txt": b"old d\n"}
    file_group.write_all(out, first)
    replace = os.replace

    def failing(source: object, target: object) -> None:
        # The second file's own rename, after a.txt was replaced (not its putting back).
        if Path(str(target)) == out / "b" / "c.txt" and ".previous" not in Path(str(source)).parts:
            raise OSError(28, "No space left on device", str(target))
        replace(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(file_group.os, "replace", failing)
    with pytest.raises(OSError):
        file_group.write_all(out, {"a.txt": b"new a\n", "b/c.txt": b"new c\n", "e.txt": b"e\n"})
    monkeypatch.undo()
    assert {p.relative_to(out).as_posix(): p.read_bytes()
            for p in out.rglob("*") if p.is_file()} == first


def test_a_manifest_pins_the_bytes_that_were_rendered(project_copy: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A template edited after it was read, while the freeze runs, is pinned as it was read:
    the bytes the data was rendered from."""
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import Project
    project = Project(project_copy)
    catalog = Catalog.load(project)
    spec = release.find_release(catalog, "example-v1")
    (project_copy / "manifests" / "example-v1.json").unlink()
    original: dict[str, bytes] = {}
    hashes = release.input_hashes

    def edited_then_hashed(*args: object, **kwargs: object) -> dict[str, str]:
        for path in sorted((project_copy / "templates").rglob("*.j2")):
            original[path.relative_to(project_copy).as_posix()] = path.read_bytes()
            path.write_bytes(path.read_bytes() + b"{# edited during the freeze #}\n")
        return hashes(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(release_writing, "input_hashes", edited_then_hashed)
    built = release.freeze(catalog, spec, project_copy / "dist", write_manifest=True)
    pinned = {name: digest for name, digest in built.manifest["inputs"].items()
              if name.startswith("templates/")}
    assert pinned
    for name, digest in pinned.items():
        assert digest == hashlib.sha256(original[name]).hexdigest(), name


def test_a_nul_byte_in_a_path_is_a_clean_refusal() -> None:
    from typer.testing import CliRunner

    from memspec.cli.commands import app

    for args in (["verify", "dist/x\x00y"], ["respond", "dist/x\x00y", "--policy", "oracle"],
                 ["generate", "example.choice.meeting_room", "--out", "a\x00b"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "null byte" in result.output or "NUL character" in result.output, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), args


def test_show_never_writes_escape_sequences(project_copy: Path) -> None:
    pool = next((project_copy / "specs" / "pools").rglob("*.yaml"))
    assert pool  # the bundled example is shown with its own text
    result = run_cli("show", "example.choice.meeting_room", "--group", "0", root=REPO)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout


def test_a_template_only_workers_read_is_pinned_as_they_read_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A template that only worker processes include, swapped after they rendered with it
    and before the manifest is written, is pinned by the bytes the workers read: the main
    process never reads it a second time."""
    from test_bad_input import FILES, TEMPLATE

    from memspec.spec.catalog import Catalog
    from memspec.spec.project import Project

    root = tmp_path / "project"
    files = {**FILES, TEMPLATE: FILES[TEMPLATE].replace("Noted.", '{% include "demo/part.j2" %}'),
             "templates/demo/part.j2": "Noted, as read first."}
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    (root / "manifests").mkdir()
    part = root / "templates" / "demo" / "part.j2"
    original = part.read_bytes()
    catalog = Catalog.load(Project(root))
    spec = release.find_release(catalog, "demo-v1")
    hashes = release.input_hashes

    def swapped_then_hashed(*args: object, **kwargs: object) -> dict[str, str]:
        part.write_text("Swapped after the workers rendered.", encoding="utf-8")
        return hashes(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(release_writing, "input_hashes", swapped_then_hashed)
    built = release.freeze(catalog, spec, tmp_path / "dist", write_manifest=True, workers=2,
                           allow_audit_failures=True)
    assert part.read_text() == "Swapped after the workers rendered."
    assert built.manifest["inputs"]["templates/demo/part.j2"] == \
        hashlib.sha256(original).hexdigest()
    data = b"".join(p.read_bytes() for p in (tmp_path / "dist" / "demo-v1").rglob("*.jsonl"))
    assert b"Noted, as read first." in data and b"Swapped" not in data


def test_problems_alike_are_one_kind_and_their_notes_exact_however_long_their_values() -> None:
    """The kind of a problem (what a flood is summarised by) is the same for ids of any
    length, control characters and quotes included, and its lookalike note counts every
    character that is not printable ASCII, as a plain loop over the id does."""
    from memspec.core.errors import lookalike_note, problem_kind

    ids = ["a", "x" * 5_000, "\x7f" * 1_000, "it's \"quoted\" \\ " * 300,
           "\u202e\x1b[31mok: all fine" * 20, "\u043e" * 2 + "\U0001f600\u2028"]
    kinds = {problem_kind(Problem(f"unknown instance id {i!r}")) for i in ids}
    assert kinds == {"unknown instance id …"}
    for text in ids:
        odd = [c for c in text if not " " <= c <= "~"]
        note = lookalike_note(text)
        assert (note == "") == (not odd)
        if len(odd) > 3:
            assert note.endswith(f" and {len(odd) - 3} more)"), note
        elif odd:
            assert note.count(" at position ") == len(odd) and " more)" not in note

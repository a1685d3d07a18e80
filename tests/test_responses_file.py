"""Reading a responses file: every bad line named by file, line and column, all at once;
a good file read exactly, whatever its blank lines or the characters of its responses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memspec.analysis.responses import RESPONSES_BYTES_VARIABLE, load_responses, responses_limit
from memspec.core.errors import SpecError

KNOWN = ["f-00000-a", "f-00001-a", "f-00002-a"]


def _errors(path: Path) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_responses(path, KNOWN)
    return [f"{p.line}:{p.column}: {p.message}" for p in caught.value.problems]


def test_a_good_file_is_read_exactly(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    records = [{"id": KNOWN[0], "response": "B) Garden\nbecause"},
               {"id": KNOWN[2], "response": ""}]
    path.write_text("\n" + json.dumps(records[0]) + "\n   \n" + json.dumps(records[1]),
                    encoding="utf-8")
    assert load_responses(path, KNOWN) == {KNOWN[0]: "B) Garden\nbecause", KNOWN[2]: ""}


def test_every_bad_line_is_named_at_once(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    lines = [
        json.dumps({"id": KNOWN[0], "response": "A"}),
        '{"id": "f-00001-a", "response": "A", "id": "x"}',
        json.dumps({"id": KNOWN[0], "response": "B"}),
        json.dumps({"id": "f-0000\u043e-a", "response": "A"}),
        '{"id": "f-00002-a", "response": NaN}',
        json.dumps({"id": KNOWN[1], "response": 3}),
        json.dumps({"id": KNOWN[1]}),
        json.dumps(["x"]),
        json.dumps({"id": KNOWN[1], "response": "A", "model": "m"}),
        '{"id": "f-00001-a", "response": "\\ud800"}',
        '{"id": "f-00001-a", "response": 12345678901234567890}',
        '{"id": 1',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _errors(path) == [
        "2:1: not valid JSON: key 'id' is given twice",
        "3:1: duplicate response for 'f-00000-a' (first on line 1)",
        "4:1: unknown instance id 'f-0000\u043e-a' (it holds U+043E CYRILLIC SMALL LETTER O at "
        "position 7)",
        "5:1: not valid JSON: NaN is not JSON (no NaN or infinity)",
        "6:1: each line must be {\"id\": string, \"response\": string}: 'response' is a number, "
        "not a string",
        "7:1: each line must be {\"id\": string, \"response\": string}: no 'response'",
        "8:1: each line must be {\"id\": string, \"response\": string}: this is an array, not an "
        "object",
        "9:1: each line must be {\"id\": string, \"response\": string}: unexpected key 'model'",
        "10:1: response holds a lone surrogate (\\ud800-\\udfff), which is not text",
        "11:1: not valid JSON: an integer of 20 digits is too long",
        "12:9: not valid JSON: Expecting ',' delimiter",
    ]


@pytest.mark.parametrize(("data", "where", "message"), [
    (b"\xef\xbb\xbf{}\n", "1:1", "byte-order mark"),
    (b'{"id": "a"}\n{"id": "\xff"}\n', "2:9", "not valid UTF-8 (byte 0xff)"),
    (b'{}\n{"id":\x00}\n', "2:7", "NUL character"),
])
def test_bytes_that_are_no_text_are_located(tmp_path: Path, data: bytes, where: str,
                                            message: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    (found,) = _errors(path)
    assert found.startswith(where + ":") and message in found


def test_a_missing_file_and_the_size_limit(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError, match="responses file not found"):
        load_responses(tmp_path / "none.jsonl", KNOWN)
    monkeypatch.delenv(RESPONSES_BYTES_VARIABLE, raising=False)
    assert responses_limit() == 1 << 30
    monkeypatch.setenv(RESPONSES_BYTES_VARIABLE, " 40 ")
    assert responses_limit() == 40
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": KNOWN[0], "response": "ABC"}) + "\n")  # 39 bytes
    assert load_responses(path, KNOWN) == {KNOWN[0]: "ABC"}
    path.write_text(json.dumps({"id": KNOWN[0], "response": "ABCD"}) + "\n")  # 40 bytes
    assert load_responses(path, KNOWN) == {KNOWN[0]: "ABCD"}
    path.write_text(json.dumps({"id": KNOWN[0], "response": "ABCDE"}) + "\n")  # 41 bytes
    with pytest.raises(SpecError, match="file is 41 bytes, over the 40-byte limit"):
        load_responses(path, KNOWN)
    for bad in ("0", "-5", "1e3", str((1 << 50) + 1)):
        monkeypatch.setenv(RESPONSES_BYTES_VARIABLE, bad)
        with pytest.raises(SpecError, match="must be a whole number of bytes above 0"):
            responses_limit()
    monkeypatch.setenv(RESPONSES_BYTES_VARIABLE, str(1 << 50))
    assert responses_limit() == 1 << 50


def test_strict_json_bounds_and_default_line() -> None:
    from memspec.analysis.responses import parse_strict_json

    assert parse_strict_json("[1234567890123456]", "x.json") == [1234567890123456]
    with pytest.raises(SpecError) as caught:
        parse_strict_json("[12345678901234567]", "x.json")
    assert "an integer of 17 digits is too long" in str(caught.value)
    with pytest.raises(SpecError) as caught:
        parse_strict_json("{bad", "x.json")
    (problem,) = caught.value.problems
    assert (problem.file, problem.line, problem.column) == ("x.json", 1, 2)
    with pytest.raises(SpecError) as caught:
        parse_strict_json("[" * 100_000 + "]" * 100_000, "x.json", 3)
    (problem,) = caught.value.problems
    assert (problem.line, problem.column, problem.message) == (3, 1, "JSON nested too deeply")


def test_a_file_over_the_limit_is_refused_at_its_start(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RESPONSES_BYTES_VARIABLE, "40")
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": KNOWN[0], "response": "ABCDE"}) + "\n")  # 41 bytes
    with pytest.raises(SpecError) as error:
        load_responses(path, KNOWN)
    assert [(p.line, p.column) for p in error.value.problems] == [(1, 1)]


def test_a_file_of_foreign_ids_only_says_how_many_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"id": f"other-{n}", "response": "A"}) + "\n"
                            for n in range(3)))
    with pytest.raises(SpecError) as error:
        load_responses(path, KNOWN)
    assert [p.message for p in error.value.problems
            if p.message.startswith("none of the 3 ids in this file is an instance of this "
                                    "release")]


def test_a_limit_of_one_byte_is_a_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RESPONSES_BYTES_VARIABLE, "1")
    assert responses_limit() == 1
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": KNOWN[0], "response": "A"}) + "\n", encoding="utf-8")
    (found,) = _errors(path)
    assert found.startswith("1:1: file is ") and "over the 1-byte limit" in found
    for bad in ("0", "-1", "1.5", str((1 << 50) + 1)):
        monkeypatch.setenv(RESPONSES_BYTES_VARIABLE, bad)
        with pytest.raises(SpecError, match="must be a whole number of bytes above 0"):
            responses_limit()


@pytest.mark.parametrize(("record", "message"), [
    ('{"id": "f-00000-a", "response": null}', "'response' is null, not a string"),
    ('{"id": true, "response": "A"}', "'id' is true or false, not a string"),
    ('{"id": "f-00000-a", "response": {"text": "A"}}', "'response' is an object, not a string"),
    ('{"id": ["f-00000-a"], "response": "A"}', "'id' is an array, not a string"),
    ("null", "this is null, not an object"), ('"A"', "this is a string, not an object")])
def test_a_record_of_the_wrong_kind_is_named_by_its_json_kind(tmp_path: Path, record: str,
                                                             message: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(record + "\n", encoding="utf-8")
    assert _errors(path) == ['1:1: each line must be {"id": string, "response": string}: '
                             + message]


def test_each_response_keeps_the_line_it_stands_on(tmp_path: Path) -> None:
    from memspec.analysis.responses import response_place

    path = tmp_path / "r.jsonl"
    path.write_text("\n" + json.dumps({"id": KNOWN[2], "response": "A"}) + "\n\n"
                    + json.dumps({"id": KNOWN[0], "response": "B"}) + "\n", encoding="utf-8")
    responses = load_responses(path, KNOWN)
    display = responses.place(KNOWN[2])[0]
    assert display.endswith("r.jsonl")
    assert (responses.place(KNOWN[2]), responses.place(KNOWN[0])) == ((display, 2),
                                                                      (display, 4))
    assert responses.place(KNOWN[1]) is None
    assert response_place(responses, KNOWN[0]) == (display, 4)
    assert response_place({KNOWN[0]: "B"}, KNOWN[0]) is None  # not read from a file

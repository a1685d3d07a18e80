"""Downloaded releases forged to fail without saying where (issue 50): a manifest nested too
deeply for Python's parser, a data line likewise, sparse terabyte files. ``verify``,
``audit`` and ``report`` each name the file (and its line where it has one), in bounded
time, as a fresh process run by a user would show it."""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path

import pytest
from test_hostile import MAX_ERROR_LINE, _memspec, built_release  # noqa: F401 (a fixture)

COMMANDS = {"verify": (), "audit": (), "report": ("--out", "report.html")}


def _copy(release: Path, tmp_path: Path) -> Path:
    copy = tmp_path / release.name
    shutil.copytree(release, copy)
    return copy


def _reseal(folder: Path, name: str) -> None:
    """Pin ``name``'s new bytes in SHA256SUMS, as a forger would."""
    digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    sums = folder / "SHA256SUMS"
    lines = [f"{digest}  {name}" if line.endswith(f"  {name}") else line
             for line in sums.read_text(encoding="utf-8").splitlines()]
    sums.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _located(result: object, where: str, fragment: str) -> None:
    shown = f"exit {result.returncode}\n{result.stderr[:2000]}"  # type: ignore[attr-defined]
    assert result.returncode in (1, 2), shown  # type: ignore[attr-defined]
    assert "Traceback" not in result.stderr, shown  # type: ignore[attr-defined]
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]  # type: ignore[attr-defined]
    assert all(len(line) <= MAX_ERROR_LINE for line in lines), shown
    assert any(line.startswith(f"error: {where}") and fragment in line for line in lines), shown


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_manifest_nested_200000_deep_is_a_located_error(
        command: str, built_release: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    root, release = built_release
    folder = _copy(release, tmp_path)
    (folder / "manifest.json").write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    _reseal(folder, "manifest.json")
    extra = [str(tmp_path / a) if a.endswith(".html") else a for a in COMMANDS[command]]
    result = _memspec(root, command, folder, *extra)
    _located(result, "manifest.json:1:1: ", "not readable JSON: nested too deeply")
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("name", ["manifest.json", "SHA256SUMS"])
def test_a_sparse_terabyte_in_a_release_is_refused_by_its_size(
        name: str, built_release: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    root, release = built_release
    folder = _copy(release, tmp_path)
    with (folder / name).open("r+b") as handle:
        handle.truncate(1 << 40)  # takes no room on disk, and hours to read
    start = time.monotonic()
    result = _memspec(root, "verify", folder)
    assert time.monotonic() - start < 30
    _located(result, f"{name}: ", "1,099,511,627,776 bytes is over the")


def test_a_data_line_nested_too_deeply_names_its_file_and_line(
        built_release: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    from memspec.core.errors import SpecError
    from memspec.spec.instances import read_instances

    data = tmp_path / "forged.jsonl"
    data.write_text('{"id": "a"}\n' + "[" * 200_000 + "]" * 200_000 + "\n", encoding="utf-8")
    with pytest.raises(SpecError) as raised:
        list(read_instances(data))
    assert f"{data}:2:1: not readable JSON: nested too deeply" in str(raised.value)


def test_json_files_name_the_line_and_column_of_what_breaks_them(tmp_path: Path) -> None:
    from memspec.core.errors import SpecError
    from memspec.core.json_files import read_json_file

    cases = {b'{"a": 1,\n "b": nope}': ":2:7: not valid JSON: Expecting value",
             b'{"a": "\n\xe9"}': ":2:1: not UTF-8: byte 0xe9",
             b"[" * 100_000: ":1:1: not readable JSON: nested too deeply"}
    for number, (raw, expected) in enumerate(cases.items()):
        path = tmp_path / f"bad{number}.json"
        path.write_bytes(raw)
        with pytest.raises(SpecError) as raised:
            read_json_file(path, path.name)
        assert f"{path.name}{expected}" in str(raised.value)

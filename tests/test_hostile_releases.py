"""Downloaded releases forged to fail without saying where (issue 50): a manifest nested too
deeply for Python's parser, a data line likewise, seals that are not UTF-8, not JSON or not a
manifest, sparse terabyte files. ``verify``, ``audit`` and ``report`` each name the file (and
its line and column where it has one), in bounded time, with exit status 2 (bad input) and
nothing written, as a fresh process run by a user would show it. A release whose seal reads
but whose files disagree with it does not verify: ``verify`` says so with exit status 1, and
every command that reads the release refuses it as bad input (exit 2)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_hostile import MAX_ERROR_LINE, _memspec, built_release  # noqa: F401 (a fixture)

COMMANDS = {"verify": (), "audit": (), "report": ("--out", "report.html")}
TERABYTE = 1 << 40

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


def _located(result: object, where: str, fragment: str, code: int = 2) -> None:
    shown = f"exit {result.returncode}\n{result.stderr[:2000]}"  # type: ignore[attr-defined]
    assert result.returncode == code, shown  # type: ignore[attr-defined]
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
             b"[" * 100_000: ":1:1: not readable JSON: nested too deeply",
             b"[" + b"1" * 5_000 + b"]": ":1:1: not readable JSON: an integer of more than"}
    for number, (raw, expected) in enumerate(cases.items()):
        path = tmp_path / f"bad{number}.json"
        path.write_bytes(raw)
        with pytest.raises(SpecError) as raised:
            read_json_file(path, path.name)
        assert f"{path.name}{expected}" in str(raised.value)


def _write(name: str, data: bytes) -> Callable[[Path], None]:
    def forge(folder: Path) -> None:
        (folder / name).write_bytes(data)
        if name != "SHA256SUMS":
            _reseal(folder, name)
    return forge


def _renamed(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["release"] = "../../elsewhere"
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    _reseal(folder, "manifest.json")


def _sparse(name: str) -> Callable[[Path], None]:
    def forge(folder: Path) -> None:
        with (folder / name).open("r+b") as handle:
            handle.truncate(TERABYTE)  # takes no room on disk, and hours to read
    return forge


#: Every way a release's seal can be unreadable, as a forger would make it: (how, the start
#: of the error line, a fragment of it). Each is bad input to every command reading it.
UNREADABLE = {
    "manifest-not-json": (_write("manifest.json", b'{"release": 1,\n "files": nope}'),
                          "manifest.json:2:11: ", "not valid JSON"),
    "manifest-not-utf8": (_write("manifest.json", b'{"release": "\n\xe9"}'),
                          "manifest.json:2:1: ", "not UTF-8: byte 0xe9"),
    "manifest-not-a-manifest": (_write("manifest.json", b'{"files": {}}'),
                                "manifest.json: ", "does not match its schema"),
    "manifest-huge-integer": (_write("manifest.json", b'{"release": ' + b"9" * 5_000 + b"}"),
                              "manifest.json:1:1: ", "an integer of more than 4,300 digits"),
    "manifest-terabyte": (_sparse("manifest.json"), "manifest.json: ",
                          "1,099,511,627,776 bytes is over the"),
    "sums-not-utf8": (_write("SHA256SUMS", b"\xff" * 64 + b"  manifest.json\n"),
                      "SHA256SUMS:1:1: ", "not UTF-8: byte 0xff"),
    "sums-malformed": (_write("SHA256SUMS", b"0123  manifest.json\n"),
                       "SHA256SUMS:1:1: ", "malformed line"),
    "sums-terabyte": (_sparse("SHA256SUMS"), "SHA256SUMS: ", "1,099,511,627,776 bytes is over"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_an_unreadable_seal_is_bad_input_to_every_command(
        case: str, command: str, built_release: tuple[Path, Path],  # noqa: F811
        tmp_path: Path) -> None:
    root, release = built_release
    folder = _copy(release, tmp_path)
    forge, where, fragment = UNREADABLE[case]
    forge(folder)
    extra = [str(tmp_path / a) if a.endswith(".html") else a for a in COMMANDS[command]]
    start = time.monotonic()
    result = _memspec(root, command, folder, *extra)
    assert time.monotonic() - start < 30
    _located(result, where, fragment)
    assert not (tmp_path / "report.html").exists()


def test_a_manifest_naming_a_release_outside_the_project_is_bad_input(
        built_release: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    root, release = built_release
    folder = _copy(release, tmp_path)
    _renamed(folder)
    _located(_memspec(root, "verify", folder), "manifest.json: ",
             "does not match its schema: '../../elsewhere' does not match")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_release_that_does_not_verify_fails_verify_and_is_bad_input_elsewhere(
        command: str, built_release: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    """A sparse terabyte put in place of a data file: its size is not the one pinned, so it
    is refused before a byte of it is read; ``verify``'s verdict is exit 1, and what reads
    the release refuses it as bad input."""
    root, release = built_release
    folder = _copy(release, tmp_path)
    data = sorted((folder / "data").iterdir())[0]
    name = f"data/{data.name}"
    _sparse(name)(folder)
    extra = [str(tmp_path / a) if a.endswith(".html") else a for a in COMMANDS[command]]
    start = time.monotonic()
    result = _memspec(root, command, folder, *extra)
    assert time.monotonic() - start < 30
    _located(result, f"{name}: ", "file is 1,099,511,627,776 bytes; manifest.json says",
             1 if command == "verify" else 2)
    assert not (tmp_path / "report.html").exists()


def _pinned_terabyte(folder: Path, name: str) -> None:
    """``name`` made a sparse terabyte and pinned at that size by a forged manifest and sums,
    as a forger would who computed nothing: the size no longer tells it from the release's."""
    _sparse(name)(folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"][name].update(bytes=TERABYTE, sha256="0" * 64)
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    _reseal(folder, "manifest.json")
    sums = folder / "SHA256SUMS"
    sums.write_text("".join(f"{'0' * 64}  {name}\n" if line.endswith(f"  {name}") else
                            line + "\n" for line in sums.read_text().splitlines()))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_sparse_terabyte_pinned_by_a_forged_manifest_is_refused_unread(
        command: str, built_release: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    root, release = built_release
    folder = _copy(release, tmp_path)
    name = f"data/{sorted((folder / 'data').iterdir())[0].name}"
    _pinned_terabyte(folder, name)
    extra = [str(tmp_path / a) if a.endswith(".html") else a for a in COMMANDS[command]]
    start = time.monotonic()
    result = _memspec(root, command, folder, *extra)
    assert time.monotonic() - start < 30, "the terabyte was read"
    _located(result, f"{name}: ", "file of 1,099,511,627,776 bytes is sparse")
    assert not (tmp_path / "report.html").exists()


def test_holes_are_counted_without_reading(tmp_path: Path) -> None:
    from memspec.core.json_files import hole_bytes

    dense = tmp_path / "dense"
    dense.write_bytes(b"x" * 1_000_000)
    assert hole_bytes(dense, 1_000_000) == 0
    sparse = tmp_path / "sparse"
    with sparse.open("wb") as handle:
        handle.write(b"x" * 4096)
        handle.truncate(TERABYTE)
    assert hole_bytes(sparse, TERABYTE) >= TERABYTE - (1 << 20)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_hostile_file_name_in_a_release_is_named_in_a_short_line(
        command: str, built_release: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    """A file added under fifteen folders of 200-character names, the last with a newline and
    an escape in its name: the error line names it printably, within 400 characters."""
    root, release = built_release
    folder = _copy(release, tmp_path)
    deep = folder / "data"
    for level in range(15):
        deep = deep / (f"{level:02d}" + "x" * 198)
    deep.mkdir(parents=True)
    (deep / "evil\n\x1b[31mname.jsonl").write_text("{}\n", encoding="utf-8")
    extra = [str(tmp_path / a) if a.endswith(".html") else a for a in COMMANDS[command]]
    result = _memspec(root, command, folder, *extra)
    _located(result, "data/00xxx", "not listed in SHA256SUMS", 1 if command == "verify" else 2)
    assert "\x1b" not in result.stderr
    assert not (tmp_path / "report.html").exists()


def test_a_data_line_nesting_past_any_instance_is_refused_at_its_line(
        built_release: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    """A data line of a downloaded release, sealed by a forger, whose analysis nests 990
    levels (JSON reads it; writing it out again, as an export does, passed Python's
    recursion limit with no file named): every command reading it refuses it at its file
    and line, exit 2, nothing written; a line nested as deep as specs allow still reads."""
    from memspec.spec.instances import MAX_INSTANCE_DEPTH, read_instances

    _, release = built_release
    folder = _copy(release, tmp_path)
    data = sorted((folder / "data").iterdir())[0]
    name = f"data/{data.name}"
    lines = data.read_bytes().splitlines(keepends=True)
    instance = json.loads(lines[1])
    nested = json.dumps({**instance, "analysis": {**instance.get("analysis", {}),
                                                  "deep": "DEEP"}})
    # Written out by hand: json.dumps itself would pass the recursion limit.
    lines[1] = nested.replace('"DEEP"', "[" * 990 + '"deep"' + "]" * 990).encode() + b"\n"
    data.write_bytes(b"".join(lines))
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    # The forger pins the new bytes everywhere verify compares them: croissant.json's
    # distribution, the manifest's entries and root, SHA256SUMS.
    croissant = folder / "croissant.json"
    description = json.loads(croissant.read_text(encoding="utf-8"))
    for item in description["distribution"]:
        if item.get("contentUrl") == name:
            item["sha256"] = digest
    croissant.write_text(json.dumps(description), encoding="utf-8")
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"][name].update(bytes=data.stat().st_size, sha256=digest)
    manifest["files"]["croissant.json"].update(
        bytes=croissant.stat().st_size, sha256=hashlib.sha256(croissant.read_bytes()).hexdigest())
    pinned = {n: i["sha256"] for n, i in manifest["files"].items() if n.startswith("data/")}
    manifest["root_sha256"] = hashlib.sha256("".join(
        f"{pinned[n]}  {n}\n" for n in sorted(pinned)).encode()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    for resealed in (name, "croissant.json", "manifest.json"):
        _reseal(folder, resealed)
    def downloaded(*args: str) -> subprocess.CompletedProcess[str]:
        """A command run on the release as downloaded: outside any project."""
        env = {k: v for k, v in os.environ.items() if k != "MEMSPEC_ROOT"}
        return subprocess.run([sys.executable, "-m", "memspec.cli", *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)

    verified = downloaded("verify", str(folder))
    assert verified.returncode == 0, verified.stderr  # sealed as a forger would
    where = f"{data}:2:1: "
    for command, extra in {"export": ("--format", "inspect", "--out", "exported"),
                           "audit": (), "report": ("--out", "report.html")}.items():
        result = downloaded(command, str(folder), *extra)
        _located(result, where, f"nested more than {MAX_INSTANCE_DEPTH} levels deep")
    assert not (tmp_path / "exported").exists() and not (tmp_path / "report.html").exists()
    # As deep as a spec may nest (48 levels), under the instance's own few: read as before.
    shallow = tmp_path / "shallow.jsonl"
    shallow.write_text(nested.replace('"DEEP"', "[" * 60 + '"deep"' + "]" * 60) + "\n")
    assert len(list(read_instances(shallow))) == 1

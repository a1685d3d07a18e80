"""Tamper evidence, exhaustively: every single-byte change, truncation, reordering, added and
removed file of a small frozen release is caught by `memspec verify`, which names the file.

The release is the smallest one the newest layout makes (one family, two groups: data, Parquet
copy, Croissant description, charts, card, manifest and sums). Every byte of every file is
flipped, one at a time (about 23,000 cases); the flips call ``verify_release`` in-process, and
a few cases go through the command line too.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from test_bad_input import FILES

from conftest import REPO, run_cli, tree_bytes
from memspec.release.verify import VerifyReport, verify_release
from memspec.spec.catalog import Catalog
from memspec.spec.project import Project

RELEASE = "demo-v1"
#: Every file of the small release; a test below proves the list is complete, so that a new
#: kind of file cannot escape the exhaustive flips.
RELEASE_FILES = (
    "README.md",
    "SHA256SUMS",
    "croissant.json",
    "data/demo.recall.colour.jsonl",
    "manifest.json",
    "messages/demo.recall.colour.jsonl",
    "parquet/demo.recall.colour/test.parquet",
    "plots/tokens_probe.svg",
    "plots/tokens_setup.svg",
)


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small project frozen with `memspec freeze`: its release folder (under dist/)."""
    root = tmp_path_factory.mktemp("tamper") / "project"
    for relative, text in FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    (root / "manifests").mkdir()
    result = run_cli("freeze", RELEASE, root=root)
    assert result.returncode == 0, result.stderr
    return root / "dist" / RELEASE


@pytest.fixture(scope="module")
def catalog(frozen: Path) -> Catalog:
    return Catalog.load(Project(frozen.parent.parent))


@pytest.fixture
def copy(frozen: Path, tmp_path: Path) -> Path:
    """A private copy of the release inside the project's dist/ (so verify finds the project)."""
    target = frozen.parent / f".copy-{tmp_path.name}"
    shutil.copytree(frozen, target)
    yield target
    shutil.rmtree(target)


def _names(report: VerifyReport, name: str) -> bool:
    """Whether a problem is located in ``name`` (the file an ``error: FILE: ...`` line
    starts with), not merely mentions it."""
    return any(problem.file is not None and
               (problem.file == name or problem.file.endswith(f"/{name}"))
               for problem in report.problems)


def _caught(release: Path, catalog: Catalog, name: str, what: str) -> str | None:
    """None when verify refuses the release and names ``name``; else what went wrong."""
    report = verify_release(release, catalog)
    if report.ok:
        return f"{what}: verify accepted it"
    if not _names(report, name):
        return f"{what}: verify did not blame {name}: {[str(p) for p in report.problems]}"
    return None


def _assert_all_caught(escapes: list[str], cases: int) -> None:
    assert cases and not escapes, f"{len(escapes)} of {cases} cases escaped:\n" + \
        "\n".join(escapes[:20])


def test_the_exhaustive_cases_cover_every_file(frozen: Path, catalog: Catalog) -> None:
    assert tuple(sorted(tree_bytes(frozen))) == RELEASE_FILES
    assert verify_release(frozen, catalog).ok


#: Each file's bytes are flipped in this many interleaved parts, separate tests that the
#: test workers share; together they flip every byte.
FLIP_PARTS = 2


@pytest.mark.parametrize("part", range(FLIP_PARTS))
@pytest.mark.parametrize("name", RELEASE_FILES)
def test_every_flipped_byte_is_caught_and_named(copy: Path, catalog: Catalog,
                                                name: str, part: int) -> None:
    path = copy / name
    original = path.read_bytes()
    offsets = range(part, len(original), FLIP_PARTS)
    escapes = []
    with path.open("r+b") as handle:
        for offset in offsets:
            byte = original[offset]
            handle.seek(offset)
            handle.write(bytes([byte ^ 0x01]))
            handle.flush()
            escape = _caught(copy, catalog, name, f"byte {offset} of {name}")
            if escape:
                escapes.append(escape)
            handle.seek(offset)
            handle.write(bytes([byte]))
            handle.flush()
    assert path.read_bytes() == original
    _assert_all_caught(escapes, len(offsets))
    assert verify_release(copy, catalog).ok


@pytest.mark.parametrize("name", RELEASE_FILES)
def test_every_truncation_is_caught_and_named(copy: Path, catalog: Catalog, name: str) -> None:
    path = copy / name
    original = path.read_bytes()
    # Empty, one byte, every line boundary (a cut there leaves well-formed lines), half, and
    # all but the last byte.
    boundaries = {i + 1 for i, byte in enumerate(original) if byte == 0x0A}
    lengths = sorted({0, 1, len(original) // 2, len(original) - 1} |
                     (boundaries - {len(original)}))
    escapes = []
    for length in lengths:
        path.write_bytes(original[:length])
        escape = _caught(copy, catalog, name, f"{name} cut to {length} bytes")
        if escape:
            escapes.append(escape)
    path.write_bytes(original)
    _assert_all_caught(escapes, len(lengths))


def _reorderings(lines: list[bytes]) -> list[tuple[str, list[bytes]]]:
    """Every swap of two neighbouring lines, the reversal and a rotation, where they change
    the order."""
    out = []
    for i in range(len(lines) - 1):
        swapped = [*lines]
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
        out.append((f"lines {i + 1} and {i + 2} swapped", swapped))
    out += [("reversed", lines[::-1]), ("rotated", [*lines[1:], *lines[:1]])]
    return [(label, new) for label, new in out if new != lines]


def _reorder_cases(release: Path, catalog: Catalog, suffixes: tuple[str, ...]) -> None:
    escapes, cases = [], 0
    for path in sorted(release.rglob("*")):
        name = path.relative_to(release).as_posix()
        if not path.is_file() or not name.endswith(suffixes):
            continue
        original = path.read_bytes()
        for label, lines in _reorderings(original.splitlines(keepends=True)):
            cases += 1
            path.write_bytes(b"".join(lines))
            escape = _caught(release, catalog, name, f"{name}: {label}")
            if escape:
                escapes.append(escape)
        path.write_bytes(original)
    _assert_all_caught(escapes, cases)


def test_reordered_lines_are_caught_and_named(copy: Path, catalog: Catalog) -> None:
    # Lines of the data, of SHA256SUMS and of the card: each order is part of the release.
    _reorder_cases(copy, catalog, (".jsonl", "SHA256SUMS", ".md"))


def test_reordered_instances_of_a_bigger_release_are_caught(built_example: Path,
                                                             tmp_path: Path) -> None:
    # The small release has two instances per file; the example has dozens.
    release = tmp_path / "example-v1"
    shutil.copytree(built_example, release)
    _reorder_cases(release, Catalog.load(Project(REPO)), (".jsonl",))


@pytest.mark.parametrize("name", RELEASE_FILES)
def test_every_removed_file_is_caught_and_named(copy: Path, catalog: Catalog,
                                                name: str) -> None:
    (copy / name).unlink()
    assert _caught(copy, catalog, name, f"{name} removed") is None


def _add_plain(release: Path, name: str) -> None:
    (release / name).parent.mkdir(parents=True, exist_ok=True)
    (release / name).write_bytes(b"{}\n")


def _add_empty(release: Path, name: str) -> None:
    (release / name).write_bytes(b"")


def _add_copy(release: Path, name: str) -> None:
    # A second copy of a file that is listed: same bytes, another name.
    shutil.copyfile(release / "data/demo.recall.colour.jsonl", release / name)


def _add_symlink(release: Path, name: str) -> None:
    os.symlink("README.md", release / name)


def _add_listed(release: Path, name: str) -> None:
    # Added and listed in SHA256SUMS with its right hash, the way a careful forger would.
    data = b'{"id": "forged"}\n'
    (release / name).write_bytes(data)
    sums = (release / "SHA256SUMS").read_text()
    line = f"{hashlib.sha256(data).hexdigest()}  {name}\n"
    (release / "SHA256SUMS").write_text("".join(sorted([*sums.splitlines(True), line])))


ADDITIONS: list[tuple[str, Callable[[Path, str], None]]] = [
    ("extra.jsonl", _add_plain),
    ("data/extra.jsonl", _add_plain),
    ("data/.hidden.jsonl", _add_plain),
    ("parquet/demo.recall.colour/train.parquet", _add_plain),
    ("plots/new/chart.svg", _add_plain),
    ("data/empty.jsonl", _add_empty),
    ("data/demo.recall.colour.jsonl.bak", _add_copy),
    ("README.txt", _add_symlink),
    ("data/forged.jsonl", _add_listed),
]


@pytest.mark.parametrize(("name", "add"), ADDITIONS, ids=[n for n, _ in ADDITIONS])
def test_every_added_file_is_caught_and_named(copy: Path, catalog: Catalog, name: str,
                                              add: Callable[[Path, str], None]) -> None:
    add(copy, name)
    assert _caught(copy, catalog, name, f"{name} added") is None


# A release whose files disagree with its seal does not verify (exit 1); one whose seal is
# cut mid-line is no longer readable as one (bad input, exit 2; docs/commands.md).
@pytest.mark.parametrize(("change", "name", "status"), [
    ("flip", "data/demo.recall.colour.jsonl", 1),
    ("flip", "SHA256SUMS", 1),  # a digest's character flipped to another hex digit
    ("cut", "SHA256SUMS", 2),
    ("cut", "manifest.json", 2),
    ("remove", "manifest.json", 1),
    ("remove", "parquet/demo.recall.colour/test.parquet", 1),
    ("add", "data/extra.jsonl", 1),
])
def test_the_command_line_exits_1_or_2_and_names_the_file(copy: Path, change: str,
                                                          name: str, status: int) -> None:
    path = copy / name
    if change == "flip":
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))
    elif change == "cut":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif change == "remove":
        path.unlink()
    else:
        _add_plain(copy, name)
    result = run_cli("verify", str(copy), root=copy.parent.parent)
    assert result.returncode == status, result.stdout + result.stderr
    assert name in result.stderr and "Traceback" not in result.stderr
    assert json.loads((copy.parent / RELEASE / "manifest.json").read_text())  # untouched


def _reseal(release: Path, name: str, data: bytes) -> None:
    """``release`` with file ``name`` replaced by ``data``, renamed, and its manifest and sums
    made to agree: a release from elsewhere, which can only be checked against itself."""
    (release / name).write_bytes(data)
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["release"] = "elsewhere"
    manifest["files"][name].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))

    def sums(hashes: dict[str, str]) -> str:
        return "".join(f"{digest}  {file}\n" for file, digest in sorted(hashes.items()))

    manifest["root_sha256"] = hashlib.sha256(sums(
        {n: i["sha256"] for n, i in manifest["files"].items() if n.startswith("data/")}
    ).encode()).hexdigest()
    (release / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (release / "SHA256SUMS").write_text(sums(
        {f: hashlib.sha256((release / f).read_bytes()).hexdigest()
         for f in [*manifest["files"], "manifest.json"]}))


@pytest.mark.parametrize(("line", "message"), [
    (b"{bad", ":4:2: not valid JSON"),
    (b"[1, 2]", ":4:1: not an instance: [1, 2] is not of type 'object'"),
    (b'{"id": "x"}', ":4:1: not an instance: "),
    (b'"\xff"', ":4:2: not UTF-8"),
])
def test_a_resealed_release_from_elsewhere_is_read_with_located_errors(
        built_dist: Path, tmp_path: Path, line: bytes, message: str) -> None:
    release = tmp_path / "elsewhere-v1"
    shutil.copytree(built_dist / "example-v1", release)
    name = "data/example.choice.meeting_room.jsonl"
    lines = (release / name).read_bytes().split(b"\n")
    lines[3] = line
    _reseal(release, name, b"\n".join(lines))
    assert run_cli("verify", str(release)).returncode == 1  # no committed manifest to trust
    responses = tmp_path / "responses.jsonl"
    assert run_cli("respond", str(built_dist / "example-v1"), "--policy", "oracle", "--out",
                   str(responses)).returncode == 0
    for command in (["respond", str(release), "--policy", "oracle"],
                    ["score", str(release), str(responses)], ["audit", str(release)]):
        result = run_cli(*command)
        assert result.returncode == 2, (command, result.stderr)
        assert f"{release / name}{message}" in result.stderr, (command, result.stderr)
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("ending", [b"\r\n", b"\r"])
def test_sums_with_other_line_endings_are_caught(copy: Path, catalog: Catalog,
                                                 ending: bytes) -> None:
    sums = copy / "SHA256SUMS"
    sums.write_bytes(sums.read_bytes().replace(b"\n", ending))
    report = verify_release(copy, catalog)
    assert not report.ok
    assert any("carriage return" in problem.message for problem in report.problems)


@pytest.mark.parametrize(("name", "data", "message"), [
    ("croissant.json", b"garbage\n", "croissant.json:1:1: not valid JSON"),
    ("croissant.json", b'{"@type": "sc:Dataset"}\n', "croissant.json: not a Croissant"),
    ("croissant.json", None, "another SHA-256 than manifest.json"),
    ("parquet/demo.recall.colour/test.parquet", b"PAR1 garbage PAR1",
     "test.parquet: not a Parquet file"),
])
def test_garbage_sealed_anew_is_refused_where_it_is(frozen: Path, tmp_path: Path, name: str,
                                                    data: bytes | None, message: str) -> None:
    """A file replaced with garbage, the manifest and sums then made to agree with it, passes
    every digest: verify (with no manifest to trust, outside a project) reads croissant.json
    and each Parquet footer as what they are, and refuses the release at the file, exit 2."""
    release = tmp_path / "elsewhere"
    shutil.copytree(frozen, release)
    if data is None:  # well-formed, but describing other data than the release pins
        data = (release / name).read_bytes().replace(b'"sha256": "', b'"sha256": "0', 1)
    _reseal(release, name, data)
    report = verify_release(release, None)
    assert report.unreadable and [p.file for p in report.problems] == [name], report.problems
    result = run_cli("verify", str(release), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr

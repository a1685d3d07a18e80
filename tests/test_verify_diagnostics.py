"""What verify says, beyond refusing: which file it blames for an edited SHA256SUMS entry
(with a trusted manifest, with the committed one, with neither), that an intact release gets
no problem and no note, and that --regenerate writes nothing into the project."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_tamper import RELEASE, catalog, copy, frozen  # noqa: F401

from conftest import run_cli
from memspec.core.errors import SpecError
from memspec.release.verify import check_trusted_manifest, verify_release
from memspec.spec.catalog import Catalog


def _edit_entry(release: Path, name: str) -> None:
    """SHA256SUMS with the entry for ``name`` replaced by the hash of other bytes."""
    sums = release / "SHA256SUMS"
    lines = sums.read_text(encoding="utf-8").splitlines(keepends=True)
    other = hashlib.sha256(b"other bytes").hexdigest()
    sums.write_text("".join(other + line[64:] if line.endswith(f"  {name}\n") else line
                            for line in lines), encoding="utf-8")


def _problems(report) -> list[tuple[str | None, str]]:
    return [(p.file, p.message) for p in report.problems]


def test_an_intact_release_has_no_problem_and_no_note(copy: Path, catalog: Catalog) -> None:  # noqa: F811
    report = verify_release(copy, catalog)
    assert report.ok and report.anchored and report.notes == []
    assert report.checked_files == 8  # every file SHA256SUMS lists
    alone = verify_release(copy, None)
    assert alone.ok and not alone.anchored


def test_an_edited_entry_of_a_data_file_blames_the_sums(copy: Path, catalog: Catalog) -> None:  # noqa: F811
    _edit_entry(copy, "data/demo.recall.colour.jsonl")
    assert _problems(verify_release(copy, catalog)) == [
        ("SHA256SUMS", "the entry for data/demo.recall.colour.jsonl was altered (the file "
                       "matches manifest.json)")]


def test_an_edited_entry_of_the_manifest_blames_the_sums_by_the_anchor(
        copy: Path, catalog: Catalog, frozen: Path, tmp_path: Path) -> None:  # noqa: F811
    _edit_entry(copy, "manifest.json")
    committed = frozen.parent.parent / "manifests" / f"{RELEASE}.json"
    assert _problems(verify_release(copy, catalog)) == [
        ("SHA256SUMS", "the entry for manifest.json was altered (the file matches the "
                       "committed manifest)")]
    assert _problems(verify_release(copy, None, trusted=committed)) == [
        ("SHA256SUMS", "the entry for manifest.json was altered (the file matches the "
                       "trusted manifest)")]
    # A trusted manifest of other bytes: the manifest itself is what changed.
    other = tmp_path / "other.json"
    other.write_bytes(committed.read_bytes().replace(b'"version"', b'"version" ', 1))
    found = _problems(verify_release(copy, None, trusted=other))
    assert ("manifest.json", "SHA-256 differs from SHA256SUMS (file changed)") in found
    assert (str(other), "manifest.json differs from the trusted manifest") in found
    # With no anchor at all, the manifest is blamed, not the sums.
    assert _problems(verify_release(copy, None))[0] == (
        "manifest.json", "SHA-256 differs from SHA256SUMS (file changed)")


@contextmanager
def without_committed_manifest(release: Path) -> Iterator[Path]:
    """The project of the frozen ``release`` without its committed manifest (its path), put
    back afterwards."""
    committed = release.parent.parent / "manifests" / f"{RELEASE}.json"
    kept = committed.read_bytes()
    committed.unlink()
    try:
        yield committed
    finally:
        committed.write_bytes(kept)


def test_a_release_without_a_committed_manifest_is_said_to_have_none(
        copy: Path, catalog: Catalog, frozen: Path) -> None:  # noqa: F811
    with without_committed_manifest(frozen):
        report = verify_release(copy, catalog)
    assert _problems(report) == [("manifests/demo-v1.json",
                                  "no committed manifest for this release")]


def test_regenerate_compares_and_writes_nothing_into_the_project(
        copy: Path, frozen: Path) -> None:  # noqa: F811
    root = frozen.parent.parent
    before = sorted(p.relative_to(root) for p in (root / "manifests").rglob("*"))
    result = run_cli("verify", str(copy), "--regenerate", root=root)
    assert result.returncode == 0, result.stderr
    assert "byte-identical to a rebuild" in result.stdout
    assert "warning" not in result.stderr.lower()
    assert sorted(p.relative_to(root) for p in (root / "manifests").rglob("*")) == before


def test_a_trusted_manifest_anchors_an_intact_release(copy: Path, frozen: Path) -> None:  # noqa: F811
    committed = frozen.parent.parent / "manifests" / f"{RELEASE}.json"
    report = verify_release(copy, None, trusted=committed)
    assert report.ok and report.anchored and report.notes == []
    check_trusted_manifest(committed)
    with pytest.raises(SpecError, match="trusted manifest not found"):
        check_trusted_manifest(copy / "no-such.json")
    with pytest.raises(SpecError):
        check_trusted_manifest(copy / "SHA256SUMS")


def test_a_listed_file_replaced_by_a_link_is_not_a_regular_file(copy: Path,  # noqa: F811
                                                                catalog: Catalog) -> None:  # noqa: F811
    name = "data/demo.recall.colour.jsonl"
    moved = copy.parent / f"{copy.name}-data.jsonl"
    (copy / name).rename(moved)
    try:
        (copy / name).symlink_to(moved)
        assert ("data/demo.recall.colour.jsonl", "not a regular file") in \
            _problems(verify_release(copy, catalog))
    finally:
        moved.unlink()


def test_a_manifest_that_is_json_but_no_manifest_is_named(copy: Path,  # noqa: F811
                                                          catalog: Catalog) -> None:  # noqa: F811
    (copy / "manifest.json").write_text("{}\n", encoding="utf-8")
    digest = hashlib.sha256(b"{}\n").hexdigest()
    sums = copy / "SHA256SUMS"
    sums.write_text("".join(digest + line[64:] if line.endswith("  manifest.json\n") else line
                            for line in sums.read_text().splitlines(keepends=True)))
    found = _problems(verify_release(copy, catalog))
    assert found[-1][0] == "manifest.json"
    assert found[-1][1].startswith("manifest.json does not match its schema: ")


def _rewrite_manifest(release: Path, change) -> None:
    """manifest.json changed by ``change`` (on its parsed form), and its SHA256SUMS entry
    set to the digest coreutils' sha256sum gives the new bytes."""
    import json
    import subprocess

    from memspec.core.canonical import dump_pretty_bytes

    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    change(manifest)
    (release / "manifest.json").write_bytes(dump_pretty_bytes(manifest))
    digest = subprocess.run(["sha256sum", "manifest.json"], cwd=release, check=True,
                            capture_output=True, text=True).stdout.split()[0]
    sums = release / "SHA256SUMS"
    sums.write_text("".join(digest + line[64:] if line.endswith("  manifest.json\n") else line
                            for line in sums.read_text().splitlines(keepends=True)))


def test_parquet_pinned_as_another_writer_wrote_it_is_checked_by_its_rows(
        copy: Path) -> None:  # noqa: F811
    # A release frozen where another pyarrow wrote the Parquet copy: the manifest pins that
    # writer's bytes, and these bytes (this pyarrow's) hold the same rows. Not a change.
    parquet = "parquet/demo.recall.colour/test.parquet"

    def pinned_by_another_writer(manifest: dict) -> None:
        info = manifest["files"][parquet]
        assert "writer" in info and info["writer"] != "pyarrow 1.0.0"
        info["writer"], info["sha256"] = "pyarrow 1.0.0", "0" * 64

    _rewrite_manifest(copy, pinned_by_another_writer)
    report = verify_release(copy, None)
    assert _problems(report) == []
    assert report.notes == ["1 Parquet files hold other bytes than the manifest pins (another "
                            "pyarrow wrote them); their rows match its content_sha256"]


def test_a_manifest_listing_no_file_blames_each_listed_file_but_itself(
        copy: Path) -> None:  # noqa: F811
    def no_files(manifest: dict) -> None:
        manifest["files"] = {}
        manifest["root_sha256"] = hashlib.sha256(b"").hexdigest()  # of no data file

    _rewrite_manifest(copy, no_files)
    found = _problems(verify_release(copy, None))
    listed = sorted(line[66:] for line in (copy / "SHA256SUMS").read_text().splitlines())
    assert found == [(name, "listed in SHA256SUMS but not in manifest.json (added?)")
                     for name in listed if name != "manifest.json"]

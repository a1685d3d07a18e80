"""What verify says where a release is not as frozen, each message exact: a missing folder or
SHA256SUMS, a draft (checked against itself and a rebuild, or refused), a file refused by its
size (another writer's Parquet copy within 4 times its size and 1 MiB, as docs/safety.md
says), rows that cannot be read, a committed manifest that differs (by a field, by its bytes
alone, by the versions that built it), and what --regenerate names and never writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_tamper import RELEASE, catalog, copy, frozen  # noqa: F401
from test_verify_diagnostics import _problems, _rewrite_manifest, without_committed_manifest

from conftest import make_gold_first_release, run_cli
from memspec.core.canonical import dump_pretty_bytes
from memspec.release.verify import verify_release
from memspec.spec.catalog import Catalog


def _set_entry(release: Path, name: str) -> None:
    """SHA256SUMS with the entry for ``name`` set to what coreutils' sha256sum gives its
    bytes now (a forger who rewrote the sums to match an edited file)."""
    import subprocess

    digest = subprocess.run(["sha256sum", name], cwd=release, check=True,
                            capture_output=True, text=True).stdout.split()[0]
    sums = release / "SHA256SUMS"
    sums.write_text("".join(digest + line[64:] if line.endswith(f"  {name}\n") else line
                            for line in sums.read_text().splitlines(keepends=True)))


def test_a_missing_folder_or_sums_is_one_problem_and_no_draft(copy: Path,  # noqa: F811
                                                              catalog: Catalog) -> None:  # noqa: F811
    gone = copy.parent / f"{copy.name}-gone"
    report = verify_release(gone, catalog)
    assert _problems(report) == [(str(gone), "release folder not found")]
    assert not report.draft and not report.anchored and report.checked_files == 0
    (copy / "SHA256SUMS").unlink()
    report = verify_release(copy, catalog)
    assert _problems(report) == [(str(copy / "SHA256SUMS"), "SHA256SUMS is missing")]
    assert not report.draft and not report.anchored


@pytest.fixture(scope="module")
def drafted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small release frozen with ``freeze --draft`` in a project of its own (no
    committed manifest pins it): its release folder."""
    from test_bad_input import FILES

    root = tmp_path_factory.mktemp("draft") / "project"
    for relative, text in FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    (root / "manifests").mkdir()
    result = run_cli("freeze", RELEASE, "--draft", root=root)
    assert result.returncode == 0, result.stderr
    return root / "dist" / RELEASE


def test_a_draft_is_checked_against_itself_and_a_rebuild_unless_refused(drafted: Path) -> None:
    from memspec.spec.project import Project

    project = drafted.parent.parent
    catalog = Catalog.load(Project(project))  # noqa: F811
    # Its own sums and manifest vouch for it, as reading its data needs; a rebuild is a
    # draft too, and has its bytes. Nothing is written into manifests/.
    for report in (verify_release(drafted, catalog), verify_release(drafted, catalog,
                                                                    regenerate=True)):
        assert report.ok and report.draft and not report.anchored
        assert report.notes == ["a draft: checked against its own SHA256SUMS and manifest.json "
                                "only, as no committed manifest pins it"]
    assert list((project / "manifests").iterdir()) == []
    # A draft's specs may change: a rebuild then names each file it makes otherwise (the
    # Parquet copy by its rows, which differ too).
    template = project / "templates" / "demo" / "setup.j2"
    kept = template.read_bytes()
    template.write_bytes(kept.replace(b"Noted.", b"Noted, thanks."))
    try:
        changed = verify_release(drafted, Catalog.load(Project(project)), regenerate=True)
    finally:
        template.write_bytes(kept)
    assert [(file, message) for file, message in _problems(changed)
            if file.startswith(("data/", "parquet/"))] == [
        (name, "bytes differ from a rebuild from the specs")
        for name in ("data/demo.recall.colour.jsonl", "parquet/demo.recall.colour/test.parquet")]
    refused = verify_release(drafted, catalog, accept_draft=False)
    assert _problems(refused) == [(
        "manifest.json", "demo-v1 is an unpublished draft (frozen with --draft; no committed "
        "manifest pins it): freeze it without --draft to publish it, or pass --allow-draft "
        "to check it as a draft")]
    assert refused.draft and refused.notes == []


def test_a_published_release_is_no_draft(copy: Path, catalog: Catalog) -> None:  # noqa: F811
    report = verify_release(copy, catalog, accept_draft=False)
    assert report.ok and not report.draft and report.anchored


def test_regenerate_writes_no_manifest_for_a_release_that_has_none(
        copy: Path, catalog: Catalog, frozen: Path) -> None:  # noqa: F811
    with without_committed_manifest(frozen) as committed:
        report = verify_release(copy, catalog, regenerate=True)
        written = committed.exists()
    # The rebuild is refused as freeze refuses it, rather than writing the manifest.
    assert _problems(report) == [
        ("manifests/demo-v1.json", "no committed manifest for this release"),
        (None, "no committed manifest manifests/demo-v1.json; run `memspec freeze "
               "specs/releases/demo-v1.yaml` and commit it")]
    assert not written


def test_a_truncated_file_is_refused_by_its_size_before_it_is_hashed(
        copy: Path, catalog: Catalog) -> None:  # noqa: F811
    name = "data/demo.recall.colour.jsonl"
    size = (copy / name).stat().st_size
    os.truncate(copy / name, size - 1)
    assert _problems(verify_release(copy, catalog)) == [
        (name, f"file is {size - 1:,} bytes; manifest.json says {size:,} (file changed)")]


def test_another_writers_parquet_may_take_four_times_its_size_and_one_mib(
        copy: Path) -> None:  # noqa: F811
    # docs/safety.md: "at most 4 times its pinned size and 1 MiB". One byte past that is
    # refused by its size (a sparse file: nothing is read); at the limit it is hashed.
    parquet = "parquet/demo.recall.colour/test.parquet"
    pinned = (copy / parquet).stat().st_size

    def pinned_by_another_writer(manifest: dict) -> None:
        manifest["files"][parquet]["writer"] = "pyarrow 1.0.0"

    _rewrite_manifest(copy, pinned_by_another_writer)
    limit = 4 * pinned + 1024 * 1024
    os.truncate(copy / parquet, limit + 1)
    assert _problems(verify_release(copy, None)) == [(
        parquet, f"file is {limit + 1:,} bytes; manifest.json says {pinned:,}, and another "
        f"writer's copy of the same rows takes at most {limit:,} (file changed)")]
    os.truncate(copy / parquet, limit)
    assert _problems(verify_release(copy, None)) == [
        (parquet, "SHA-256 differs from SHA256SUMS (file changed)")]


def test_a_broken_parquet_pinned_as_another_writers_is_refused_by_its_rows(
        copy: Path) -> None:  # noqa: F811
    # Sums rewritten to match a Parquet file cut in half: its footer names no writer and its
    # rows cannot be read, which is a change, not another writer's copy.
    parquet = "parquet/demo.recall.colour/test.parquet"

    def pinned_by_another_writer(manifest: dict) -> None:
        manifest["files"][parquet]["writer"] = "pyarrow 1.0.0"

    _rewrite_manifest(copy, pinned_by_another_writer)
    os.truncate(copy / parquet, (copy / parquet).stat().st_size // 2)
    _set_entry(copy, parquet)
    assert _problems(verify_release(copy, None)) == [(
        parquet, "rows differ from manifest.json's content_sha256 (the bytes were pinned as "
        "pyarrow 1.0.0 wrote them; these are another writer's, and their rows are not the "
        "release's)")]


def test_an_edited_manifest_without_a_committed_one_is_blamed_itself(
        copy: Path, catalog: Catalog, frozen: Path) -> None:  # noqa: F811
    # No committed manifest to tell whether manifest.json is intact: the file is blamed.
    committed = frozen.parent.parent / "manifests" / f"{RELEASE}.json"
    kept = committed.read_bytes()
    (copy / "manifest.json").write_bytes(
        (copy / "manifest.json").read_bytes().replace(b'"version"', b'"version" ', 1))
    committed.unlink()
    try:
        found = _problems(verify_release(copy, catalog))
    finally:
        committed.write_bytes(kept)
    assert found == [("manifest.json", "SHA-256 differs from SHA256SUMS (file changed)"),
                     ("manifests/demo-v1.json", "no committed manifest for this release")]


def test_a_file_changed_with_its_sums_entry_differs_from_the_manifest(
        copy: Path) -> None:  # noqa: F811
    # Sums rewritten to match edited files: the manifest's digests still tell. A Parquet file
    # that the writer its entry names (this pyarrow) wrote with other rows is a change too.
    import pyarrow.parquet as pq

    data, parquet = "data/demo.recall.colour.jsonl", "parquet/demo.recall.colour/test.parquet"
    lines = (copy / data).read_bytes().splitlines(keepends=True)
    (copy / data).write_bytes(b"".join(lines[1:] + lines[:1]))
    table = pq.read_table(copy / parquet)
    pq.write_table(table.slice(0, 1), copy / parquet)
    for name in (data, parquet):
        _set_entry(copy, name)
    assert _problems(verify_release(copy, None)) == [
        (name, "file differs from manifest.json (and SHA256SUMS was rewritten to match it)")
        for name in (data, parquet)]


def test_regenerate_rebuilds_and_names_what_the_specs_now_make_otherwise(
        copy: Path, catalog: Catalog, frozen: Path) -> None:  # noqa: F811
    template = frozen.parent.parent / "templates" / "demo" / "setup.j2"
    kept = template.read_bytes()
    assert verify_release(copy, catalog, regenerate=True).ok
    # A file added to the folder and one taken away: each named by the rebuild too.
    (copy / "plots" / "tokens_setup.svg").rename(copy / "extra.svg")
    assert _problems(verify_release(copy, catalog, regenerate=True))[-2:] == [
        ("extra.svg", "the folder has this file, the rebuilt release does not"),
        ("plots/tokens_setup.svg", "rebuilt release has this file, the folder does not")]
    (copy / "extra.svg").rename(copy / "plots" / "tokens_setup.svg")
    template.write_bytes(kept.replace(b"Noted.", b"Noted, thanks."))
    try:
        found = _problems(verify_release(copy, catalog, regenerate=True))
    finally:
        template.write_bytes(kept)
    # The frozen version's manifest pins the template: the rebuild is refused, naming it
    # and every file it would change.
    assert found[0][1].startswith("demo-v1 differs from its frozen manifest "
                                  "manifests/demo-v1.json (8 difference(s) below)")
    assert ("manifests/demo-v1.json", "demo-v1 differs: input templates/demo/setup.j2 "
                                      "differs") in found
    assert ("manifests/demo-v1.json", "demo-v1 differs: file data/demo.recall.colour.jsonl "
                                      "differs") in found
    assert ("manifests/demo-v1.json", "demo-v1 differs: file "
                                      "messages/demo.recall.colour.jsonl differs") in found


def test_a_release_other_than_its_committed_manifest_is_told_what_differs(
        copy: Path, catalog: Catalog, frozen: Path) -> None:  # noqa: F811
    committed = frozen.parent.parent / "manifests" / f"{RELEASE}.json"
    kept = committed.read_bytes()
    committed.write_bytes(kept.replace(b'"seed": 7', b'"seed": 8', 1))
    try:
        found = _problems(verify_release(copy, catalog))
        # The same data written otherwise (one space more): only the bytes differ.
        committed.write_bytes(kept.replace(b'"seed": 7', b'"seed":  7', 1))
        respaced = _problems(verify_release(copy, catalog))
    finally:
        committed.write_bytes(kept)
    assert found == [("manifests/demo-v1.json", "manifest.json differs from the committed "
                                                "manifest: seed: committed 8, built 7")]
    assert respaced == [("manifests/demo-v1.json", "manifest.json differs from the committed "
                                                   "manifest: bytes differ")]


def test_a_release_built_with_other_versions_says_so(copy: Path, catalog: Catalog,  # noqa: F811
                                                     frozen: Path) -> None:  # noqa: F811
    # The committed manifest was written where jinja2 was another version: the same inputs
    # made other bytes, and the versions are the likely reason.
    committed = frozen.parent.parent / "manifests" / f"{RELEASE}.json"
    kept = committed.read_bytes()
    manifest = json.loads(kept)
    manifest["environment"]["packages"]["jinja2"] = "0.0.1"
    committed.write_bytes(dump_pretty_bytes(manifest))
    try:
        found = _problems(verify_release(copy, catalog))
        # With other inputs too, the inputs are the reason: the versions are not blamed.
        manifest["inputs"] = {name: "0" * 64 for name in manifest["inputs"]}
        committed.write_bytes(dump_pretty_bytes(manifest))
        other_inputs = _problems(verify_release(copy, catalog))
    finally:
        committed.write_bytes(kept)
    differs = "manifest.json differs from the committed manifest: "
    built = json.loads((copy / "manifest.json").read_text())["environment"]["packages"]["jinja2"]
    assert found == [
        ("manifests/demo-v1.json", differs + "bytes differ"),
        ("manifests/demo-v1.json", differs + "the release was built with other versions of "
         f"what shapes its bytes (jinja2 0.0.1 in the committed manifest, {built} in this "
         "release's)")]
    assert other_inputs and not any("versions" in message for _, message in other_inputs)


def test_a_draft_frozen_with_its_audit_failures_rebuilds_with_them(project_copy: Path,
                                                                   tmp_path: Path) -> None:
    # A draft may record audit failures (freeze --draft --allow-audit-failures); verify
    # rebuilds it as it was frozen, failures allowed, and finds the same bytes. A published
    # release is never audited again by verify, so only a draft tells.
    release = make_gold_first_release(project_copy)
    out = tmp_path / "out"
    frozen_draft = run_cli("freeze", str(release), "--draft", "--allow-audit-failures",
                           "--out", str(out), root=project_copy)
    assert frozen_draft.returncode == 0, frozen_draft.stderr
    assert "warning: audit failure recorded: position_prior" in frozen_draft.stderr
    for extra in ([], ["--regenerate"]):
        checked = run_cli("verify", str(out / "flawed-v1"), "--allow-draft", *extra,
                          root=project_copy)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not (project_copy / "manifests" / "flawed-v1.json").exists()

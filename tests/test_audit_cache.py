"""The audit's cache: a freeze re-audits only the families whose inputs changed, and the
release it writes is byte for byte the one a freeze that audits everything writes; `memspec
audit` gives the same report from the cache; a damaged entry is computed again."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from conftest import run_cli, tree_bytes
from memspec.release.freezing import find_release, freeze
from memspec.spec.catalog import Catalog
from memspec.spec.project import find_project

FAMILIES = {"example.procedural.reversed_copy", "example.priming.harbour_fog",
            "example.choice.meeting_room"}


def _draft_release(project: Path) -> None:
    """``cached-v1``: the example's three families (its v3), a version no manifest pins."""
    releases = project / "specs" / "releases"
    (releases / "cached-v1.yaml").write_text(
        (releases / "example-v3.yaml").read_text()
        .replace("name: example", "name: cached").replace("version: v3", "version: v1"))


def _freeze_draft(project: Path, out: Path, cache: str, caplog: pytest.LogCaptureFixture,
                  monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, bytes], set[str]]:
    """``freeze cached-v1 --draft`` into ``out`` with the audit's cache in ``cache`` (empty:
    none); the release's files and the families whose audit was computed, not read back."""
    monkeypatch.setenv("MEMSPEC_CACHE_DIR", cache)
    catalog = Catalog.load(find_project(project))
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="memspec.audit"):
        built = freeze(catalog, find_release(catalog, "cached-v1"), out, write_manifest=True,
                       draft=True)
    audited = {r.args[0] for r in caplog.records if r.msg == "auditing family %s"}
    return tree_bytes(built.path), audited


def test_a_freeze_reaudits_only_changed_families_and_writes_the_same_bytes(
        project_copy: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    _draft_release(project_copy)
    cache = tmp_path / "cache"
    first, audited = _freeze_draft(project_copy, tmp_path / "a", str(cache), caplog,
                                   monkeypatch)
    assert audited == FAMILIES
    again, audited = _freeze_draft(project_copy, tmp_path / "b", str(cache), caplog,
                                   monkeypatch)
    assert audited == set()  # every family's audit read back
    uncached, audited = _freeze_draft(project_copy, tmp_path / "c", "", caplog, monkeypatch)
    assert audited == FAMILIES
    assert again == first == uncached

    # One family's template changes: that family alone is audited again, and the release
    # is still the one a freeze without any cache writes.
    template = project_copy / "templates/example/meeting_room/task.j2"
    template.write_text(template.read_text().replace("room", "room please", 1))
    changed, audited = _freeze_draft(project_copy, tmp_path / "d", str(cache), caplog,
                                     monkeypatch)
    assert audited == {"example.choice.meeting_room"}
    assert changed != first
    fresh, _ = _freeze_draft(project_copy, tmp_path / "e", "", caplog, monkeypatch)
    assert changed == fresh

    # A damaged entry is never trusted: computed again, same bytes.
    entries = sorted((cache / "audit-family").iterdir())
    assert entries
    for entry in entries:
        data = bytearray(entry.read_bytes())
        data[-1] ^= 0xFF
        entry.write_bytes(bytes(data))
    damaged, audited = _freeze_draft(project_copy, tmp_path / "f", str(cache), caplog,
                                     monkeypatch)
    assert audited == FAMILIES
    assert damaged == fresh


def test_audit_and_report_read_back_the_same_results(tmp_path: Path) -> None:
    """`memspec audit` and `memspec report` of a release, twice with one cache: the same
    JSON and page both times, and the same as with no cache."""
    built = run_cli("build", "example-v5", "--out", str(tmp_path / "dist"))
    assert built.returncode == 0, built.stderr
    release = str(tmp_path / "dist" / "example-v5")
    env = {"MEMSPEC_CACHE_DIR": str(tmp_path / "cache")}
    cold = run_cli("audit", release, "--format", "json", env=env)
    warm = run_cli("audit", release, "--format", "json", env=env)
    none = run_cli("audit", release, "--format", "json", env={"MEMSPEC_CACHE_DIR": ""})
    assert cold.returncode == 0, cold.stderr
    assert any((tmp_path / "cache" / "audit-family").iterdir())
    assert cold.stdout == warm.stdout == none.stdout
    pages = []
    for name, setting in (("warm", env), ("none", {"MEMSPEC_CACHE_DIR": ""})):
        page = tmp_path / f"{name}.html"
        made = run_cli("report", release, "--out", str(page), env=setting)
        assert made.returncode == 0, made.stderr
        pages.append(page.read_bytes())
    assert pages[0] == pages[1]

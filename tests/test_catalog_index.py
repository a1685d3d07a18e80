"""The index a command on one family builds (each family file's id, kept by its text) and the
collector paused while a release is read."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from memspec.core import code_cache
from memspec.core.collector import collector_paused
from memspec.spec.catalog import Catalog
from memspec.spec.project import find_project


def _index(catalog: Catalog) -> tuple[object, ...]:
    return (catalog.family_paths, catalog.family_where,
            {path: [(p.message, p.file, p.line, p.column) for p in problems]
             for path, problems in catalog.unreadable.items()})


def test_a_command_on_one_family_indexes_family_files_as_their_whole_parse_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    (root / "specs" / "families").mkdir(parents=True)
    (root / "memspec.yaml").write_text("name: index\n", encoding="utf-8")
    families = root / "specs" / "families"
    (families / "good.yaml").write_text("\n\nfamily: demo.recall.colour\n", encoding="utf-8")
    (families / "lookalike.yaml").write_text("family: demo.recall.col\u043eur\n",
                                             encoding="utf-8")
    (families / "no_id.yaml").write_text("paradigm: demo.recall\n", encoding="utf-8")
    (families / "number.yaml").write_text("family: 7\n", encoding="utf-8")
    (families / "broken.yaml").write_text("family: [demo\n", encoding="utf-8")
    monkeypatch.setenv("MEMSPEC_CACHE_DIR", str(tmp_path / "cache"))
    code_cache.use_project(None)
    project = find_project(root)
    whole = _index(Catalog.load(project))
    first = _index(Catalog.load(project, keep_documents=False))  # the cache filled
    again = _index(Catalog.load(project, keep_documents=False))  # read from it
    assert first == whole and again == whole
    assert whole[0] == {"demo.recall.colour": [families / "good.yaml"]}
    assert whole[1][families / "good.yaml"] == (3, 1)
    assert sorted(path.name for path in whole[2]) == ["broken.yaml", "lookalike.yaml",
                                                      "no_id.yaml", "number.yaml"]


def test_the_collector_is_off_only_inside_and_as_the_caller_had_it_after() -> None:
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        assert not gc.isenabled()
        raise ValueError
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()

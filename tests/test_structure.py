"""The package reads as the pipeline: every module sits in a stage, no stage imports one after
it, the layout shown in README.md and docs/architecture.md is the tree on disk, and the module
names of the flat package still work for one version."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

import memspec
from conftest import REPO

PACKAGE = REPO / "generator"
#: The stages in pipeline order: each may import only those before it.
PIPELINE = ["core", "spec", "formats", "analysis", "engine", "audit", "release", "exports",
            "report", "run", "cli"]
#: Modules at the package root, outside every stage.
ROOT_MODULES = {"__init__.py", "_moved.py"}
LINE_LIMIT = 500


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if "__pycache__" not in p.parts and p.relative_to(PACKAGE).parts[0] != "library")


def _stage_of(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else None


def _imported(path: Path) -> list[tuple[int, str]]:
    """Every memspec module ``path`` (a module of the package) imports."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    package = ["memspec", *parts[:-1]]
    return _imports_of(path.read_text(encoding="utf-8"), package)


def _imports_of(text: str, package: list[str]) -> list[tuple[int, str]]:
    """Every memspec module the source ``text`` of a module in ``package`` imports (absolute
    dotted names), at any depth of the module (deferred and TYPE_CHECKING imports included),
    with its line."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = [*base, *(node.module.split(".") if node.module else [])]
            elif (node.module or "").split(".")[0] == "memspec":
                target = node.module.split(".")
            else:
                continue
            if node.module is None or target == ["memspec"]:
                found += [(node.lineno, ".".join([*target, a.name])) for a in node.names]
            else:
                found.append((node.lineno, ".".join(target)))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names
                      if a.name.split(".")[0] == "memspec"]
    return found


def _later_stages(stage: str, imports: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The imports of a module of ``stage`` that point at a stage after it."""
    later = []
    for line, name in imports:
        parts = name.split(".")
        target = parts[1] if len(parts) > 1 and parts[1] in PIPELINE else None
        if target and PIPELINE.index(target) > PIPELINE.index(stage):
            later.append((line, name))
    return later


def test_every_module_sits_in_a_stage() -> None:
    assert PIPELINE, "the pipeline is empty"
    stages = sorted(p.name for p in PACKAGE.iterdir()
                    if p.is_dir() and (p / "__init__.py").exists())
    assert stages == sorted(PIPELINE)
    for path in _modules():
        stage = _stage_of(path)
        where = path.relative_to(PACKAGE).as_posix()
        assert stage in PIPELINE if stage else path.name in ROOT_MODULES, where
        assert stage is None or len(path.relative_to(PACKAGE).parts) == 2, where


@pytest.mark.parametrize("stage", range(11))
def test_each_stage_says_its_job_and_what_it_may_import(stage: int) -> None:
    if stage >= len(PIPELINE):
        pytest.skip("fewer stages")
    name = PIPELINE[stage]
    doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text()))
    assert doc and doc.startswith(f"{name}: "), name
    allowed = re.search(r"^May import: (.+?)(?:\.|\n\n|$)", doc, re.M | re.S)
    assert allowed, f"{name}: its docstring does not say what it may import"
    said = allowed[1].replace("\n", " ")
    if stage == 0:
        assert said.startswith("nothing else of memspec")
    elif stage == len(PIPELINE) - 1:
        assert said.startswith("every other stage")
    else:
        assert [s.strip() for s in said.split(",")] == PIPELINE[:stage]


def test_no_stage_imports_one_after_it() -> None:
    wrong, absolute = [], []
    for path in _modules():
        stage = _stage_of(path)
        text = path.read_text(encoding="utf-8")
        if re.search(r"^\s*(from|import) memspec\b", text, re.M):
            absolute.append(path.relative_to(PACKAGE).as_posix())
        if stage is None:
            continue
        for line, name in _later_stages(stage, _imported(path)):
            wrong.append(f"generator/{path.relative_to(PACKAGE).as_posix()}:{line} "
                         f"({stage}) imports {name}")
    assert not wrong, "\n".join(wrong)
    assert not absolute, f"modules of the package import it by its absolute name: {absolute}"


def test_the_direction_check_sees_a_reference_back() -> None:
    # The checker itself: imports down the list are found at any depth, in either spelling,
    # and imports up the list or of the package root are not.
    text = ("from ..core.errors import SpecError\nfrom .. import _moved\n"
            "def f():\n    from ..cli import commands\n"
            "    import memspec.release.verify\n    from . import sampling\n")
    imports = _imports_of(text, ["memspec", "engine"])
    assert [name for _, name in imports] == [
        "memspec.core.errors", "memspec._moved", "memspec.cli",
        "memspec.release.verify", "memspec.engine.sampling"]
    assert _later_stages("engine", imports) == [(4, "memspec.cli"),
                                                (5, "memspec.release.verify")]


def _tree(text: str) -> list[str]:
    """The stages a layout block shows under its generator/ line, in order."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("generator/ "))
    stages = []
    for line in lines[start + 1:]:
        match = re.match(r"^  (\w+)/ ", line)
        if not match:
            break
        stages.append(match[1])
    return stages


@pytest.mark.parametrize("page", ["README.md", "docs/architecture.md", "docs/releases.md"])
def test_the_layout_shown_is_the_tree(page: str) -> None:
    assert _tree((REPO / page).read_text(encoding="utf-8")) == PIPELINE


def test_no_module_over_the_line_limit() -> None:
    # Small rooms are easier to enter: a module that grows past the limit is split by job.
    over = sorted(path.relative_to(PACKAGE).as_posix() for path in _modules()
                  if len(path.read_text(encoding="utf-8").splitlines()) > LINE_LIMIT)
    assert not over, f"modules over {LINE_LIMIT} lines: {over}"


def _fresh(name: str) -> None:
    sys.modules.pop(name, None)
    parent, _, child = name.rpartition(".")
    vars(sys.modules[parent]).pop(child, None)


def test_a_former_module_name_warns_and_gives_the_module() -> None:
    from memspec.core import transforms
    _fresh("memspec.transforms")
    with pytest.warns(DeprecationWarning, match=r"memspec\.transforms is now "
                                                r"memspec\.core\.transforms"):
        old = importlib.import_module("memspec.transforms")
    assert old is transforms
    assert old.register_transform is memspec.register_transform
    _fresh("memspec.transforms")
    with pytest.warns(DeprecationWarning):
        from memspec.transforms import register_transform
    assert register_transform is memspec.register_transform


def test_the_schemas_folder_is_not_taken_for_a_former_module() -> None:
    from memspec.spec import schemas
    _fresh("memspec.schemas")
    with pytest.warns(DeprecationWarning):
        assert importlib.import_module("memspec.schemas") is schemas


def test_names_of_a_module_that_became_a_stage_warn() -> None:
    from memspec.cli import commands
    from memspec.release import freezing
    with pytest.warns(DeprecationWarning, match=r"memspec\.release\.freezing\.freeze"):
        from memspec.release import freeze
    assert freeze is freezing.freeze is memspec.freeze
    with pytest.warns(DeprecationWarning):
        assert memspec.cli.main is commands.main
    with pytest.raises(AttributeError):
        memspec.release.no_such_name  # noqa: B018
    # A module of the stage is the module, not a forwarded name.
    from memspec.audit import audit_view
    assert audit_view.__name__ == "memspec.audit.audit_view"


def test_the_documented_api_is_at_the_root() -> None:
    for name in memspec.__all__:
        assert getattr(memspec, name) is not None, name
    assert memspec.__file__ is not None
    assert Path(memspec.__file__).parent.name == PACKAGE.name

"""Jinja's internals are reached through one door: ``render`` and the ``jinja_*`` modules behind
it. Everywhere else in the package uses what ``render`` offers (or, at most, what ``jinja2``
exports at its top level), so that an upgrade of Jinja touches those modules only."""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

import jinja2
import pytest

from conftest import REPO

PACKAGE = REPO / "generator"
#: Jinja's submodules (nodes, compiler, optimizer, runtime, sandbox, utils …), by name, as the
#: installed Jinja has them.
JINJA_SUBMODULES = frozenset(module.name for module in pkgutil.iter_modules(jinja2.__path__))


def behind_the_door(path: Path) -> bool:
    """Whether the module at ``path`` may use Jinja's internals."""
    return path.name == "render.py" or path.name.startswith("jinja_")


def jinja_internals(source: str) -> list[str]:
    """The uses of Jinja's submodules in ``source``: ``import jinja2.x``, ``from jinja2.x
    import …``, ``from jinja2 import x`` and ``jinja2.x.…`` read off the top-level module,
    each as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {alias.name}" for alias in node.names
                      if alias.name.startswith("jinja2.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("jinja2."):
                found.append(f"{node.lineno}: from {node.module} import …")
            elif node.module == "jinja2":
                found += [f"{node.lineno}: from jinja2 import {alias.name}"
                          for alias in node.names if alias.name in JINJA_SUBMODULES]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id == "jinja2" and node.attr in JINJA_SUBMODULES:
            found.append(f"{node.lineno}: jinja2.{node.attr}")
    return found


@pytest.mark.parametrize(("source", "flagged"), [
    ("from jinja2.sandbox import ImmutableSandboxedEnvironment", True),
    ("from jinja2 import nodes", True),
    ("import jinja2.compiler", True),
    ("import jinja2\nx = jinja2.runtime.Context", True),
    ("def f():\n    from jinja2.optimizer import Optimizer", True),
    ("import jinja2\nx = jinja2.Template", False),
    ("from jinja2 import TemplateSyntaxError", False),
    ("from .render import Renderer", False),
])
def test_the_check_finds_a_use_of_jinjas_internals(source: str, flagged: bool) -> None:
    assert bool(jinja_internals(source)) is flagged


def test_only_render_and_the_jinja_modules_use_jinjas_internals() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    outside = {path.relative_to(REPO).as_posix(): uses for path in modules
               if not behind_the_door(path)
               and (uses := jinja_internals(path.read_text(encoding="utf-8")))}
    assert outside == {}
    # The door is where the internals are: the check reads the modules it means to.
    inside = [path.name for path in modules if behind_the_door(path)
              and jinja_internals(path.read_text(encoding="utf-8"))]
    assert "jinja_sandbox.py" in inside and "jinja_codegen.py" in inside

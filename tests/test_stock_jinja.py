"""Every bundled template renders as Jinja's own ImmutableSandboxedEnvironment renders it.

memspec's environment subclasses Jinja's code generator, optimizer, context and sandbox for
speed (inlined reads, collected message blocks, expressions returning their value, quicker list
filters). None of that may change what a template prints. Here each template of every bundled
family is rendered over the values generation gives it, by memspec and by a stock
``jinja2.sandbox.ImmutableSandboxedEnvironment`` configured with the same documented options
and given only memspec's template language (the ``{% message %}`` tag and memspec's filters),
and the texts and messages must be the same.
"""

from __future__ import annotations

import re
import types
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from conftest import REPO
from memspec.core.length_match import match_lengths
from memspec.core.word_forms import word_forms
from memspec.engine.generate import FamilyGenerator
from memspec.engine.jinja_filters import _add_days, _letter
from memspec.engine.jinja_messages import MESSAGE_FILTER, MessageExtension, _message_block
from memspec.engine.render import CompiledTemplate, Renderer, split_messages
from memspec.spec.catalog import Catalog
from memspec.spec.project import Project

PROJECT = Project(REPO)
CATALOG = Catalog.load(PROJECT)
FAMILIES = sorted(CATALOG.family_paths)
GROUPS = 6  # as test_bundled_families: enough for every family's balance checks
#: What the stock filter of a message block is handed for a context: one that collects
#: nothing, so the block prints its marked text (as a plain ``render`` of memspec's does).
_PRINTING = types.SimpleNamespace(message_blocks=None)
_ABSENT = object()


def stock_environment() -> ImmutableSandboxedEnvironment:
    """Jinja's immutable sandbox as it ships (its own code generator, optimizer, context and
    filters), with the options memspec documents and memspec's template language added."""
    env = ImmutableSandboxedEnvironment(
        loader=jinja2.FileSystemLoader(str(REPO / "templates")),
        undefined=jinja2.StrictUndefined, autoescape=False, trim_blocks=True,
        lstrip_blocks=True, keep_trailing_newline=False, extensions=[MessageExtension])
    env.filters[MESSAGE_FILTER] = lambda body, role, name, line: _message_block(
        _PRINTING, body, role, name, line)
    env.filters.update(letter=_letter, add_days=_add_days, match_lengths=match_lengths,
                       re_escape=re.escape, word_forms=word_forms)
    return env


def canonical(text: str) -> str:
    """What memspec makes of a render's text (``\\n`` line endings, NFC)."""
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[tuple[CompiledTemplate, dict[str, Any]]]]:
    """The templates generation rendered for a few groups of every bundled family, by their
    file (or inline source), each with the values it was rendered over."""
    renderer = Renderer(PROJECT)
    jinja_globals = renderer.env.make_globals(None)
    seen: dict[str, list[tuple[CompiledTemplate, dict[str, Any]]]] = {}
    originals = {name: getattr(CompiledTemplate, name)
                 for name in ("render_text", "render_messages")}

    def recording(name: str) -> Any:
        def render(self: CompiledTemplate, context: Mapping[str, Any]) -> Any:
            cases = seen.setdefault(self.filename, [])
            if len(cases) < 3:
                # The slot values, without the globals a RenderScope holds beneath them: read
                # only for a case that is kept (walking a scope's keys for each of the
                # hundreds of thousands of renders was a quarter of this fixture's time).
                cases.append((self, {key: value for key, value in context.items()
                                     if jinja_globals.get(key, _ABSENT) is not value}))
            return originals[name](self, context)
        return render

    with pytest.MonkeyPatch.context() as patch:
        for name in originals:
            patch.setattr(CompiledTemplate, name, recording(name))
        for family_id in FAMILIES:
            for _ in FamilyGenerator(CATALOG.family(family_id), renderer, 11).groups(GROUPS):
                pass
    return seen


def test_every_bundled_template_is_rendered(rendered: dict) -> None:
    files = {path.relative_to(REPO).as_posix() for path in (REPO / "templates").rglob("*.j2")}
    used = {name for name in rendered if not name.startswith("<")}
    # Every template file is one some family renders; inline templates are rendered too.
    assert files <= used, sorted(files - used)
    assert any(name.startswith("<inline") for name in rendered)


def test_templates_render_as_stock_jinja_renders_them(rendered: dict) -> None:
    stock = stock_environment()
    compared = 0
    for name, cases in sorted(rendered.items()):
        for template, values in cases:
            ours_text = template.render_text(values)
            if name.startswith("<"):
                theirs = stock.from_string(template.source).render(values)
            else:
                theirs = stock.get_template(
                    Path(name).relative_to("templates").as_posix()).render(values)
            assert canonical(theirs) == ours_text, name
            if "\x02" in ours_text:  # a phase's template: its messages, collected or split
                assert template.render_messages(values) == split_messages(canonical(theirs),
                                                                          template), name
            compared += 1
    assert compared >= len(rendered)

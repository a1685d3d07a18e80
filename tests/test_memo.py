"""Renders kept by their inputs (generator/engine/memo.py) change no byte: the same groups come out
the same with the memo off, on from the first render, and as shipped; what it hands out is a
copy; and a template that reaches other files is never kept."""

from __future__ import annotations

import pytest

from conftest import REPO
from memspec.engine.memo import InputMemo
from memspec.engine.parallel import chunk_jobs, render_chunk
from memspec.engine.render import Renderer, TemplateOrigin
from memspec.spec.catalog import Catalog
from memspec.spec.project import Project


def _lines(family_id: str, groups: int) -> tuple[list[bytes], int]:
    """The JSON lines of ``groups`` groups as ``memspec generate`` writes them, and how many
    times a memo was hit (the answer's, the phases', the expressions')."""
    from memspec.engine.generate import FamilyGenerator

    project = Project(REPO)
    family = Catalog.load(project).family(family_id)
    renderer = Renderer(project)
    generator = FamilyGenerator(family, renderer, 11)
    lines = [line for job in chunk_jobs(REPO, family, 11, 0, groups)
             for line in render_chunk(job, generator).lines()]
    memos = [generator._answer_memo, *renderer._expression_memos.values(),
             *(t.memo for phrasings in generator._phase_templates.values()
               for t in phrasings if hasattr(t, "memo"))]
    return lines, sum(memo._hits for memo in memos)


@pytest.mark.parametrize(("family", "groups"), [
    ("implicitmem.procedural.cache_key_prefix", 1500),  # 420 answers, a probe of two slots
    ("trustgap.memory_trust.airline", 30),  # 72 variants a group, answers by condition
])
def test_output_is_the_same_with_the_memo_off_on_at_once_or_as_shipped(
        monkeypatch: pytest.MonkeyPatch, family: str, groups: int) -> None:
    shipped, hits = _lines(family, groups)
    assert hits > groups // 2  # values repeat: the memo is used, so this compares something
    monkeypatch.setattr(InputMemo, "WARMUP", 10**9)
    off, hits = _lines(family, groups)
    assert hits == 0 and off == shipped
    monkeypatch.setattr(InputMemo, "WARMUP", 1)
    monkeypatch.setattr(InputMemo, "TRIAL", 10**9)  # kept everywhere, however seldom it hits
    eager, _ = _lines(family, groups)
    assert eager == shipped


def test_a_kept_result_is_handed_out_as_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(InputMemo, "WARMUP", 1)
    evaluate = Renderer(Project(REPO)).expression(
        "[{'k': x}]", TemplateOrigin("specs/x.yaml", 0, 1, "a test"))
    first = evaluate({"x": 1})
    first[0]["k"] = "changed by its caller"
    assert evaluate({"x": 1}) == [{"k": 1}] and evaluate({"x": 2}) == [{"k": 2}]


def test_what_a_template_reads_is_its_memo_key_and_an_include_keeps_nothing() -> None:
    renderer = Renderer(Project(REPO))
    plain = renderer.inline("{% set y = x %}{{ y }} {{ z.a }}{% for i in range(2) %}{{ i }}"
                            "{% endfor %}", "specs/x.yaml", 1, 1, "a test")
    # Globals count: a slot may shadow one (a slot named range is read instead of it).
    assert plain.free_names() == ("range", "x", "z")
    included = renderer.inline("{% include 'implicitmem/qa_turns.j2' %}", "specs/x.yaml",
                               1, 1, "a test")
    assert included.free_names() is None
    memo = InputMemo(included.free_names)
    assert all(memo.key({"chatter": []}) is None for _ in range(2 * InputMemo.WARMUP))

"""One common test over every bundled family: schema, ids, answers, determinism."""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from memspec.analysis.scoring import is_correct
from memspec.engine.generate import FamilyGenerator
from memspec.engine.render import Renderer
from memspec.spec.catalog import Catalog
from memspec.spec.instances import all_messages
from memspec.spec.project import Project
from memspec.spec.schemas import validator

PROJECT = Project(REPO)
CATALOG = Catalog.load(PROJECT)
FAMILIES = sorted(CATALOG.family_paths)
GROUPS = 6


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    return Renderer(PROJECT)


@pytest.mark.parametrize("family_id", FAMILIES)
def test_bundled_family(family_id: str, renderer: Renderer) -> None:
    family = CATALOG.family(family_id)
    groups = list(FamilyGenerator(family, renderer, 11).groups(GROUPS))
    instances = [i for g in groups for i in g]
    names = [v.name for v in family.variants()]
    for group in groups:
        # Every group renders its variants in declaration order (a design with `when` only
        # in some groups), so ids never depend on which other groups exist.
        variants = [i["variant"] for i in group]
        assert variants == [n for n in names if n in variants] and variants
    ids = [i["id"] for i in instances]
    assert len(set(ids)) == len(ids)
    schema = validator("instance")
    for instance in instances:
        assert not list(schema.iter_errors(instance))
        assert re.fullmatch(rf"{re.escape(family_id)}-\d{{5}}-[a-z0-9_.]+", instance["id"])
        for message in all_messages(instance):
            assert message["content"].strip() == message["content"] != ""
            assert not re.search(r"(?<!\{)\{[a-z_]+\}(?!\})", message["content"])
        answer = instance["answer"]
        if answer["scorer"] == "judge":
            assert answer["rubric"]
            continue
        response = answer.get("example", answer.get("gold"))
        assert is_correct(answer, response)
        if answer["scorer"] == "choice":
            # The gold re-derived independently: its label must be in the last user message.
            label = "ABCDEFGH"[answer["gold_index"]]
            assert f"{label}) {answer['gold']}" in all_messages(instance)[-1]["content"]
            assert is_correct(answer, f"{label}) and then on reflection something else")
            wrong = "ABCDEFGH"[(answer["gold_index"] + 1) % len(answer["options"])]
            assert not is_correct(answer, f"{wrong}. Actually, {label}.")
        for distractor in answer.get("distractors", {}).values():
            assert not is_correct(answer, distractor)
    again = [i for g in FamilyGenerator(family, Renderer(PROJECT), 11).groups(GROUPS)
             for i in g]
    assert again == instances

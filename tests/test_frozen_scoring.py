"""A release frozen before the reading stage scores exactly as it did: every reference
policy's replies and replies in the chat styles the stage reads differently get the same
outcome on every instance digested as the code of that time gave them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from frozen_scoring import FROZEN, digest

from conftest import REPO, bundled_release, release_instances

EXPECTED = json.loads((REPO / "tests" / "data" / "frozen_scoring.json").read_text())


@pytest.mark.parametrize("name", FROZEN)
def test_a_release_frozen_before_the_reading_scores_as_it_did(name: str,
                                                              built_dist: Path) -> None:
    instances = release_instances(bundled_release(built_dist, name))
    assert not any("reading" in i["answer"] for i in instances)
    assert digest(instances) == EXPECTED[name]

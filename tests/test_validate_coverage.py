"""validate predicts the freeze: it renders groups until every pool item has been drawn (under
the seed of the release that holds the family, no further than its groups), says which items
it did not reach, and a forbidden word is reported at the message and place it occurs."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

_FAMILY = """family: lab.pets.NAME
version: 1
paradigm: example.procedural
description: A pet's name, remembered across small talk.
slots:
  pet: {from: pools/lab/POOL.yaml}
  chatter: {from: pools/example/interference_qa.yaml, count: 15}
phases:
  learning:
    messages:
      - {role: user, text: "My pet is called {{ pet }}."}
      - {role: assistant, text: "Noted."}
  interference: example/shared/qa_turns.j2
  probe:
    messages:
      - {role: user, text: "What is my pet called?"}
answer:
  scorer: exact
  gold: "{{ pet }}"
checks:
  - kind: forbidden_words
    phases: [learning]
    words: "['hamster']"
"""


def _pool(root: Path, name: str, items: list[str]) -> None:
    (root / "specs/pools/lab").mkdir(parents=True, exist_ok=True)
    (root / f"specs/pools/lab/{name}.yaml").write_text(json.dumps(
        {"pool": f"lab.{name}", "description": "pet names", "items": items}))


def _family(root: Path, name: str, pool: str) -> None:
    (root / "specs/families/lab").mkdir(parents=True, exist_ok=True)
    (root / f"specs/families/lab/{name}.yaml").write_text(
        _FAMILY.replace("NAME", name).replace("POOL", pool))


def test_a_forbidden_word_in_an_item_group_0_does_not_draw_is_found_and_placed(
        project_copy: Path) -> None:
    items = ["Biscuit", "Pepper", "Mochi", "Olive", "Noodle", "Clover"]
    _pool(project_copy, "pets", items)
    _family(project_copy, "small", "pets")
    first = run_cli("generate", "lab.pets.small", "--groups", "1", root=project_copy)
    drawn = json.loads(first.stdout)["answer"]["gold"]
    # Another item (group 0 draws by position, so it still draws the same one) gets the word.
    items[(items.index(drawn) + 1) % len(items)] = "Captain hamster Jones"
    _pool(project_copy, "pets", items)
    first = run_cli("generate", "lab.pets.small", "--groups", "1", root=project_copy)
    assert first.returncode == 0 and json.loads(first.stdout)["answer"]["gold"] == drawn
    result = run_cli("validate", str(project_copy / "specs/families/lab/small.yaml"),
                     root=project_copy)
    assert result.returncode == 1, result.stderr
    assert ": forbidden word 'hamster' appears in phase 'learning', message 0 (user), line 1 " \
           "column 26: …My pet is called Captain hamster Jones.…" in result.stderr, \
        result.stderr


def test_items_validate_does_not_reach_are_named(project_copy: Path) -> None:
    _pool(project_copy, "many", [f"Pet{index:03d}" for index in range(300)])
    _family(project_copy, "many", "many")
    result = run_cli("validate", str(project_copy / "specs/families/lab/many.yaml"),
                     root=project_copy)
    assert result.returncode == 0, result.stderr
    note = next(line for line in result.stderr.splitlines() if "lab.pets.many" in line)
    # Of the 64 groups looked at, those that draw a pet none before drew are rendered.
    drawn = {json.loads(line)["answer"]["gold"] for line in run_cli(
        "generate", "lab.pets.many", "--groups", "64", root=project_copy).stdout.splitlines()}
    assert note.startswith(f"note: lab.pets.many: {300 - len(drawn)} item(s) of its pools not "
                           f"drawn in the {len(drawn)} group(s) validate rendered under seed 0 "
                           "(no release "
                           "holds this family), so not checked here (specs/pools/lab/many."
                           f"yaml: {300 - len(drawn)}), e.g. "), note


def test_over_many_families_the_notes_are_summed_up(project_copy: Path) -> None:
    _pool(project_copy, "many", [f"Pet{index:03d}" for index in range(300)])
    for name in ("one", "two", "three", "four"):
        _family(project_copy, name, "many")
    result = run_cli("validate", str(project_copy / "specs/families/lab"), root=project_copy)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("note: 4 families have pool items that no group validate "
                                    "rendered drew, so not checked here (lab.pets."), \
        result.stderr

"""Crossed balance: a slot whose factors' every combination is assigned equally often, and a
balanced check that counts combinations without listing them."""

from __future__ import annotations

import collections
import json
import subprocess
from pathlib import Path

from conftest import run_cli

_FAMILY = """family: lab.crossed_room
version: 1
paradigm: example.choice
description: The room of a meeting, told by one of two partners; the right room at each position.
slots:
  topic: {from: pools/example/meeting_topics.yaml}
  rooms: {from: pools/example/meeting_rooms.yaml, count: 3}
  cell:
    crossed:
      partner: [Ana, Ben]
      position: {range: [0, 2]}
  current: {expr: "rooms[0]"}
  options: {expr: "rooms[1:cell.position + 1] + [rooms[0]] + rooms[cell.position + 1:]"}
phases:
  memory:
    messages:
      - {role: system, text: "{{ cell.partner }} said the {{ topic }} meeting is in {{ current }}."}
  task:
    messages:
      - role: user
        text: >-
          Which room is the {{ topic }} meeting in?{% for r in options %}
          {{ loop.index0 | letter }}) {{ r }}{% endfor %}
answer:
  scorer: choice
  options: options
  gold: "{{ current }}"
  remembered: "{{ current }}"
fields:
  partner: "{{ cell.partner }}"
checks:
  - kind: balanced
    cross: {partner: instance.fields.partner, position: instance.answer.gold_index}
    values: VALUES
    description: each partner tells of each position equally often
"""


def crossed_project(root: Path, values: str = "{partner: [Ana, Ben], position: [0, 1, 2]}",
                    family: str = _FAMILY) -> Path:
    folder = root / "specs/families/lab"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "crossed_room.yaml").write_text(family.replace("VALUES", values))
    release = root / "specs/releases/crossed-v1.yaml"
    release.write_text("name: crossed\nversion: v1\nseed: 9\ndescription: crossed\n"
                       "families:\n  - family: lab.crossed_room\n    groups: 12\n")
    return release


def validate_crossed(root: Path) -> subprocess.CompletedProcess[str]:
    """``memspec validate`` of the files ``crossed_project`` wrote (the rest of the project is
    validated elsewhere: a whole validate of it is many times the cost)."""
    return run_cli("validate", str(root / "specs/families/lab/crossed_room.yaml"),
                   str(root / "specs/releases/crossed-v1.yaml"), root=root)


def test_a_crossed_slot_takes_every_combination_equally_often(project_copy: Path,
                                                              tmp_path: Path) -> None:
    release = crossed_project(project_copy)
    result = run_cli("generate", "lab.crossed_room", "--seed", "9", "--groups", "12",
                     root=project_copy)
    assert result.returncode == 0, result.stderr
    instances = [json.loads(line) for line in result.stdout.splitlines()]
    cells = collections.Counter((i["fields"]["partner"], i["answer"]["gold_index"])
                                for i in instances)
    assert cells == {(p, k): 2 for p in ("Ana", "Ben") for k in range(3)}
    # Each block of six groups takes each combination once.
    assert len({(i["fields"]["partner"], i["answer"]["gold_index"]) for i in instances[:6]}) == 6
    validated = validate_crossed(project_copy)
    assert validated.returncode == 0, validated.stderr
    out = tmp_path / "dist"
    frozen = run_cli("freeze", str(release), "--out", str(out), root=project_copy)
    assert frozen.returncode == 0, frozen.stderr


def test_a_crossed_check_names_the_combination_that_is_off(project_copy: Path) -> None:
    crossed_project(project_copy, "{position: [0, 1, 2, 3]}")
    result = run_cli("generate", "lab.crossed_room", "--seed", "9", "--groups", "12",
                     root=project_copy)
    assert result.returncode == 1, result.stderr
    assert "check balanced failed: partner × position is unbalanced (partner=\"Ana\", " \
           "position=0: 2, partner=\"Ana\", position=1: 2, partner=\"Ana\", position=2: 2, " \
           "partner=\"Ana\", position=3: 0," in result.stderr, result.stderr


def test_bad_crossed_declarations_are_refused_where_written(project_copy: Path) -> None:
    family = (_FAMILY.replace("partner: [Ana, Ben]", "partner: [Ana, Ben, Ana]")
              .replace("    cross: {partner", "    of: instance.group\n    cross: {partner"))
    crossed_project(project_copy, "{partner: [Ana, Ben], seat: [1]}", family)
    result = run_cli("validate", str(project_copy / "specs/families/lab/crossed_room.yaml"),
                     root=project_copy)
    assert result.returncode == 2, result.stderr
    assert "crossed_room.yaml:10:7: factor 'partner' lists a value twice" in result.stderr
    assert "crossed_room.yaml:32:5: check 'balanced' needs exactly one of 'of'" in result.stderr
    crossed_project(project_copy, "{partner: [Ana, Ben], seat: [1]}")
    result = run_cli("validate", str(project_copy / "specs/families/lab/crossed_room.yaml"),
                     root=project_copy)
    assert result.returncode == 2, result.stderr
    assert "crossed_room.yaml:32:5: check 'balanced': 'values' names 'seat', which 'cross' " \
           "does not (partner, position)" in result.stderr, result.stderr

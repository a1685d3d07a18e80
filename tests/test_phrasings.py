"""Several phrasings of a phase: one drawn per group, balanced across groups, the same in every
variant of the group, every one recorded among the release's inputs; bad declarations refused
where they are written."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

from conftest import run_cli

#: Three template phrasings of the task and one written inline; each names itself in its
#: first words, so that an instance tells which one it got.
_TASK = """{% message "tool", "room_directory" %}
Room directory, {{ colleague }} about {{ topic }}: {{ current }}.
{% endmessage %}
{% message "user" %}
PHRASING Which room is today's {{ topic }} meeting with {{ colleague }} in? A letter.
{% for room in options %}
{{ loop.index0 | letter }}) {{ room }}
{% endfor %}
{% endmessage %}
"""
_INLINE = """      - messages:
          - role: tool
            name: room_directory
            text: "Directory: {{ colleague }} / {{ topic }} is booked in {{ current }}."
          - role: user
            text: "(inline) Room for {{ topic }} with {{ colleague }}? Reply with a letter.\\
              {% for room in options %} {{ loop.index0 | letter }}) {{ room }}{% endfor %}"
"""


def phrased_project(root: Path, phrasings: str | None = None) -> Path:
    """A copy of the bundled project (``project_copy``) given a family whose task phase has
    four phrasings, and a release of it; the release file's path."""
    source = (root / "specs/families/example/meeting_room.yaml").read_text()
    for word in ("alpha", "beta", "gamma"):
        path = root / f"templates/lab/task_{word}.j2"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_TASK.replace("PHRASING", f"({word})"))
    if phrasings is None:
        phrasings = ("      - lab/task_alpha.j2\n      - {template: lab/task_beta.j2}\n"
                     "      - lab/task_gamma.j2\n" + _INLINE)
    family = (source.replace("family: example.choice.meeting_room", "family: lab.meeting_room")
              .replace("  task: example/meeting_room/task.j2\n",
                       "  task:\n    phrasings:\n" + phrasings))
    family += ("  - kind: identical_across\n    axis: condition\n    phases: [task]\n"
               "    description: every condition of a group reads the same task\n")
    (root / "specs/families/lab").mkdir(parents=True)
    (root / "specs/families/lab/meeting_room.yaml").write_text(family)
    release = root / "specs/releases/lab-v1.yaml"
    release.write_text("name: lab\nversion: v1\nseed: 41\ndescription: phrasings\n"
                       "families:\n  - family: lab.meeting_room\n    groups: 12\n")
    return release


def _phrasing(instance: dict) -> str:
    task = [p for p in instance["phases"] if p["phase"] == "task"][0]
    return re.search(r"\((\w+)\)", task["messages"][-1]["content"]).group(1)


def test_phrasings_are_drawn_per_group_balanced_and_shared_by_its_variants(
        project_copy: Path, tmp_path: Path) -> None:
    release = phrased_project(project_copy)
    result = run_cli("generate", "lab.meeting_room", "--seed", "41", "--groups", "12",
                     root=project_copy)
    assert result.returncode == 0, result.stderr
    instances = [json.loads(line) for line in result.stdout.splitlines()]
    by_group = collections.defaultdict(set)
    for instance in instances:
        by_group[instance["group"]].add(_phrasing(instance))
    assert all(len(used) == 1 for used in by_group.values())  # one phrasing a group
    counts = collections.Counter(next(iter(used)) for used in by_group.values())
    assert counts == {"alpha": 3, "beta": 3, "gamma": 3, "inline": 3}
    # Each block of four consecutive groups takes every phrasing once.
    for block in range(3):
        assert {next(iter(by_group[g])) for g in range(4 * block, 4 * block + 4)} == \
            {"alpha", "beta", "gamma", "inline"}
    # A group's draw is its own: rendered alone, group 7 reads as it did among the others.
    alone = run_cli("generate", "lab.meeting_room", "--seed", "41", "--start", "7",
                    "--groups", "1", root=project_copy)
    assert [line for line in result.stdout.splitlines() if '"group":7,' in line] == \
        alone.stdout.splitlines()
    # Another seed draws other orders (the draw is keyed by the seed, not by position alone).
    other = run_cli("generate", "lab.meeting_room", "--seed", "42", "--groups", "12",
                    root=project_copy)
    assert [_phrasing(json.loads(line)) for line in other.stdout.splitlines()] != \
        [_phrasing(i) for i in instances]

    # The files it added, validated (not the whole bundled project: many times the cost).
    validated = run_cli("validate", str(project_copy / "specs/families/lab"), str(release),
                        root=project_copy)
    assert validated.returncode == 0, validated.stderr
    out = tmp_path / "dist"
    frozen = run_cli("freeze", str(release), "--out", str(out), root=project_copy)
    assert frozen.returncode == 0, frozen.stderr
    inputs = json.loads((project_copy / "manifests/lab-v1.json").read_text())["inputs"]
    assert {f"templates/lab/task_{w}.j2" for w in ("alpha", "beta", "gamma")} <= set(inputs)
    verified = run_cli("verify", str(out / "lab-v1"), root=project_copy)
    assert verified.returncode == 0, verified.stderr


def _refused(root: Path, phrasings: str) -> str:
    release = phrased_project(root, phrasings)
    result = run_cli("validate", str(root / "specs/families/lab"), str(release), root=root)
    assert result.returncode == 2, result.stderr
    return result.stderr


def test_a_single_phrasing_is_refused_where_it_is_written(project_copy: Path) -> None:
    stderr = _refused(project_copy, "      - lab/task_alpha.j2\n")
    assert "specs/families/lab/meeting_room.yaml:24:5: phase 'task' has one phrasing: write " \
        "it as the phase itself, or give two or more" in stderr, stderr


def test_a_repeated_phrasing_is_refused_at_the_repeat(project_copy: Path) -> None:
    stderr = _refused(project_copy, "      - lab/task_alpha.j2\n      - lab/task_beta.j2\n"
                                    "      - {template: lab/task_alpha.j2}\n")
    family = (project_copy / "specs/families/lab/meeting_room.yaml").read_text().splitlines()
    line = next(i for i, text in enumerate(family, 1) if "{template: lab/task_alpha.j2}" in text)
    assert f"specs/families/lab/meeting_room.yaml:{line}:9: phrasing 2 of phase 'task' " \
           "repeats phrasing 0" in stderr, stderr


def test_a_missing_phrasing_template_is_refused_at_its_line(project_copy: Path) -> None:
    stderr = _refused(project_copy, "      - lab/task_alpha.j2\n      - lab/task_delta.j2\n")
    family = (project_copy / "specs/families/lab/meeting_room.yaml").read_text().splitlines()
    line = next(i for i, text in enumerate(family, 1) if "task_delta" in text)
    assert f"specs/families/lab/meeting_room.yaml:{line}:9:" in stderr, stderr
    assert "task_delta.j2" in stderr

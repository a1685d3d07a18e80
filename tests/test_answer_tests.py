"""Answer tests: example responses a family declares its scorer must accept or reject, and
`memspec check-answer`, which says what the scorer took of a response and why it scored so."""

from __future__ import annotations

import re
from pathlib import Path

from test_crossed import _FAMILY, crossed_project, validate_crossed

from conftest import run_cli

_VALUES = "{partner: [Ana, Ben], position: [0, 1, 2]}"
_EXAMPLES = """  accepts:
    - "{{ 'ABC'[cell.position] }}) {{ current }}"
    - response: "**{{ 'ABC'[cell.position] }}.** As {{ cell.partner }} said."
  rejects:
    - "{{ 'ABC'[(cell.position + 1) % 3] }}"
    - "I don't know."
"""


def _family(examples: str) -> str:
    return _FAMILY.replace('  remembered: "{{ current }}"\n',
                           '  remembered: "{{ current }}"\n' + examples)


def _line_of(root: Path, text: str) -> int:
    lines = (root / "specs/families/lab/crossed_room.yaml").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_declared_examples_pass_validate_and_freeze(project_copy: Path, tmp_path: Path) -> None:
    release = crossed_project(project_copy, _VALUES, _family(_EXAMPLES))
    validated = validate_crossed(project_copy)
    assert validated.returncode == 0, validated.stderr
    frozen = run_cli("freeze", str(release), "--out", str(tmp_path / "dist"),
                     root=project_copy)
    assert frozen.returncode == 0, frozen.stderr


def test_an_example_the_scorer_disagrees_with_is_refused_at_its_line(project_copy: Path) -> None:
    examples = _EXAMPLES.replace("    - \"I don't know.\"\n",
                                 "    - \"I don't know.\"\n    - \"{{ current }}\"\n")
    crossed_project(project_copy, _VALUES, _family(examples))
    result = validate_crossed(project_copy)
    assert result.returncode == 2, result.stderr
    line = _line_of(project_copy, '- "{{ current }}"')
    found = re.search(rf"specs/families/lab/crossed_room\.yaml:{line}:7: answer rejects\[2\] "
                      r"fails in group 0, variant main/base: the scorer accepts '([^']+)': "
                      r"took '([ABC])\) \1', correct \(the first option named is \2; the "
                      r"right option is \2\) \1\)", result.stderr)
    assert found, result.stderr


def test_bad_example_declarations_are_refused_where_written(project_copy: Path) -> None:
    examples = _EXAMPLES.replace('    - response: "**', '    - when: {arm: control}\n'
                                 '      response: "**')
    crossed_project(project_copy, _VALUES, _family(examples))
    result = validate_crossed(project_copy)
    assert result.returncode == 2, result.stderr
    line = _line_of(project_copy, "when: {arm: control}")
    assert f"crossed_room.yaml:{line}:14: 'when' names unknown axis 'arm'" in result.stderr, \
        result.stderr


def test_check_answer_says_what_was_taken_and_why() -> None:
    family = "example.choice.meeting_room"
    result = run_cli("check-answer", family, "**B.** The one", "--variant", "clean.r0")
    assert result.returncode == 1, result.stderr
    assert "under seed 20261201, of release example-v" in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "instance: example.choice.meeting_room-00000-clean.r0"
    taken = next(line for line in lines if line.startswith("took: "))
    assert taken.startswith("took: 'B) ")
    assert "verdict: wrong" in lines
    assert any(line.startswith("why: the first option named is B; the right option is A) ")
               for line in lines)
    right = run_cli("check-answer", family, "A", "--variant", "clean.r0")
    assert right.returncode == 0 and "verdict: correct" in right.stdout
    abstains = run_cli("check-answer", family, "I don't know", "--variant", "clean.r0")
    assert abstains.returncode == 1 and "verdict: abstains" in abstains.stdout
    unnamed = run_cli("check-answer", family, "A")
    assert unnamed.returncode == 2
    assert "--variant is needed: group 0 has 9 variants (no_memory.r0," in unnamed.stderr


def test_show_defaults_to_the_seed_of_the_release_holding_the_family() -> None:
    family = "example.choice.meeting_room"
    default = run_cli("show", family)
    explicit = run_cli("show", family, "--seed", "20261201")
    assert default.returncode == 0 and default.stdout == explicit.stdout
    assert "showing example.choice.meeting_room under seed 20261201, of release example-v3" \
        in default.stderr
    assert explicit.stderr == ""


def test_a_judge_answer_cannot_hold_examples(project_copy: Path) -> None:
    family = project_copy / "specs/families/example/fog_priming.yaml"
    text = family.read_text().replace("analysis:\n", "  accepts: [\"A poem.\"]\nanalysis:\n")
    (project_copy / "specs/families/example/judged.yaml").write_text(
        text.replace("family: example.priming.harbour_fog", "family: example.priming.judged"))
    result = run_cli("validate", str(project_copy / "specs/families/example/judged.yaml"),
                     root=project_copy)
    assert result.returncode == 2, result.stderr
    assert "a judge answer cannot test 'accepts': only a judge scores its responses" in \
        result.stderr, result.stderr

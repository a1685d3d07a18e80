"""A declared chance or expected score is checked against the data where the data says what
it must be: on a choice item of k options a memoryless pick is right one time in k. A
declaration that contradicts it is refused where it is written (file:line:col, exit 2, nothing
written); a true one, or a positive control's chance of 1, generates."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli

FAMILY = "specs/families/example/meeting_room.yaml"  # three options per item


def _declare(project: Path, block: str) -> int:
    """Append ``block`` to the family; the line its last entry is written on."""
    path = project / FAMILY
    text = path.read_text()
    path.write_text(text + block)
    return len((text + block).splitlines())


def _generate(project: Path, out: Path) -> tuple[int, str]:
    result = run_cli("generate", "example.choice.meeting_room", "--groups", "3", "--out",
                     str(out), root=project)
    return result.returncode, result.stderr


@pytest.mark.parametrize(("block", "column", "said"), [
    ("audit:\n  chance: 0.5\n", 3,
     "audit.chance is 0.5, but this choice item has 3 options: a memoryless pick is right "
     "1/3 = 0.3333 of the time"),
    ("analysis:\n  chance: 0.25\n", 3, "analysis.chance is 0.25, but this choice item has 3"),
    ("audit:\n  policies:\n    always_current:\n      respond: 'A'\n      expected: 0.9\n", 7,
     "policy 'always_current' is memoryless and expected to score 0.9, but on this choice "
     "item of 3 options a memoryless answer is right at most 0.3333 of the time"),
])
def test_a_declaration_the_options_contradict_is_refused_where_written(
        project_copy: Path, tmp_path: Path, block: str, column: int, said: str) -> None:
    if block.startswith("analysis:"):
        # The family already has an analysis block: the chance goes into it.
        path = project_copy / FAMILY
        lines = path.read_text().splitlines()
        at = lines.index("analysis:") + 1
        lines.insert(at, "  chance: 0.25")
        path.write_text("\n".join(lines) + "\n")
        line = at + 1
    else:
        line = _declare(project_copy, block)
    out = tmp_path / "out.jsonl"
    status, stderr = _generate(project_copy, out)
    assert status == 2, stderr
    assert f"{FAMILY}:{line}:{column}: " in stderr and said in stderr, stderr
    assert not out.exists()


@pytest.mark.parametrize("block", [
    "audit:\n  chance: 0.3333\n",  # one over three, rounded
    "audit:\n  chance: 1\n",  # a positive control
    "audit:\n  policies:\n    always_current:\n      respond: 'A'\n      expected: 0.3333\n",
    # A policy that reads memory may be expected to score anything.
    "audit:\n  policies:\n    follower:\n      respond: 'A'\n      memoryless: false\n"
    "      expected: 0.9\n",
])
def test_a_declaration_the_data_bears_out_generates(project_copy: Path, tmp_path: Path,
                                                     block: str) -> None:
    _declare(project_copy, block)
    out = tmp_path / "out.jsonl"
    status, stderr = _generate(project_copy, out)
    assert status == 0, stderr
    assert out.read_text().count("\n") == 27  # 3 groups x 3 conditions x 3 rotations

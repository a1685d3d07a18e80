"""Answer styles and the reading block a family declares: each style must read as it says at
validate and freeze (else an error at its line, exit 2), and `memspec check-answer` prints
each reading step, taking an instance id and a response file."""

from __future__ import annotations

import re
from pathlib import Path

from test_answer_tests import _VALUES, _family, _line_of
from test_crossed import crossed_project, validate_crossed

from conftest import run_cli

_STYLES = """  reading:
    version: 2
  styles:
    - {style: terse, response: "{{ 'ABC'[cell.position] }}", expect: right}
    - style: preamble_markdown
      response: "Good question! Going by the note:\\n\\n- **{{ 'ABC'[cell.position] }}**"
      expect: right
    - {style: hedge, response: "Probably {{ current }}, but I'm not certain.", expect: abstain}
    - style: clarifying_question
      response: "Do you mean {{ current }} or another room? Tell me which."
      expect: abstain
    - style: two_options
      response: "({{ 'ABC'[cell.position] }}) and ({{ 'ABC'[(cell.position + 1) % 3] }}) both work."
      expect: unscorable
    - style: rejected_then_answer
      response: >-
        Not {{ 'ABC'[(cell.position + 1) % 3] }},
        but {{ answer.options.index(answer.gold) | letter }}.
      expect: right
"""


def test_declared_styles_pass_validate_and_freeze(project_copy: Path, tmp_path: Path) -> None:
    release = crossed_project(project_copy, _VALUES, _family(_STYLES))
    validated = validate_crossed(project_copy)
    assert validated.returncode == 0, validated.stderr
    frozen = run_cli("freeze", str(release), "--out", str(tmp_path / "dist"),
                     root=project_copy)
    assert frozen.returncode == 0, frozen.stderr
    data = next((tmp_path / "dist").glob("*/data/*.jsonl")).read_text()
    assert '"reading":{"version":2}' in data


def test_a_style_read_otherwise_is_refused_at_its_line(project_copy: Path) -> None:
    styles = _STYLES.replace('but I\'m not certain.", expect: abstain}',
                             'but I\'m not certain.", expect: right}')
    crossed_project(project_copy, _VALUES, _family(styles))
    result = validate_crossed(project_copy)
    assert result.returncode == 2, result.stderr
    line = _line_of(project_copy, "style: hedge")
    assert re.search(rf"crossed_room\.yaml:{line}:\d+: answer style fails in group 0, "
                     r"variant main/base of lab\.crossed_room: style 'hedge' expects right, "
                     r"but [\"']Probably .*[\"'] reads as abstain", result.stderr), result.stderr


def test_a_signature_that_is_no_call_is_refused(project_copy: Path) -> None:
    styles = _STYLES.replace("    version: 2\n", "    version: 2\n    signature: copy file\n")
    crossed_project(project_copy, _VALUES, _family(styles))
    result = validate_crossed(project_copy)
    assert result.returncode == 2
    assert "signature 'copy file' is not a call of parameter names" in result.stderr


def test_check_answer_prints_each_reading_step() -> None:
    family = "example.procedural4.reversed_copy"
    result = run_cli("check-answer", family,
                     "Sure! Not copy_file('a', 'b'), but **copy_file(source='x', "
                     "destination='y')**. Hope this helps!")
    assert result.returncode == 1, result.stderr
    assert "openers and sign-offs set aside: Sure! | Hope this helps!" in result.stdout
    assert "rejected mentions: Not copy_file('a', 'b')" in result.stdout
    assert "copy_file(source='x', destination='y') -> copy_file('y', 'x')" in result.stdout
    assert "verdict: wrong" in result.stdout


def test_check_answer_takes_an_instance_id_and_a_response_file(tmp_path: Path) -> None:
    family = "example.choice4.meeting_room"
    shown = run_cli("show", family, "--group", "2")
    assert shown.returncode == 0, shown.stderr
    reply = tmp_path / "reply.txt"
    reply.write_text("Do you mean the first room or the second? Tell me which.")
    result = run_cli("check-answer", family, "--id", f"{family}-00002-stale.r1",
                     "--response-file", str(reply))
    assert result.returncode == 1, result.stderr
    assert f"instance: {family}-00002-stale.r1" in result.stdout
    assert "verdict: abstains" in result.stdout
    bad = run_cli("check-answer", family, "--id", "nothing-like-an-id", "A")
    assert bad.returncode == 2 and "is not an instance id" in bad.stderr
    both = run_cli("check-answer", family, "A", "--response-file", str(reply))
    assert both.returncode == 2 and "not both or neither" in both.stderr


_SIX_MORE = """    - {style: other_words, response: "That would be {{ current }}.", expect: right}
    - style: habitual
      response: "{{ 'ABC'[(cell.position + 1) % 3] }}"
      expect: wrong
"""


def test_reading_version_4_wants_a_style_of_each_of_six_kinds(project_copy: Path) -> None:
    """A family read with version 4 that lacks other words and the habitual answer is refused
    where its styles are written, naming both; with them it validates. Version 2 (frozen
    releases) is not held to the six."""
    four = _STYLES.replace("    version: 2\n", "    version: 4\n")
    crossed_project(project_copy, _VALUES, _family(four))
    refused = validate_crossed(project_copy)
    wanted = (rf"crossed_room\.yaml:{_line_of(project_copy, '  styles:')}:\d+: "
              r"lab\.crossed_room is read with reading version 4, .* it declares none of: "
              r"other words, the habitual answer \(")
    assert (refused.returncode, bool(re.search(wanted, refused.stderr))) == (2, True), \
        refused.stderr
    crossed_project(project_copy, _VALUES, _family(four + _SIX_MORE))
    validated = validate_crossed(project_copy)
    assert validated.returncode == 0, validated.stderr


def test_a_paradigm_reading_version_4_without_six_kinds_is_located_in_it(
        project_copy: Path) -> None:
    paradigm = project_copy / "specs/paradigms/example/v5/choice.yaml"
    text = paradigm.read_text()
    start = text.index("    - style: habitual")
    paradigm.write_text(text[:start] + text[text.index("    - style: hedge"):])
    # The paradigm and its family (not all 268 families of the project: many times the cost).
    result = run_cli("validate", str(paradigm),
                     str(project_copy / "specs/families/example/v5/meeting_room.yaml"),
                     root=project_copy)
    assert result.returncode == 2, result.stderr
    assert re.search(r"specs/paradigms/example/v5/choice\.yaml:\d+:\d+: "
                     r"example\.choice5\.meeting_room is read with reading version 4, .* "
                     r"none of: the habitual answer", result.stderr), result.stderr

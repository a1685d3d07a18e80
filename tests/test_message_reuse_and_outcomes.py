"""Two pieces of generic machinery a benchmark version needed: the release check
``message_reuse`` (no message of a phase shown in more than a bound of groups, reported on the
card) and the ``outcomes`` a family's analysis declares (kinds of right answer reported apart;
a pattern that cannot compile is refused where it is written)."""

from __future__ import annotations

import json
from pathlib import Path

from test_phrasings import phrased_project

from conftest import run_cli

#: Four phrasings of the task, each opening with a message of its own that every group drawing
#: it shows word for word: over 12 groups, each opening is shown in exactly 3.
_OPENINGS = "".join(f"""      - messages:
          - role: tool
            name: room_directory
            text: "Directory: {{{{ colleague }}}} / {{{{ topic }}}} is booked in {{{{ current }}}}."
          - role: user
            text: "Opening {n}: a word before the question."
          - role: user
            text: "Room for {{{{ topic }}}} with {{{{ colleague }}}}? Reply with a letter.\\
              {{% for room in options %}} {{{{ loop.index0 | letter }}}}) \\
              {{{{ room }}}}{{% endfor %}}"
""" for n in ("one", "two", "three", "four"))


def _reuse_check(bound: int) -> str:
    return (f"checks:\n  - kind: message_reuse\n    phase: task\n    role: user\n"
            f"    max_count: {bound}\n")


def test_message_reuse_is_reported_on_the_card_and_refused_above_its_bound(
        project_copy: Path, tmp_path: Path) -> None:
    release = phrased_project(project_copy, _OPENINGS)
    text = release.read_text()
    release.write_text(text + _reuse_check(3))
    out = tmp_path / "dist"
    frozen = run_cli("freeze", str(release), "--out", str(out), root=project_copy)
    assert frozen.returncode == 0, frozen.stderr
    # Counted from the data: each opening in 3 of the 12 groups, every other user message in 1.
    shown: dict[str, set[int]] = {}
    for line in (out / "lab-v1/data/lab.meeting_room.jsonl").read_text().splitlines():
        instance = json.loads(line)
        for phase in instance["phases"]:
            if phase["phase"] == "task":
                for m in phase["messages"]:
                    if m["role"] == "user":
                        shown.setdefault(m["content"], set()).add(instance["group"])
    counts = sorted(len(groups) for groups in shown.values())
    assert counts[-4:] == [3, 3, 3, 3] and set(counts[:-4]) == {1}
    card = (out / "lab-v1/README.md").read_text()
    assert "## Release checks" in card and "Message reuse:" in card
    assert (f"| task | user | {len(shown)} | 12 | Opening four: a word before the question. (3) "
            "| 3 |") in card, card

    # The same data under a bound of 2: refused at the check's line, nothing written.
    (project_copy / "manifests/lab-v1.json").unlink()
    release.write_text(text + _reuse_check(2))
    out2 = tmp_path / "dist2"
    refused = run_cli("freeze", str(release), "--out", str(out2), root=project_copy)
    assert refused.returncode == 1, refused.stderr
    line = len(text.splitlines()) + 2
    assert (f"specs/releases/lab-v1.yaml:{line}:5: message_reuse: a message of phase 'task' is "
            "shown in 3 groups, more than max_count 2: 'Opening four: a word before the "
            "question.'") in refused.stderr, refused.stderr
    assert not out2.exists() and not (project_copy / "manifests/lab-v1.json").exists()


def test_a_reuse_check_on_a_missing_phase_is_refused_where_it_is_written(
        project_copy: Path) -> None:
    release = phrased_project(project_copy)
    lines = len(release.read_text().splitlines())
    release.write_text(release.read_text() + "checks:\n  - kind: message_reuse\n"
                       "    phase: probe\n    max_count: 4\n")
    result = run_cli("validate", root=project_copy)
    assert result.returncode == 2, result.stderr
    assert f"specs/releases/lab-v1.yaml:{lines + 3}:5: message_reuse: phase 'probe' is not " \
           "a phase of lab.meeting_room" in result.stderr, result.stderr


def test_a_declared_outcome_that_cannot_compile_is_refused_at_its_line(
        project_copy: Path) -> None:
    family = project_copy / "specs/families/example/meeting_room.yaml"
    text = family.read_text()
    assert "\nanalysis:\n" in text
    family.write_text(text.replace("\nanalysis:\n",
                                   "\nanalysis:\n  outcomes:\n    named: '(unclosed'\n"))
    line = text.splitlines().index("analysis:") + 3
    result = run_cli("validate", root=project_copy)
    assert result.returncode == 2, result.stderr
    assert f"meeting_room.yaml:{line}:" in result.stderr, result.stderr
    assert "outcome 'named' is not a valid regular expression" in result.stderr

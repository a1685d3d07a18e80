"""Two pieces of generic machinery a benchmark version needed: the release check
``message_reuse`` (no message of a phase shown in more than a bound of groups, reported on the
card) and the ``outcomes`` a family's analysis declares (kinds of right answer reported apart;
a pattern that cannot compile is refused where it is written)."""

from __future__ import annotations

import json
import re
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
    result = run_cli("validate", str(release), root=project_copy)
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
    result = run_cli("validate", str(family), root=project_copy)
    assert result.returncode == 2, result.stderr
    assert f"meeting_room.yaml:{line}:" in result.stderr, result.stderr
    assert "outcome 'named' is not a valid regular expression" in result.stderr


def _overlap_release(root: Path, bound: float) -> Path:
    release = root / "specs/releases/lab-v1.yaml"
    release.write_text("name: lab\nversion: v1\nseed: 7\ndescription: rubric overlap\n"
                       "families:\n  - family: example.priming.harbour_fog\n    groups: 12\n"
                       "checks:\n  - kind: rubric_overlap\n    phase: priming\n"
                       f"    when: {{arm: experimental}}\n    max_share: {bound}\n")
    return release


def _expected_share(data: Path) -> float:
    """Worked out from the data: per experimental item, the rubric's words of four letters or
    more that no other phase says, and the share of them the priming text uses."""
    def words(text: str) -> set[str]:
        return {w.casefold() for w in re.findall(r"[^\W\d_]{4,}", text)}

    shares = []
    for line in data.read_text().splitlines():
        item = json.loads(line)
        if item["axes"]["arm"] != "experimental":
            continue
        texts = {p["phase"]: " ".join(m["content"] for m in p["messages"])
                 for p in item["phases"]}
        own = words(item["answer"]["rubric"]) - set().union(
            *(words(t) for phase, t in texts.items() if phase != "priming"))
        shares.append(len(own & words(texts["priming"])) / len(own))
    return sum(shares) / len(shares)


def test_rubric_overlap_is_reported_on_the_card_and_refused_above_its_bound(
        project_copy: Path, tmp_path: Path) -> None:
    release = _overlap_release(project_copy, 0.9)
    out = tmp_path / "dist"
    frozen = run_cli("freeze", str(release), "--out", str(out), root=project_copy)
    assert frozen.returncode == 0, frozen.stderr
    expected = _expected_share(out / "lab-v1/data/example.priming.harbour_fog.jsonl")
    assert 0 < expected < 0.9  # the fixture's rubric names the passage's harbour and fog
    card = (out / "lab-v1/README.md").read_text()
    assert "Rubric overlap:" in card
    assert f"| `example.priming.harbour_fog` | priming | 12 | {expected:.3f} | 0.9 |" in card

    (project_copy / "manifests/lab-v1.json").unlink()
    release = _overlap_release(project_copy, 0.01)
    out2 = tmp_path / "dist2"
    refused = run_cli("freeze", str(release), "--out", str(out2), root=project_copy)
    assert refused.returncode == 1, refused.stderr
    assert (f"specs/releases/lab-v1.yaml:9:5: rubric_overlap: example.priming.harbour_fog: "
            f"phase 'priming' uses on average {expected:.3f} of the rubric's own words, above "
            "max_share 0.01") in refused.stderr, refused.stderr
    assert not out2.exists()

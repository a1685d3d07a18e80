"""Release-level checks: the lexical variety of a phase within each family, decided over the
whole release at freeze and reported on the card of a release that declares it."""

from __future__ import annotations

import itertools
import json
import re
from fractions import Fraction
from pathlib import Path

from test_phrasings import phrased_project

from conftest import run_cli


def _with_checks(release: Path, checks: str) -> None:
    release.write_text(release.read_text() + "checks:\n" + checks)


def _mean_jaccard(data: Path, phase: str) -> Fraction:
    """The mean word Jaccard of ``phase`` between every two groups, worked out exactly from
    the data file, a pair at a time."""
    words: dict[int, set[str]] = {}
    for line in data.read_text().splitlines():
        instance = json.loads(line)
        text = " ".join(m["content"] for p in instance["phases"] if p["phase"] == phase
                        for m in p["messages"])
        words.setdefault(instance["group"], set()).update(
            w.casefold() for w in re.findall(r"\w+", text))
    pairs = list(itertools.combinations(sorted(words), 2))
    return sum((Fraction(len(words[a] & words[b]), len(words[a] | words[b]))
                for a, b in pairs), Fraction(0)) / len(pairs)


def test_lexical_variety_is_reported_on_the_card_and_refused_above_its_bound(
        project_copy: Path, tmp_path: Path) -> None:
    release = phrased_project(project_copy)
    text = release.read_text()
    _with_checks(release, "  - kind: lexical_variety\n    phase: task\n    max_jaccard: 0.9\n")
    out = tmp_path / "dist"
    frozen = run_cli("freeze", str(release), "--out", str(out), root=project_copy)
    assert frozen.returncode == 0, frozen.stderr
    expected = _mean_jaccard(out / "lab-v1/data/lab.meeting_room.jsonl", "task")
    assert 0.2 < expected < 0.9
    card = (out / "lab-v1/README.md").read_text()
    row = re.search(r"\| `lab\.meeting_room` \| task \| 12 \| ([0-9.]+) \| 0\.9 \| "
                    r"\d+, \d+ \(([0-9.]+)\) \|", card)
    assert row, card
    assert row.group(1) == f"{float(expected):.3f}"
    assert float(row.group(2)) >= float(expected)

    # The same data under a bound it exceeds: refused at the check's line, nothing written.
    (project_copy / "manifests/lab-v1.json").unlink()
    release.write_text(text)
    _with_checks(release, "  - kind: lexical_variety\n    phase: task\n    max_jaccard: 0.2\n")
    out2 = tmp_path / "dist2"
    refused = run_cli("freeze", str(release), "--out", str(out2), root=project_copy)
    assert refused.returncode == 1, refused.stderr
    line = len(text.splitlines()) + 2
    assert (f"specs/releases/lab-v1.yaml:{line}:5: lexical_variety: lab.meeting_room: mean "
            f"word Jaccard of phase 'task' between every two of its 12 groups is "
            f"{float(expected):.3f}, above max_jaccard 0.2; most alike: groups") in \
        refused.stderr, refused.stderr
    assert not out2.exists() and not (project_copy / "manifests/lab-v1.json").exists()


def test_a_release_without_checks_has_no_such_section(built_example: Path) -> None:
    assert "## Release checks" not in (built_example / "README.md").read_text()


def test_a_check_naming_what_the_release_lacks_is_refused_where_it_is_written(
        project_copy: Path) -> None:
    release = phrased_project(project_copy)
    lines = len(release.read_text().splitlines())
    _with_checks(release, "  - kind: lexical_variety\n    phase: probe\n    max_jaccard: 0.5\n"
                          "    families: [lab.meeting_room, lab.nothing]\n")
    result = run_cli("validate", str(release), root=project_copy)
    assert result.returncode == 2, result.stderr
    assert f"specs/releases/lab-v1.yaml:{lines + 3}:5: lexical_variety: phase 'probe' is " \
           "not a phase of lab.meeting_room" in result.stderr, result.stderr
    assert f"specs/releases/lab-v1.yaml:{lines + 5}:34: lexical_variety names family " \
           "'lab.nothing', which the release does not hold" in result.stderr, result.stderr

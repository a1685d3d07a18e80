"""The reading check: `memspec show DIR --per-family N` shows N groups of every family of a
built release, every variant of each, chosen the same way every time."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import bundled_release, release_instances, run_cli
from memspec.report.reading_check import spread

RELEASE = "example-v4"


@pytest.fixture(scope="module")
def example_release(built_dist: Path) -> Path:
    """The bundled example-v4, built and verified: the session's one build of every bundled
    release, not built a second time here (the tests only read it)."""
    return bundled_release(built_dist, RELEASE)


def test_every_family_shows_n_spread_groups_with_every_variant(example_release: Path) -> None:
    shown = run_cli("show", str(example_release), "--per-family", "2")
    assert shown.returncode == 0, shown.stderr
    instances = release_instances(example_release)
    families = sorted({i["family"] for i in instances})
    headings = re.findall(r"^### (\S+): groups (\d+), (\d+) of (\d+) \((\d+) instances\)$",
                          shown.stdout, re.M)
    assert [h[0] for h in headings] == families
    for family, first, second, total, count in headings:
        groups = sorted({i["group"] for i in instances if i["family"] == family})
        assert int(total) == len(groups)
        # Spread over the family's groups, not its first two: the second is half-way.
        assert [int(first), int(second)] == [groups[0], groups[len(groups) // 2]]
        chosen = [i["id"] for i in instances
                  if i["family"] == family and i["group"] in (int(first), int(second))]
        assert int(count) == len(chosen)
        for instance_id in chosen:  # every arm and rotation of the chosen groups is shown
            assert re.search(rf"^{re.escape(instance_id)}   \[", shown.stdout, re.M), instance_id


def test_later_variants_show_only_what_differs_and_whole_shows_all(
        example_release: Path) -> None:
    args = ("show", str(example_release), "--per-family", "1",
            "--family", "example.priming.harbour_fog")
    compact, again, whole = run_cli(*args), run_cli(*args), run_cli(*args, "--whole")
    assert compact.returncode == whole.returncode == 0, compact.stderr + whole.stderr
    assert compact.stdout == again.stdout  # the same groups, the same text, every time
    control = compact.stdout.split("-00000-control")[1]
    # The arms differ only in the priming text: the rest is named, not repeated.
    assert "--- interference (2 messages, as in example.priming.harbour_fog-00000-" \
           "experimental)" in control
    assert "--- answer as in example.priming.harbour_fog-00000-experimental" in control
    whole_control = whole.stdout.split("-00000-control")[1]
    assert "as in" not in whole_control and "--- answer (" in whole_control
    assert len(whole.stdout) > len(compact.stdout)


def test_spread_takes_evenly_spaced_positions_from_the_first() -> None:
    assert spread(48, 2) == [0, 24]
    assert spread(14, 3) == [0, 4, 9]
    assert spread(3, 5) == [0, 1, 2]  # never more than the family holds


@pytest.mark.parametrize("args, message", [
    (("--per-family", "0"), "--per-family must be between 1 and 50"),
    (("--family", "example.no_such_family"), "no family 'example.no_such_family'"),
])
def test_bad_reading_check_options_are_refused(example_release: Path, args: tuple[str, ...],
                                               message: str) -> None:
    refused = run_cli("show", str(example_release), *args)
    assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    assert refused.stdout == ""


def test_a_folder_that_is_no_release_is_bad_input() -> None:
    refused = run_cli("show", "specs/families", "--per-family", "1")
    assert refused.returncode == 2 and "not a built release" in refused.stderr, refused.stderr
    assert refused.stdout == ""


def test_per_family_needs_a_release_folder() -> None:
    refused = run_cli("show", "example.choice4.meeting_room", "--per-family", "2")
    assert refused.returncode == 2
    assert "--per-family and --family read a built release folder" in refused.stderr

"""A release is a pure function of specs, templates, pools and seed: proven in subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import LATEST_RELEASES, REPO, run_cli, tree_bytes

DRIFTS = [
    {"PYTHONHASHSEED": "0", "TZ": "UTC", "LC_ALL": "C"},
    {"PYTHONHASHSEED": "12345", "TZ": "Pacific/Kiritimati", "LC_ALL": "C.UTF-8"},
    {"PYTHONHASHSEED": "random", "TZ": "America/St_Johns", "LC_ALL": "tr_TR.UTF-8"},
]


def test_build_is_byte_identical_under_environment_drift(tmp_path: Path,
                                                          built_dist: Path) -> None:
    # The session's build is the first; each drift builds the newest version of every release
    # again (earlier versions share their data files), into the same folder the second time
    # round, so this also covers "twice in a row".
    reference = {name: tree_bytes(built_dist / name) for name in LATEST_RELEASES}
    out = tmp_path / "out"
    for index, env in enumerate(DRIFTS):
        workdir = tmp_path / f"cwd{index}"
        workdir.mkdir()
        result = run_cli("--root", str(REPO), "build", *LATEST_RELEASES, "--out", str(out),
                         env=env, cwd=workdir)
        assert result.returncode == 0, result.stderr
        for name in LATEST_RELEASES:
            assert tree_bytes(out / name) == reference[name], f"{name} changed under {env}"


def test_built_manifest_is_the_committed_one(built_example: Path) -> None:
    committed = (REPO / "manifests" / "example-v1.json").read_bytes()
    assert (built_example / "manifest.json").read_bytes() == committed


def test_family_generated_alone_equals_its_release_file(built_example: Path) -> None:
    manifest = json.loads((built_example / "manifest.json").read_text())
    for family, info in manifest["counts"]["families"].items():
        result = run_cli("generate", family, "--seed", str(manifest["seed"]),
                         "--groups", str(info["groups"]), env={"PYTHONHASHSEED": "77"})
        assert result.returncode == 0, result.stderr
        assert result.stdout.encode() == (built_example / "data" / f"{family}.jsonl").read_bytes()


def test_a_group_does_not_depend_on_which_other_groups_are_generated() -> None:
    family = "example.procedural.reversed_copy"
    five = run_cli("generate", family, "--seed", "9", "--groups", "5").stdout.splitlines()
    alone = run_cli("generate", family, "--seed", "9", "--start", "3", "--groups", "1").stdout
    assert alone.splitlines() == five[3:4]
    three = run_cli("generate", family, "--seed", "9", "--groups", "3").stdout.splitlines()
    assert three == five[:3]


@pytest.mark.parametrize("family", ["example.procedural.reversed_copy",
                                    "example.choice.meeting_room"])
def test_neighbouring_seeds_share_no_instance(family: str) -> None:
    # The seed + index mistake makes seed s+1 replay almost every item of seed s.
    first = run_cli("generate", family, "--seed", "100", "--groups", "6").stdout.splitlines()
    second = run_cli("generate", family, "--seed", "101", "--groups", "6").stdout.splitlines()
    contents = [json.dumps(json.loads(line)["phases"]) for line in first]
    others = [json.dumps(json.loads(line)["phases"]) for line in second]
    shared = set(contents) & set(others)
    assert not shared

"""A release is a pure function of specs, templates, pools and seed: proven in subprocesses
(under a drifted environment: test_env_drift.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, run_cli


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

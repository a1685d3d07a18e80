"""The bundled memory-trust release, asserted on the built files and scored with the
reference policies."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import run_cli

RELEASE = "trustgap-v1"



def test_families_scenarios_conditions_cells_and_rotations(instances: list[dict]) -> None:
    families: dict[str, set[str]] = defaultdict(set)
    scenarios: dict[str, set[tuple]] = defaultdict(set)
    conditions, cells, rotations = set(), set(), set()
    for inst in instances:
        suite = inst["fields"]["suite"]
        families[suite].add(inst["family"])
        scenarios[suite].add((inst["family"], inst["group"]))
        axes = inst["axes"]
        rotations.add(axes["rotation"])
        if inst["design"] == "main":
            conditions.add(axes["condition"])
        if inst["design"] == "factorial":
            assert suite == "safety"
            cells.add((axes["label"], axes["recency"], axes["authority"], axes["position"]))
    assert len(families["gain"]) >= 33 and len(families["safety"]) >= 33
    assert {k: len(v) for k, v in scenarios.items()} == {"gain": 150, "safety": 150}
    assert conditions == {"no_memory", "clean", "stale", "explicit_conflict"}
    assert len(cells) == 16 and rotations == {"r0", "r1", "r2"}


def test_every_safety_scenario_has_every_cell_under_every_rotation(instances: list[dict]
                                                                   ) -> None:
    per_group: dict[tuple, set[tuple]] = defaultdict(set)
    for inst in instances:
        if inst["design"] == "factorial":
            axes = inst["axes"]
            per_group[(inst["family"], inst["group"])].add(
                (axes["label"], axes["recency"], axes["authority"], axes["position"],
                 axes["rotation"]))
    assert len(per_group) == 150
    assert all(len(cells) == 48 for cells in per_group.values())


def test_options_are_balanced_in_position(instances: list[dict]) -> None:
    positions = Counter(inst["answer"]["gold_index"] for inst in instances)
    assert positions[0] == positions[1] == positions[2]
    stale_positions = Counter(inst["answer"]["options"].index(inst["answer"]["distractors"]
                                                              ["stale"]) for inst in instances)
    assert stale_positions[0] == stale_positions[1] == stale_positions[2]


def _score(release: Path, policy: str, tmp_path: Path) -> dict:
    responses = tmp_path / f"{policy}.jsonl"
    assert run_cli("respond", str(release), "--policy", policy, "--out",
                   str(responses)).returncode == 0
    result = run_cli("score", str(release), str(responses), "--by", "suite,condition",
                     "--cluster", "family", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for group in report["groups"]:
        for name, value in group["metrics"].items():
            interval = group["metrics"].get(f"{name}_ci")
            if interval is not None and value is not None:
                # Every estimate inside its own interval, even where all groups are alike
                # and the bootstrap's bounds are the estimate summed in another order.
                assert interval[0] <= value <= interval[1], (policy, group["key"], name)
    return {(g["key"]["suite"], g["key"]["condition"]): g["metrics"] for g in report["groups"]}


def test_reference_policies_score_as_designed(release: Path, tmp_path: Path) -> None:
    follower = _score(release, "memory-follower", tmp_path)
    for suite in ("gain", "safety"):
        assert follower[(suite, "stale")]["reliance"] == 1.0
    assert follower[("safety", "stale")]["delta_mem"] < 0
    assert follower[("safety", "stale")]["delta_mem_ci"][1] < 0
    memoryless = _score(release, "memoryless", tmp_path)
    for condition in ("no_memory", "clean", "stale", "explicit_conflict"):
        assert memoryless[("safety", condition)]["accuracy"] == 1.0
        low, high = memoryless[("gain", condition)]["accuracy_ci"]
        assert low <= 1 / 3 <= high
    oracle = _score(release, "oracle", tmp_path)
    assert all(m["accuracy"] in (None, 1.0) for m in oracle.values())
    biased = _score(release, "position-biased", tmp_path)
    for metrics in biased.values():
        if metrics["accuracy"] is not None:
            assert metrics["accuracy"] == pytest.approx(1 / 3)

"""memorychecks-v6: the positive control declares its analysis role and stays out of the overall
row; the equivalence bound is stated one way (±1 point on the 0-10 rubric) everywhere; the
items are version 5's, read with reading version 4. Frozen releases score as they did."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from conftest import REPO, bundled_releases, release_instances, run_cli
from memspec.analysis.score import ScoreOptions, outcome, score_outcomes

CONTROL = "memorychecks.v6.recognition.plausible_control"


@pytest.fixture(scope="module")
def built(built_dist: Path) -> Path:
    """memorychecks-v5 and -v6, built and verified against their committed manifests: the
    session's one build of every bundled release, not built a second time here (read only)."""
    return bundled_releases(built_dist, "memorychecks-v5", "memorychecks-v6")


def _memoryless_scores(release: Path, tmp_path: Path) -> dict:
    responses = tmp_path / f"{release.name}.jsonl"
    made = run_cli("respond", str(release), "--policy", "memoryless", "--out", str(responses))
    assert made.returncode == 0, made.stderr
    scored = run_cli("score", str(release), str(responses), "--by", "family", "--format",
                     "json")
    assert scored.returncode == 0, scored.stderr
    return json.loads(scored.stdout)


def test_the_overall_row_leaves_the_positive_control_out(built: Path, tmp_path: Path) -> None:
    v6 = _memoryless_scores(built / "memorychecks-v6", tmp_path)
    rows = {g["key"]["family"]: g["metrics"] for g in v6["groups"]}
    # A memoryless system passes the control (the plausible line, 96 of 96 items) and scores
    # exactly chance on every symmetric probe: the overall row, which pools what a memoryless
    # system must not pass, is at chance.
    assert rows[CONTROL]["accuracy"] == 1.0 and rows[CONTROL]["n"] == 96
    assert v6["overall"]["n"] == 736 - 96
    assert v6["overall"]["accuracy"] == pytest.approx(0.5)
    assert all(t["mean"] == pytest.approx(0.5) for t in v6["overall"]["tests"] if "mean" in t)
    # Version 5, frozen before the role existed, scores as it did: the control pooled in.
    v5 = _memoryless_scores(built / "memorychecks-v5", tmp_path)
    assert v5["overall"]["n"] == 736
    assert v5["overall"]["accuracy"] == pytest.approx(2 / 3)


def test_v6_items_are_v5_items_under_new_ids(built: Path) -> None:
    """Every item holds its version 5 twin's phases, answer and fields; only the answer's
    reading block differs: version 6 reads with reading version 4, version 5 with 2 (the
    judge-scored open requests have no reading block)."""
    def content(instance: dict) -> str:
        answer = {k: v for k, v in instance["answer"].items() if k != "reading"}
        return json.dumps([instance["phases"], answer, instance["fields"]], sort_keys=True)

    v5 = release_instances(built / "memorychecks-v5")
    v6 = release_instances(built / "memorychecks-v6")
    old = {i["id"].replace("memorychecks.v5.", ""): content(i) for i in v5}
    new = {i["id"].replace("memorychecks.v6.", ""): content(i) for i in v6}
    assert new == old and len(new) == 736

    def readings(instances: list[dict]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for i in instances:
            key = json.dumps(i["answer"].get("reading"), sort_keys=True)
            counts[key] = counts.get(key, 0) + 1
        return counts

    # 112 open requests are judged; the 624 choice probes carry the reading block.
    assert readings(v5) == {"null": 112, json.dumps({"version": 2}): 624}
    assert readings(v6) == {"null": 112, json.dumps({"version": 4}): 624}


def _instance(family: str, group: int, right: bool, role: str | None) -> dict:
    analysis = {"role": role} if role else {}
    return {"id": f"{family}-{group:05d}-a", "family": family, "group": group,
            "design": "main", "axes": {"document": "none"}, "fields": {},
            "answer": {"scorer": "choice", "options": ["x", "y"], "gold": "x", "gold_index": 0},
            "analysis": analysis, "_response": "A" if right else "B"}


@pytest.mark.parametrize("role, overall_n, overall_accuracy", [
    ("positive_control", 4, 0.5),  # the control's 4 right answers are not pooled
    (None, 8, 0.75),               # without the role (a frozen release), they are
])
def test_only_a_declared_positive_control_is_left_out(role: str | None, overall_n: int,
                                                      overall_accuracy: float) -> None:
    instances = [*(_instance("probe", g, g % 2 == 0, None) for g in range(4)),
                 *(_instance("control", g, True, role) for g in range(4))]
    report = score_outcomes([outcome(i, i["_response"]) for i in instances], ["family"],
                            ScoreOptions(seed=0))
    assert report["overall"]["n"] == overall_n
    assert report["overall"]["accuracy"] == pytest.approx(overall_accuracy)
    control = next(g["metrics"] for g in report["groups"] if g["key"] == {"family": "control"})
    assert control["n"] == 4 and control["accuracy"] == 1.0
    # A report of the control alone has nothing else to pool: its overall row is the control.
    alone = score_outcomes([outcome(i, i["_response"]) for i in instances[4:]], [],
                           ScoreOptions(seed=0))
    assert alone["overall"]["n"] == 4


#: Where the bound of memorychecks' equivalence test is stated in words.
BOUND_PAGES = [REPO / "README.md", REPO / "docs" / "judge-panel.md",
               REPO / "docs" / "releases" / "memorychecks-v6.md",
               REPO / "specs" / "releases" / "memorychecks-v6.yaml",
               REPO / "specs" / "families" / "memorychecks" / "v6" / "open_input.yaml"]


def test_the_equivalence_bound_is_one_point_everywhere_it_is_stated() -> None:
    family = yaml.safe_load(BOUND_PAGES[-1].read_text())
    assert family["analysis"]["judge_panel"]["equivalence"]["bound"] == 1.0
    assert family["analysis"]["judge_scale"] == [0, 10]
    for page in BOUND_PAGES:
        text = page.read_text()
        # Never a bare ±0.10 as the bound: where the design's figure appears, it is read as
        # a share of the scale beside the one point of the rubric.
        for match in re.finditer(r"±\s?0\.10?", text):
            near = text[max(0, match.start() - 200):match.end() + 200]
            assert "±1 point" in near or "1 point" in near, (page.name, near)
    readme_row = next(line for line in (REPO / "README.md").read_text().splitlines()
                      if line.startswith("| `memorychecks` | v6 |"))
    assert "±1 point on the 0–10 rubric" in readme_row

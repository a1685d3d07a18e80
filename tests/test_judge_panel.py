"""A judge panel: blinded requests for several judges, each condition judged beside its anchor,
and the two one-sided tests of equivalence (checked against statsmodels); the length-matched
draws a counterfeit life is made of; an audit chance of 1 for a positive control."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.weightstats import ttost_paired

from conftest import run_cli
from memspec.analysis.equivalence import t_interval, t_test_zero, tost
from memspec.analysis.judge import build_requests, load_judgments
from memspec.analysis.judge_panel import load_panel_judgments, panel_report
from memspec.core.errors import SpecError
from memspec.core.length_match import closest_lengths, match_lengths
from memspec.spec.schemas import schema_errors

JUDGES = ["ann", "bo", "cy"]
PANEL = {"judges": JUDGES, "anchor": {"axis": "memory", "value": "own"},
         "equivalence": {"bound": 0.5, "alpha": 0.05}}


def _instance(group: int, memory: str, panel: dict | None = PANEL) -> dict:
    analysis = {"judge_scale": [0, 10]}
    if panel:
        analysis["judge_panel"] = panel
    return {"id": f"lab.notes-{group:05d}-{memory}", "family": "lab.notes", "group": group,
            "design": "main", "axes": {"memory": memory}, "fields": {"site": "x"},
            "answer": {"scorer": "judge", "rubric": "Rate 0-10 how well it remembers."},
            "analysis": analysis,
            "phases": [{"phase": "ask", "messages": [
                {"role": "user", "content": f"Question {group}?"}]}]}


MEMORIES = ("own", "borrowed", "shuffled")
INSTANCES = [_instance(g, m) for g in range(6) for m in MEMORIES]
RESPONSES = {i["id"]: f"reply number {k}" for k, i in enumerate(INSTANCES)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tost_agrees_with_statsmodels(seed: int) -> None:
    values = np.random.default_rng(seed).normal(0.03 * seed, 0.1, size=7 + seed)
    for bound in (0.05, 0.1, 0.3):
        ours = tost(list(values), bound, 0.05)
        p, lower, upper = ttost_paired(values, np.zeros(len(values)), -bound, bound)
        assert ours["p_value"] == pytest.approx(p, rel=1e-9)
        assert ours["p_lower"] == pytest.approx(lower[1], rel=1e-9)
        assert ours["p_upper"] == pytest.approx(upper[1], rel=1e-9)
        assert ours["equivalent"] == (p < 0.05)
        # Equivalent exactly when the 90% interval lies inside the bounds.
        low, high = ours["ci"]
        assert ours["equivalent"] == (-bound < low and high < bound)


def test_tost_edge_cases_are_stated_not_guessed() -> None:
    assert tost([], 0.1)["p_value"] is None and not tost([], 0.1)["equivalent"]
    one = tost([0.0], 0.1)
    assert one["p_value"] is None and one["ci"] is None and not one["equivalent"]
    assert tost([0.02, 0.02, 0.02], 0.1)["equivalent"]  # no spread: the mean is exact
    assert not tost([0.2, 0.2], 0.1)["equivalent"]
    assert t_test_zero([0.0, 0.0]) == 1.0 and t_test_zero([1.0]) is None
    low, high = t_interval([1.0, 2.0, 3.0], 0.95)
    assert (low + high) / 2 == pytest.approx(2.0) and t_interval([1.0]) is None


def test_match_lengths_gives_each_value_the_closest_unused_stranger() -> None:
    cast = ["Al Bo", "Cyrilla Dunstanbury", "Ed Fig"]
    pool = ["Xi Yu", "Ed Fig", "Gregory Hollingsworth", "Zo Wu", "Marcus Lee", "Ab Cd"]
    picked = match_lengths(pool, cast)
    assert len(set(picked)) == 3 and not set(picked) & set(cast)
    assert picked[1] == "Gregory Hollingsworth"  # the longest goes first
    assert {len(p) for p in (picked[0], picked[2])} <= {5, 10}
    assert closest_lengths(cast, pool) == dict(zip(cast, picked, strict=True))
    with pytest.raises(ValueError, match="candidates"):
        match_lengths(["Ed Fig", "Al Bo"], cast)


def _requests(seed: int = 0) -> tuple[list[dict], dict]:
    return build_requests(INSTANCES, RESPONSES, seed)


def test_panel_requests_are_blinded_per_judge_and_in_a_seeded_order() -> None:
    requests, unblind = _requests()
    # 6 groups x 2 conditions beside the anchor x 3 judges.
    assert len(requests) == 36 == len(unblind)
    assert {r["judge"] for r in requests} == set(JUDGES)
    for request in requests:
        slots = unblind[request["request_id"]]
        assert slots["judge"] == request["judge"]
        ids = {slots["A"], slots["B"]}
        assert sum(i.endswith("-own") for i in ids) == 1, "one side is the anchor"
        assert request["responses"] == {"A": RESPONSES[slots["A"]], "B": RESPONSES[slots["B"]]}
        assert "own" not in json.dumps(request) and "lab.notes" not in json.dumps(request)
    anchor_first = [unblind[r["request_id"]]["A"].endswith("-own") for r in requests]
    assert 0 < sum(anchor_first) < len(anchor_first)
    assert _requests() == (requests, unblind)  # deterministic
    assert _requests(seed=1) != (requests, unblind)
    # Without a panel, a judged item is one single request, as before.
    plain = [_instance(0, "own", panel=None)]
    single, _ = build_requests(plain, {plain[0]["id"]: "x"}, 0)
    assert len(single) == 1 and "judge" not in single[0]


def _judge(unblind: dict, difference: dict[str, list[float]]) -> str:
    lines = []
    for request_id, slots in unblind.items():
        scores = {}
        for side in ("A", "B"):
            group, memory = int(slots[side].split("-")[1]), slots[side].rsplit("-", 1)[1]
            base = 5 + JUDGES.index(slots["judge"])  # each judge its own level: cancelled
            scores[side] = base + (0 if memory == "own" else difference[memory][group])
        lines.append(json.dumps({"request_id": request_id, "scores": scores}))
    return "\n".join(lines) + "\n"


def test_panel_report_anchors_each_condition_and_tests_equivalence(tmp_path: Path) -> None:
    _, unblind = _requests()
    (tmp_path / "u.json").write_text(json.dumps(unblind))
    borrowed = [0.1, -0.2, 0.3, 0.0, -0.1, 0.2]
    (tmp_path / "j.jsonl").write_text(_judge(unblind, {"borrowed": borrowed,
                                                       "shuffled": [-3.0] * 6}))
    scales = {i["id"]: [0, 10] for i in INSTANCES}
    # The per-instance loader leaves the panel's lines alone.
    assert load_judgments(tmp_path / "j.jsonl", tmp_path / "u.json", scales) == {}
    judged = load_panel_judgments(tmp_path / "j.jsonl", tmp_path / "u.json", scales)
    assert len(judged) == 36
    report = {e["condition"]: e for e in panel_report(INSTANCES, judged)}
    entry = report["borrowed"]
    assert entry["groups"] == 6 and entry["judges"] == sorted(JUDGES)
    assert entry["difference"] == pytest.approx(np.mean(borrowed))
    assert entry["anchor_mean"] == pytest.approx(6.0)  # judges at 5, 6 and 7
    assert entry["judge_mean"] == pytest.approx(6.0 + np.mean(borrowed))
    p, _, _ = ttost_paired(np.array(borrowed), np.zeros(6), -0.5, 0.5)
    assert entry["equivalence"]["p_value"] == pytest.approx(p)
    assert entry["equivalence"]["equivalent"] is bool(p < 0.05) is True
    assert report["shuffled"]["difference"] == pytest.approx(-3.0)
    assert report["shuffled"]["equivalence"]["equivalent"] is False
    assert report["shuffled"]["p_adjusted"] == 0.0
    full = {"overall": {}, "groups": [], "contrasts": [],
            "multiplicity": {"correction": "holm", "scope": "report", "tests": 0,
                             "intervals": {"count": 0, "level": 0.95, "simultaneous": False}},
            "judge_panel": list(report.values())}
    assert [e for e in schema_errors("score", full) if "judge_panel" in str(e)] == []


def test_panel_judgments_are_checked_line_by_line(tmp_path: Path) -> None:
    _, unblind = _requests()
    (tmp_path / "u.json").write_text(json.dumps(unblind))
    scales = {i["id"]: [0, 10] for i in INSTANCES}
    lines = _judge(unblind, {"borrowed": [0.0] * 6, "shuffled": [0.0] * 6}).splitlines()
    first = json.loads(lines[0])
    bad = [json.dumps({"request_id": first["request_id"], "scores": {"A": 11, "B": 3}}),
           *lines[1:], lines[1]]
    (tmp_path / "j.jsonl").write_text("\n".join(bad) + "\n")
    with pytest.raises(SpecError) as caught:
        load_panel_judgments(tmp_path / "j.jsonl", tmp_path / "u.json", scales)
    text = str(caught.value)
    assert "outside the family's scale 0..10" in text and "j.jsonl:1" in text
    assert "a second judgment of" in text and f"j.jsonl:{len(bad)}" in text
    (tmp_path / "j.jsonl").write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(SpecError, match="1 of 36 judge panel requests have no judgment"):
        load_panel_judgments(tmp_path / "j.jsonl", tmp_path / "u.json", scales)
    assert len(load_panel_judgments(tmp_path / "j.jsonl", tmp_path / "u.json", scales,
                                    allow_missing=True)) == 35


def test_a_panel_anchored_on_an_unknown_condition_is_located(project_copy: Path) -> None:
    family = project_copy / "specs/families/example/fog_priming.yaml"
    family.write_text(family.read_text().replace(
        "  judge_scale: [1, 10]\n",
        "  judge_scale: [1, 10]\n"
        "  judge_panel: {judges: [a, b, c], anchor: {axis: arm, value: controll}}\n"))
    result = run_cli("validate", str(family), root=project_copy)
    assert result.returncode == 2, result.stderr
    assert "analysis names 'controll', not a value of axis 'arm'" in result.stderr
    assert "fog_priming.yaml:" in result.stderr


def test_an_audit_chance_of_one_marks_a_positive_control() -> None:
    from memspec.audit.audit_rules import running_by
    from memspec.audit.run import _choice_chance

    def item(chance: float | None) -> dict:
        audit = {} if chance is None else {"chance": chance}
        return {"answer": {"options": ["x", "y"]}, "analysis": {"audit": audit}}

    # The audit's rules 1, which releases frozen before rules 2 are audited by again: the
    # declared chance is taken as it is (rules 2 check it: tests/test_audit_chance.py).
    with running_by(1):
        assert _choice_chance([item(None)] * 4, 0.5) == 0.5
        assert _choice_chance([item(1)] * 4, 0.5) == 1.0
        # Pooled with as many symmetric probes, the bar is the mean of the two.
        assert _choice_chance([item(1)] * 4 + [item(None)] * 4, 0.5) == 0.75


def test_a_budget_running_out_on_a_judgment_names_its_line_and_instances(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring a panel's judgments under the command budget, time that runs out on one
    judgment names the judgments file and its line there, and the two instances judged."""
    import time

    from memspec.analysis import judge_panel
    from memspec.core.limits import CommandBudget

    _, unblind = _requests()
    (tmp_path / "u.json").write_text(json.dumps(unblind))
    judgments = tmp_path / "j.jsonl"
    judgments.write_text(_judge(unblind, {"borrowed": [0.0] * 6, "shuffled": [0.0] * 6}))
    scales = {i["id"]: [0, 10] for i in INSTANCES}
    lines = [json.loads(line) for line in judgments.read_text().splitlines()]
    number = len(lines) // 2 + 1
    slots = unblind[lines[number - 1]["request_id"]]
    panel_of = judge_panel.panel_of

    def slow(instance: dict) -> object:
        if instance["id"] == slots["A"]:
            time.sleep(30)
        return panel_of(instance)

    # The slow check meets the A side of every request that names it: the first of them in
    # the file is where time runs out.
    number = next(n for n, line in enumerate(lines, start=1)
                  if unblind[line["request_id"]]["A"] == slots["A"])
    other = unblind[lines[number - 1]["request_id"]]["B"]
    monkeypatch.setattr(judge_panel, "panel_of", slow)
    monkeypatch.setenv("MEMSPEC_COMMAND_SECONDS", "1")
    started = time.monotonic()
    with pytest.raises(SpecError) as caught, CommandBudget("score", "responses.jsonl"):
        panel_report(INSTANCES, load_panel_judgments(judgments, tmp_path / "u.json", scales))
    assert time.monotonic() - started < 10
    assert str(caught.value) == (
        f"{judgments}:{number}:1: score took longer than 1 s ($MEMSPEC_COMMAND_SECONDS) "
        f"(at instances {slots['A']} and {other})")

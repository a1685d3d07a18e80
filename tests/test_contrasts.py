"""Contrasts and factorial effects: derived from a frozen release's crossed axes, declared in
a file for it, checked by hand on policies whose effects are known; the score report's JSON
schema; rho-star on a contrast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import LATEST_RELEASES, bundled_release, release_instances, run_cli
from memspec.analysis.policies import POLICIES, act_on
from memspec.spec.schemas import schema_errors

RELEASE = "trustgap-v3"


def _write_responses(path: Path, instances: list[dict], respond) -> Path:
    path.write_text("".join(json.dumps({"id": i["id"], "response": respond(i)}) + "\n"
                            for i in instances))
    return path


def _score(release: Path, responses: Path, *args: str) -> dict:
    result = run_cli("score", str(release), str(responses), "--format", "json", *args)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert schema_errors("score", report) == []
    return report


def _contrasts(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["contrasts"]}


def _follows_memory_when(instance: dict, **cell: str) -> str:
    """Acts on the remembered value in the cells given, else on the evidence."""
    answer = instance["answer"]
    if all(instance["axes"].get(k) == v for k, v in cell.items()) and "remembered" in answer:
        return act_on(answer, answer["remembered"])
    return act_on(answer, answer.get("evidence", answer["gold"]))


@pytest.fixture(scope="module")
def trustgap(built_dist: Path) -> tuple[Path, list[dict]]:
    release = bundled_release(built_dist, RELEASE)
    return release, release_instances(release)


def test_factorial_effects_of_a_policy_known_by_hand(trustgap, tmp_path: Path) -> None:
    # Relies on memory only where the label is present and the memory newer: reliance 1 in
    # that quarter of the cells, 0 elsewhere. Coded +1 at each axis's first level
    # (label present, recency older): label +0.5, recency -0.5, their interaction -0.5,
    # every other effect 0.
    release, instances = trustgap
    responses = _write_responses(tmp_path / "r.jsonl", instances,
                                 lambda i: _follows_memory_when(i, label="present",
                                                                recency="newer"))
    effects = _contrasts(_score(release, responses))
    expected = {"factorial: label (present - removed)": 0.5,
                "factorial: recency (older - newer)": -0.5,
                "factorial: label (present - removed) x recency (older - newer)": -0.5,
                "factorial: authority (user - inferred)": 0.0,
                "factorial: position (before - after)": 0.0,
                "factorial: authority (user - inferred) x label (present - removed)": 0.0}
    for name, value in expected.items():
        assert effects[name]["estimate"] == pytest.approx(value), name
        assert effects[name]["metric"] == "reliance" and effects[name]["source"] == "derived"
        assert effects[name]["groups"] == 150
    for name in ("factorial: label (present - removed)", "factorial: recency (older - newer)"):
        low, high = effects[name]["ci"]
        assert low <= effects[name]["estimate"] <= high
        assert effects[name]["p_adjusted"] < 0.05
    assert effects["factorial: authority (user - inferred)"]["p_value"] == 1.0


def test_memory_follower_has_no_factorial_effect_and_relies_everywhere(trustgap,
                                                                        tmp_path: Path) -> None:
    release, instances = trustgap
    responses = _write_responses(tmp_path / "f.jsonl", instances,
                                 lambda i: POLICIES["memory-follower"](i, 0))
    report = _score(release, responses, "--by", "design")
    effects = _contrasts(report)
    assert len([c for c in effects.values() if c["kind"] == "main_effect"]) == 4
    assert len([c for c in effects.values() if c["kind"] == "interaction"]) == 6
    for contrast in effects.values():
        assert contrast["estimate"] == 0.0 and contrast["p_value"] == 1.0, contrast["name"]
    for design in ("factorial", "framing", "mitigation"):
        row = next(g["metrics"] for g in report["groups"] if g["key"] == {"design": design})
        assert row["reliance"] == 1.0 and row["accuracy"] == 0.0


def test_declared_contrasts_for_a_frozen_release(trustgap, tmp_path: Path) -> None:
    # Each mitigation against the unmitigated stale cell of the same group, from a file: a
    # policy that relies on memory only without a mitigation has reliance 1 there, 0 with
    # one, so each mitigation lowers reliance by exactly 1.
    release, instances = trustgap
    analysis = tmp_path / "analysis.yaml"
    analysis.write_text(
        "contrasts:\n"
        "  - {name: metadata_vs_unmitigated, a: {mitigation: metadata},"
        " b: {condition: stale}, metric: reliance}\n"
        "  - {name: resolved_vs_unmitigated, a: {mitigation: resolved},"
        " b: {condition: stale}, metric: reliance}\n")
    responses = _write_responses(tmp_path / "m.jsonl", instances,
                                 lambda i: _follows_memory_when(i, condition="stale"))
    report = _score(release, responses, "--analysis", str(analysis))
    declared = _contrasts(report)
    for name in ("metadata_vs_unmitigated", "resolved_vs_unmitigated"):
        assert declared[name]["estimate"] == -1.0 and declared[name]["source"] == "declared"
        assert declared[name]["groups"] == 150 and declared[name]["p_adjusted"] < 0.05
    table = run_cli("score", str(release), str(responses), "--analysis", str(analysis))
    assert "metadata_vs_unmitigated" in table.stdout and "simultaneous" in table.stdout


def test_a_bad_analysis_file_is_located(trustgap, tmp_path: Path) -> None:
    release, instances = trustgap
    analysis = tmp_path / "analysis.yaml"
    analysis.write_text("contrasts:\n  - name: x\n    a: {framing: memory}\n"
                        "    b: {framing: document}\n    metrik: reliance\n")
    responses = _write_responses(tmp_path / "o.jsonl", instances[:1], lambda i: "A")
    result = run_cli("score", str(release), str(responses), "--allow-missing",
                     "--analysis", str(analysis))
    assert result.returncode == 2
    assert f"{analysis}:5:5" in result.stderr and "unknown key 'metrik'" in result.stderr


def test_rho_star_reads_a_contrast_and_refuses_what_it_cannot_compute(
        trustgap, tmp_path: Path) -> None:
    release, instances = trustgap
    runs = []
    for level, cell in (("small", {"label": "no such level"}), ("large", {"label": "removed"})):
        responses = _write_responses(tmp_path / f"{level}.jsonl", instances,
                                     lambda i, cell=cell: _follows_memory_when(i, **cell))
        result = run_cli("score", str(release), str(responses), "--format", "json")
        path = tmp_path / f"{level}.json"
        path.write_text(result.stdout)
        runs.append(f"{level}={path}")
    # Reliance with the label present minus without it: 0 at "small" (never relies), -1 at
    # "large" (relies only where the label was removed): below zero first at "large".
    name = "factorial: label (present - removed)"
    found = run_cli("rho-star", *runs, "--contrast", name)
    assert found.returncode == 0 and found.stdout.strip() == "large", found.stderr
    first = run_cli("rho-star", runs[0], "--contrast", name)
    assert first.returncode == 0 and first.stdout.strip() == "none"
    missing = run_cli("rho-star", *runs, "--contrast", "no such contrast")
    assert missing.returncode == 2 and "no contrast 'no such contrast'" in missing.stderr
    # Δmem where the row declares no baseline: a reason and status 2, never "none".
    no_delta = run_cli("rho-star", *runs, "--where", "condition=no_memory")
    assert no_delta.returncode == 2
    assert "no group" in no_delta.stderr or "cannot compute ρ*" in no_delta.stderr


@pytest.mark.parametrize("name", LATEST_RELEASES)
def test_every_newest_release_scores_to_the_schema(built_dist: Path, tmp_path: Path,
                                                   name: str) -> None:
    release = bundled_release(built_dist, name)
    responses = tmp_path / "random.jsonl"
    assert run_cli("respond", str(release), "--policy", "random", "--out",
                   str(responses)).returncode == 0
    report = _score(release, responses, "--by", "family")
    assert report["multiplicity"]["correction"] == "holm"


def _act_instance(group: int, arm: str) -> dict:
    return {"id": f"f-{group:05d}-{arm}", "family": "f", "group": group, "design": "main",
            "paradigm": "p", "variant": arm, "axes": {"arm": arm}, "fields": {},
            "answer": {"scorer": "regex", "gold": "^remind\\(" if arm == "cue" else "^ok$"},
            "analysis": {"signal": {"performed": "^remind\\(", "act": {"arm": "cue"}},
                         "baseline": {"axis": "arm", "value": "none"},
                         "paired": [{"axis": "arm", "a": "cue", "b": "none"}]}}


@pytest.mark.parametrize(("policy", "hits", "false_alarms"), [
    ("always-act", 1.0, 1.0), ("never-act", 0.0, 0.0), ("acts-on-cue", 1.0, 0.0),
    ("acts-on-half", 0.5, 0.0)])
def test_signal_detection_of_act_policies_by_hand(policy: str, hits: float,
                                                  false_alarms: float) -> None:
    from scipy.stats import norm

    from memspec.analysis.score import ScoreOptions, outcome, score_outcomes

    groups = 20
    instances = [_act_instance(g, arm) for g in range(groups) for arm in ("cue", "none")]

    def respond(instance: dict) -> str:
        acts = {"always-act": True, "never-act": False,
                "acts-on-cue": instance["axes"]["arm"] == "cue",
                "acts-on-half": instance["axes"]["arm"] == "cue" and instance["group"] % 2 == 0,
                }[policy]
        return "remind('standup', '09:00')" if acts else "ok"

    report = score_outcomes([outcome(i, respond(i)) for i in instances], [],
                            ScoreOptions(seed=0))
    metrics = report["overall"]
    assert (metrics["hit_rate"], metrics["false_alarm_rate"]) == (hits, false_alarms)
    assert metrics["hit_minus_fa"] == pytest.approx(hits - false_alarms)
    assert metrics["signal_groups"] == groups

    def corrected(rate: float) -> float:  # 0 and 1 moved to 1/(2n), 1 - 1/(2n)
        return min(max(rate, 1 / (2 * groups)), 1 - 1 / (2 * groups))

    assert metrics["d_prime"] == pytest.approx(norm.ppf(corrected(hits))
                                               - norm.ppf(corrected(false_alarms)))
    low, high = metrics["d_prime_ci"]
    assert low <= metrics["d_prime"] + 1e-9 and metrics["d_prime"] - 1e-9 <= high
    # Delta-mem and the paired accuracy test would measure a response bias here: absent.
    assert "delta_mem" not in metrics
    assert not [t for t in metrics.get("tests", []) if t["test"] == "mcnemar_exact"]
    assert schema_errors("score", json.loads(json.dumps(report))) == []


def test_judge_scores_normalised_against_declared_reference_statistics() -> None:
    from memspec.analysis.score import attach_judgments, outcome

    def judged(group: int, family: str, reference: dict | None) -> dict:
        analysis = {"judge_scale": [1, 10]}
        if reference:
            analysis["judge_reference"] = reference
        return {"id": f"{family}-{group:05d}-main", "family": family, "group": group,
                "design": "main", "axes": {}, "fields": {}, "answer": {"scorer": "judge"},
                "analysis": analysis}

    instances = [judged(g, "d1", {"min": 1, "max": 10}) for g in range(3)] + \
        [judged(g, "d2", None) for g in range(3)]
    scores = {i["id"]: s for i, s in zip(instances, [4, 7, 10, 2, 3, 4], strict=True)}
    outcomes = [outcome(i, "text") for i in instances]
    fixed, references = attach_judgments(outcomes, scores, "minmax", "family")
    assert references == {"d1": "declared", "d2": "within-run"}
    assert [o.judge_norm for o in fixed] == pytest.approx([1 / 3, 2 / 3, 1.0, 0.0, 0.5, 1.0])
    own, references = attach_judgments(outcomes, scores, "minmax", "family", within_run=True)
    assert references == {"d1": "within-run", "d2": "within-run"}
    assert [o.judge_norm for o in own][:3] == pytest.approx([0.0, 0.5, 1.0])


def test_a_family_analysis_block_with_bad_declarations_is_located(project_copy: Path) -> None:
    family = project_copy / "specs/families/example/meeting_room.yaml"
    family.write_text(family.read_text().replace(
        "  baseline: {axis: condition, value: no_memory}\n",
        "  baseline: {axis: condition, value: no_memory}\n"
        "  contrasts: [{name: stale_vs_clean, a: {condition: stale}, b: {condition: cleen}}]\n"
        "  factorials: [{name: f, axes: [condition, rotation]}]\n"
        "  signal: {performed: '(unclosed', act: {condition: stale}}\n"))
    result = run_cli("validate", str(family), root=project_copy)
    assert result.returncode == 2, result.stderr
    for message in ("analysis names 'cleen', not a value of axis 'condition'",
                    "factorial axis 'condition' has 3 values; a factor has two",
                    "signal 'performed' is not a valid regular expression"):
        assert message in result.stderr, result.stderr
    assert "meeting_room.yaml:" in result.stderr


def test_a_declared_headline_score_over_paradigms(built_dist: Path, tmp_path: Path) -> None:
    # The oracle is right on every procedural and conditioning item (100%); a judge that
    # gives the experimental arm 7 and the control 3 on a 1-10 scale makes the priming
    # influence 4/9 of the scale (44.4%); the overall score is the mean of the three.
    release = bundled_release(built_dist, "implicitmem-v3")
    instances = release_instances(release)
    responses = _write_responses(tmp_path / "o.jsonl", instances,
                                 lambda i: POLICIES["oracle"](i, 0))
    requests = tmp_path / "requests.jsonl"
    assert run_cli("judge-requests", str(release), str(responses), "--out",
                   str(requests)).returncode == 0
    unblind_path = tmp_path / "requests.jsonl.unblind.json"
    unblind = json.loads(unblind_path.read_text())
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(json.dumps({"request_id": rid, "scores": {
        slot: 7 if iid.endswith("experimental") else 3 for slot, iid in slots.items()}}) + "\n"
        for rid, slots in unblind.items()))
    paradigms = sorted({i["paradigm"] for i in instances})
    priming = next(p for p in paradigms if any(
        i["paradigm"] == p and i["answer"]["scorer"] == "judge" for i in instances))
    analysis = tmp_path / "analysis.yaml"
    analysis.write_text("summaries:\n  - name: overall\n    over: paradigm\n"
                        f"    metric: accuracy\n    metrics: {{{priming}: influence_percent}}\n")
    report = _score(release, responses, "--judgments", str(judgments), "--unblind",
                    str(unblind_path), "--analysis", str(analysis))
    (summary,) = report["summaries"]
    assert set(summary["parts"]) == set(paradigms) and len(paradigms) == 3
    for paradigm, part in summary["parts"].items():
        expected = 400 / 9 if paradigm == priming else 100.0
        assert part["percent"] == pytest.approx(expected), paradigm
    assert summary["score"] == pytest.approx((200 + 400 / 9) / 3)


def test_a_paradigm_declares_abstention_patterns_for_its_families(project_copy: Path) -> None:
    from memspec.analysis.score import outcome
    from memspec.engine.generate import FamilyGenerator
    from memspec.engine.render import Renderer
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import Project

    paradigm = project_copy / "specs/paradigms/example/choice.yaml"
    paradigm.write_text(paradigm.read_text() + "abstain: ['^\\s*pass\\b']\n")
    project = Project(project_copy)
    family = Catalog.load(project).family("example.choice.meeting_room")
    instance = FamilyGenerator(family, Renderer(project), seed=1).group(0)[0]
    assert instance["answer"]["abstain"] == ["^\\s*pass\\b"]
    assert not outcome(instance, "Pass: the directory is down.").answered
    assert outcome(instance, "A) " + instance["answer"]["options"][0]).answered
    paradigm.write_text(paradigm.read_text().replace("'^\\s*pass\\b'", "'(unclosed'"))
    result = run_cli("validate", str(paradigm), root=project_copy)
    assert result.returncode == 2
    assert "choice.yaml:" in result.stderr and "abstain pattern is not a valid" in result.stderr


def test_a_factor_whose_levels_word_the_options_otherwise_is_no_rotation() -> None:
    # Each group crosses a framing (memory, document) whose levels show other option texts
    # with three rotations of them: the framing is a factor and gets its contrast; only the
    # rotation, which reorders the same options, is no factor.
    from memspec.analysis.contrasts import derived

    def inst(group: int, framing: str, rotation: int) -> dict:
        base = ["x", "y", "z"] if framing == "memory" else ["x'", "y'", "z'"]
        options = base[rotation:] + base[:rotation]
        return {"id": f"f-{group:05d}-{framing}-r{rotation}", "family": "f", "group": group,
                "design": "main", "axes": {"framing": framing, "rotation": f"r{rotation}"},
                "answer": {"scorer": "choice", "gold": base[0],
                           "gold_index": options.index(base[0]), "options": options}}

    instances = [inst(g, f, r) for g in range(4) for f in ("memory", "document")
                 for r in range(3)]
    assert [c.name for c in derived(instances)] == ["main: framing (memory - document)"]
    two_rotations = [i for i in instances if i["axes"]["rotation"] != "r2"]
    assert [c.name for c in derived(two_rotations)] == ["main: framing (memory - document)"]


def _two_by_two(group: int, label: str, recency: str, analysis: dict) -> dict:
    """A choice instance of a 2x2 design on a stale note (no rotation), for unit checks."""
    return {"id": f"f-{group:05d}-{label}.{recency}", "family": "f", "group": group,
            "design": "factorial", "paradigm": "p", "variant": f"{label}.{recency}",
            "axes": {"label": label, "recency": recency}, "fields": {},
            "answer": {"scorer": "choice", "options": ["Aspen", "Birch", "Cedar"],
                       "gold": "Aspen", "gold_index": 0, "distractors": {"stale": "Birch"}},
            "analysis": analysis}


def test_a_declared_estimate_is_not_repeated_by_its_derived_twin() -> None:
    from memspec.analysis.score import ScoreOptions, outcome, score_outcomes

    declared = {"factorials": [{"name": "factorial", "axes": ["label", "recency"],
                                "where": {"design": "factorial"}, "metric": "reliance"}]}
    instances = [_two_by_two(g, label, recency, declared) for g in range(8)
                 for label in ("present", "removed") for recency in ("older", "newer")]
    # Relies on the note only where it is labelled: label effect +1, the rest 0.
    outcomes = [outcome(i, "B" if i["axes"]["label"] == "present" else "A") for i in instances]
    report = score_outcomes(outcomes, ["design"], ScoreOptions(resamples=200))
    names = [c["name"] for c in report["contrasts"]]
    assert names == ["factorial: label (present - removed)",
                     "factorial: recency (older - newer)",
                     "factorial: label (present - removed) x recency (older - newer)"]
    assert [c["source"] for c in report["contrasts"]] == ["declared"] * 3
    assert [c["estimate"] for c in report["contrasts"]] == [1.0, 0.0, 0.0]
    # Under another name the same effects are still estimated once each.
    renamed = {"factorials": [{**declared["factorials"][0], "name": "features"}]}
    instances = [{**i, "analysis": renamed} for i in instances]
    again = [outcome(i, o.response) for i, o in zip(instances, outcomes, strict=True)]
    report = score_outcomes(again, ["design"], ScoreOptions(resamples=200))
    assert [c["source"] for c in report["contrasts"]] == ["declared"] * 3
    # A slice of the release without the factorial's cells: nothing to estimate, no error.
    other = [{**i, "design": "main", "axes": {"condition": "stale"},
              "id": i["id"] + "-main"} for i in instances[:8]]
    report = score_outcomes([outcome(i, "B") for i in other], ["design"],
                            ScoreOptions(resamples=200))
    assert report["contrasts"] == []

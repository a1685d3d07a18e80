"""memspec respond / score / judge-requests on the bundled example release."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from conftest import LATEST_RELEASES, REPO, run_cli
from memspec.analysis.score import ScoreOptions, outcome, score_outcomes

CHOICE = "example.choice.meeting_room"
PROCEDURAL = "example.procedural.reversed_copy"
PRIMING = "example.priming.harbour_fog"


def respond(release: Path, policy: str, tmp_path: Path) -> Path:
    out = tmp_path / f"{policy}.jsonl"
    result = run_cli("respond", str(release), "--policy", policy, "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def score_json(release: Path, responses: Path, *args: str) -> dict:
    result = run_cli("score", str(release), str(responses), "--format", "json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def group(report: dict, **key: str) -> dict:
    return next(g["metrics"] for g in report["groups"] if g["key"] == key)


def test_oracle_scores_one_on_every_programmatic_item(built_example: Path,
                                                      tmp_path: Path) -> None:
    report = score_json(built_example, respond(built_example, "oracle", tmp_path),
                        "--by", "family")
    assert report["overall"]["accuracy"] == 1.0
    assert report["overall"]["accuracy_ci"] == [1.0, 1.0]
    assert report["overall"]["n"] == 144 and report["overall"]["answered"] == 144
    assert group(report, family=PRIMING)["accuracy"] is None
    for family in (CHOICE, PROCEDURAL):
        assert group(report, family=family)["reliance"] == 0.0


def test_memory_follower_relies_on_every_stale_memory(built_example: Path,
                                                       tmp_path: Path) -> None:
    report = score_json(built_example, respond(built_example, "memory-follower", tmp_path),
                        "--by", "family,condition")
    stale = group(report, family=CHOICE, condition="stale")
    assert stale["reliance"] == 1.0 and stale["accuracy"] == 0.0
    assert stale["delta_mem"] == -1.0 and stale["delta_mem_ci"][1] < 0
    clean = group(report, family=CHOICE, condition="clean")
    assert clean["accuracy"] == 1.0 and clean["delta_mem"] == 0.0
    assert "delta_mem" not in group(report, family=CHOICE, condition="no_memory")


def test_a_release_without_splits_is_scored_as_its_one_split(built_example: Path,
                                                              tmp_path: Path) -> None:
    # Its Parquet files and card call every instance "test"; so does `--by split`.
    report = score_json(built_example, respond(built_example, "oracle", tmp_path),
                        "--by", "split")
    assert [g["key"] for g in report["groups"]] == [{"split": "test"}]
    assert group(report, split="test")["n"] == report["overall"]["n"] == 144


def test_memoryless_follows_the_tool_and_keeps_its_habits(built_example: Path,
                                                          tmp_path: Path) -> None:
    report = score_json(built_example, respond(built_example, "memoryless", tmp_path),
                        "--by", "family")
    assert group(report, family=CHOICE)["accuracy"] == 1.0
    procedural = group(report, family=PROCEDURAL)
    assert procedural["accuracy"] == 0.0 and procedural["reliance"] == 1.0


def test_position_biased_is_exactly_one_third_after_rotation_averaging(
        built_example: Path, tmp_path: Path) -> None:
    report = score_json(built_example, respond(built_example, "position-biased", tmp_path),
                        "--by", "family,condition")
    for condition in ("no_memory", "clean", "stale"):
        metrics = group(report, family=CHOICE, condition=condition)
        assert metrics["accuracy"] == pytest.approx(1 / 3)
        assert metrics["accuracy_ci"] == [pytest.approx(1 / 3), pytest.approx(1 / 3)]


def test_random_is_near_chance_and_seeded(built_example: Path, tmp_path: Path) -> None:
    path = respond(built_example, "random", tmp_path)
    again = run_cli("respond", str(built_example), "--policy", "random")
    assert again.stdout == path.read_text()
    report = score_json(built_example, path, "--by", "family")
    metrics = group(report, family=CHOICE)
    low, high = metrics["accuracy_ci"]
    assert low <= 1 / 3 <= high
    other = run_cli("respond", str(built_example), "--policy", "random", "--seed", "9")
    assert other.stdout != path.read_text()


def test_abstainer_answers_nothing_and_gets_nulls_never_zeros(built_example: Path,
                                                               tmp_path: Path) -> None:
    report = score_json(built_example, respond(built_example, "abstainer", tmp_path),
                        "--by", "family,condition")
    overall = report["overall"]
    assert overall["answered"] == 0 and overall["coverage"] == 0.0
    assert overall["abstention_rate"] == 1.0
    for name in ("accuracy", "accuracy_all", "selective_risk", "reliance"):
        assert overall[name] is None, name
    stale = group(report, family=CHOICE, condition="stale")
    # Δmem is undefined (no group answered on both sides), never 0.0 [0, 0].
    assert stale["delta_mem"] is None and stale["delta_mem_ci"] is None
    assert stale["delta_mem_pairs"] == 0
    assert all(t["p_value"] is None for m in [overall, stale] for t in m.get("tests", []))
    table = run_cli("score", str(built_example),
                    str(respond(built_example, "abstainer", tmp_path)), "--by", "condition")
    assert table.returncode == 0, table.stderr
    stale_row = next(line for line in table.stdout.splitlines() if "condition=stale" in line)
    assert "–" in stale_row and "0.000 [0.000, 0.000]" not in stale_row.split("│")[4:]


def test_half_abstaining_scores_the_answered_half(built_example: Path, tmp_path: Path) -> None:
    # The oracle's answers on even groups, "I don't have enough information to answer." on
    # odd ones: coverage 1/2, accuracy on answered 1, and Δmem on the answered pairs only.
    oracle = _lines(respond(built_example, "oracle", tmp_path))
    half = [{"id": r["id"], "response": r["response"]
             if int(r["id"].split("-")[-2]) % 2 == 0
             else "I don't have enough information to answer."} for r in oracle]
    path = _write(tmp_path / "half.jsonl", half)
    report = score_json(built_example, path, "--by", "family,condition")
    stale = group(report, family=CHOICE, condition="stale")
    assert stale["coverage"] == pytest.approx(0.5)
    assert stale["accuracy"] == 1.0 and stale["selective_risk"] == 0.0
    assert stale["accuracy_all"] == pytest.approx(0.5)
    groups = len({r["id"].split("-")[-2] for r in oracle if CHOICE in r["id"]})
    assert stale["delta_mem"] == 0.0 and stale["delta_mem_pairs"] == groups // 2
    assert stale["reliance"] == 0.0


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records))
    return path


@pytest.mark.parametrize(("mutate", "line", "fragment"), [
    (lambda rs: rs[:3] + ["{not json"] + rs[3:], 4, "not valid JSON"),
    (lambda rs: rs[:5] + [{"id": "no.such-00000-x", "response": "A"}] + rs[5:], 6,
     "unknown instance id 'no.such-00000-x'"),
    (lambda rs: rs + [rs[7]], None, "duplicate response for"),
    (lambda rs: rs[:2] + [{"id": rs[2]["id"]}] + rs[3:], 3,
     '{"id": string, "response": string}: no \'response\''),
    (lambda rs: rs[:2] + [{**rs[2], "model": "m"}] + rs[3:], 3, "unexpected key 'model'"),
    (lambda rs: rs[:2] + [{**rs[2], "response": None}] + rs[3:], 3,
     "'response' is null, not a string"),
    (lambda rs: rs[:2] + ["[1, 2]"] + rs[3:], 3, "this is an array, not an object"),
])
def test_bad_response_lines_are_named(built_example: Path, tmp_path: Path, mutate, line,
                                      fragment: str) -> None:
    records = mutate(_lines(respond(built_example, "oracle", tmp_path)))
    path = _write(tmp_path / "bad.jsonl", records)
    result = run_cli("score", str(built_example), str(path))
    assert result.returncode == 2
    assert fragment in result.stderr and "Traceback" not in result.stderr
    expected_line = line if line is not None else len(records)
    assert f"bad.jsonl:{expected_line}:" in result.stderr


def test_missing_responses_are_reported_never_dropped(built_example: Path,
                                                      tmp_path: Path) -> None:
    records = _lines(respond(built_example, "oracle", tmp_path))
    path = _write(tmp_path / "partial.jsonl", records[:-10])
    refused = run_cli("score", str(built_example), str(path))
    assert refused.returncode == 2 and "10 of 144 instances have no response" in refused.stderr
    allowed = run_cli("score", str(built_example), str(path), "--allow-missing", "--format",
                      "json")
    assert allowed.returncode == 0
    assert "warning: 10 instances have no response" in allowed.stderr
    overall = json.loads(allowed.stdout)["overall"]
    assert overall["n"] == 144 and overall["missing"] == 10 and overall["answered"] == 134


def test_csv_and_table_formats(built_example: Path, tmp_path: Path) -> None:
    path = respond(built_example, "memory-follower", tmp_path)
    result = run_cli("score", str(built_example), str(path), "--by", "condition", "--format",
                     "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    stale = next(r for r in rows if r["condition"] == "stale")
    assert float(stale["reliance"]) == 1.0 and float(stale["delta_mem_ci_high"]) < 0
    table = run_cli("score", str(built_example), str(path), "--by", "condition")
    assert table.returncode == 0 and "stale" in table.stdout
    # One header whatever the responses: an abstainer answers nothing, so it has no accuracy
    # over answered items, and no judgments were given, yet their columns are there (empty).
    silent = respond(built_example, "abstainer", tmp_path)
    empty = run_cli("score", str(built_example), str(silent), "--by", "condition", "--format",
                    "csv")
    header = result.stdout.splitlines()[0]
    assert empty.stdout.splitlines()[0] == header
    assert {"accuracy", "coverage_ci_low", "judge_score_ci_low", "influence"} <= \
        set(header.split(","))
    assert all(r["accuracy"] == "" for r in csv.DictReader(io.StringIO(empty.stdout)))
    # The order docs/scoring.md promises (scripts that cut columns by position keep working):
    # the --by key, then the metric columns as listed there, then the run's contrasts.
    page = (REPO / "docs" / "scoring.md").read_text()
    listed = re.search(r"the contrast, outcome and\npanel columns above.*?```text\n(.*?)```",
                       page, re.S)
    assert listed is not None
    metrics = listed.group(1).replace("\n", "").split(",")
    names = header.split(",")
    assert names[:1 + len(metrics)] == ["condition", *metrics]
    assert all(n.startswith(("contrast: ", "outcome: ", "panel: "))
               for n in names[1 + len(metrics):])


def _instance(group_index: int, condition: str, correct: bool) -> dict:
    options = ["right", "stale", "other"]
    return {"id": f"f-{group_index:05d}-{condition}", "family": "f", "group": group_index,
            "design": "main", "axes": {"condition": condition}, "fields": {},
            "answer": {"scorer": "choice", "options": options, "gold": "right",
                       "gold_index": 0, "distractors": {"stale": "stale"}},
            "analysis": {"baseline": {"axis": "condition", "value": "none"}},
            "_response": "A" if correct else "B"}


def test_delta_mem_is_paired_by_group_by_hand() -> None:
    # Group 0: base right, stale wrong (−1); group 1: both right (0); group 2: base wrong,
    # stale right (+1); group 3: base right, stale wrong (−1). Δmem = −1/4.
    plan = [(True, False), (True, True), (False, True), (True, False)]
    instances = [inst for g, (base, stale) in enumerate(plan)
                 for inst in (_instance(g, "none", base), _instance(g, "stale", stale))]
    outcomes = [outcome(i, i["_response"]) for i in instances]
    report = score_outcomes(outcomes, ["condition"], ScoreOptions(seed=0))
    stale = next(g["metrics"] for g in report["groups"] if g["key"] == {"condition": "stale"})
    assert stale["delta_mem"] == pytest.approx(-0.25)
    assert stale["accuracy"] == pytest.approx(0.5)
    assert stale["reliance"] == pytest.approx(0.5)
    low, high = stale["delta_mem_ci"]
    assert -1.0 <= low <= -0.25 <= high <= 1.0
    # The overall row and the stale row each have a Δmem, and the design's one two-level
    # axis gives a contrast of reliance (none - stale: 0 - 1, 0 - 0, 1 - 0, 0 - 1, so -1/4):
    # three intervals, simultaneous, each at
    # 1 - 0.05 / 3.
    assert report["multiplicity"]["intervals"] == {
        "metrics": ["delta_mem", "contrasts"], "count": 3, "level": pytest.approx(1 - 0.05 / 3),
        "simultaneous": True}
    (contrast,) = report["contrasts"]
    assert contrast["name"] == "main: condition (none - stale)"
    assert contrast["estimate"] == pytest.approx(-0.25) and contrast["metric"] == "reliance"
    marginal = score_outcomes(outcomes, ["condition"], ScoreOptions(seed=0, correction="none"))
    assert marginal["multiplicity"]["intervals"]["simultaneous"] is False
    narrow = next(g["metrics"]["delta_mem_ci"] for g in marginal["groups"]
                  if g["key"] == {"condition": "stale"})
    assert high - low >= narrow[1] - narrow[0]


def test_judge_requests_pair_the_arms_blind_and_fold_back(built_example: Path,
                                                           tmp_path: Path) -> None:
    responses = respond(built_example, "oracle", tmp_path)
    requests_path = tmp_path / "requests.jsonl"
    result = run_cli("judge-requests", str(built_example), str(responses), "--out",
                     str(requests_path), "--seed", "3")
    assert result.returncode == 0, result.stderr
    requests = _lines(requests_path)
    unblind = json.loads((tmp_path / "requests.jsonl.unblind.json").read_text())
    assert len(requests) == 12  # one per priming pair
    assert all(set(r["responses"]) == {"A", "B"} and r["rubric"] for r in requests)
    treatment_first = [unblind[r["request_id"]]["A"].endswith("experimental") for r in requests]
    assert 0 < sum(treatment_first) < 12  # the order is drawn, not fixed
    # A judge that gives the experimental arm 7 and the control arm 3: influence 4.
    judgments = []
    for request in requests:
        slots = unblind[request["request_id"]]
        judgments.append({"request_id": request["request_id"], "scores": {
            slot: 7 if instance_id.endswith("experimental") else 3
            for slot, instance_id in slots.items()}})
    judgments_path = _write(tmp_path / "judgments.jsonl", judgments)
    report = score_json(built_example, responses, "--judgments", str(judgments_path),
                        "--unblind", str(tmp_path / "requests.jsonl.unblind.json"),
                        "--normalize", "minmax", "--by", "family")
    priming = group(report, family=PRIMING)
    assert priming["influence"] == 4.0 and priming["influence_ci"] == [4.0, 4.0]
    assert priming["judge_score"] == 5.0 and priming["judge_score_norm"] == 0.5
    # On the judge's 1-10 scale, 4 points are 4/9 of its width: 44.4%.
    assert priming["influence_percent"] == pytest.approx(400 / 9)
    assert report["normalisation"] == {"method": "minmax", "dataset_key": "family",
                                       "reference": {PRIMING: "within-run"}}
    bad = _write(tmp_path / "bad_judgments.jsonl", [{"request_id": "nope", "score": 1}])
    refused = run_cli("score", str(built_example), str(responses), "--judgments", str(bad),
                      "--unblind", str(tmp_path / "requests.jsonl.unblind.json"))
    assert refused.returncode == 2 and "bad_judgments.jsonl:1:" in refused.stderr


def test_score_refuses_a_tampered_release(built_example: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "example-v1"
    shutil.copytree(built_example, copy)
    responses = respond(built_example, "oracle", tmp_path)
    data = copy / "data" / f"{CHOICE}.jsonl"
    data.write_text(data.read_text().replace("Room", "Hall", 1))
    result = run_cli("score", str(copy), str(responses))
    assert result.returncode == 2  # a release that does not verify is bad input to score
    assert f"data/{CHOICE}.jsonl" in result.stderr


def test_rho_star_reads_scored_runs(built_example: Path, tmp_path: Path) -> None:
    runs = []
    for level, policy in (("small", "oracle"), ("large", "memory-follower")):
        result = run_cli("score", str(built_example),
                         str(respond(built_example, policy, tmp_path)), "--by", "condition",
                         "--format", "json")
        path = tmp_path / f"{level}.json"
        path.write_text(result.stdout)
        runs.append(f"{level}={path}")
    result = run_cli("rho-star", *runs, "--where", "condition=stale")
    assert result.returncode == 0 and result.stdout.strip() == "large"


@pytest.mark.parametrize(("scores", "where", "message"), [
    ("[]", "condition=stale", "not the output of `memspec score --format json`"),
    ('{"groups": 5}', "condition=stale", "not the output of `memspec score --format json`"),
    ('{"groups": [{"key": {"condition": "stale"}, "metrics": {"delta_mem_ci": [null, "a"]}}]}',
     "condition=stale", "delta_mem_ci of group {'condition': 'stale'} is not two numbers"),
    ('{"groups": []}', "conditionstale", "--where 'conditionstale' is not KEY=VALUE"),
])
def test_rho_star_refuses_what_is_not_a_scores_file(tmp_path: Path, scores: str, where: str,
                                                    message: str) -> None:
    path = tmp_path / "scores.json"
    path.write_text(scores)
    result = run_cli("rho-star", f"small={path}", "--where", where)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_oracle_is_perfect_on_every_bundled_release(built_dist: Path, tmp_path: Path) -> None:
    releases = [built_dist / name for name in LATEST_RELEASES]
    assert all((release / "manifest.json").is_file() for release in releases)
    for release in releases:
        report = score_json(release, respond(release, "oracle", tmp_path), "--by", "family")
        for entry in [{"metrics": report["overall"]}, *report["groups"]]:
            accuracy = entry["metrics"]["accuracy"]
            assert accuracy in (None, 1.0), (release.name, entry)


def test_cluster_keys_are_checked(built_example: Path, tmp_path: Path) -> None:
    responses = respond(built_example, "random", tmp_path)
    for key, fragment in (("nonexistent_key", "no instance has a key"),
                          ("condition", "varies within group"),
                          ("paradigm", None)):
        result = run_cli("score", str(built_example), str(responses), "--cluster", key)
        if fragment is None:
            assert result.returncode == 0, result.stderr
        else:
            assert result.returncode == 2 and fragment in result.stderr
    unknown_by = run_cli("score", str(built_example), str(responses), "--by", "conditon")
    assert unknown_by.returncode == 2 and "'conditon'" in unknown_by.stderr


@pytest.mark.parametrize(("response", "answered", "correct"), [
    ("C) Terrace Room. I don't know why my note says Garden Room.", True, True),
    ("I don't know.", False, False),
    ("I don't have enough information to answer.", False, False),
    ("I have no record of this conversation.", False, False),
    ("I do not remember which room it was.", False, False),
    ("There is not enough information to decide.", False, False),
    ("Sorry, I'm not sure which room it is.", False, False),
    ("A quick look at the directory settles it: C) Terrace Room", True, True),
    ("**C**", True, True),
    ("**Answer:** C", True, True),
    ("**A)** Garden Room", True, False),
])
def test_abstention_and_labels_read_the_start(response: str, answered: bool,
                                               correct: bool) -> None:
    instance = {"id": "f-00000-x", "family": "f", "group": 0, "design": "main", "axes": {},
                "fields": {}, "answer": {"scorer": "choice", "gold": "Terrace Room",
                                         "gold_index": 2, "distractors": {"stale": "Garden Room"},
                                         "options": ["Garden Room", "Library", "Terrace Room"]}}
    result = outcome(instance, response)
    assert (result.answered, result.correct) == (answered, correct)


def test_a_self_correction_does_not_rescue_a_regex_answer() -> None:
    instance = {"id": "f-00000-x", "family": "f", "group": 0, "design": "main", "axes": {},
                "fields": {}, "answer": {"scorer": "regex", "gold": "Terrace Room"}}
    assert outcome(instance, "Terrace Room").correct
    assert not outcome(instance, "Garden Room.\nNo wait: Terrace Room").correct


def test_a_regex_gold_on_a_call_tests_the_call_name_too() -> None:
    gold = r"copy_file\(\s*'b'\s*,\s*'a'\s*\)"
    instance = {"id": "f-00000-x", "family": "f", "group": 0, "design": "main", "axes": {},
                "fields": {}, "answer": {"scorer": "regex", "first": "call", "gold": gold}}
    assert outcome(instance, "Sure: copy_file('b', 'a')").correct
    assert not outcome(instance, "not_copy_file('b', 'a')").correct
    assert not outcome(instance, "fs.copy_file('b', 'a')").correct


def test_paired_test_uses_groups_and_ignores_abstentions() -> None:
    def inst(group: int, document: str, rotation: str) -> dict:
        return {"id": f"f-{group:05d}-{document}.{rotation}", "family": "f", "group": group,
                "design": "main", "axes": {"document": document, "rotation": rotation},
                "fields": {}, "answer": {"scorer": "exact", "gold": "yes"},
                "analysis": {"paired": [{"axis": "document", "a": "real", "b": "fake"}],
                             "chance": 0.5}}
    outcomes = []
    for group in range(4):
        for rotation in ("r0", "r1", "r2"):
            outcomes.append(outcome(inst(group, "real", rotation), "yes"))
            outcomes.append(outcome(inst(group, "fake", rotation),
                                    "I don't know" if group == 3 else "no"))
    tests = score_outcomes(outcomes, [], ScoreOptions())["overall"]["tests"]
    paired = next(t for t in tests if t["test"] == "mcnemar_exact")
    assert (paired["pairs"], paired["only_a"], paired["only_b"]) == (3, 3, 0)
    assert paired["p_value"] == pytest.approx(0.25)
    chance = {t["arm"]["document"]: t for t in tests if t["test"] == "sign_flip_vs_chance"}
    # One test per arm, on the group means of the answered items (all three rotations): the
    # abstaining group drops out of "fake".
    assert {arm: (t["mean"], t["groups"], t["items"]) for arm, t in chance.items()} == \
        {"real": (1.0, 4, 12), "fake": (0.0, 3, 9)}
    # Four groups all +1/2 from chance: of the 16 sign assignments, 2 are as extreme.
    assert chance["real"]["p_value"] == pytest.approx(2 / 16)
    assert all("p_adjusted" in t for t in tests)


def test_judgments_are_checked_against_the_scale(built_example: Path, tmp_path: Path) -> None:
    responses = respond(built_example, "oracle", tmp_path)
    requests_path = tmp_path / "requests.jsonl"
    run_cli("judge-requests", str(built_example), str(responses), "--out", str(requests_path))
    requests = _lines(requests_path)
    assert all(r["request_id"].startswith("req-") for r in requests)
    assert not any("experimental" in r["request_id"] for r in requests)
    unblind = str(tmp_path / "requests.jsonl.unblind.json")
    last = len(requests)
    for scores, fragment in (({"A": 55, "B": 3}, f"j.jsonl:{last}:1: judge score 55 for "),
                             ({"A": "Infinity", "B": 3},
                              f"j.jsonl:{last}:1: not valid JSON: Infinity is not JSON"),
                             ({"A": 5, "B": 3, "C": 0}, "expected"),
                             ({"A": 5, "B": 3, "Z": 1},
                              f"j.jsonl:{last}:1: not valid JSON: key 'A' is given twice")):
        path = _write(tmp_path / "j.jsonl", [
            json.dumps({"request_id": r["request_id"], "scores": {"A": 5, "B": 5}})
            for r in requests[1:]] + [
            json.dumps({"request_id": requests[0]["request_id"], "scores": scores})
            .replace('"Infinity"', "Infinity").replace('"Z"', '"A"')])
        result = run_cli("score", str(built_example), str(responses), "--judgments", str(path),
                         "--unblind", unblind)
        assert result.returncode == 2 and fragment in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_judgments_must_cover_the_requests_of_this_release(built_example: Path,
                                                           tmp_path: Path) -> None:
    responses = respond(built_example, "oracle", tmp_path)
    requests_path = tmp_path / "requests.jsonl"
    run_cli("judge-requests", str(built_example), str(responses), "--out", str(requests_path))
    requests = _lines(requests_path)
    unblind = tmp_path / "requests.jsonl.unblind.json"
    one = _write(tmp_path / "one.jsonl", [json.dumps(
        {"request_id": requests[0]["request_id"], "scores": {"A": 9, "B": 2}})])
    args = ["score", str(built_example), str(responses), "--judgments", str(one), "--unblind",
            str(unblind), "--format", "json"]
    refused = run_cli(*args)
    assert refused.returncode == 2
    assert (f"one.jsonl: {len(requests) - 1} of {len(requests)} judge requests have no "
            "judgment") in refused.stderr
    assert run_cli(*args, "--allow-missing").returncode == 0
    mapping = json.loads(unblind.read_text())
    first = next(iter(mapping))
    mapping[first] = {slot: "someone.else-00000-base" for slot in mapping[first]}
    unblind.write_text(json.dumps(mapping))
    foreign = run_cli(*args, "--allow-missing")
    assert foreign.returncode == 2
    assert ("names instances this release does not hold (1 in all; first: "
            "someone.else-00000-base)") in foreign.stderr


def test_a_lone_surrogate_response_is_a_located_error(built_example: Path,
                                                      tmp_path: Path) -> None:
    records = _lines(respond(built_example, "oracle", tmp_path))
    lines = [json.dumps(r) for r in records]
    lines[4] = json.dumps({"id": records[4]["id"], "response": "x"}).replace('"x"', '"\\ud800"')
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = run_cli("judge-requests", str(built_example), str(path), "--out",
                     str(tmp_path / "r.jsonl"))
    assert result.returncode == 2 and "bad.jsonl:5:" in result.stderr


def test_a_table_into_a_pipe_is_drawn_at_its_own_width(built_example: Path,
                                                       tmp_path: Path) -> None:
    responses = respond(built_example, "oracle", tmp_path)
    result = run_cli("score", str(built_example), str(responses), "--by", "family,condition")
    assert result.returncode == 0, result.stderr
    assert "family=example.choice.meeting_room, condition=clean" in result.stdout
    assert "1.000 [1.000, 1.000]" in result.stdout and "…" not in result.stdout


def test_with_clusters_the_tests_take_the_cluster_as_unit() -> None:
    # Six groups in three clusters; every group right in all three rotations: by group the
    # chance test sees 6 units right against chance 1/3 (the exact binomial p = 1/3^6), by
    # cluster 3 units (p = 1/3^3).
    def inst(group: int, rotation: str) -> dict:
        return {"id": f"f-{group:05d}-{rotation}", "family": "f", "group": group,
                "design": "main", "axes": {"rotation": rotation},
                "fields": {"template": f"t{group // 2}"},
                "answer": {"scorer": "choice", "gold": "x", "gold_index": 0,
                           "options": ["x", "y", "z"]}}
    outcomes = [outcome(inst(g, r), "A") for g in range(6) for r in ("r0", "r1", "r2")]
    by_group = score_outcomes(outcomes, [], ScoreOptions())["overall"]["tests"][0]
    by_cluster = score_outcomes(outcomes, [], ScoreOptions(cluster="template"))
    test = by_cluster["overall"]["tests"][0]
    assert by_group["p_value"] == pytest.approx(1 / 3**6) and "clusters" not in by_group
    assert (test["groups"], test["clusters"], test["unit"]) == (6, 3, "cluster")
    assert test["p_value"] == pytest.approx(1 / 3**3)

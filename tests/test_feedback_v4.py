"""feedback-v4: test records answered from the training sessions of the same user (declared
links, logs given), feedback sequences that vary and balance, gold that checks content as well
as form and takes surface variants, long inputs of at least 4,000 tokens, every memoryless
adversary of the audit at or below chance, and judge scores normalised against the declared
reference statistics."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import run_cli
from memspec.analysis.policies import POLICIES
from memspec.analysis.score import is_abstention
from memspec.analysis.scoring import is_correct
from memspec.engine.checks import approx_tokens

RELEASE = "feedback-v4"
DOMAINS = {"open_domain": "Open-Domain", "academic_knowledge": "Academic&Knowledge",
           "legal": "Legal"}
FORMATS = {"SiSo": "Short-Short", "SiLo": "Short-Long", "LiSo": "Long-Short",
           "LiLo": "Long-Long"}


def _history(inst: dict) -> list[dict]:
    return next(p["messages"] for p in inst["phases"] if p["phase"] == "history")


def _task(inst: dict) -> str:
    return next(p["messages"] for p in inst["phases"] if p["phase"] == "task")[0]["content"]


def _sessions(inst: dict) -> dict[str, list[dict]]:
    """The logged sessions of a record, by the training record each header names."""
    out: dict[str, list[dict]] = {}
    current = None
    for message in _history(inst):
        if message["role"] == "system":
            current = message["content"].split("training record ")[1].rstrip(").")
            out[current] = []
        else:
            out[current].append(message)
    return out


def _kind(inst: dict) -> str:
    return inst["family"].split(".")[1]


@pytest.fixture(scope="module")
def by_id(instances: list[dict]) -> dict[str, dict]:
    return {i["id"]: i for i in instances}


def _score(release: Path, responses: Path) -> dict[str, dict]:
    result = run_cli("score", str(release), str(responses), "--by", "family,split",
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    return {(g["key"]["family"], g["key"]["split"]): g["metrics"]
            for g in json.loads(result.stdout)["groups"]}


def _respond(release: Path, policy: str, tmp_path: Path) -> Path:
    out = tmp_path / f"{policy}.jsonl"
    result = run_cli("respond", str(release), "--policy", policy, "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_partitions_names_and_splits_follow_the_design(instances: list[dict]) -> None:
    families = {i["family"] for i in instances}
    assert len(families) == 12 and len(instances) == 480
    cells = Counter((i["fields"]["domain"], i["fields"]["format"]) for i in instances)
    assert set(cells) == {(d, f) for d in DOMAINS for f in FORMATS}
    assert set(cells.values()) == {40}
    for inst in instances:
        # The design's own partition names ride along with the short ones.
        assert inst["fields"]["domain_tag"] == DOMAINS[inst["fields"]["domain"]]
        assert inst["fields"]["task_tag"] == FORMATS[inst["fields"]["format"]]
        assert (inst["group"] < 30) == (inst["fields"]["split"] == "train")
    kinds = Counter(f.split(".")[1] for f in families)
    assert kinds == {"procedural": 5, "declarative": 7}


def test_test_records_are_answered_from_linked_training_sessions(
        instances: list[dict], by_id: dict[str, dict]) -> None:
    tests = [i for i in instances if i["fields"]["split"] == "test"]
    assert len(tests) == 120
    for inst in instances:
        if inst["fields"]["split"] == "train":
            assert inst["fields"]["depends_on"] == "none"
            assert list(_sessions(inst)) == [inst["id"]]
    for inst in tests:
        linked = inst["fields"]["depends_on"].split(",")
        logged = _sessions(inst)
        assert len(logged) == 3
        for record in logged:
            train = by_id[record]
            # The logs are the training records of the same user, copied message for
            # message, and so is their implicit feedback.
            assert train["fields"]["split"] == "train" and train["family"] == inst["family"]
            assert train["fields"]["user"] == inst["fields"]["user"]
            assert logged[record] == _sessions(train)[record]
        assert inst["feedback"] == [f for record in logged for f in by_id[record]["feedback"]]
        assert set(linked) <= set(logged)
        if _kind(inst) == "procedural":
            assert linked == list(logged)
        else:
            # One training record holds the fact; the task itself never states it.
            (record,) = linked
            mention = _sessions(by_id[record])[record][0]["content"].split(
                " Anyway, a quick one")[0]
            assert mention and mention not in _task(inst)
            others = [r for r in logged if r != record]
            assert all(mention not in json.dumps(logged[r]) for r in others)


def test_feedback_sequences_vary_and_balance(instances: list[dict]) -> None:
    for family in sorted({i["family"] for i in instances if _kind(i) == "procedural"}):
        mine = [i for i in instances if i["family"] == family]
        train = [i for i in mine if i["fields"]["split"] == "train"]
        test = [i for i in mine if i["fields"]["split"] == "test"]
        # Sessions of one, two and three rounds, ten each.
        assert Counter(len(i["feedback"]) for i in train) == {1: 10, 2: 10, 3: 10}
        # The wanted reply is liked or copied in every session, in its first round or its
        # second, 15 times each.
        liked_at = Counter(f["round"] for i in train for f in i["feedback"]
                           if f["action"] in ("like", "copy"))
        assert liked_at == {1: 15, 2: 15}
        # The last reply logged is the unwanted one in exactly half of the records, so
        # imitating the most recent reply is right half the time, in training and in test.
        for records in (train, test):
            last_liked = sum(i["feedback"][-1]["action"] in ("like", "copy") for i in records)
            assert last_liked * 2 == len(records)
        # Each session alone can teach the preference: the wanted reply is kept in it, and
        # the first reply is the unwanted one in half of the sessions too.
        assert all({f["action"] for f in i["feedback"]} & {"like", "copy"} for i in train)
        first_liked = sum(i["feedback"][0]["action"] in ("like", "copy") for i in train)
        assert first_liked * 2 == len(train)


def test_long_inputs_have_at_least_4000_tokens(instances: list[dict]) -> None:
    tokens: dict[str, list[int]] = defaultdict(list)
    for inst in instances:
        tokens[inst["fields"]["format"][:2]].append(approx_tokens(_task(inst)))
    assert min(tokens["Li"]) >= 4000
    assert max(tokens["Si"]) < 1000


def test_reference_policies_expected_scores(release: Path, instances: list[dict],
                                            tmp_path: Path) -> None:
    # One policy through respond and score, as a user runs it ...
    recency = _score(release, _respond(release, "recency_form", tmp_path))
    for family in {i["family"] for i in instances if _kind(i) == "procedural"}:
        for split in ("train", "test"):
            # Imitating the most recent logged reply is right exactly when that reply was the
            # wanted one: half of the records, by construction.
            assert recency[(family, split)]["accuracy"] == 0.5
    # ... and the others scored here with the same scorer, record by record.
    rates: dict[tuple[str, str], list[float]] = defaultdict(list)
    for inst in instances:
        answer, key = inst["answer"], inst["family"]
        assert is_correct(answer, POLICIES["oracle"](inst, 0))
        assert is_abstention(answer, POLICIES["abstainer"](inst, 0))
        for name in ("chat_default", "other_person"):
            if name in answer["policies"]:
                rates[(key, name)].append(is_correct(answer, answer["policies"][name]))
    for (family, name), hits in rates.items():
        # What a chat model does by default never satisfies the preference, and the entry
        # of another person the user mentioned (on a test record, the confusable one in the
        # document) is never the right one.
        assert len(hits) == 40 and not any(hits), (family, name)
    assert {f for f, _ in rates} == {i["family"] for i in instances}


def test_audit_passes_with_every_memoryless_adversary_at_or_below_chance(
        release: Path) -> None:
    result = run_cli("audit", str(release), "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and report["exempt"] == {} and report["skipped"] == []
    rows = report["rows"]
    assert {r["family"] for r in rows} and not any(r["failed"] for r in rows)
    seen = defaultdict(set)
    for row in rows:
        seen[row["family"]].add(row["check"])
        if row["check"].startswith("echo_") or row["check"].startswith("declared:"):
            assert row["accuracy"] <= row["chance"], row
        if row["check"] == "declared_prior":
            # "Study 1", "Clause 1" ...: right where the balanced position put the answer
            # first, at most ceil(trials / options) times.
            assert row["hits"] <= math.ceil(row["trials"] * row["chance"]), row
    assert len(seen) == 12
    assert all({"echo_last_reply", "declared_prior", "majority_answer"} <= checks
               for checks in seen.values())


@pytest.mark.parametrize(("family", "accepted", "rejected"), [
    ("feedback.procedural.verdict_label",
     ["**Verdict: {a}.**", "Verdict: {a}, because the rule says so.", "VERDICT - {A}",
      "_Verdict_: {a}!", "verdict: {l}."],
     ["{a}.", "**{a}.**", "Verdict: {o}."]),
])
def test_verdicts_take_surface_variants(instances: list[dict], family: str,
                                        accepted: list[str], rejected: list[str]) -> None:
    items = [i for i in instances if i["family"] == family]
    assert {i["answer"]["example"].split(".")[0] for i in items} == {"Verdict: Yes",
                                                                   "Verdict: No"}
    for inst in items:
        verdict = inst["answer"]["example"].split(".")[0].split(": ")[1]
        values = {"a": verdict, "A": verdict.upper(), "l": verdict.lower(),
                  "o": "No" if verdict == "Yes" else "Yes"}
        for text in accepted:
            assert is_correct(inst["answer"], text.format(**values)), text
        for text in rejected:
            assert not is_correct(inst["answer"], text.format(**values)), text


def test_gold_checks_content_not_only_form(instances: list[dict]) -> None:
    """Every record's right answer is wrong for every other record of its family where the
    two answers differ: the gold depends on the new request, not only on the form."""
    for family in sorted({i["family"] for i in instances}):
        mine = [i for i in instances if i["family"] == family]
        crossed = wrong = 0
        for inst in mine:
            for other in mine:
                if other["answer"]["example"] != inst["answer"]["example"]:
                    crossed += 1
                    wrong += not is_correct(inst["answer"], other["answer"]["example"])
        # The labelled verdict's content is one word of two; everywhere else nearly every
        # other record's answer is wrong.
        floor = 0.45 if family.endswith("verdict_label") else 0.9
        assert wrong / crossed >= floor, family


def test_judge_scores_are_normalised_against_the_declared_reference(
        release: Path, instances: list[dict], tmp_path: Path) -> None:
    responses = _respond(release, "oracle", tmp_path)
    requests_path = tmp_path / "requests.jsonl"
    assert run_cli("judge-requests", str(release), str(responses), "--out",
                   str(requests_path)).returncode == 0
    requests = [json.loads(line) for line in requests_path.read_text().splitlines()]
    assert len(requests) == len(instances)  # every dataset declares a 1-10 rubric
    unblind = json.loads((tmp_path / "requests.jsonl.unblind.json").read_text())
    scores = {r["request_id"]: 1 + (index * 7) % 10 for index, r in enumerate(requests)}
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(json.dumps({"request_id": k, "score": v}) + "\n"
                                 for k, v in scores.items()))
    result = run_cli("score", str(release), str(responses), "--judgments", str(judgments),
                     "--unblind", str(tmp_path / "requests.jsonl.unblind.json"),
                     "--normalize", "minmax", "--dataset-key", "family", "--by", "domain",
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    by_id = {i["id"]: i for i in instances}
    expected: dict[str, list[float]] = defaultdict(list)
    for request_id, score in scores.items():
        inst = by_id[unblind[request_id]["response"]]
        # The declared reference {min: 1, max: 10}, not the run's own extremes.
        expected[inst["fields"]["domain"]].append((score - 1) / 9)
    rows = {g["key"]["domain"]: g["metrics"] for g in report["groups"]}
    for domain, values in expected.items():
        assert rows[domain]["judge_score_norm"] == pytest.approx(sum(values) / len(values))
    assert "declared" in json.dumps(report["normalisation"])
    assert "within-run" not in json.dumps(report["normalisation"])


def test_memorybench_export_names_the_linked_training_records(release: Path,
                                                             tmp_path: Path) -> None:
    from upstream_checks import memorybench_problems

    out = tmp_path / "export"
    result = run_cli("export", str(release), "--format", "memorybench", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert memorybench_problems(out) == []  # MemoryBench's loader reads it as it is
    datasets = sorted(p.parent.name for p in out.glob("*/train.json"))
    assert len(datasets) == 12
    for dataset in datasets:
        train = json.loads((out / dataset / "train.json").read_text())
        test = json.loads((out / dataset / "test.json").read_text())
        ids = [r["test_idx"] for r in train + test]
        assert len(ids) == len(set(ids)) == 40  # unique across train and test
        train_ids = {json.loads(r["info"])["memspec_id"] for r in train}
        for record in test:
            info = json.loads(record["info"])
            assert info["depends_on"] != "none"
            assert set(info["depends_on"].split(",")) <= train_ids
            assert info["domain"] in DOMAINS.values()
            assert info["task_format"] in FORMATS.values()
            assert {action for f in record["implicit_feedback"]
                    for action in f["implicit_actions"]} <= {"like", "dislike", "copy", "none"}

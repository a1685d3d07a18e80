"""The bundled feedback benchmark: partitions, splits without overlap, feedback logs, reference
policies, judge normalisation (checked against scipy) and the MemoryBench export."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from scipy.stats import zscore

from conftest import run_cli

RELEASE = "feedback-v1"
PARTITIONS = {(d, f) for d in ("open_domain", "academic_knowledge", "legal")
              for f in ("LiSo", "SiLo", "LiLo", "SiSo")}


def _messages(inst: dict, phase: str | None = None) -> list[dict]:
    return [m for p in inst["phases"] if phase in (None, p["phase"]) for m in p["messages"]]


def test_counts_per_partition_and_split(instances: list[dict]) -> None:
    per_partition = Counter((i["fields"]["domain"], i["fields"]["format"]) for i in instances)
    assert set(per_partition) == PARTITIONS
    assert all(count == 40 for count in per_partition.values())
    per_split = Counter((i["family"], i["fields"]["split"]) for i in instances)
    families = {i["family"] for i in instances}
    assert len(families) == 12
    for family in families:
        assert (per_split[(family, "train")], per_split[(family, "test")]) == (30, 10)
    kinds = Counter(family.split(".")[1] for family in families)
    assert kinds == {"procedural": 6, "declarative": 6}
    # Splits take consecutive groups: train first.
    assert all((i["group"] < 30) == (i["fields"]["split"] == "train") for i in instances)


def test_manifest_records_partitions_and_splits(release: Path) -> None:
    manifest = json.loads((release / "manifest.json").read_text())
    for info in manifest["counts"]["families"].values():
        assert info["splits"] == {"test": 10, "train": 30}
        assert set(info["fields"]) == {"domain", "format"}
    assert "## Partitions and splits" in (release / "README.md").read_text()


def test_train_and_test_share_no_content(instances: list[dict]) -> None:
    def digests(split: str, phase: str | None) -> set[str]:
        return {hashlib.sha256(m["content"].encode()).hexdigest()
                for i in instances if i["fields"]["split"] == split
                for m in _messages(i, phase)}

    for family in {i["family"] for i in instances}:
        mine = [i for i in instances if i["family"] == family]
        test_tasks = {hashlib.sha256(m["content"].encode()).hexdigest()
                      for i in mine if i["fields"]["split"] == "test"
                      for m in _messages(i, "task")}
        train_all = {hashlib.sha256(m["content"].encode()).hexdigest()
                     for i in mine if i["fields"]["split"] == "train" for m in _messages(i)}
        assert len(test_tasks) == 10
        assert not test_tasks & train_all
    assert not digests("test", "task") & digests("train", None)


def test_feedback_logs_follow_the_session(instances: list[dict]) -> None:
    actions = Counter()
    for inst in instances:
        feedback = inst["feedback"]
        replies = [m for m in _messages(inst, "history") if m["role"] == "assistant"]
        assert 1 <= len(feedback) <= 3 and len(feedback) == len(replies)
        assert [f["round"] for f in feedback] == list(range(1, len(feedback) + 1))
        assert [f["terminated"] for f in feedback] == [False] * (len(feedback) - 1) + [True]
        actions.update(f["action"] for f in feedback)
        if inst["family"].split(".")[1] == "procedural":
            # The preference shows only through feedback: some reply is disliked, some kept.
            kinds = {f["action"] for f in feedback}
            assert "dislike" in kinds and kinds & {"like", "copy"}
    assert set(actions) <= {"like", "dislike", "copy", "none"}
    assert {"like", "dislike", "copy"} <= set(actions)


def test_input_and_output_lengths_follow_the_format(instances: list[dict]) -> None:
    for inst in instances:
        words = len(_messages(inst, "task")[0]["content"].split())
        form = inst["fields"]["format"]
        assert (words >= 400) if form.startswith("Li") else (words <= 150), inst["id"]
        example = inst["answer"].get("example", "")
        if inst["answer"]["scorer"] != "judge":
            assert (len(example.split()) >= 80) if form.endswith("Lo") else \
                (len(example.split()) <= 30), inst["id"]


def _responses(release: Path, policy: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{policy}.jsonl"
    result = run_cli("respond", str(release), "--policy", policy, "--out", str(path))
    assert result.returncode == 0, result.stderr
    return path


def _by_family(release: Path, responses: Path) -> dict[str, dict]:
    result = run_cli("score", str(release), str(responses), "--by", "family", "--format",
                     "json")
    assert result.returncode == 0, result.stderr
    return {g["key"]["family"]: g["metrics"] for g in json.loads(result.stdout)["groups"]}


def test_oracle_beats_memoryless_on_every_procedural_family(release: Path,
                                                            tmp_path: Path) -> None:
    oracle = _by_family(release, _responses(release, "oracle", tmp_path))
    memoryless = _by_family(release, _responses(release, "memoryless", tmp_path))
    procedural = [f for f in oracle if f.split(".")[1] == "procedural"]
    assert len(procedural) == 6
    for family in procedural:
        assert oracle[family]["accuracy"] == 1.0
        assert memoryless[family]["accuracy"] < oracle[family]["accuracy"], family
        assert memoryless[family]["accuracy_ci"][1] < 1.0
    for family, metrics in oracle.items():
        if metrics["accuracy"] is not None:
            assert metrics["accuracy"] == 1.0 and memoryless[family]["accuracy"] == 0.0


def test_judge_scores_are_normalised_within_each_dataset(release: Path,
                                                         tmp_path: Path) -> None:
    responses = _responses(release, "oracle", tmp_path)
    requests_path = tmp_path / "requests.jsonl"
    assert run_cli("judge-requests", str(release), str(responses), "--out",
                   str(requests_path)).returncode == 0
    requests = [json.loads(line) for line in requests_path.read_text().splitlines()]
    unblind = json.loads((tmp_path / "requests.jsonl.unblind.json").read_text())
    scores = {r["request_id"]: 1 + (index * 7) % 10 for index, r in enumerate(requests)}
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(json.dumps({"request_id": k, "score": v}) + "\n"
                                 for k, v in scores.items()))
    result = run_cli("score", str(release), str(responses), "--judgments", str(judgments),
                     "--unblind", str(tmp_path / "requests.jsonl.unblind.json"),
                     "--normalize", "z", "--dataset-key", "family", "--by", "domain,format",
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    report = {(g["key"]["domain"], g["key"]["format"]): g["metrics"]
              for g in json.loads(result.stdout)["groups"]}
    instances = {json.loads(line)["id"]: json.loads(line)
                 for path in (release / "data").glob("*.jsonl")
                 for line in path.read_text().splitlines()}
    by_family: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for request_id, score in scores.items():
        inst = instances[unblind[request_id]["response"]]
        by_family[inst["family"]].append((inst["id"], score))
    expected: dict[tuple[str, str], list[float]] = defaultdict(list)
    for members in by_family.values():
        for (inst_id, _), z in zip(members, zscore([s for _, s in members]), strict=True):
            fields = instances[inst_id]["fields"]
            expected[(fields["domain"], fields["format"])].append(float(z))
    assert len(by_family) == 3 and set(expected) == {(d, "LiLo") for d in
                                                      ("open_domain", "academic_knowledge",
                                                       "legal")}
    for partition, values in expected.items():
        assert report[partition]["judge_score_norm"] == pytest.approx(sum(values) / len(values))


def test_memorybench_export_passes_the_upstream_checks(release: Path, instances: list[dict],
                                                        tmp_path: Path) -> None:
    from upstream_checks import memorybench_problems

    out = tmp_path / "export"
    result = run_cli("export", str(release), "--format", "memorybench", "--out", str(out))
    assert result.returncode == 0, result.stderr
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json"))
    families = sorted({i["family"].split(".")[-1] for i in instances})
    assert files == sorted(["configs/datasets/each.json",
                            *(f"{f}/{s}.json" for f in families for s in ("test", "train"))])
    assert memorybench_problems(out) == []
    by_id = {i["id"]: i for i in instances}
    domains = {"open_domain": "Open-Domain", "academic_knowledge": "Academic&Knowledge",
               "legal": "Legal"}
    formats = {"LiSo": "Long-Short", "SiLo": "Short-Long", "LiLo": "Long-Long",
               "SiSo": "Short-Short"}
    registry = json.loads((out / "configs/datasets/each.json").read_text())
    assert sorted(registry) == families
    for family in families:
        items = [item for split in ("train", "test")
                 for item in json.loads((out / family / f"{split}.json").read_text())]
        assert sorted(item["test_idx"] for item in items) == list(range(len(items)))
        assert registry[family]["dataset_size"] == len(items)
        for item in items:
            info = json.loads(item["info"])
            inst = by_id[info["memspec_id"]]
            assert item["dataset_name"] == inst["family"].split(".")[-1] == family
            assert item["lang"] == "en"
            assert json.loads(item["dialog"]) == [{"role": m["role"], "content": m["content"]}
                                                  for m in _messages(inst, "history")]
            assert json.loads(item["input_chat_messages"])[-1]["content"] == \
                _messages(inst, "task")[-1]["content"]
            assert item["implicit_feedback"] == [
                {"round": f["round"], "implicit_actions": [f["action"]],
                 "satisfaction_score": None, "terminated": f["terminated"]}
                for f in inst["feedback"]]
            assert (info["domain"], info["task_format"]) == \
                (domains[inst["fields"]["domain"]], formats[inst["fields"]["format"]])
            assert (registry[family]["domain_tag"], registry[family]["task_tag"]) == \
                (info["domain"], info["task_format"])
    # The checks can fail: a test_idx met twice across the splits is reported.
    family = families[0]
    test = json.loads((out / family / "test.json").read_text())
    test[0]["test_idx"] = json.loads((out / family / "train.json").read_text())[0]["test_idx"]
    (out / family / "test.json").write_text(json.dumps(test))
    assert any("duplicate test_idx" in p for p in memorybench_problems(out))

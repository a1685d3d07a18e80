"""The bundled feedback benchmark: partitions, splits without overlap, feedback logs, reference
policies, judge normalisation (checked against scipy) and the MemoryBench export."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from scipy.stats import zscore

from conftest import REPO, judged_run, run_cli

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
    scores, unblind, judgments = judged_run(release, responses, tmp_path,
                                            lambda index: 1 + (index * 7) % 10)
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


def test_memorybench_export_is_scored_by_upstream_dataset_classes(release: Path,
                                                                  instances: list[dict],
                                                                  tmp_path: Path) -> None:
    """Each exported dataset names the upstream class that scores it (upstream has none for
    memspec's names): a short gold goes to DialSim's exact-or-judged accuracy, whose exact
    rule never accepts what memspec's scorer refuses; a rubric to HelloBench's checklist
    judge. The re-implemented resolution reports an unknown class, metrics the class does not
    give and a field it reads that is missing."""
    from upstream_checks import MEMORYBENCH_COMMIT, dialsim_exact, memorybench_problems

    from memspec.analysis.scoring import is_correct

    out = tmp_path / "export"
    assert run_cli("export", str(release), "--format", "memorybench", "--out",
                   str(out)).returncode == 0
    assert f"commit {MEMORYBENCH_COMMIT}" in (out / "README.md").read_text()
    registry = json.loads((out / "configs/datasets/each.json").read_text())
    by_id = {i["id"]: i for i in instances}
    classes = Counter()
    for name, entry in registry.items():
        rows = [r for split in ("train", "test")
                for r in json.loads((out / name / f"{split}.json").read_text())]
        for row in rows:
            info = json.loads(row["info"])
            answer = by_id[info["memspec_id"]]["answer"]
            assert row["input_prompt"] == json.loads(row["input_chat_messages"])[-1]["content"]
            if answer["scorer"] == "judge":
                assert entry["class_name"] == "HelloBench.HelloBench_Dataset"
                assert info["checklist"] == [{"checklist_id": 1,
                                              "checklist_content": answer["rubric"]}]
                continue
            assert entry["class_name"] == "DialSim.DialSim_Dataset"
            assert is_correct(answer, info["golden_answer"]) is True
            for wrong in answer.get("distractors", {}).values():
                assert not dialsim_exact(wrong, info["golden_answer"])
                assert not dialsim_exact(f"{wrong}.", info["golden_answer"])
        classes[entry["class_name"], tuple(entry["test_metrics"])] += 1
    assert classes == {("DialSim.DialSim_Dataset", ("accuracy",)): 9,
                       ("HelloBench.HelloBench_Dataset", ("avg_score",)): 3}
    assert memorybench_problems(out) == []
    # What upstream would refuse is reported: a class it has not, metrics the class does
    # not give, a checklist or a text prompt the class reads missing.
    judged = next(n for n, e in registry.items() if e["class_name"].startswith("HelloBench"))
    short = next(n for n, e in registry.items() if e["class_name"].startswith("DialSim"))
    registry[judged]["class_name"] = f"memspec.{judged}"
    registry[short]["test_metrics"] = ["judge_score"]
    (out / "configs/datasets/each.json").write_text(json.dumps(registry))
    rows = json.loads((out / short / "test.json").read_text())
    del rows[0]["input_prompt"]
    (out / short / "test.json").write_text(json.dumps(rows))
    problems = memorybench_problems(out)
    assert any(f"class_name 'memspec.{judged}' is no dataset class" in p for p in problems)
    assert any(f"{short}: DialSim.DialSim_Dataset gives no ['judge_score']" in p
               for p in problems)
    assert any(f"{short}/{rows[0]['test_idx']}: DialSim.DialSim_Dataset reads input_prompt"
               in p for p in problems)


def test_memorybench_satisfaction_score_only_where_feedback_carries_one(
        release: Path, tmp_path: Path) -> None:
    """The bundled feedback records hold implicit actions only (as upstream's simulated users
    give), so satisfaction_score is null; a record that carries a satisfaction value of its
    own exports it, round by round."""
    from memspec.exports.export import export_release, find_export
    from memspec.release.release_data import load_release_instances
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import find_project

    catalog = Catalog.load(find_project(REPO))
    manifest, instances = load_release_instances(release, catalog)
    fmt, _ = find_export(catalog.project, "memorybench")
    export_release(catalog.project, fmt, manifest, instances, tmp_path / "plain")
    scored = [{**i, "feedback": [{**f, "satisfaction": 1 + (f["round"] + i["group"]) % 5}
                                 for f in i["feedback"]]} for i in instances]
    export_release(catalog.project, fmt, manifest, scored, tmp_path / "scored")
    expected = {i["id"]: [f["satisfaction"] for f in i["feedback"]] for i in scored}
    seen = 0
    for path in sorted((tmp_path / "scored").glob("*/*.json")):
        plain = json.loads((tmp_path / "plain" / path.relative_to(tmp_path / "scored"))
                           .read_text())
        for row, bare in zip(json.loads(path.read_text()), plain, strict=True):
            memspec_id = json.loads(row["info"])["memspec_id"]
            assert [f["satisfaction_score"] for f in row["implicit_feedback"]] == \
                expected[memspec_id]
            assert {f["satisfaction_score"] for f in bare["implicit_feedback"]} <= {None}
            seen += len(row["implicit_feedback"])
    assert seen == sum(len(i["feedback"]) for i in instances) > 0

"""`memspec normalize`: several systems' scores normalised per dataset over all of them, as
MemoryBench's summary computes them, checked against a pandas computation written from the
upstream rules (pooled min/max and mean/population sd per dataset; 0 where max = min or
sd <= 1e-6; a partition's average of dataset means, item-weighted min-max and z means, null
for a system that lacks a dataset)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import judged_run, release_instances, run_cli
from memspec.analysis.cross_normalise import SystemValues, cross_normalise

RELEASE = "feedback-v6"

# Made-up datasets: "a" in domain x, "b" in domain x, "c" (every value alike) in domain y.
SCORES = {
    "one": {"a1": 2, "a2": 8, "a3": 5, "b1": 1, "b2": 0, "c1": 4, "c2": 4},
    "two": {"a1": 10, "a2": 3, "a3": 7, "b1": 1, "b2": 1, "c1": 4, "c2": 4},
    "three": {"a1": 6, "a2": 6, "a3": 1, "c1": 4, "c2": 4},  # never ran dataset b
}


def _instance(item: str) -> dict:
    dataset = item[0]
    return {"id": item, "family": dataset, "group": 0, "axes": {},
            "fields": {"domain": "y" if dataset == "c" else "x"},
            "analysis": {"judge_scale": [0, 10], "judge_reference": {"min": 0, "max": 10}}}


def _expected(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (system, dataset) the means, and per (domain, system) the summary, by pandas."""
    pooled = frame.groupby("dataset")["value"].agg(
        low="min", high="max", mu="mean", sigma=lambda v: float(np.std(v, ddof=0)))
    frame = frame.join(pooled, on="dataset")
    span = frame["high"] - frame["low"]
    frame["minmax"] = np.where(span > 0, (frame["value"] - frame["low"]) / span.where(span > 0),
                               0.0)
    frame["z"] = np.where(frame["sigma"] > 1e-6,
                          (frame["value"] - frame["mu"]) / frame["sigma"].where(
                              frame["sigma"] > 1e-6), 0.0)
    frame["reference"] = frame["value"] / 10
    means = frame.groupby(["system", "dataset"])[["value", "minmax", "z", "reference"]].mean()
    summary = frame.groupby(["domain", "system"]).agg(
        weighted=("minmax", "mean"), z_score=("z", "mean"))
    summary["average"] = means.join(frame.groupby("dataset")["domain"].first(),
                                    on="dataset").groupby(["domain", "system"])["minmax"].mean()
    return means, summary


def test_made_up_scores_match_a_pandas_computation_of_the_upstream_rules() -> None:
    instances = [_instance(item) for item in ("a1", "a2", "a3", "b1", "b2", "c1", "c2")]
    systems = [SystemValues(name, {k: float(v) for k, v in values.items()})
               for name, values in SCORES.items()]
    report = cross_normalise(instances, systems, "family", ["domain"],
                             {"a": "judge", "b": "judge", "c": "judge"})
    frame = pd.DataFrame([{"system": s, "item": i, "dataset": i[0], "value": float(v),
                           "domain": "y" if i[0] == "c" else "x"}
                          for s, values in SCORES.items() for i, v in values.items()])
    means, summary = _expected(frame)
    rows = {(r["system"], r["dataset"]): r for r in report["scores"]}
    assert set(rows) == set(means.index)
    for key, row in rows.items():
        assert row["average"] == pytest.approx(means.loc[key, "value"])
        assert row["minmax"] == pytest.approx(means.loc[key, "minmax"])
        assert row["z"] == pytest.approx(means.loc[key, "z"])
        assert row["reference_minmax"] == pytest.approx(means.loc[key, "reference"])
    # The constant dataset is 0 for everyone, by min-max and by z (MemoryBench's rule).
    assert {(rows[(s, "c")]["minmax"], rows[(s, "c")]["z"]) for s in SCORES} == {(0.0, 0.0)}
    stats = {d["dataset"]: d for d in report["datasets"]}
    assert stats["a"]["sd"] == pytest.approx(np.std([2, 8, 5, 10, 3, 7, 6, 6, 1]))
    assert (stats["b"]["min"], stats["b"]["max"], stats["b"]["items"]) == (0.0, 1.0, 4)
    found = {(e["value"], e["system"]): e for e in report["summaries"]}
    for (domain, system), expected in summary.iterrows():
        entry = found[(domain, system)]
        if (domain, system) == ("x", "three"):  # it lacks dataset b: no summary
            assert (entry["average"], entry["weighted_average"], entry["z_score"]) == \
                (None, None, None)
            continue
        assert entry["average"] == pytest.approx(expected["average"])
        assert entry["weighted_average"] == pytest.approx(expected["weighted"])
        assert entry["z_score"] == pytest.approx(expected["z_score"])
    # By hand, one value: system one on dataset a, min 1 max 10: (1/9 + 7/9 + 4/9) / 3.
    assert rows[("one", "a")]["minmax"] == pytest.approx(12 / 27)


def test_a_dataset_split_across_partitions_is_refused() -> None:
    from memspec.core.errors import SpecError

    instances = [_instance("a1"), {**_instance("a2"), "fields": {"domain": "z"}}]
    with pytest.raises(SpecError, match="spans several values"):
        cross_normalise(instances, [SystemValues("one", {"a1": 1.0, "a2": 2.0})], "family",
                        ["domain"])


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("normalize")
    result = run_cli("freeze", RELEASE, "--out", str(out), "--workers", "2", timeout=1200)
    assert result.returncode == 0, result.stderr
    return out / RELEASE


def _system(release: Path, tmp_path: Path, policy: str, offset: int) -> tuple[Path, Path,
                                                                               dict[str, int]]:
    """A policy's responses, judged with made-up scores: the files and the scores by id."""
    folder = tmp_path / policy
    folder.mkdir()
    responses = folder / "responses.jsonl"
    made = run_cli("respond", str(release), "--policy", policy, "--out", str(responses))
    assert made.returncode == 0, made.stderr
    scores, unblind, judgments = judged_run(release, responses, folder,
                                            lambda i: 1 + (i * 7 + offset) % 10)
    by_id = {slots["response"]: scores[request] for request, slots in unblind.items()}
    return responses, judgments, by_id


def test_judged_systems_of_a_release_normalised_as_memorybench(release: Path,
                                                               tmp_path: Path) -> None:
    instances = {i["id"]: i for i in release_instances(release)}
    runs = {policy: _system(release, tmp_path, policy, offset)
            for policy, offset in (("oracle", 3), ("memoryless", 0))}
    args = [f"{p}={r[0]}" for p, r in runs.items()]
    for policy, (_, judgments, _) in runs.items():
        args += ["--judgments", f"{policy}={judgments}", "--unblind",
                 f"{policy}={judgments.parent / 'requests.jsonl.unblind.json'}"]
    result = run_cli("normalize", str(release), *args, "--by", "domain", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    frame = pd.DataFrame([{"system": p, "item": i, "dataset": instances[i]["family"],
                           "domain": instances[i]["fields"]["domain"], "value": float(v)}
                          for p, r in runs.items() for i, v in r[2].items()])
    means, summary = _expected(frame)
    assert len(report["scores"]) == 24 and {d["metric"] for d in report["datasets"]} == {"judge"}
    for row in report["scores"]:
        key = (row["system"], row["dataset"])
        assert row["minmax"] == pytest.approx(means.loc[key, "minmax"])
        assert row["z"] == pytest.approx(means.loc[key, "z"])
        # Beside it, against the declared 1..10 reference.
        assert row["reference_minmax"] == pytest.approx((means.loc[key, "value"] - 1) / 9)
    for entry in report["summaries"]:
        expected = summary.loc[(entry["value"], entry["system"])]
        assert entry["weighted_average"] == pytest.approx(expected["weighted"])
        assert entry["z_score"] == pytest.approx(expected["z_score"])
        assert entry["average"] == pytest.approx(expected["average"])
    # Without judgments the values are the verdicts: the oracle is right everywhere.
    plain = run_cli("normalize", str(release), *[f"{p}={r[0]}" for p, r in runs.items()],
                    "--format", "csv")
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0].startswith("system,dataset,partition,metric,items,average,minmax,z,")
    oracle = [line.split(",") for line in lines[1:] if line.startswith("oracle,feedback")]
    assert len(oracle) == 12 and {row[3] for row in oracle} == {"verdict"}
    assert {row[6] for row in oracle} == {"1.0"}


def test_bad_input_is_located_and_refused(release: Path, tmp_path: Path) -> None:
    responses, judgments, _ = _system(release, tmp_path, "random", 1)
    unblind = judgments.parent / "requests.jsonl.unblind.json"
    lines = judgments.read_text().splitlines()
    lines[4] = '{"request_id": "' + json.loads(lines[4])["request_id"] + '", "score": "high"}'
    judgments.write_text("\n".join(lines) + "\n")
    both = ["a=" + str(responses), "b=" + str(responses)]
    judged = ["--judgments", f"a={judgments}", "--unblind", f"a={unblind}",
              "--judgments", f"b={judgments}", "--unblind", f"b={unblind}"]
    result = run_cli("normalize", str(release), *both, *judged)
    assert result.returncode == 2 and f"{judgments}:5:1" in result.stderr, result.stderr
    for args, says in (((f"a={responses}",), "two or more systems"),
                       ((str(responses), f"b={responses}"), "is not SYSTEM=RESPONSES"),
                       ((*both, "--judgments", f"a={judgments}"), "go together"),
                       ((*both, *judged[:4]), "every system or for none")):
        refused = run_cli("normalize", str(release), *args)
        assert refused.returncode == 2 and says in refused.stderr, refused.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(responses.read_text().replace('"response"', '"reply"', 1))
    refused = run_cli("normalize", str(release), f"a={bad}", f"b={responses}")
    assert refused.returncode == 2 and f"{bad}:1" in refused.stderr, refused.stderr

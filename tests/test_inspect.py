"""``memspec export --format inspect`` runs in inspect_ai itself, offline, with its mockllm
model answering for a reference policy: every family of every bundled release, every scorer
(``memspec score`` covers every instance; here the first few of each family go through
inspect_ai's own dataset loader, task and scorer machinery)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from conftest import LATEST_RELEASES, release_instances, run_cli
from memspec.analysis.policies import POLICIES

PER_FAMILY = 6  # the first instances of every family (memspec score covers them all)


def _key(messages: list[Any]) -> str:
    return json.dumps([[m["role"], m["content"]] if isinstance(m, Mapping) else [m.role, m.text]
                       for m in messages])


def _mock(answers: Mapping[str, str], rating: str = "7") -> Callable[..., Any]:
    """mockllm's custom output: the policy's answer to the instance whose messages these are,
    or a rating when it is asked to grade (usage preset, so no tokenizer is fetched)."""
    from inspect_ai.model import ModelOutput, ModelUsage

    def respond(messages, tools, tool_choice, config):  # noqa: ANN001 (mockllm's signature)
        first = messages[0].text
        text = rating if first.startswith("You are rating") else answers[_key(messages)]
        output = ModelOutput.from_content(model="mockllm/model", content=text)
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    return respond


def _wrong(instance: Mapping[str, Any]) -> str:
    """A plausible wrong answer: a distractor the answer names, or nothing at all."""
    distractors = instance["answer"].get("distractors", {})
    return next(iter(distractors.values()), "")


def _eval(task: str, ids: list[str], answers: Mapping[str, str], log_dir: Path) -> Any:
    from inspect_ai import eval as inspect_eval

    logs = inspect_eval(task, model="mockllm/model", model_args={"custom_outputs": _mock(answers)},
                        sample_id=ids, log_dir=str(log_dir), display="none",
                        task_args={"split": "all"})
    assert logs[0].status == "success", logs[0].error
    assert logs[0].results.total_samples == len(ids)
    return logs[0].results.scores[0].metrics


@pytest.mark.parametrize("name", LATEST_RELEASES)
def test_inspect_scores_oracle_1_and_wrong_answers_0(built_dist: Path, tmp_path: Path,
                                                     name: str, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "inspect"
    result = run_cli("export", str(built_dist / name), "--format", "inspect", "--out", str(out))
    assert result.returncode == 0, result.stderr
    instances = release_instances(built_dist / name)
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["id"] for s in samples] == [i["id"] for i in instances]
    assert all(not isinstance(v, (dict, list)) for s in samples for v in s["metadata"].values())
    design = json.loads((out / "design.json").read_text())
    # Every message kept in order; a tool's result becomes a user's message (chat APIs take a
    # tool message only in answer to the model's own call), and so does every system message
    # of a family that has one after another kind of message (providers move system messages
    # to the front); no sample has a system message after another kind.
    for sample, instance in zip(samples, instances, strict=True):
        kept = [m for phase in instance["phases"] for m in phase["messages"]]
        assert [m["content"] for m in sample["input"]] == [m["content"] for m in kept]
        moved = {"tool", "system"} if instance["family"] in design["system_as_user"] \
            else {"tool"}
        assert [m["role"] for m in sample["input"]] == [
            "user" if m["role"] in moved else m["role"] for m in kept]
        roles = "".join("s" if m["role"] == "system" else "o" for m in sample["input"])
        assert "os" not in roles
        metadata = sample["metadata"]
        assert json.loads(metadata["feedback"]) == instance.get("feedback", [])
        for key, value in instance.get("analysis", {}).items():
            shown = metadata[f"analysis_{key}"]
            assert (json.loads(shown) if isinstance(value, (dict, list)) else shown) == value

    seen: dict[str, int] = {}
    chosen = []
    for instance in instances:
        seen[instance["family"]] = seen.get(instance["family"], 0) + 1
        if seen[instance["family"]] <= PER_FAMILY:
            chosen.append(instance)
    scored = [i["id"] for i in chosen if i["answer"]["scorer"] != "judge"]
    judged = [i["id"] for i in chosen if i["answer"]["scorer"] == "judge"]
    families = {i["id"]: i["family"] for i in instances}
    assert {families[i] for i in scored + judged} == set(families.values())
    inputs = {s["id"]: _key(s["input"]) for s in samples}
    by_id = {i["id"]: i for i in instances}

    def answers(ids: list[str], policy: Callable[[Mapping[str, Any]], str]) -> dict[str, str]:
        return {inputs[i]: policy(by_id[i]) for i in ids}

    task = str(out / "task.py")
    if scored:
        oracle = answers(scored, lambda i: POLICIES["oracle"](i, 0))
        metrics = _eval(f"{task}@memspec_release", scored, oracle, tmp_path / "a")
        assert metrics["mean"].value == 1.0 and metrics["stderr"].value == 0.0
        # memspec score reads the log itself: the same items, every one right.
        report = json.loads(run_cli("score", str(built_dist / name), str(tmp_path / "a"),
                                    "--format", "json").stdout)
        # The overall row pools every scored item but a declared positive control's.
        pooled = [i for i in scored
                  if by_id[i].get("analysis", {}).get("role") != "positive_control"] or scored
        assert report["overall"]["n"] == len(pooled) and report["overall"]["missing"] == 0
        assert report["overall"]["accuracy"] == 1.0
        assert report["run"]["model"] == "mockllm/model"
        assert report["run"]["not_run"] == len(instances) - len(scored)
        metrics = _eval(f"{task}@memspec_release", scored, answers(scored, _wrong),
                        tmp_path / "b")
        assert metrics["mean"].value == 0.0
    if judged:
        anything = answers(judged, lambda i: "A reply to rate.")
        assert _eval(f"{task}@memspec_judged", judged, anything, tmp_path / "c")[
            "mean"].value == 7.0
        # Judged items of a log go to judge-requests, as those of a responses file do.
        requests = tmp_path / "requests.jsonl"
        made = run_cli("judge-requests", str(built_dist / name), str(tmp_path / "c"),
                       "--out", str(requests))
        assert made.returncode == 0, made.stderr
        assert requests.read_text().count("A reply to rate.") >= 1
    source = (out / "task.py").read_text()
    assert ("def memspec_judged" in source) == any(
        i["answer"]["scorer"] == "judge" for i in instances)
    assert ("def memspec_release" in source) == any(
        i["answer"]["scorer"] != "judge" for i in instances)


def _task_module(task: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("exported_task", task)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_inspect_export_of_a_downloaded_release(built_example: Path, tmp_path: Path) -> None:
    # A consumer with the release folder alone, outside any project, as its card tells them.
    release = tmp_path / "downloaded" / built_example.name
    shutil.copytree(built_example, release)
    out = tmp_path / "inspect"
    result = run_cli("export", str(release), "--format", "inspect", "--out", str(out),
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # Nor does the code that writes it need a project's specs.
    from memspec.exports.export_inspect import write_inspect
    from memspec.release.release_data import load_release_instances

    alone = tmp_path / "alone"
    write_inspect(*load_release_instances(release, None), alone)
    assert (alone / "samples.jsonl").read_bytes() == (out / "samples.jsonl").read_bytes()
    task = _task_module(out / "task.py")
    # A release without declared splits is one split, "test", as its card and Parquet say.
    everything = task._dataset(False, None, None)
    assert len(task._dataset(False, None, "test")) == len(everything) > 0
    with pytest.raises(ValueError, match="no programmatically scored item with "
                                         "family='example.choice.meeting_rom'.*its families: "
                                         "example.choice.meeting_room"):
        task._dataset(False, "example.choice.meeting_rom", None)
    # Asking for nothing in particular is never an error, even where it selects nothing:
    # `inspect eval task.py` runs both tasks of a release that may have no judged items.
    judged = task._dataset(True, None, None)
    assert len(judged) == sum(1 for i in release_instances(release)
                              if i["answer"]["scorer"] == "judge")


def test_inspect_export_writes_both_files_or_neither_and_never_into_the_release(
        built_example: Path, tmp_path: Path) -> None:
    release = tmp_path / built_example.name
    shutil.copytree(built_example, release)
    inside = run_cli("export", str(release), "--format", "inspect", "--out",
                     str(release / "inspect"))
    assert inside.returncode == 2 and "is inside the release" in inside.stderr
    report = run_cli("report", str(release), "--out", str(release / "report.html"))
    assert report.returncode == 2 and "is inside the release" in report.stderr
    assert run_cli("verify", str(release)).returncode == 0

    out = tmp_path / "inspect"
    (out / "task.py").mkdir(parents=True)
    blocked = run_cli("export", str(release), "--format", "inspect", "--out", str(out))
    assert blocked.returncode == 2 and "Traceback" not in blocked.stderr
    assert "task.py would be written outside" in blocked.stderr
    assert sorted(p.name for p in out.iterdir()) == ["task.py"]

    a_file = tmp_path / "taken"
    a_file.write_text("mine")
    refused = run_cli("export", str(release), "--format", "inspect", "--out", str(a_file))
    assert refused.returncode == 2 and "is a file" in refused.stderr
    assert a_file.read_text() == "mine"


#: Run in a fresh interpreter that refuses to import memspec (under any name): the exported
#: task must need inspect_ai and the standard library only. A judged pair's arms get replies
#: the mock grader rates 9 (experimental) and 3 (control).
_WITHOUT_MEMSPEC = """
import json, sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("generator", "memspec"):
            raise ImportError(name + " is not installed here")
        return None

sys.meta_path.insert(0, Refuse())
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage

def respond(messages, tools, tool_choice, config):
    text = messages[0].text
    if text.startswith("You are rating"):
        reply = "9" if "treated reply" in text else "3"
    else:
        reply = "treated reply" if "ARM-experimental" in messages[-1].text else "plain reply"
    output = ModelOutput.from_content(model="mockllm/model", content=reply)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output

logs = inspect_eval(sys.argv[1] + "@memspec_judged", model="mockllm/model",
                    model_args={"custom_outputs": respond}, log_dir=sys.argv[2],
                    display="none")
assert logs[0].status == "success", logs[0].error
print(json.dumps({k: v.value for k, v in logs[0].results.scores[0].metrics.items()}))
"""


def test_exported_task_runs_without_memspec_and_reports_the_design(
        built_dist: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    release = built_dist / next(n for n in LATEST_RELEASES if n.startswith("implicitmem"))
    out = tmp_path / "inspect"
    assert run_cli("export", str(release), "--format", "inspect", "--out",
                   str(out)).returncode == 0
    # The arm is marked in the last message so that the mock can answer by arm.
    lines = []
    for line in (out / "samples.jsonl").read_text().splitlines():
        sample = json.loads(line)
        arm = sample["metadata"].get("axis_arm")
        sample["input"][-1]["content"] += f" ARM-{arm}"
        lines.append(json.dumps(sample))
    (out / "samples.jsonl").write_text("\n".join(lines) + "\n")
    for name in ("task.py", "memspec_scoring.py", "memspec_memory.py", "memspec_tools.py"):
        assert "generator" not in (out / name).read_text().replace("generator/", "")
    result = subprocess.run([sys.executable, "-c", _WITHOUT_MEMSPEC, str(out / "task.py"),
                             str(tmp_path / "logs")], capture_output=True, text=True,
                            cwd=tmp_path, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads(result.stdout.strip().splitlines()[-1])
    assert metrics["arm=experimental"] == 9.0 and metrics["arm=control"] == 3.0
    assert metrics["arm (experimental - control)"] == 6.0
    assert metrics["mean"] == 6.0


def test_exported_scoring_decides_as_memspec_does(built_dist: Path, tmp_path: Path) -> None:
    from memspec.analysis.scoring import is_correct
    from memspec.exports.export_inspect import scoring_source

    path = tmp_path / "memspec_scoring.py"
    path.write_text(scoring_source())
    exported = _task_module(path)
    checked = 0
    for name in LATEST_RELEASES:
        for instance in release_instances(built_dist / name):
            answer = instance["answer"]
            responses = {POLICIES[p](instance, 0) for p in ("oracle", "memoryless",
                                                           "memory-follower", "position-biased")}
            responses.update(answer.get("distractors", {}).values())
            for response in sorted(r for r in responses if r is not None):
                assert exported.is_correct(answer, response) == is_correct(answer, response), \
                    (instance["id"], response)
                checked += 1
    assert checked > 10_000


def _score(value: float, unit: str, **metadata: str) -> Any:
    from inspect_ai.scorer import SampleScore, Score

    return SampleScore(score=Score(value=value), sample_id=f"{unit}-{len(metadata)}",
                       sample_metadata={"unit": unit, **metadata})


def test_task_metrics_take_the_group_as_the_unit(built_example: Path, tmp_path: Path) -> None:
    from scipy import stats

    out = tmp_path / "inspect"
    assert run_cli("export", str(built_example), "--format", "inspect", "--out",
                   str(out)).returncode == 0
    task = _task_module(out / "task.py")
    # Three groups, rotations correlated within each: the unit is the group's mean.
    scores = [_score(v, unit, axis_arm=arm) for unit, values in
              (("g1", (1, 1, 1, 0)), ("g2", (0, 0, 0, 0)), ("g3", (1, 1, 0, 1)))
              for v, arm in zip(values, ("experimental", "experimental", "control",
                                         "control"), strict=True)]
    means = [0.75, 0.0, 0.75]
    result = task.unit_mean()(scores)
    assert result["mean"] == pytest.approx(sum(means) / 3)
    assert result["stderr"] == pytest.approx(stats.sem(means))
    by_arm = task.axis_means("arm")(scores)
    assert by_arm["arm=control"] == pytest.approx(stats.tmean([0.5, 0.0, 0.5]))
    differences = [0.5, 0.0, 0.5]  # experimental - control, group by group
    paired = task.contrast("d", [{"axis_arm": "experimental"}], [{"axis_arm": "control"}])(
        scores)
    assert paired["d"] == pytest.approx(sum(differences) / 3)
    assert paired["d stderr"] == pytest.approx(stats.sem(differences))
    assert stats.ttest_rel([1, 0, 1], [0.5, 0.0, 0.5]).statistic == pytest.approx(
        paired["d"] / paired["d stderr"])


def test_a_release_with_splits_runs_its_test_split_by_default(built_dist: Path,
                                                              tmp_path: Path) -> None:
    name = next(n for n in LATEST_RELEASES if n.startswith("feedback"))
    out = tmp_path / "inspect"
    assert run_cli("export", str(built_dist / name), "--format", "inspect", "--out",
                   str(out)).returncode == 0
    task = _task_module(out / "task.py")
    instances = release_instances(built_dist / name)
    scored = [i for i in instances if i["answer"]["scorer"] != "judge"]
    default = task._dataset(False, None, None)
    assert {s.metadata["split"] for s in default} == {"test"}
    assert len(default) == sum(1 for i in scored if i["fields"]["split"] == "test")
    assert len(task._dataset(False, None, "all")) == len(scored)
    assert {s.metadata["split"] for s in task._dataset(False, None, "train")} == {"train"}

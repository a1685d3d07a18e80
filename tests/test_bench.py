"""The measuring script docs/performance.md documents runs from a checkout and reports every
measurement.

It is run small here: what it measures is speed, which no test asserts; that it runs, checks
that one and two workers and two shards write the same bytes, and writes its table and JSON
is what a user who follows that page needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_bench_runs_every_measurement_small(tmp_path: Path) -> None:
    # One run of each kind: (e)'s validate of the whole project, once cold and once warm, was
    # most of this test's time at three warm runs, which only pick the fastest of the same
    # work (what is asserted of (e) is that it ran and wrote its figures).
    results = tmp_path / "results.json"
    finished = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench.py"), "--worker-groups", "40",
         "--repeats", "2", "--rounds", "2", "--floor-groups", "5", "--rss-max", "10000",
         "--freeze-groups", "20,40", "--verify-groups", "50",
         "--verify-release", "example-v3", "--build-runs", "1", "--build-releases",
         "example-v3", "--validate-runs", "1", "--json", str(results)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600,
        env={**os.environ, "TMPDIR": str(tmp_path), "COLUMNS": "100"})
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(results.read_text())
    assert set(report) == {"machine", "a_floor", "b_workers", "c_rss", "c_freeze_rss",
                           "d_verify", "e_validate", "f_build"}
    assert report["a_floor"]["memspec_per_s"] > 0 and report["a_floor"]["floor_per_s"] > 0
    workers = report["b_workers"]
    assert workers["groups"] == 40 and workers["pairs"] == 2
    assert workers["identical_bytes"] is True  # 1 worker, 2 workers, and two shards joined
    assert workers["output_mb"] >= 0 and workers["speedup"] > 0
    assert list(report["c_rss"]["sizes"]) == ["10000"]
    assert report["c_rss"]["sizes"]["10000"]["bytes"] > 0
    assert set(report["c_freeze_rss"]["groups"]) == {"20", "40"}
    assert report["d_verify"]["large"]["bytes"] > 0
    assert report["d_verify"]["bundled"]["release"] == "example-v3"
    assert report["e_validate"]["seconds"] > 0
    build = report["f_build"]
    assert build["releases"] == ["example-v3"] and build["runs"] == 1
    assert build["seconds"] > 0 and build["cpu_seconds"] > 0 and build["seconds_cold_cache"] > 0
    for row in ("(a)", "(b) 40 groups", "(c) peak RSS", "(d)", "(e) memspec validate",
                "(f) memspec build"):
        assert row in finished.stdout
    # The temporary folder it worked in, gigabytes in a full run, is gone.
    assert not list(tmp_path.glob("memspec-bench-*"))


def test_bench_keeps_the_measurements_it_did_not_take(tmp_path: Path) -> None:
    """A run of some measurements (--only) replaces theirs in the JSON file and keeps the
    others, so that the file holds the latest of every one."""
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"a_floor": {"ratio": 0.8}, "f_build": {"seconds": 99}}))
    finished = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench.py"), "--only", "f", "--build-runs", "1",
         "--build-releases", "example-v3", "--json", str(results)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600,
        env={**os.environ, "TMPDIR": str(tmp_path), "COLUMNS": "100"})
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(results.read_text())
    assert report["a_floor"] == {"ratio": 0.8}
    assert report["f_build"]["seconds"] != 99 and report["f_build"]["runs"] == 1
    assert not list(tmp_path.glob("memspec-bench-*"))


def test_the_analysis_bench_times_commands_against_their_baselines(tmp_path: Path) -> None:
    # The start-up commands and validate of one family, one run each: each figure comes with
    # its baseline's, the ratio, the load and the machine, kept beside earlier results.
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"a_floor": {"ratio": 1.0}}))
    finished = subprocess.run(
        [sys.executable, str(REPO / "bench" / "analysis.py"), "--only", "startup,validate",
         "--runs", "1", "--json", str(results)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600,
        env={**os.environ, "TMPDIR": str(tmp_path)})
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(results.read_text())
    assert report["a_floor"] == {"ratio": 1.0}
    figures = report["analysis"]
    assert {"memspec --version", "memspec --help", "validate one family",
            "taken_on"} <= set(figures)
    for name in ("memspec --version", "memspec --help", "validate one family"):
        figure = figures[name]
        assert figure["cpu_s"] > 0 and figure["baseline_cpu_s"] > 0
        assert figure["ratio_to_baseline"] > 0 and len(figure["load_average"]) == 3
    assert "commit" in figures["taken_on"]


def test_the_hand_written_floor_writes_instances_of_memspecs_shape(tmp_path: Path) -> None:
    # The script a user would write: the same keys, phases and answer fields as memspec's
    # instances of the family, one a group.
    out = tmp_path / "floor.jsonl"
    subprocess.run([sys.executable, str(REPO / "bench" / "stock_jinja_floor.py"), "--groups",
                    "3", "--out", str(out)], check=True, timeout=300)
    ours = subprocess.run([sys.executable, "-m", "memspec.cli", "generate",
                           "implicitmem.procedural.cache_key_prefix", "--groups", "1"],
                          cwd=REPO, capture_output=True, text=True, check=True, timeout=300)
    theirs = [json.loads(line) for line in out.read_text().splitlines()]
    memspec = json.loads(ours.stdout.splitlines()[0])
    assert [i["group"] for i in theirs] == [0, 1, 2]
    for instance in theirs:
        assert sorted(instance) == sorted(memspec)
        assert sorted(instance["answer"]) == sorted(memspec["answer"])
        assert [(p["phase"], len(p["messages"])) for p in instance["phases"]] == \
            [(p["phase"], len(p["messages"])) for p in memspec["phases"]]


def test_the_analysis_bench_doubles_a_release_and_judges_each_command(tmp_path: Path) -> None:
    # The linearity measurement on the smallest bundled release: every analysis command is
    # timed on the release and on a draft of it at twice the groups, the ratio judged
    # against 2.2; a missed target is printed as FAILED (and, with --check, exit status 1).
    results = tmp_path / "results.json"
    finished = subprocess.run(
        [sys.executable, str(REPO / "bench" / "analysis.py"), "--only", "linear",
         "--release", "example-v5", "--runs", "1", "--json", str(results)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=900,
        env={**os.environ, "TMPDIR": str(tmp_path)})
    assert finished.returncode == 0, finished.stderr[-3000:]
    linear = json.loads(results.read_text())["analysis"]["linear"]
    assert set(linear) == {"score", "report", "audit", "verify"}
    for command, entry in linear.items():
        assert entry["cpu_s_doubled"] > 0 and entry["cpu_s_release"] > 0
        assert entry["met"] == (entry["ratio"] <= 2.2)
        shown = "met" if entry["met"] else "FAILED"
        assert f"{command} of twice the groups: " in finished.stdout
        assert f"(target <= 2.2: {shown};" in finished.stdout
    assert ("FAILED targets" in finished.stdout) == (not all(e["met"] for e in linear.values()))
    assert not list(tmp_path.glob("memspec-bench-*"))

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
    results = tmp_path / "results.json"
    finished = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench.py"), "--worker-groups", "40",
         "--repeats", "2", "--rounds", "2", "--floor-groups", "5", "--rss-max", "10000",
         "--freeze-groups", "20,40", "--verify-groups", "50",
         "--verify-release", "example-v3", "--build-runs", "1", "--build-releases",
         "example-v3", "--json", str(results)],
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

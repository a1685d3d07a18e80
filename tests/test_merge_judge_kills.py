"""``merge`` and ``judge-requests`` killed with SIGKILL at any point (issue 50), as real
processes: a killed merge leaves no release or the whole one (it is put in place as a freeze
puts its release), and a killed judge-requests leaves each of its two files whole, old or new,
the pair mixed only while the journal that the next run completes stands beside them. The
next run works and removes what a killed one left. Killed at fractions of a run's duration,
``$MEMSPEC_RACE_ROUNDS`` rounds (1 in the suite)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from test_budgets import judged_release  # noqa: F401 (a fixture)
from test_crash_safety import NAME, _release_file

from conftest import run_cli, tree_bytes

HIDDEN = ".memspec-tmp-"
FRACTIONS = tuple(step / 10 for step in range(1, 11))
ROUNDS = int(os.environ.get("MEMSPEC_RACE_ROUNDS", "1"))


def _timed(command: Sequence[str]) -> float:
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return time.monotonic() - start


def _killed(command: Sequence[str], seconds: float) -> None:
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    process.send_signal(signal.SIGKILL)
    process.wait()


def _visible(folder: Path) -> dict[str, bytes]:
    return {name: data for name, data in tree_bytes(folder).items()
            if not any(part.startswith(HIDDEN) for part in Path(name).parts)}


def test_a_merge_killed_anywhere_leaves_no_release_or_the_whole_one(
        project_copy: Path, tmp_path: Path) -> None:
    _release_file(project_copy, groups=24)
    shards = []
    for index in range(2):
        result = run_cli("freeze", NAME, "--shard", f"{index}/2", "--out",
                         str(tmp_path / "shards"), root=project_copy)
        assert result.returncode == 0, result.stderr
        shards.append(str(tmp_path / "shards" / f"{NAME}.shard-{index}-of-2"))
    command = [sys.executable, "-m", "memspec.cli", "--root", str(project_copy), "merge",
               *shards, "--out"]
    seconds = _timed([*command, str(tmp_path / "reference")])
    whole = tree_bytes(tmp_path / "reference" / NAME)
    manifest = project_copy / "manifests" / f"{NAME}.json"
    committed = manifest.read_bytes()
    outcomes = {"none": 0, "whole": 0}
    for round_ in range(ROUNDS):
        out = tmp_path / f"out-{round_}"
        for fraction in FRACTIONS:
            _killed([*command, str(out)], fraction * seconds)
            release = out / NAME
            if release.exists():
                assert tree_bytes(release) == whole, f"killed at {fraction}: a partial release"
                outcomes["whole"] += 1
            else:
                outcomes["none"] += 1
            assert manifest.read_bytes() == committed
            if out.exists():
                assert _visible(out).keys() <= {f"{NAME}/{n}" for n in whole}
        result = run_cli("merge", *shards, "--out", str(out), root=project_copy)
        assert result.returncode == 0, result.stderr
        assert tree_bytes(out / NAME) == whole
        assert [p.name for p in out.iterdir()] == [NAME], "a killed merge's leftovers remain"
    assert outcomes["none"] >= 1, outcomes  # some kills came before the release was in place


def test_judge_requests_killed_anywhere_leave_whole_files(
        judged_release: tuple[Path, Path, Path], tmp_path: Path) -> None:  # noqa: F811
    root, release, responses = judged_release
    out = tmp_path / "judging"
    out.mkdir()
    requests = out / "requests.jsonl"
    unblind = out / "requests.jsonl.unblind.json"

    # The old requests judge other responses (each one's text changed, the first left out),
    # so that each of the two files differs.
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text("".join(json.dumps({**row, "response": f"{row['response']} (earlier)"})
                               + "\n" for row in map(json.loads, responses.read_text()
                                                     .splitlines()[1:])))

    def command(seed: int) -> list[str]:
        answers = earlier if seed == 1 else responses
        return [sys.executable, "-m", "memspec.cli", "--root", str(root), "judge-requests",
                str(release), str(answers), "--out", str(requests), "--seed", str(seed)]

    _timed(command(2))
    new = (requests.read_bytes(), unblind.read_bytes())
    seconds = _timed(command(1))
    old = (requests.read_bytes(), unblind.read_bytes())
    assert old[0] != new[0] and old[1] != new[1]
    for _ in range(ROUNDS):
        for fraction in FRACTIONS:
            _timed(command(1))  # the old pair, whole
            _killed(command(2), fraction * seconds)
            now = (requests.read_bytes(), unblind.read_bytes())
            assert now[0] in (old[0], new[0]) and now[1] in (old[1], new[1]), \
                f"killed at {fraction}: a file partly written"
            if now not in (old, new):  # mixed: only while the journal to complete it stands
                assert any(p.name.startswith(HIDDEN) for p in out.iterdir()), \
                    f"killed at {fraction}: a mixed pair the next run cannot complete"
        _timed(command(2))
        assert (requests.read_bytes(), unblind.read_bytes()) == new
        assert sorted(p.name for p in out.iterdir()) == [requests.name, unblind.name]

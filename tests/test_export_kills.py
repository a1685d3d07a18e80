"""An export killed with SIGKILL at any point (issue 50) leaves its folder as the old complete
export or the new complete one, never a mix: the new one is built in a hidden sibling and
swapped in by one exchange of names. The next export into the folder works, and removes what
a killed one left beside it. Real processes, killed at fractions of a run's duration and the
moment its staging folder appears, ``$MEMSPEC_RACE_ROUNDS`` rounds (1 in the suite)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_crash_safety import NAME, _release_file
from test_export import FLAT

from conftest import run_cli, tree_bytes

HIDDEN = ".memspec-tmp-"
FRACTIONS = tuple(step / 12 for step in range(1, 13))
ROUNDS = int(os.environ.get("MEMSPEC_RACE_ROUNDS", "1"))
#: The old export: the same files as ``FLAT``'s, other bytes in each.
OLD = FLAT.replace("export: flat", "export: flat_old").replace(
    'count: "records | length"', 'count: "records | length + 1000"').replace(
    'file: {items: "records"}', 'file: {items: "records", old: "true"}')


@pytest.fixture
def release(project_copy: Path, tmp_path: Path) -> Path:
    _release_file(project_copy, groups=30)
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    (project_copy / "specs" / "exports" / "flat.yaml").write_text(FLAT)
    (project_copy / "specs" / "exports" / "flat_old.yaml").write_text(OLD)
    out = tmp_path / "dist"
    result = run_cli("freeze", NAME, "--out", str(out), root=project_copy)
    assert result.returncode == 0, result.stderr
    return out / NAME


def _export(project: Path, release: Path, fmt: str, out: Path) -> None:
    result = run_cli("export", str(release), "--format", fmt, "--out", str(out), root=project)
    assert result.returncode == 0, result.stderr


def _left_beside(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(HIDDEN))


def test_an_export_killed_anywhere_leaves_the_old_export_or_the_new(
        release: Path, project_copy: Path, tmp_path: Path) -> None:
    old_out, new_out = tmp_path / "old", tmp_path / "new"
    _export(project_copy, release, "flat_old", old_out)
    start = time.monotonic()
    _export(project_copy, release, "flat", new_out)
    seconds = time.monotonic() - start
    old, new = tree_bytes(old_out), tree_bytes(new_out)
    assert old.keys() == new.keys() and all(old[k] != new[k] for k in old)
    command = [sys.executable, "-m", "memspec.cli", "--root", str(project_copy), "export",
               str(release), "--format", "flat", "--out"]
    seen = {"old": 0, "new": 0}
    for round_ in range(ROUNDS):
        out = tmp_path / "exports" / f"round-{round_}"
        out.parent.mkdir(exist_ok=True)
        kills: list[float | None] = [*FRACTIONS, None]  # None: once its staging folder exists
        for when in kills:
            _export(project_copy, release, "flat_old", out)  # the old export, whole
            process = subprocess.Popen([*command, str(out)], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if when is None:
                deadline = time.monotonic() + 60
                while not _left_beside(out) and process.poll() is None:
                    assert time.monotonic() < deadline
                    time.sleep(0.001)
            else:
                time.sleep(when * seconds)
            process.send_signal(signal.SIGKILL)
            process.wait()
            now = tree_bytes(out)
            assert now in (old, new), f"killed at {when}: the folder mixes old and new files"
            seen["old" if now == old else "new"] += 1
        _export(project_copy, release, "flat", out)
        assert tree_bytes(out) == new, "the export after the kills is not whole"
        assert _left_beside(out) == [], "a killed export's leftovers were not removed"
    assert seen["old"] >= 1, seen  # some kills came before the swap


def test_an_export_keeps_the_files_of_its_folder_it_does_not_write(
        release: Path, project_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "mine.txt").write_text("kept\n")
    _export(project_copy, release, "flat_old", out)
    _export(project_copy, release, "flat", out)
    assert (out / "notes" / "mine.txt").read_text() == "kept\n"
    assert _left_beside(out) == []

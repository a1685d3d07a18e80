"""An export killed with SIGKILL at any point (issue 50) leaves no file partly written, and
the next export into the same folder completes one that was killed while it moved its files
into place, cleans up after any other, and ends with the whole export."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_export import FLAT

from conftest import run_cli, tree_bytes

HIDDEN = ".memspec-tmp-"
FRACTIONS = (0.2, 0.4, 0.55, 0.7, 0.8, 0.9, 0.95, 1.0)
ROUNDS = int(os.environ.get("MEMSPEC_RACE_ROUNDS", "1"))


def _visible(out: Path) -> dict[str, bytes]:
    return {name: data for name, data in tree_bytes(out).items()
            if not any(part.startswith(HIDDEN) for part in Path(name).parts)} \
        if out.is_dir() else {}


def test_an_export_killed_anywhere_leaves_whole_files_and_the_next_completes(
        built_example: Path, project_copy: Path, tmp_path: Path) -> None:
    (project_copy / "specs" / "exports").mkdir(exist_ok=True)
    (project_copy / "specs" / "exports" / "flat.yaml").write_text(FLAT)
    command = [sys.executable, "-m", "memspec.cli", "--root", str(project_copy), "export",
               str(built_example), "--format", "flat", "--out"]
    reference = tmp_path / "reference"
    start = time.monotonic()
    done = subprocess.run([*command, str(reference)], capture_output=True, text=True)
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    whole = tree_bytes(reference)
    out = tmp_path / "out"
    for _ in range(ROUNDS):
        for fraction in FRACTIONS:
            process = subprocess.Popen([*command, str(out)], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(fraction * seconds)
            process.send_signal(signal.SIGKILL)
            process.wait()
            for name, data in _visible(out).items():
                assert data == whole.get(name), f"{name} partly written (killed at {fraction})"
        result = run_cli("export", str(built_example), "--format", "flat", "--out", str(out),
                         root=project_copy)
        assert result.returncode == 0, result.stderr
        assert tree_bytes(out) == whole, "the export after the kills is not whole"

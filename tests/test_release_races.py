"""Freezes and verifies of one release at once, run as real processes (issue 50): two freezes
of a release refuse each other whatever folders they write to, with a clear message, by a
lock the kernel lets go of when its holder dies (a SIGKILLed freeze leaves no lock behind);
a verify run while a freeze replaces the release waits for it and sees the old release or
the new one whole, never a folder swapped in midway.

Each test loops over ``ROUNDS`` rounds within one bounded run (``$MEMSPEC_RACE_ROUNDS`` sets
it: 50 in a row were run once by hand; the suite keeps a few, as each round is a freeze of a
couple of seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_crash_safety import NAME, _command, _hidden, _release_file

from conftest import run_cli, tree_bytes

ROUNDS = int(os.environ.get("MEMSPEC_RACE_ROUNDS", "3"))
REFUSED = f"another memspec freeze of {NAME} is running in this project"


@pytest.fixture
def project(project_copy: Path) -> Path:
    _release_file(project_copy, groups=12)
    result = run_cli("freeze", NAME, root=project_copy)
    assert result.returncode == 0, result.stderr
    return project_copy


def _start(project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*_command(project), *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for(condition: object, process: subprocess.Popen[str], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and process.poll() is None:  # type: ignore[operator]
        assert time.monotonic() < deadline, "the freeze never got there"
        time.sleep(0.002)


def test_two_freezes_of_one_release_refuse_each_other(project: Path, tmp_path: Path) -> None:
    out = project / "dist"
    for round_ in range(ROUNDS):
        first = _start(project)
        # Once its staging folder exists, the first freeze holds the release's lock.
        _wait_for(lambda: bool(_hidden(out)), first)
        other = tmp_path / f"elsewhere-{round_}"
        second = run_cli("freeze", NAME, "--out", str(other), root=project)
        assert first.wait(timeout=120) == 0, first.stderr.read()  # type: ignore[union-attr]
        if second.returncode == 0:  # the first one had already finished: no race this round
            continue
        assert second.returncode == 2, second.stderr
        assert REFUSED in second.stderr, second.stderr
        assert not other.exists() or not any(other.iterdir()), "the refused freeze wrote"


_HOLD = """
import os, signal, sys
from pathlib import Path
from memspec.release.release_atomic import release_lock
with release_lock(Path(sys.argv[1]), "held", "held"):
    print("held", flush=True)
    signal.pause()
"""


def test_a_killed_freeze_leaves_no_lock_behind(project: Path) -> None:
    spec = project / "specs/releases" / f"{NAME}.yaml"
    for _ in range(ROUNDS):
        holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(spec)],
                                  stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        refused = run_cli("freeze", NAME, root=project)
        assert refused.returncode == 2 and REFUSED in refused.stderr, refused.stderr
        holder.kill()  # SIGKILL: no handler runs; the kernel drops the lock
        holder.wait()
        result = run_cli("freeze", NAME, root=project)
        assert result.returncode == 0, result.stderr


def test_a_verify_during_a_freeze_sees_a_whole_release(project: Path) -> None:
    """Freezes over the release (a new folder swapped in each time) race verifies of it: each
    verify passes, reading the release before the freeze or after it."""
    release = project / "dist" / NAME
    whole = tree_bytes(release)
    for _ in range(ROUNDS):
        freeze = _start(project)
        verifies = 0
        while freeze.poll() is None:
            result = run_cli("verify", str(release), root=project)
            assert result.returncode == 0, result.stdout + result.stderr
            verifies += 1
        assert freeze.returncode == 0, freeze.stderr.read()  # type: ignore[union-attr]
        assert verifies >= 1
        assert tree_bytes(release) == whole

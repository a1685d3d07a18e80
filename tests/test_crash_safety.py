"""An interrupted freeze leaves nothing partial: `memspec freeze` killed with SIGKILL at many
points of its run leaves either no release and no manifest, or a complete release that
`memspec verify` accepts; and the next freeze completes and cleans up after it.

Each test freezes a release of a couple of seconds once to completion (its duration and its
bytes are the reference), then kills freezes of it at fractions of that duration and at the
moments the last steps begin (seen on disk: the staging folder, the seal, the release moved
into place), then freezes once more to completion. Killed runs follow one another in the same
folders, so each also starts from whatever the one before it left behind. The kill points
are gone through ``$MEMSPEC_RACE_ROUNDS`` times (1 in the suite).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from conftest import run_cli, tree_bytes
from memspec.release.verify import verify_release
from memspec.spec.catalog import Catalog
from memspec.spec.project import Project

NAME = "example-v9"
HIDDEN = ".memspec-tmp-"
#: Kill points as fractions of the reference run's duration (which includes start-up).
FRACTIONS = (0.15, 0.3, 0.45, 0.6, 0.75, 0.9)
ROUNDS = int(os.environ.get("MEMSPEC_RACE_ROUNDS", "1"))


def _release_file(project: Path, groups: int = 30) -> None:
    """A release of two families, large enough that a freeze takes a couple of seconds."""
    text = (project / "specs/releases/example-v1.yaml").read_text()
    text = text.replace("version: v1", "version: v9")
    # The priming family's control arm has few distinct texts; the other two scale.
    text = text.replace("  - family: example.priming.harbour_fog\n    groups: 12\n", "")
    assert "harbour_fog" not in text and text.count("groups: 12") == 2
    (project / "specs/releases/example-v9.yaml").write_text(
        text.replace("groups: 12", f"groups: {groups}"))


def _command(project: Path) -> list[str]:
    return [sys.executable, "-m", "memspec.cli", "--root", str(project), "freeze", NAME]


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(HIDDEN)) \
        if folder.is_dir() else []


def _staged(out: Path, file: str) -> Callable[[], bool]:
    """True once a staging folder of this run holds ``file``."""
    return lambda: any((out / name / file).exists() for name in _hidden(out)
                       if "-old-" not in name)


def _swapped(release: Path) -> Callable[[], bool]:
    """True once another folder stands at ``release`` than stood there when this was made."""
    before = release.stat().st_ino

    def swapped() -> bool:
        try:
            return release.stat().st_ino != before
        except FileNotFoundError:  # between two renames, where the system cannot swap
            return True

    return swapped


def _kill(project: Path, when: float | Callable[[], bool], limit: float) -> int:
    """Start a freeze and SIGKILL it after ``when`` seconds, or as soon as ``when()`` holds
    (polled every millisecond, for at most ``limit`` seconds); its exit status."""
    process = subprocess.Popen(_command(project), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if callable(when):
        deadline = time.monotonic() + limit
        while not when() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
    else:
        time.sleep(when)
    process.send_signal(signal.SIGKILL)
    return process.wait()


class Reference:
    """A complete freeze of the release: its duration, tree and manifest."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.out = project / "dist"
        self.release = self.out / NAME
        self.manifest = project / "manifests" / f"{NAME}.json"
        start = time.monotonic()
        result = subprocess.run(_command(project), capture_output=True, text=True,
                                stdin=subprocess.DEVNULL)
        self.seconds = time.monotonic() - start
        assert result.returncode == 0, result.stderr
        self.tree = tree_bytes(self.release)
        self.manifest_bytes = self.manifest.read_bytes()
        self.catalog = Catalog.load(Project(project))

    def kill_points(self) -> list[tuple[str, float | Callable[[], bool]]]:
        """Every kill point, ``ROUNDS`` times over (each label says its round)."""
        once = [*((f"{f:.0%} of {self.seconds:.1f} s", f * self.seconds) for f in FRACTIONS),
                ("staging folder made", lambda: bool(_hidden(self.out))),
                ("manifest.json staged", _staged(self.out, "manifest.json")),
                ("SHA256SUMS staged", _staged(self.out, "SHA256SUMS")),
                ("release in place", self.release.exists)]
        return [(f"{label} (round {round_ + 1})", when)
                for round_ in range(ROUNDS) for label, when in once]

    def assert_whole(self, label: str) -> None:
        report = verify_release(self.release, self.catalog)
        assert report.ok, f"{label}: {[str(p) for p in report.problems]}"
        assert tree_bytes(self.release) == self.tree, f"{label}: other bytes"

    def visible(self) -> list[str]:
        return sorted(p.name for p in self.out.iterdir() if not p.name.startswith(HIDDEN)) \
            if self.out.is_dir() else []

    def finish(self, outcomes: Counter[str]) -> None:
        """A freeze after all the kills completes, and leaves nothing hidden behind."""
        result = run_cli("freeze", NAME, root=self.project)
        assert result.returncode == 0, f"{result.stderr}\n(outcomes: {dict(outcomes)})"
        self.assert_whole("after the last freeze")
        assert self.manifest.read_bytes() == self.manifest_bytes
        assert self.visible() == [NAME] and _hidden(self.out) == []
        assert _hidden(self.manifest.parent) == [], "temporary manifests left behind"


def test_a_first_freeze_killed_anywhere_leaves_nothing_or_everything(
        project_copy: Path) -> None:
    _release_file(project_copy)
    ref = Reference(project_copy)
    outcomes: Counter[str] = Counter()
    for label, when in ref.kill_points():
        # A first freeze: no release, no committed manifest (leftovers of the last kill stay).
        shutil.rmtree(ref.release, ignore_errors=True)
        ref.manifest.unlink(missing_ok=True)
        _kill(project_copy, when, 4 * ref.seconds)
        assert set(ref.visible()) <= {NAME}, f"killed at {label}: {ref.visible()}"
        if not ref.release.exists():
            assert not ref.manifest.exists(), f"killed at {label}: a manifest, no release"
            outcomes["nothing"] += 1
        elif ref.manifest.exists():
            assert ref.manifest.read_bytes() == ref.manifest_bytes, f"killed at {label}"
            ref.assert_whole(f"killed at {label}")
            outcomes["complete"] += 1
        else:
            # Between the release's rename and the manifest's, the next system call: the
            # release is whole and seals itself with the manifest about to be committed.
            assert verify_release(ref.release, None).ok, f"killed at {label}"
            assert (ref.release / "manifest.json").read_bytes() == ref.manifest_bytes
            outcomes["between the two renames"] += 1
    assert sum(outcomes.values()) == len(ref.kill_points())
    ref.finish(outcomes)


def test_a_freeze_over_a_release_killed_anywhere_keeps_it_whole(project_copy: Path) -> None:
    _release_file(project_copy)
    ref = Reference(project_copy)
    outcomes: Counter[str] = Counter()
    for label, when in ref.kill_points():
        if label.startswith("release in place"):
            # It always is here: kill once the new one has been swapped in, while the old one
            # is being removed.
            when = _swapped(ref.release)
        code = _kill(project_copy, when, 4 * ref.seconds)
        # The committed manifest is never rewritten, and the release never goes missing or
        # partial, whether the kill came before, during or after the swap.
        assert ref.manifest.read_bytes() == ref.manifest_bytes, f"killed at {label}"
        assert ref.visible() == [NAME], f"killed at {label}: {ref.visible()}"
        ref.assert_whole(f"killed at {label}")
        outcomes["killed" if code == -signal.SIGKILL else "finished"] += 1
    ref.finish(outcomes)
    assert os.listdir(ref.out) == [NAME]

"""The bytes of a release do not depend on the machine's environment: time zone, locale (an
ASCII one, Turkish, C.UTF-8), umask, working folder, hash seed, the integer printing limit.

File modes follow the umask, as for any file a program writes (cp, git checkout, tar for a
user): memspec does not widen what the user's umask keeps private (a held-out split may be
private until it is published). What it guarantees is that every file of a release gets the
mode a plain new file gets (0o666 & ~umask, no execute bit) and every folder 0o777 & ~umask,
the same for all of them (no file stays 0o600 because a temporary-file API made it), and that
bytes, manifest and SHA256SUMS are identical whatever the umask. `sha256sum -c` and
`memspec verify` check bytes, not modes.

scripts/drift.py runs the same drifts over every bundled release, and builds under each
Python that pyenv has.
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import LATEST_RELEASES, REPO, run_cli, tree_bytes

#: One build per drift; the umask is set for the process, the rest through its environment.
DRIFTS: list[tuple[int, dict[str, str]]] = [
    # An ASCII-only locale, with Python's UTF-8 coercion off: files and streams are ASCII.
    (0o022, {"TZ": "UTC", "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0",
             "PYTHONHASHSEED": "0", "PYTHONINTMAXSTRDIGITS": "640"}),
    (0o077, {"TZ": "Pacific/Kiritimati", "LC_ALL": "tr_TR.UTF-8", "PYTHONHASHSEED": "12345"}),
    (0o002, {"TZ": "America/St_Johns", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "random",
             "PYTHONUTF8": "1"}),
]


@pytest.fixture(scope="module")
def turkish(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """LOCPATH with tr_TR.UTF-8 compiled into it (few machines have it installed), checked to
    take effect; nothing if localedef or its sources are missing (the drift then runs in the C
    locale, and a warning says so)."""
    folder = tmp_path_factory.mktemp("locales")
    localedef = shutil.which("localedef")
    if localedef:
        subprocess.run([localedef, "-i", "tr_TR", "-f", "UTF-8", str(folder / "tr_TR.UTF-8")],
                       capture_output=True)
    env = {"LOCPATH": str(folder), "LC_ALL": "tr_TR.UTF-8"}
    probe = subprocess.run(
        [sys.executable, "-c", "import locale; print(locale.setlocale(locale.LC_ALL, ''))"],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env})
    if probe.stdout.strip() != "tr_TR.UTF-8":
        warnings.warn("tr_TR.UTF-8 could not be made: the Turkish drift runs in the C locale",
                      stacklevel=1)
        return {}
    return {"LOCPATH": str(folder)}


def _instances(release: str) -> int:
    """The instance count of a bundled release, from its committed manifest."""
    manifest = json.loads((REPO / "manifests" / f"{release}.json").read_text())
    return int(manifest["counts"]["instances"])


def _modes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix() + ("/" if p.is_dir() else ""):
            stat.S_IMODE(p.stat().st_mode) for p in [folder, *folder.rglob("*")]}


def test_build_is_byte_identical_under_environment_drift(tmp_path: Path, built_dist: Path,
                                                          turkish: dict[str, str]) -> None:
    # The session's build is the first; each drift builds the newest version of every release
    # again (earlier versions share their data files), into the same folder the second time
    # round, so this also covers "twice in a row".
    reference = {name: tree_bytes(built_dist / name) for name in LATEST_RELEASES}
    out = tmp_path / "out"
    # The largest release (most of the time, none of its code its own) is built under the
    # Turkish drift only; scripts/drift.py builds every release under every drift.
    largest = max(LATEST_RELEASES, key=_instances)
    for index, (umask, env) in enumerate(DRIFTS):
        turkish_drift = env["LC_ALL"].startswith("tr_TR")
        if turkish_drift:
            env = {**env, **turkish}
        names = [n for n in LATEST_RELEASES if n != largest or turkish_drift]
        workdir = tmp_path / f"cwd{index}"
        workdir.mkdir()
        result = run_cli("--root", str(REPO), "build", *names, "--out", str(out),
                         env=env, cwd=workdir, umask=umask)
        assert result.returncode == 0, result.stderr
        for name in names:
            assert tree_bytes(out / name) == reference[name], f"{name} changed under {env}"
            modes = _modes(out / name)
            wrong = {path: oct(mode) for path, mode in modes.items()
                     if mode != (0o777 if path.endswith("/") else 0o666) & ~umask}
            assert not wrong, f"{name} under umask {umask:04o}: {wrong}"
        assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []

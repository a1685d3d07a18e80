"""A consumer's environment, which cannot cheat: a virtual environment in which memspec cannot
be imported (its interpreter started isolated, with no PYTHONPATH, and the machine's
third-party packages reached through a plain path entry, which runs none of their ``.pth``
hooks, so memspec's editable install is not seen; the check script refuses to run if
``memspec`` or ``generator`` imports). A built release is copied out of the project and every
loader reads the copy: ``datasets`` (every config), pandas, polars and duckdb (every value
compared with the JSONL), mlcroissant (validated, every record read), the exported inspect
task with mockllm offline, and the re-implemented upstream checks on the MemoryBench and
ImplicitMemBench exports. On the bundled releases, test_loaders runs ``datasets`` and
mlcroissant in this same environment (``clean_python``), with more to compare, so they are
not run here a second time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import LATEST_RELEASES, run_clean, run_cli

HERE = Path(__file__).parent


def _consumer(python: Path, folder: Path, *args: str) -> subprocess.CompletedProcess:
    return run_clean(python, [str(folder / "consumer_check.py"), *args], folder,
                     folder / "home")


def _prepared(release: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """A folder outside the project with a copy of the release, its exports and the check
    scripts; the arguments of the check script."""
    folder = tmp_path / "consumer"
    (folder / "home").mkdir(parents=True)
    copy = folder / release.name
    shutil.copytree(release, copy)
    for script in ("consumer_check.py", "upstream_checks.py"):
        shutil.copy(HERE / script, folder / script)
    args = [str(copy)]
    paradigms = {info["paradigm"] for info in json.loads(
        (copy / "manifest.json").read_text())["counts"]["families"].values()}
    for fmt, prefix in (("inspect", ""), ("memorybench", "feedback."),
                        ("implicitmembench", "implicitmem.")):
        if prefix and not all(p.startswith(prefix) for p in paradigms):
            args.append("-")
            continue
        out = folder / fmt
        result = run_cli("export", str(copy), "--format", fmt, "--out", str(out))
        assert result.returncode == 0, result.stderr
        args.append(str(out))
    return folder, args


@pytest.mark.parametrize("name", LATEST_RELEASES)
def test_a_consumer_without_memspec_gets_every_release_whole(
        clean_python: Path, built_dist: Path, tmp_path: Path, name: str) -> None:
    folder, args = _prepared(built_dist / name, tmp_path)
    result = _consumer(clean_python, folder, "--without=datasets,croissant", *args)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    for loader in ("pandas", "polars", "duckdb"):
        assert f"ok {loader}: " in result.stdout
    assert "ok inspect" in result.stdout


def test_a_consumer_without_memspec_gets_a_typed_release_whole(
        clean_python: Path, typed_release: Path, tmp_path: Path) -> None:
    release = typed_release  # the session's one freeze of the mix (copied below)
    rows = sum(len(path.read_text(encoding="utf-8").splitlines())
               for path in (release / "data").glob("*.jsonl"))
    folder, args = _prepared(release, tmp_path)
    checked = _consumer(clean_python, folder, *args)
    assert checked.returncode == 0, (checked.stdout + checked.stderr)[-4000:]
    assert "ok datasets" in checked.stdout and "ok croissant" in checked.stdout
    # Newest layout: every message a record of its family's <family>_messages record set.
    assert "ok croissant: " in checked.stdout and " (0 messages)" not in checked.stdout
    assert rows > 200 and f"ok polars: {rows} rows equal to the JSONL" in checked.stdout


def test_the_clean_environment_cannot_import_memspec(clean_python: Path,
                                                     tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([str(clean_python), "-I", "-c",
                            "import importlib.util as u; import datasets, polars, duckdb, "
                            "mlcroissant, inspect_ai; "
                            "print(u.find_spec('generator'), u.find_spec('memspec'))"],
                           capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.strip() == "None None"

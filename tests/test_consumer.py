"""A consumer's environment, which cannot cheat: a virtual environment in which memspec cannot
be imported (its interpreter started isolated, with no PYTHONPATH, and the machine's
third-party packages reached through a plain path entry, which runs none of their ``.pth``
hooks, so memspec's editable install is not seen; the check script refuses to run if
``memspec`` or ``generator`` imports). A built release is copied out of the project and every
loader reads the copy: ``datasets`` (every config), pandas, polars and duckdb (every value
compared with the JSONL), mlcroissant (validated, every record read), the exported inspect
task with mockllm offline, and the re-implemented upstream checks on the MemoryBench and
ImplicitMemBench exports."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from test_typed_tables import freeze_mix

from conftest import LATEST_RELEASES, run_cli

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def clean_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a virtual environment without memspec."""
    venv = tmp_path_factory.mktemp("consumer-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # Plain path entries: their directories' own .pth files (memspec's editable hook) are not
    # run. Every site directory this interpreter reads, so that a virtual environment with
    # the system's packages (where the loaders may be) lends them too.
    machine = dict.fromkeys([sysconfig.get_paths()["purelib"], *site.getsitepackages()])
    Path(purelib, "machine_packages.pth").write_text("".join(f"{path}\n" for path in machine))
    return python


def _consumer(python: Path, folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "MEMSPEC_ROOT", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HOME=str(folder / "home"))
    return subprocess.run([str(python), "-I", str(folder / "consumer_check.py"), *args],
                          capture_output=True, text=True, timeout=1800, cwd=folder, env=env,
                          stdin=subprocess.DEVNULL)


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
    result = _consumer(clean_python, folder, *args)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "ok datasets" in result.stdout and "ok croissant" in result.stdout
    for loader in ("pandas", "polars", "duckdb"):
        assert f"ok {loader}: " in result.stdout
    assert "ok inspect" in result.stdout


def test_a_consumer_without_memspec_gets_a_typed_release_whole(
        clean_python: Path, tmp_path: Path) -> None:
    folder, args = _prepared(freeze_mix(tmp_path), tmp_path)
    checked = _consumer(clean_python, folder, *args)
    assert checked.returncode == 0, (checked.stdout + checked.stderr)[-4000:]
    assert "ok polars: 244 rows equal to the JSONL" in checked.stdout


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

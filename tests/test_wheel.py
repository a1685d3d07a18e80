"""The wheel is complete: built from the sources, installed into a fresh environment outside
the repository, it runs a benchmark of one's own from `memspec init` to `memspec report`,
with every bundled paradigm, and writes nowhere but in the user's folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import REPO, scaffold_groups, tree_bytes

#: What the wheel is built from: the sources a clone of the repository has.
SOURCES = ("generator", "specs", "templates", "manifests", "pyproject.toml", "README.md",
           "memspec.yaml")


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 600,
         expect: int | None = 0) -> subprocess.CompletedProcess[str]:
    """Run ``command``; its exit status must be ``expect`` (None: any)."""
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=timeout)
    assert expect is None or result.returncode == expect, \
        (command, result.stdout[-2000:], result.stderr[-4000:])
    return result


def _bundled_paradigms() -> list[str]:
    """The bundled paradigms (`memspec new` scaffolds every one of them)."""
    specs = [yaml.safe_load(path.read_text())
             for path in (REPO / "specs" / "paradigms").rglob("*.yaml")]
    return sorted(spec["paradigm"] for spec in specs)


def _repository() -> dict[str, bytes]:
    return {name: data for part in ("generator", "specs", "templates", "manifests")
            for name, data in tree_bytes(REPO / part).items() if "__pycache__" not in name}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with memspec installed from its wheel (its bin/ folder)."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"  # the build writes build/ and *.egg-info beside its sources
    for name in SOURCES:
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        copy(REPO / name, source / name,
             **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree
                else {}))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MEMSPEC_ROOT")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
          "--no-index", "-w", str(base / "wheels"), str(source)], base, env)
    wheel = next((base / "wheels").glob("memspec-*.whl"))
    # The folder generator/ is shipped as the import package memspec, and only as that.
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith("generator/")]
    for part in ("memspec/__init__.py", "memspec/cli/commands.py",
                 "memspec/schemas/family.schema.json", "memspec/library/specs/",
                 "memspec/library/manifests/"):
        assert any(n.startswith(part) for n in names), part
    venv = base / "venv"
    # memspec itself only from the wheel; the dependencies it declares from the environment
    # running these tests, offline. `--system-site-packages` would not do: inside a user's own
    # venv it shows the base interpreter's packages, not the venv's where they are installed.
    _run([sys.executable, "-m", "venv", str(venv)], base, env)
    python = str(venv / "bin" / "python")
    inner = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                 base, env).stdout.strip()
    # Plain folders in a .pth file go at the end of the fresh environment's path, after its own
    # site-packages (so the wheel's memspec wins); the .pth files inside them are not run, so
    # an editable memspec of the outer environment stays out.
    (Path(inner) / "outer-environment.pth").write_text(
        "".join(f"{folder}\n" for folder in outer_site_packages()))
    _run([python, "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], base, env)
    missing = [line for line in _run([python, "-m", "pip", "check"], base, env,
                                     expect=None).stdout.splitlines()
               if line.startswith("memspec ")]
    if missing:
        pytest.skip("the environment running the tests lacks what the wheel declares: "
                    + "; ".join(missing))
    return venv / "bin"


def outer_site_packages() -> list[str]:
    """The folders this interpreter imports installed packages from: its site-packages (a
    venv's own and, with system packages, the base's) and the user's, if enabled."""
    folders = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return [folder for folder in dict.fromkeys(folders) if Path(folder).is_dir()]


def test_the_wheel_runs_a_benchmark_of_ones_own(installed: Path, tmp_path: Path) -> None:
    repository = _repository()
    # The installed code is the wheel's, not a checkout's (an editable install of memspec
    # may sit in the system's site-packages this environment sees too).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MEMSPEC_ROOT")}
    env.update(PYTHONDONTWRITEBYTECODE="1", MEMSPEC_CACHE_DIR="", HOME=str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    where = _run([str(installed / "python"), "-c",
                  "import memspec, memspec.spec.project as p; print(memspec.__file__); "
                  "print(p.library_root())"], tmp_path, env).stdout.split()
    package = Path(where[0]).parent
    assert package.is_relative_to(installed.parent), where
    assert Path(where[1]) == package / "library"
    installed_files = tree_bytes(installed.parent)

    user = tmp_path / "user"
    user.mkdir()
    memspec = str(installed / "memspec")

    def run(*args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        return _run([memspec, *args], user / "bench" if args[0] != "init" else user, env,
                    expect=expect)

    run("init", "bench")
    paradigms = _bundled_paradigms()
    assert len(paradigms) >= 3
    families, groups = [], []
    for paradigm in paradigms:
        family = "bench.mine." + paradigm.replace(".", "_")
        result = run("new", family, "--paradigm", f"memspec:{paradigm}")
        assert f"ok: {family} validates" in result.stdout
        families.append(family)
        # Four groups, or the number the paradigm's balance checks hold over.
        groups.append(scaffold_groups(paradigm) or 4)
    run("validate")
    (user / "bench/specs/releases/bench-v1.yaml").write_text(
        "name: bench\nversion: v1\nseed: 5\ndescription: every bundled paradigm\n"
        "license: CC-BY-4.0\nfamilies:\n"
        + "".join(f"  - {{family: {f}, groups: {n}}}\n"
                  for f, n in zip(families, groups, strict=True)))
    # Every bundled paradigm's scaffold passes the audit as written (two of them by the
    # newer scaffold files the library ships beside their pinned paradigm files).
    run("freeze", "specs/releases/bench-v1.yaml")
    manifest = json.loads((user / "bench/manifests/bench-v1.json").read_text())
    # The library's paradigm of every family is recorded, by hash.
    assert sum(name.startswith("memspec:specs/paradigms/") for name in manifest["inputs"]) \
        == len(paradigms)
    run("verify", "dist/bench-v1")
    run("verify", "--regenerate", "dist/bench-v1")
    run("respond", "dist/bench-v1", "--policy", "oracle", "--out", "oracle.jsonl")
    scores = json.loads(run("score", "dist/bench-v1", "oracle.jsonl", "--format", "json").stdout)
    assert scores["overall"]["n"] == manifest["counts"]["instances"]
    # The audit passes again, and shows the scaffolds' families among its rows.
    audited = run("audit", "dist/bench-v1")
    assert "bench.mine.feedback_session" in audited.stdout + audited.stderr
    run("export", "dist/bench-v1", "--format", "inspect", "--out", "inspect")
    run("report", "dist/bench-v1", "--out", "report.html")
    assert (user / "bench/report.html").stat().st_size > 0

    # Nothing written anywhere but the user's folder.
    assert tree_bytes(installed.parent) == installed_files
    assert _repository() == repository
    assert list((tmp_path / "home").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "user"]
    assert sorted(p.name for p in user.iterdir()) == ["bench"]


def test_readme_start_your_own_benchmark_as_written(installed: Path, tmp_path: Path) -> None:
    text = (REPO / "README.md").read_text()
    block = re.search(r"\*\*Start your own benchmark\*\*.*?```sh\n(.*?)```", text, re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    # The install is the wheel of these sources (built as `pip install .` builds it), into the
    # fresh environment; every other line runs there as written, in a folder of one's own.
    assert lines[0] == "pip install ."
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MEMSPEC_ROOT")}
    env.update(PATH=f"{installed}{os.pathsep}{env['PATH']}", MEMSPEC_CACHE_DIR="",
               PYTHONDONTWRITEBYTECODE="1")
    script = "set -eu\n" + "\n".join(lines[1:]) + "\n"
    result = _run(["bash", "-c", script], tmp_path, env)
    assert "ok: mybench.rules.order_ref validates" in result.stdout
    assert result.stdout.strip().splitlines()[-1].startswith("ok: 1 families")
    assert (tmp_path / "mybench" / "memspec.yaml").is_file()


@pytest.mark.parametrize(("release", "name"), [("feedback-v3", "memorybench"),
                                               ("implicitmem-v3", "implicitmembench")])
def test_the_wheel_exports_a_downloaded_release_by_plain_names(
        installed: Path, built_dist: Path, tmp_path: Path, release: str, name: str) -> None:
    # A release downloaded on its own, no project anywhere around it: the formats that ship
    # in the wheel, by the names the docs give them.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MEMSPEC_ROOT")}
    env.update(PYTHONDONTWRITEBYTECODE="1", MEMSPEC_CACHE_DIR="", HOME=str(tmp_path / "home"))
    shutil.copytree(built_dist / release, tmp_path / release)
    _run([str(installed / "memspec"), "export", release, "--format", name, "--out", "out"],
         tmp_path, env)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out", release])
    assert any(p.suffix == ".json" for p in (tmp_path / "out").rglob("*"))

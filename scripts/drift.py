"""Rebuild every bundled release under drifted environments and other Pythons; compare bytes.

    python scripts/drift.py                      # environment drift, then every Python found
    python scripts/drift.py --only env           # TZ, locale, umask, working folder, hash seed
    python scripts/drift.py --only python --pythons /usr/bin/python3.12 3.10.13

(env)    `memspec build` of every bundled release in this interpreter (run the script with the
         Python memspec is installed in), once per drift (TZ, LC_ALL, umask, working folder,
         PYTHONHASHSEED, PYTHONINTMAXSTRDIGITS); every tree must equal the first byte for
         byte, and `memspec build` itself checks each release against its committed manifest.
         File modes follow the umask (see tests/test_env_drift.py): they are listed, not
         compared.
(python) for each interpreter: a fresh venv under --work, `pip install -e .` of this
         checkout, `memspec build` of every bundled release (frozen and verified against the
         committed manifests), then its trees compared with those the first interpreter
         built. Parquet files written by another pyarrow than the manifests pin are compared
         by rows (the build says so in a note); everything else must be byte-identical.

Needs only the standard library; prints a table and writes --json (default
<work>/drift.json). Exit status 1 when any build failed or any tree differed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PYENV_VERSIONS = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
#: The Pythons tried when none are named: every pyenv version that pyproject allows.
DEFAULT_PYTHONS = ("3.10.13", "3.11.7", "3.12.1")
#: One build per drift (the same as tests/test_env_drift.py); the umask and the working folder
#: are set by the runner, the rest through the environment.
DRIFTS: tuple[dict[str, Any], ...] = (
    {"TZ": "UTC", "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0",
     "PYTHONHASHSEED": "0", "PYTHONINTMAXSTRDIGITS": "640", "umask": 0o022},
    {"TZ": "Pacific/Kiritimati", "LC_ALL": "tr_TR.UTF-8", "PYTHONHASHSEED": "12345",
     "umask": 0o077},
    {"TZ": "America/St_Johns", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "random",
     "PYTHONUTF8": "1", "umask": 0o002},
)


def tree_digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder``, by relative path."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def differing(first: dict[str, str], second: dict[str, str]) -> list[str]:
    """The paths whose bytes differ (or that only one tree has)."""
    return sorted(name for name in set(first) | set(second)
                  if first.get(name) != second.get(name))


def by_rows(names: list[str]) -> bool:
    """Whether a difference is one a build checks by rows: Parquet files another pyarrow
    wrote, and the SHA256SUMS listing their bytes."""
    return all(n.endswith(".parquet") or n.endswith("/SHA256SUMS") for n in names)


def turkish_locale(work: Path) -> dict[str, str]:
    """LOCPATH holding tr_TR.UTF-8 compiled with localedef (most machines do not have it);
    an empty dict when it cannot be made, and the drift then runs in the C locale."""
    target = work / "locales"
    if (target / "tr_TR.UTF-8").is_dir():
        return {"LOCPATH": str(target)}
    localedef = shutil.which("localedef")
    if localedef is None:
        return {}
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run([localedef, "-i", "tr_TR", "-f", "UTF-8", str(target / "tr_TR.UTF-8")],
                   capture_output=True)
    return {"LOCPATH": str(target)} if (target / "tr_TR.UTF-8").is_dir() else {}


def run_build(python: Path, out: Path, *, env: dict[str, str] | None = None,
              umask: int | None = None, cwd: Path | None = None) -> dict[str, Any]:
    """``memspec build --all`` (every version of every bundled release) into ``out`` with
    ``python``."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("MEMSPEC_ROOT", "VIRTUAL_ENV")}
    full_env.update(env or {})
    start = time.perf_counter()
    result = subprocess.run([str(python), "-m", "memspec.cli", "--root", str(REPO), "build",
                             "--all", "--out", str(out)], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, env=full_env, cwd=cwd or REPO,
                            umask=-1 if umask is None else umask)
    return {"returncode": result.returncode, "seconds": round(time.perf_counter() - start, 1),
            "notes": sorted({line for line in result.stderr.splitlines()
                             if line.startswith("note:")}),
            "errors": [line for line in result.stderr.splitlines()
                       if line.startswith("error:")][:20]}


def modes(folder: Path) -> set[str]:
    """The distinct permission bits of the files and folders under ``folder``."""
    return {f"{'d' if p.is_dir() else 'f'}{p.stat().st_mode & 0o777:04o}"
            for p in folder.rglob("*")}


def drift_env(work: Path) -> list[dict[str, Any]]:
    """(env): one build per drift in this interpreter; trees compared with the first."""
    try:
        import memspec  # noqa: F401
    except ImportError:
        raise SystemExit("run the env drifts with the Python memspec is installed in "
                         "(pip install -e .)") from None
    locale_env = turkish_locale(work)
    rows, reference = [], None
    for index, drift in enumerate(DRIFTS):
        env = {k: v for k, v in drift.items() if k != "umask"}
        if env.get("LC_ALL", "").startswith("tr_TR"):
            env.update(locale_env)
        cwd = work / f"cwd-{index}"
        cwd.mkdir(parents=True, exist_ok=True)
        out = work / f"env-{index}"
        shutil.rmtree(out, ignore_errors=True)
        row = {"drift": {**env, "umask": f"{drift['umask']:04o}", "cwd": str(cwd)},
               **run_build(Path(sys.executable), out, env=env, umask=drift["umask"], cwd=cwd)}
        digests = tree_digests(out) if out.is_dir() else {}
        row["files"] = len(digests)
        row["modes"] = sorted(modes(out)) if out.is_dir() else []
        if reference is None:
            reference = digests
        row["differs"] = differing(reference, digests)
        rows.append(row)
    return rows


def find_python(name: str) -> Path | None:
    """An interpreter given as a path, or as a pyenv version."""
    path = Path(name)
    if path.is_file():
        return path
    candidate = PYENV_VERSIONS / name / "bin" / "python"
    return candidate if candidate.is_file() else None


def drift_python(work: Path, pythons: list[str]) -> list[dict[str, Any]]:
    """(python): a venv, an editable install and a build per interpreter."""
    rows, reference = [], None
    for name in pythons:
        row: dict[str, Any] = {"python": name}
        rows.append(row)
        interpreter = find_python(name)
        if interpreter is None:
            row["status"] = "not found"
            continue
        venv = work / f"venv-{Path(name).name}"
        if not (venv / "bin" / "python").is_file():
            made = subprocess.run([str(interpreter), "-m", "venv", str(venv)],
                                  capture_output=True, text=True)
            if made.returncode:
                row.update(status="venv failed", errors=made.stderr.splitlines()[-5:])
                continue
        python = venv / "bin" / "python"
        row["version"] = subprocess.run([str(python), "--version"], capture_output=True,
                                        text=True).stdout.strip()
        start = time.perf_counter()
        installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", str(REPO)],
                                   capture_output=True, text=True, stdin=subprocess.DEVNULL)
        row["install_seconds"] = round(time.perf_counter() - start, 1)
        if installed.returncode:
            row.update(status="install failed", errors=installed.stderr.splitlines()[-10:])
            continue
        out = work / f"dist-{Path(name).name}"
        shutil.rmtree(out, ignore_errors=True)
        row.update(run_build(python, out))
        digests = tree_digests(out) if out.is_dir() else {}
        row["files"] = len(digests)
        if reference is None and digests:
            reference = digests
        every = differing(reference or {}, digests)
        row["differs"] = [n for n in every if not by_rows([n])]
        row["parquet_differs"] = len(every) - len(row["differs"])
        row["status"] = "ok" if row["returncode"] == 0 else "build failed"
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="env,python", help="env, python or both")
    parser.add_argument("--pythons", nargs="*", default=list(DEFAULT_PYTHONS),
                        help="interpreters: paths or pyenv versions")
    parser.add_argument("--work", type=Path,
                        default=Path(tempfile.gettempdir()) / "memspec-drift",
                        help="where the venvs and builds go (kept for the next run)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(","))
    results: dict[str, Any] = {}
    failed = False
    if "env" in only:
        results["env"] = drift_env(args.work)
        for row in results["env"]:
            failed |= bool(row["returncode"] or row["differs"])
            print(f"env    {json.dumps(row['drift'], sort_keys=True)}: exit {row['returncode']}"
                  f" in {row['seconds']} s, {row['files']} files, modes {row['modes']}, "
                  f"{len(row['differs'])} differ from the first build")
            for line in row["errors"]:
                print(f"         {line}")
    if "python" in only:
        results["python"] = drift_python(args.work, args.pythons)
        for row in results["python"]:
            failed |= row["status"] != "ok" or bool(row.get("differs"))
            print(f"python {row['python']} ({row.get('version', '?')}): {row['status']}"
                  + (f", install {row['install_seconds']} s" if "install_seconds" in row else "")
                  + (f", build {row['seconds']} s, {row['files']} files, "
                     f"{len(row['differs'])} differ from the first Python (and "
                     f"{row['parquet_differs']} Parquet files or their SHA256SUMS, by rows)"
                     if "seconds" in row else ""))
            for line in [*row.get("notes", []), *row.get("errors", []),
                         *row.get("differs", [])[:10]]:
                print(f"         {line}")
    target = args.json or args.work / "drift.json"
    target.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"wrote {target}")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
